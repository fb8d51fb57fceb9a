#pragma once
// A register-blocked GEMM, first for the small per-(batch, head) attention products (T×T×F, T×F×D with T ~ 64,
// F = D ~ 32), where OpenBLAS spends much of a call packing (issue 23), then for every product (gemm.hpp's cells).
// The default kernel of nn::gemm since 2026-11-27 (`model.small_gemm` / `model.large_gemm: openblas` choose
// OpenBLAS, docs/configs.md): its sums are added in a different order from OpenBLAS's, so results differ from
// OpenBLAS's in the last bits, and unlike OpenBLAS's they do not depend on the CPU or on OpenBLAS's kernel.
//
//   C (m, n) = alpha · op(A) (m, k) · op(B) (k, n) + beta · C      (row-major, any leading dimensions)
//
// Method: C in tiles of kMr rows × kNr columns, op(A) and op(B) read in place where that runs at full speed, else copied
// into contiguous zero-padded panels (small_gemm_blocked, detail::copy_b_pays / copy_a_pays). Each kMr × kNr
// tile of C is accumulated in a fixed-size local array the compiler keeps in vector registers (plain loops,
// vectorized by -O3 -march; no intrinsics, so it runs on any x86-64 or other CPU), over p = 0, 1, ..., k-1 in
// order, then written as alpha·acc (+ beta·C when beta != 0; beta = 0 never reads C, as BLAS, and writes alpha·acc + 0:
// the bits of a product accumulated into a zeroed C, so a zero sum scaled by a negative alpha is +0 as in OpenBLAS). A long sum (k > kSmallKc)
// runs a chunk of terms at a time over all tiles, each tile's sums kept between chunks and its chain continued: the
// same multiply-adds in the same order.
// Every element of C is therefore Σ_p a_ip b_pj summed in the order p = 0..k-1, each step one fused multiply-add where
// the target has FMA (detail::multiply_add; written out, not left to the compiler's contraction): the result depends
// on the shape and data only, never on the thread count, on where a tile falls or on how a product is split into
// calls (gemm.hpp's cells, tests/test_large_gemm.cpp). Error bound (standard recursive summation): |C − Ĉ| ≤ γ_k |A||B| elementwise, γ_k = k u / (1 − k u),
// plus one rounding each for alpha and beta (tests/test_small_gemm.cpp).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <vector>

#include "framework/core/multiply_add.hpp"

