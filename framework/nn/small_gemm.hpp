#pragma once
// A register-blocked GEMM for the small per-(batch, head) attention products (T×T×F, T×F×D with T ~ 64,
// F = D ~ 32), where OpenBLAS spends much of a call packing (issue 23). Opt-in: `model.small_gemm: blocked`
// (docs/configs.md). Its sums are added in a different order from OpenBLAS's, so results differ from the
// default `openblas` path in the last bits; the default stays OpenBLAS so existing results stay bit-identical.
//
//   C (m, n) = alpha · op(A) (m, k) · op(B) (k, n) + beta · C      (row-major, any leading dimensions)
//
// Method: op(A) is packed into panels of kMr rows (k × kMr each, zero-padded), op(B) into panels of kNr columns
// (k × kNr, zero-padded), into per-thread buffers kept between calls (no allocation in a step). Each kMr × kNr
// tile of C is accumulated in a fixed-size local array the compiler keeps in vector registers (plain loops,
// vectorized by -O3 -march; no intrinsics, so it runs on any x86-64 or other CPU), over p = 0, 1, ..., k-1 in
// order, then written as alpha·acc (+ beta·C when beta != 0; beta = 0 never reads C, as BLAS).
// Every element of C is therefore Σ_p a_ip b_pj summed in the order p = 0..k-1 (with or without FMA contraction,
// fixed at compile time): the result depends on the shape and data only, never on the thread count or on where
// a tile falls. Error bound (standard recursive summation): |C − Ĉ| ≤ γ_k |A||B| elementwise, γ_k = k u / (1 − k u),
// plus one rounding each for alpha and beta (tests/test_small_gemm.cpp).
#include <algorithm>
#include <cstddef>
#include <vector>

namespace iclab::nn {

// Which kernel runs the attention's per-(batch, head) products (model.small_gemm).
enum class SmallGemm { openblas, blocked };

namespace detail {

// Register tile: kNr = two SIMD vectors of T per row, kMr rows: kMr·2 accumulators (16 of AVX-512's 32 registers;
// 8 of AVX2's 16).
#if defined(__AVX512F__)
constexpr std::size_t kSimdBytes = 64;
constexpr std::size_t kSmallMr = 8;
#else
constexpr std::size_t kSimdBytes = 32;
constexpr std::size_t kSmallMr = 4;
#endif
template <class T>
constexpr std::size_t small_nr() {
    return 2 * kSimdBytes / sizeof(T);
}

// acc (kMr, kNr) = Σ_p a_panel[p, :]ᵀ b_panel[p, :], p in order.
template <class T, std::size_t Mr, std::size_t Nr>
inline void small_gemm_tile(T (&acc)[Mr][Nr], const T* __restrict a_panel, const T* __restrict b_panel, std::size_t k) {
    for (std::size_t r = 0; r < Mr; ++r)
        for (std::size_t c = 0; c < Nr; ++c) acc[r][c] = T(0);
    for (std::size_t p = 0; p < k; ++p) {
        const T* __restrict bp = b_panel + p * Nr;
        const T* __restrict ap = a_panel + p * Mr;
        for (std::size_t r = 0; r < Mr; ++r) {
            const T a = ap[r];
#pragma omp simd
            for (std::size_t c = 0; c < Nr; ++c) acc[r][c] += a * bp[c];
        }
    }
}

}  // namespace detail

// out (m, n, rows ldc apart) = alpha op(a) op(b) + beta out; a rows lda apart, b rows ldb apart. k >= 1.
template <class T>
void small_gemm_blocked(T* out, std::size_t ldc, const T* a, std::size_t lda, const T* b, std::size_t ldb, std::size_t m,
                        std::size_t n, std::size_t k, bool transpose_a, bool transpose_b, T alpha, T beta) {
    constexpr std::size_t Mr = detail::kSmallMr, Nr = detail::small_nr<T>();
    const std::size_t a_panels = (m + Mr - 1) / Mr, b_panels = (n + Nr - 1) / Nr;
    thread_local std::vector<T> a_pack, b_pack;  // kept between calls: no allocation once sized
    if (a_pack.size() < a_panels * k * Mr) a_pack.resize(a_panels * k * Mr);
    if (b_pack.size() < b_panels * k * Nr) b_pack.resize(b_panels * k * Nr);
    // op(a)[i, p] = a[i·lda + p], or a[p·lda + i] when transposed; likewise op(b)[p, j]
    for (std::size_t ip = 0; ip < a_panels; ++ip) {
        T* panel = a_pack.data() + ip * k * Mr;
        const std::size_t i0 = ip * Mr, rows = std::min(Mr, m - i0);
        for (std::size_t p = 0; p < k; ++p) {
            T* dst = panel + p * Mr;
            for (std::size_t r = 0; r < rows; ++r) dst[r] = transpose_a ? a[p * lda + i0 + r] : a[(i0 + r) * lda + p];
            for (std::size_t r = rows; r < Mr; ++r) dst[r] = T(0);
        }
    }
    for (std::size_t jp = 0; jp < b_panels; ++jp) {
        T* panel = b_pack.data() + jp * k * Nr;
        const std::size_t j0 = jp * Nr, cols = std::min(Nr, n - j0);
        for (std::size_t p = 0; p < k; ++p) {
            T* dst = panel + p * Nr;
            if (transpose_b)
                for (std::size_t c = 0; c < cols; ++c) dst[c] = b[(j0 + c) * ldb + p];
            else
                std::copy(b + p * ldb + j0, b + p * ldb + j0 + cols, dst);
            for (std::size_t c = cols; c < Nr; ++c) dst[c] = T(0);
        }
    }
    alignas(64) T acc[Mr][Nr];
    for (std::size_t ip = 0; ip < a_panels; ++ip) {
        const std::size_t i0 = ip * Mr, rows = std::min(Mr, m - i0);
        for (std::size_t jp = 0; jp < b_panels; ++jp) {
            const std::size_t j0 = jp * Nr, cols = std::min(Nr, n - j0);
            detail::small_gemm_tile<T, Mr, Nr>(acc, a_pack.data() + ip * k * Mr, b_pack.data() + jp * k * Nr, k);
            for (std::size_t r = 0; r < rows; ++r) {
                T* y = out + (i0 + r) * ldc + j0;
                if (beta == T(0))
                    for (std::size_t c = 0; c < cols; ++c) y[c] = alpha * acc[r][c];
                else
                    for (std::size_t c = 0; c < cols; ++c) y[c] = alpha * acc[r][c] + beta * y[c];
            }
        }
    }
}

}  // namespace iclab::nn