namespace iclab::nn {

// Which kernel runs the attention's per-(batch, head) products (model.small_gemm).
enum class SmallGemm { openblas, blocked };

// Triangular structure of a product under the causal mask (j ≤ i) that the blocked kernel may use (linear_attention.cpp).
// With row panels [i0, i0 + rows) of C (the kMr-row panels below):
//   lower_out: C is masked to j ≤ i. Tiles with a column j ≤ i are computed and their elements j > i written as +0 (the
//              bits of writing them and then zeroing them); tiles wholly above the diagonal (j0 ≥ i0 + rows) are never
//              written: the caller never reads them (the lower_a / upper_a products read only tiles written here).
//   lower_a:   op(A)[i, p] = 0 for p > i (exact zeros in memory): panel i0 sums p < i0 + rows; the terms skipped are the
//              last ones of each sum, products with +0.
//   upper_a:   op(A)[i, p] = 0 for p < i: panel i0 sums p ≥ i0; the terms skipped are the first ones of each sum.
// Every element is the full product's sum in order p = 0..k-1 minus zero terms at its start or end: the sum starts at +0
// and +0 + (±0) = +0, so leading zero terms change no bit; x + (±0) = x for x ≠ 0, so trailing ones change none unless
// the partial sum is exactly -0 (possible only through an FMA whose result underflows to -0: then the full sum may end
// as +0 where this one keeps -0, equal as numbers). Non-finite inputs: the skipped products 0·inf would have been NaN
// (such a step has a non-finite loss either way).
enum class Triangle { none, lower_out, lower_a, upper_a };

namespace detail {

// a·b + c rounded once where the target has FMA, written out (framework/core/multiply_add.hpp)
using iclab::multiply_add;

// Register tile: kNr = two SIMD vectors of T per row, kMr rows: kMr·2 accumulators (16 of AVX-512's 32 registers;
// 12 of AVX2's 16, the other 3 for op(B)'s two vectors and op(A)'s broadcast; 8 left the two FMA units waiting on
// their 4-cycle latency). The tile's shape changes no bit: each element is one chain over p in order whatever tile
// computes it. GCC 12 compiles small_gemm_tile's loop over p to exactly that (objdump, x86-64-v3, float: 2 vmovups of
// op(B), 6 vbroadcastss of op(A), 12 vfmadd231ps into 12 ymm accumulators held across the loop; AVX-512: 16 zmm), so the
// kernel needs no intrinsics: one portable source, the tile chosen per build target at compile time.
#if defined(__AVX512F__)
constexpr std::size_t kSimdBytes = 64;
constexpr std::size_t kSmallMr = 8;
#else
constexpr std::size_t kSimdBytes = 32;
constexpr std::size_t kSmallMr = 6;
#endif
template <class T>
constexpr std::size_t small_nr() {
    return 2 * kSimdBytes / sizeof(T);
}

// Terms per pass over the product (small_gemm_blocked): a product with more terms is summed a chunk of kSmallKc terms
// at a time over all its tiles, so that op(A)'s and op(B)'s rows of one chunk stay in cache while every tile reads
// them (a weight gradient has k = B·T = 4096 terms: without chunks every tile streamed its whole k from memory again).
// 512, not 256: each chunk after the first reloads every tile's partial sums (4 MB for a 1024 × 1024 C) and restarts
// its loop; with 256 that cost 5-8 % (1024³ on AVX2: 0.87 of OpenBLAS, 0.93 with 512). A row panel's chunk of op(A),
// kMr × 512 values (12 KB in float on AVX2, 16 KB on AVX-512), still stays in the 48 KB L1 while a block's tiles read it.
constexpr std::size_t kSmallKc = 512;
// Columns per block of tiles (small_gemm_blocked): a chunk of op(B) for one block, kSmallKc × kSmallNc values (512 KB
// in float), stays in L2 (2 MB per core here) while the row panels pass over it.
constexpr std::size_t kSmallNc = 256;

// acc (Mr, Nr) += Σ_p op(A)[i0 .. i0+Mr, p] op(B)[p, j0 .. j0+Nr], p in order, from acc = 0 (fresh) or from the partial
// sums of the previous terms the caller loaded (the same chain of multiply-adds continued); op(A)[i0 + r, p] =
// a[r·a_row + p·a_step], op(B)[p, j0 + c] = b[p·b_step + c].
template <class T, std::size_t Mr, std::size_t Nr>
inline void small_gemm_tile(T (&acc)[Mr][Nr], const T* __restrict a, std::size_t a_row, std::size_t a_step,
                            const T* __restrict b, std::size_t b_step, std::size_t k, bool fresh = true) {
    if (fresh)
        for (std::size_t r = 0; r < Mr; ++r)
            for (std::size_t c = 0; c < Nr; ++c) acc[r][c] = T(0);
    // Unrolled 4 times: the loop's own instructions (pointer steps, compare, branch: 4-5 of ~25 per term on x86-64-v3)
    // are paid once per 4 terms; each accumulator's chain over p is unchanged. With the copies below, the weight gradients
    // ran 0-21 % faster on AVX2 and the linear layers' products 0-33 % on AVX-512 (docs/performance.md, "AVX2 tile",
    // 2026-11-29 21:30).
#pragma GCC unroll 4
    for (std::size_t p = 0; p < k; ++p) {
        const T* __restrict bp = b + p * b_step;
        const T* __restrict ap = a + p * a_step;
        for (std::size_t r = 0; r < Mr; ++r) {
            const T x = ap[r * a_row];
#pragma omp simd
            for (std::size_t c = 0; c < Nr; ++c) acc[r][c] = multiply_add(x, bp[c], acc[r][c]);
        }
    }
}

// out[p·ld_out + c] = in[c·ld_in + p] for c < cols, p < k: the transposed copy of a (cols, k) block, as op(B)ᵀ panels
// need it (NT products: attention scores q kᵀ; the linear layers' d_in = d_y W). Moves values only, so it changes no
// bit of any product. A scalar loop reads one column of `in` per output row: a strided gather that cost ~0.8 µs of a
// 2.4 µs 64×64×32 NT product on this CPU (issue 23). Here full 32-byte blocks (8×8 floats, 4×4 doubles) are loaded as
// rows and transposed in registers with __builtin_shufflevector (GCC ≥ 12, Clang: generic vector code for any target);
// edges, other types and compilers without it take the scalar loop (tests/test_small_gemm.cpp compares the two).
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define ICLAB_HAS_SHUFFLEVECTOR 1
#endif
#endif

template <class T>
inline void transpose_scalar(T* out, std::size_t ld_out, const T* in, std::size_t ld_in, std::size_t cols, std::size_t k,
                             std::size_t c0 = 0, std::size_t p0 = 0) {
    for (std::size_t c = c0; c < cols; ++c)
        for (std::size_t p = 0; p < k; ++p) out[p * ld_out + c] = in[c * ld_in + p];
    for (std::size_t c = 0; c < c0; ++c)  // the columns the blocks covered, terms p >= p0
        for (std::size_t p = p0; p < k; ++p) out[p * ld_out + c] = in[c * ld_in + p];
}

#if defined(ICLAB_HAS_SHUFFLEVECTOR)
using float8 = float __attribute__((vector_size(32)));
using double4 = double __attribute__((vector_size(32)));

// One 8×8 float block: rows r[i] = in[(c + i)·ld_in + p .. + 8] become out rows p .. p + 8, columns c .. c + 8.
inline void transpose_block(float* out, std::size_t ld_out, const float* in, std::size_t ld_in) {
    float8 r[8], t[8], u[8];
    for (int i = 0; i < 8; ++i) std::memcpy(&r[i], in + i * ld_in, sizeof(float8));
    for (int i = 0; i < 8; i += 2) {  // interleave row pairs within 4-element halves
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4)  // then pairs of pairs: u[i + q] holds column q (low half) and q + 4 (high half)
        for (int j = 0; j < 2; ++j) {
            u[i + 2 * j] = __builtin_shufflevector(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[i + 2 * j + 1] = __builtin_shufflevector(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int q = 0; q < 4; ++q) {  // rows 0-3 from u[q], rows 4-7 from u[4 + q]
        const float8 low = __builtin_shufflevector(u[q], u[4 + q], 0, 1, 2, 3, 8, 9, 10, 11);
        const float8 high = __builtin_shufflevector(u[q], u[4 + q], 4, 5, 6, 7, 12, 13, 14, 15);
        std::memcpy(out + q * ld_out, &low, sizeof(float8));
        std::memcpy(out + (q + 4) * ld_out, &high, sizeof(float8));
    }
}

// One 4×4 double block.
inline void transpose_block(double* out, std::size_t ld_out, const double* in, std::size_t ld_in) {
    double4 r[4], t[4];
    for (int i = 0; i < 4; ++i) std::memcpy(&r[i], in + i * ld_in, sizeof(double4));
    for (int i = 0; i < 4; i += 2) {
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 4, 2, 6);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 1, 5, 3, 7);
    }
    for (int q = 0; q < 2; ++q) {  // t[q] holds columns q and q + 2 of rows 0-1, t[2 + q] of rows 2-3
        const double4 low = __builtin_shufflevector(t[q], t[2 + q], 0, 1, 4, 5);
        const double4 high = __builtin_shufflevector(t[q], t[2 + q], 2, 3, 6, 7);
        std::memcpy(out + q * ld_out, &low, sizeof(double4));
        std::memcpy(out + (q + 2) * ld_out, &high, sizeof(double4));
    }
}
#endif

template <class T>
inline void transpose_copy(T* out, std::size_t ld_out, const T* in, std::size_t ld_in, std::size_t cols, std::size_t k) {
#if defined(ICLAB_HAS_SHUFFLEVECTOR)
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        constexpr std::size_t W = 32 / sizeof(T);  // block side
        const std::size_t c_blocks = cols / W * W, p_blocks = k / W * W;
        for (std::size_t c = 0; c < c_blocks; c += W)
            for (std::size_t p = 0; p < p_blocks; p += W) transpose_block(out + p * ld_out + c, ld_out, in + c * ld_in + p, ld_in);
        transpose_scalar(out, ld_out, in, ld_in, cols, k, c_blocks, p_blocks);
        return;
    }
#endif
    transpose_scalar(out, ld_out, in, ld_in, cols, k);
}

// Where small_gemm_blocked copies operands into contiguous panels although it could read them in place (it always copies
// op(B)ᵀ and edge panels). Copying moves values only: no sum changes, only the speed (measured on AVX2 and AVX-512,
// docs/performance.md, "AVX2 tile"). Only where the product is large enough to amortize the copy (m ≥ 4 kMr, n, k ≥ 64).
// op(B): where its rows are more than kInPlaceRowBytes apart. A tile reads kNr values from each of kc rows: rows 4 KB
// apart (n = 1024 floats) fall in one set of the 12-way L1 and each on its own page, which no hardware prefetcher follows
// (read in place, 1024³ ran at 0.41 of OpenBLAS with kc = 512; copied, 0.93). Rows ≤ 1 KB apart are read in place at full
// speed, and there the copy, a pass over memory of its own that the tiles' reads overlap with their multiply-adds when
// reading in place, cost 5-10 % (64 × 256 × 1920 TN, 128 × 128 × 4096 TN).
// op(A)ᵀ (kMr values from each of kc rows): where each copied panel serves at least 8 tiles (n ≥ 128). Read in place, a
// panel's kc rows lda apart (256-512 B for the weight gradients) fall in a few L1 sets and are fetched again for every
// tile. With n ≥ 256 alone 128 × 128 × 4096 TN had lost ~5 % to the copy, which then wrote its panels 12 KB apart (one L1
// set, kPanelPad below); with the panels apart, 64 × 192 × 4096 TN runs 5-10 % faster copied. op(A) not transposed is
// read in place: kMr rows, each sequential.
constexpr std::size_t kInPlaceRowBytes = 1024;
// Elements between consecutive copied panels beyond their kc·kMr or kc·kNr values: panels 12 KB or 32 KB apart (multiples
// of 4 KB) put the same term of every panel in one L1 set, and a copy that writes term p of each panel in turn (reading
// a row of the source in order) evicted its own lines.
constexpr std::size_t kPanelPad = 16;
inline bool copy_pays(std::size_t m, std::size_t n, std::size_t k) { return m >= 4 * kSmallMr && n >= 64 && k >= 64; }
inline bool copy_b_pays(std::size_t m, std::size_t n, std::size_t k, std::size_t row_bytes) {
    return copy_pays(m, n, k) && row_bytes > kInPlaceRowBytes;
}
inline bool copy_a_pays(std::size_t m, std::size_t n, std::size_t k) { return copy_pays(m, n, k) && n >= 128; }

// Elements from one panel of op(B) packed over its whole sum (k terms of kNr values) to the next (pack_b_panels).
template <class T>
inline std::size_t packed_b_stride(std::size_t k) {
    return k * small_nr<T>() + kPanelPad;
}

// op(B) (k, n) into panels of kNr columns over the whole sum, the layout small_gemm_blocked's packed_b reads: panel jp
// at out + jp·packed_b_stride(k), term p at p·kNr, the last panel's columns past n zero. op(B)[p, j] = b[p·ldb + j], or
// b[j·ldb + p] when transposed. Panels [first, last) only, so that threads can share the panels of one product. Moves
// values only: no sum changes.
template <class T>
inline void pack_b_panels(T* out, const T* b, std::size_t ldb, std::size_t n, std::size_t k, bool transpose_b,
                          std::size_t first, std::size_t last) {
    constexpr std::size_t Nr = small_nr<T>();
    const std::size_t stride = packed_b_stride<T>(k);
    for (std::size_t jp = first; jp < last; ++jp) {
        const std::size_t j0 = jp * Nr, cols = std::min(Nr, n - j0);
        T* panel = out + jp * stride;
        if (transpose_b) {
            transpose_copy(panel, Nr, b + j0 * ldb, ldb, cols, k);
        } else if (cols == Nr) {
            for (std::size_t p = 0; p < k; ++p) std::memcpy(panel + p * Nr, b + p * ldb + j0, Nr * sizeof(T));
        } else {
            for (std::size_t p = 0; p < k; ++p) std::copy(b + p * ldb + j0, b + p * ldb + j0 + cols, panel + p * Nr);
        }
        if (cols < Nr)
            for (std::size_t p = 0; p < k; ++p)
                for (std::size_t c = cols; c < Nr; ++c) panel[p * Nr + c] = T(0);
    }
}

}  // namespace detail

// out (m, n, rows ldc apart) = alpha op(a) op(b) + beta out; a rows lda apart, b rows ldb apart. k >= 1.
// Loops: chunks of kSmallKc terms; in each, blocks of kSmallNc columns; in each, the row panels of kMr rows, each over
// the block's tiles (its kMr × kc panel of op(A) stays in L1 while the block's panels of op(B) stream from L2).
// op(B) is read in place, or its chunk × block copied into contiguous zero-padded kNr-column panels once per (chunk,
// block): op(B)ᵀ, edge panels, and rows far apart (detail::copy_b_pays). op(A): in place (not transposed: kMr
// sequential row streams), or every kMr-row panel of a chunk copied once (op(A)ᵀ, detail::copy_a_pays), or the edge
// panel copied, zero-padded. The copies live in per-thread buffers kept between calls (no allocation in a step) and change no sum.
// triangle: the causal structure the product may use (Triangle above; none: the full product).
// packed_b: op(B) already copied by the caller into panels of the whole sum (detail::pack_b_panels: the panel of columns
// [jp·kNr, jp·kNr + kNr) at packed_b + jp·packed_b_stride(k), term p at p·kNr, zero-padded past n): then b and ldb are not
// read and nothing of op(B) is copied here (gemm.hpp's blocked_compute packs op(B) once for all its cells).
template <class T>
void small_gemm_blocked(T* out, std::size_t ldc, const T* a, std::size_t lda, const T* b, std::size_t ldb, std::size_t m,
                        std::size_t n, std::size_t k, bool transpose_a, bool transpose_b, T alpha, T beta,
                        Triangle triangle = Triangle::none, const T* packed_b = nullptr) {
    constexpr std::size_t Mr = detail::kSmallMr, Nr = detail::small_nr<T>();
    const std::size_t a_panels = (m + Mr - 1) / Mr, b_panels = (n + Nr - 1) / Nr;
    // Terms in chunks of kSmallKc (detail::kSmallKc), the tiles' partial sums kept between chunks; one chunk when the
    // product is short or triangular. Every element is still one chain of multiply-adds over p = 0..k-1 in order.
    const bool chunked = triangle == Triangle::none && k > detail::kSmallKc;
    const std::size_t chunk = chunked ? detail::kSmallKc : k;
    // Columns in blocks of kSmallNc: one chunk of op(B)'s rows for a block's tiles (kSmallKc × kSmallNc) stays in L2 while
    // every row panel of op(A) passes over it. Only the order in which tiles are visited changes: no sum changes.
    const std::size_t block_tiles = std::max<std::size_t>(1, detail::kSmallNc / Nr);
    const bool pack_b = packed_b == nullptr && (transpose_b || detail::copy_b_pays(m, n, k, ldb * sizeof(T)));
    const std::size_t full_stride = detail::packed_b_stride<T>(k);  // packed_b's panels apart
    const bool pack_a = transpose_a && detail::copy_a_pays(m, n, k);
    thread_local std::vector<T> a_pack, b_pack, partial;  // kept between calls: no allocation once sized
    const std::size_t a_slots = pack_a ? a_panels : 1;  // every row panel of a chunk, or the edge panel
    const std::size_t a_stride = chunk * Mr + detail::kPanelPad, b_slots = std::min(b_panels, block_tiles);  // panels apart
    if (a_pack.size() < a_slots * a_stride) a_pack.resize(a_slots * a_stride);
    if (b_pack.size() < b_slots * (chunk * Nr + detail::kPanelPad)) b_pack.resize(b_slots * (chunk * Nr + detail::kPanelPad));
    // (a_panels, b_panels, Mr, Nr) raw sums between chunks
    if (chunked && partial.size() < a_panels * b_panels * Mr * Nr) partial.resize(a_panels * b_panels * Mr * Nr);
    // op(a)[i0 .. i0 + Mr, p_begin .. p_end) → slot[(p − kb)·Mr + r], rows past m zero (kb: the chunk's first term)
    const auto copy_a_panel = [&](T* slot, std::size_t i0, std::size_t rows, std::size_t kb, std::size_t p_begin,
                                  std::size_t p_end) {
        if (transpose_a) {
            for (std::size_t p = p_begin; p < p_end; ++p)
                for (std::size_t r = 0; r < Mr; ++r) slot[(p - kb) * Mr + r] = r < rows ? a[p * lda + i0 + r] : T(0);
            return;
        }
        if (p_end > p_begin)
            detail::transpose_copy(slot + (p_begin - kb) * Mr, Mr, a + i0 * lda + p_begin, lda, rows, p_end - p_begin);
        for (std::size_t p = p_begin; p < p_end; ++p)
            for (std::size_t r = rows; r < Mr; ++r) slot[(p - kb) * Mr + r] = T(0);
    };
    alignas(64) T acc[Mr][Nr];
    for (std::size_t kb = 0; kb < k; kb += chunk) {
        const std::size_t ke = std::min(k, kb + chunk), terms = ke - kb;
        const std::size_t b_stride = terms * Nr + detail::kPanelPad;  // elements from one copied panel of op(b) to the next
        const bool first = kb == 0, last = ke == k;
        for (std::size_t jb = 0; jb < b_panels; jb += block_tiles) {
            const std::size_t jb_end = std::min(b_panels, jb + block_tiles);
            // op(b)[p, j] = b[p·ldb + j], or b[j·ldb + p] when transposed: this block's panels, terms [kb, ke), copied
            // where they are packed; panel jp at b_pack[(jp − jb)·b_stride + (p − kb)·Nr + c]
            if (pack_b && !transpose_b) {  // full panels row by row of b (sequential reads), Nr values at a time
                const std::size_t full_end = std::min(jb_end, n / Nr);
                for (std::size_t p = 0; p < terms; ++p)
                    for (std::size_t jp = jb; jp < full_end; ++jp)
                        std::memcpy(b_pack.data() + (jp - jb) * b_stride + p * Nr, b + (kb + p) * ldb + jp * Nr, Nr * sizeof(T));
            }
            for (std::size_t jp = jb; jp < jb_end && packed_b == nullptr; ++jp) {  // op(b)ᵀ panels and the edge panel
                const std::size_t j0 = jp * Nr, cols = std::min(Nr, n - j0);
                if (!transpose_b && cols == Nr) continue;
                T* panel = b_pack.data() + (jp - jb) * b_stride;
                if (transpose_b) detail::transpose_copy(panel, Nr, b + j0 * ldb + kb, ldb, cols, terms);
                for (std::size_t p = 0; p < terms; ++p) {
                    T* dst = panel + p * Nr;
                    if (!transpose_b) std::copy(b + (kb + p) * ldb + j0, b + (kb + p) * ldb + j0 + cols, dst);
                    for (std::size_t c = cols; c < Nr; ++c) dst[c] = T(0);
                }
            }
            if (pack_a && jb == 0) {  // every row panel of op(a)ᵀ for this chunk: full panels, 16 rows of a at a time, then the edge
                const std::size_t full = m / Mr;
                for (std::size_t pb = kb; pb < ke; pb += 16)  // each panel gets 16 consecutive terms (16 · Mr values) in turn
                    for (std::size_t ip = 0; ip < full; ++ip)
                        for (std::size_t p = pb; p < std::min(ke, pb + 16); ++p)
                            std::memcpy(a_pack.data() + ip * a_stride + (p - kb) * Mr, a + p * lda + ip * Mr, Mr * sizeof(T));
                if (full < a_panels) copy_a_panel(a_pack.data() + full * a_stride, full * Mr, m - full * Mr, kb, kb, ke);
            }
            for (std::size_t ip = 0; ip < a_panels; ++ip) {
                const std::size_t i0 = ip * Mr, rows = std::min(Mr, m - i0);
                // this panel's terms p in [p_begin, p_end) of this chunk and its tiles jp < tiles (Triangle)
                const std::size_t p_begin = triangle == Triangle::upper_a ? std::min(i0, k) : kb;
                const std::size_t p_end = triangle == Triangle::lower_a ? std::min(k, i0 + rows) : ke;
                const std::size_t tiles = triangle == Triangle::lower_out ? (std::min(n, i0 + rows) + Nr - 1) / Nr : b_panels;
                if (jb >= tiles) continue;
                // op(a)[i0 + r, p] = a_panel[r·a_row + (p − kb)·a_step]: a itself, or a copied panel
                const T* a_panel = transpose_a ? a + kb * lda + i0 : a + i0 * lda + kb;
                std::size_t a_row = transpose_a ? 1 : lda, a_step = transpose_a ? lda : 1;
                if (pack_a || rows < Mr) {
                    T* slot = a_pack.data() + (pack_a ? ip * a_stride : 0);
                    if (!pack_a) copy_a_panel(slot, i0, rows, kb, p_begin, p_end);
                    a_panel = slot;
                    a_row = 1;
                    a_step = Mr;
                }
                for (std::size_t jp = jb; jp < std::min(tiles, jb_end); ++jp) {
                    const std::size_t j0 = jp * Nr, cols = std::min(Nr, n - j0);
                    const bool in_place = packed_b == nullptr && !pack_b && cols == Nr;
                    const T* b_panel = packed_b != nullptr ? packed_b + jp * full_stride + kb * Nr
                                       : in_place          ? b + kb * ldb + j0
                                                           : b_pack.data() + (jp - jb) * b_stride;
                    const std::size_t b_step = in_place ? ldb : Nr;
                    T* kept_sums = chunked ? partial.data() + (ip * b_panels + jp) * Mr * Nr : nullptr;
                    if (!first) std::copy(kept_sums, kept_sums + Mr * Nr, &acc[0][0]);
                    detail::small_gemm_tile<T, Mr, Nr>(acc, a_panel + (p_begin - kb) * a_step, a_row, a_step,
                                                       b_panel + (p_begin - kb) * b_step, b_step, p_end - p_begin, first);
                    if (!last) {
                        std::copy(&acc[0][0], &acc[0][0] + Mr * Nr, kept_sums);
                        continue;
                    }
                    for (std::size_t r = 0; r < rows; ++r) {
                        T* y = out + (i0 + r) * ldc + j0;
                        // lower_out: the columns j0 + c > i0 + r are masked (+0), the others written as without a triangle
                        const std::size_t visible = i0 + r + 1;  // columns j < visible
                        const std::size_t kept =
                            triangle != Triangle::lower_out ? cols : visible > j0 ? std::min(cols, visible - j0) : 0;
                        if (beta == T(0))
                            for (std::size_t c = 0; c < kept; ++c) y[c] = alpha * acc[r][c] + T(0);  // −0 → +0 (header)
                        else
                            for (std::size_t c = 0; c < kept; ++c) y[c] = detail::multiply_add(beta, y[c], alpha * acc[r][c]);
                        for (std::size_t c = kept; c < cols; ++c) y[c] = T(0);
                    }
                }
            }
        }
    }
}

}  // namespace iclab::nn
