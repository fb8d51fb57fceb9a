#pragma once
// The one matrix-multiply entry point of iclab (CONVENTIONS.md). Every GEMM goes through here.
//   C (m, n) = alpha * op(A) (m, k) · op(B) (k, n) + beta * C        (row-major storage)
// The shapes are always checked: BLAS does not check the output's shape (a wrong one makes OpenBLAS
// print "illegal value" and return silently).
//
// Two kernels (SmallGemm): iclab's register-blocked one (small_gemm.hpp; the default since 2026-11-27: the same bits
// on any CPU and under any OpenBLAS kernel, split into cells the threads share by blocked_compute below) and OpenBLAS
// (`openblas`, what every product ran before; below).
// Threading with OpenBLAS: OpenBLAS runs single-threaded (framework/core/threads.hpp); large products are split here
// into blocks of kGemmRowBlock rows of C that OpenMP threads share. The blocks are fixed by the shape
// alone, never by the thread count: OpenBLAS's result for a row depends on how many rows one call
// gets (measured: splitting 512 rows in two halves changed float results), so a split that followed
// the thread count would make results depend on it. tests/test_gemm.cpp checks 1 vs 2 threads.
// A product of one row block with a long inner dimension is split along that dimension instead
// (kGemmInnerBlock), again by the shape alone.
// We call CBLAS directly rather than xt::blas::gemm because a row block of op(A) = Aᵀ is a column block
// of A, which needs a leading dimension that xtensor adaptors cannot express without a copy.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <tuple>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/profile.hpp"
#include "framework/nn/small_gemm.hpp"

namespace iclab::nn {

// A row-major matrix viewed over memory owned elsewhere (a flat parameter or activation buffer). Row r starts at
// data + r·stride (the leading dimension): stride 0 means cols (contiguous rows); a larger stride views a column block
// of a wider buffer, e.g. one head's (T, D) columns of the (B·T, 3C) QKV activations, which OpenBLAS reads in place.
template <class T>
struct MatrixRef {
    T* data;
    std::size_t rows;
    std::size_t cols;
    std::size_t stride = 0;
    std::size_t leading() const { return stride != 0 ? stride : cols; }
};

template <class T>
MatrixRef<T> matrix(T* data, std::size_t rows, std::size_t cols) {
    return {data, rows, cols};
}

// The same with rows `stride` elements apart (stride >= cols).
template <class T>
MatrixRef<T> strided_matrix(T* data, std::size_t rows, std::size_t cols, std::size_t stride) {
    return {data, rows, cols, stride};
}

namespace detail {
inline void blas_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                      int ldb, float beta, float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
                ldb, beta, c, ldc);
}
inline void blas_gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda, const double* b,
                      int ldb, double beta, double* c, int ldc) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
                ldb, beta, c, ldc);
}
// Rows of C per BLAS call when a product is split. Each call re-packs op(B), which costs about
// k*n copies against rows*k*n multiply-adds: 1% of the work at 128 rows.
constexpr std::size_t kGemmRowBlock = 128;
// A product with a single row block but a long inner dimension (weight gradients xᵀ · d_y over the
// B·T tokens: m = C, k = B·T) would run on one thread: it is split instead into inner blocks of this
// many terms, whose partial products the threads share and which are then added in a fixed order.
constexpr std::size_t kGemmInnerBlock = 1024;
// Cells of the blocked kernel over a whole product (blocked_compute): rows of a cell when the product has fewer than
// 4 row blocks (a multiple of the register tile's rows), and columns of a cell when it has fewer than 8 row cells (a
// multiple of the tile's columns for float and double).
constexpr std::size_t kBlockedMinRows = 32;
constexpr std::size_t kBlockedColumns = 64;
// The largest op(B) blocked_compute packs once for all its cells when its rows are far apart (32 MiB: a GPT-2 124M
// layer's W, 768 × 3072 floats, is 9 MiB; the 50257-row embedding read as d_logits · W_te is left to the cells, which
// copy a 512 × 256 block at a time, so that no call holds another copy of it). op(B)ᵀ is always packed once.
constexpr std::size_t kSharedPackBytes = std::size_t(32) << 20;
}  // namespace detail

// ---- GEMM counter (`iclab bench`, `ICLAB_COUNT_WORK=1 iclab run`: experiments/cli/work_count.hpp) ---------
// FLOPs and time of every gemm call, per shape, while `enabled`. Off by default: a training run pays
// one predictable branch per call. Not for concurrent enabling/reading: set `enabled` outside parallel
// regions (calls made inside a parallel region are recorded under a critical section).
// Time is wall-equivalent: a call made by one thread of a parallel region (attention per (batch, head))
// counts its duration divided by the team size, since the team's threads run such calls side by side;
// a call from serial code (which shares its row blocks among the threads itself) counts its duration.
struct GemmShapeKey {
    std::size_t m, n, k;
    bool transpose_a, transpose_b, in_parallel;
    bool operator<(const GemmShapeKey& o) const {
        return std::tie(m, n, k, transpose_a, transpose_b, in_parallel) <
               std::tie(o.m, o.n, o.k, o.transpose_a, o.transpose_b, o.in_parallel);
    }
};
struct GemmTally {
    std::size_t calls = 0;
    double flops = 0.0;    // 2·m·n·k per call
    double seconds = 0.0;  // wall-equivalent (see above)
    void add(const GemmTally& o) { calls += o.calls; flops += o.flops; seconds += o.seconds; }
};
struct GemmCounter {
    bool enabled = false;
    std::map<GemmShapeKey, GemmTally> shapes;

    void reset() { shapes.clear(); }
    GemmTally total() const {
        GemmTally sum;
        for (const auto& entry : shapes) sum.add(entry.second);
        return sum;
    }
    void record(std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb, double seconds) {
        const bool in_parallel = omp_in_parallel() != 0;
        const double wall = in_parallel ? seconds / omp_get_num_threads() : seconds;
#pragma omp critical(iclab_gemm_counter)
        {
            GemmTally& tally = shapes[GemmShapeKey{m, n, k, ta, tb, in_parallel}];
            ++tally.calls;
            tally.flops += 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
            tally.seconds += wall;
        }
    }
};
inline GemmCounter gemm_counter;  // the process's one counter (C++17 inline variable)

// ---- Work that shares a product's parallel region (issue 23) ---------------------------------------
// GemmExtras::epilogue(first, rows) runs on rows [first, first + rows) of C as soon as they are final, by the thread
// that computed them (in cache, inside the product's parallel region: no pass of its own). It may touch only those
// rows of C (and memory no other part of the call touches). Each row is passed exactly once, so an epilogue that
// adds a bias gives, element for element, the bits of the same add run after the product.
// GemmExtras::side(part), part < side_parts: independent work run in the same parallel region, the parts shared by
// the threads before the product's own blocks (e.g. linear_backward's bias gradient by column chunks). A part may
// not touch C or depend on the product or on another part.
// Both are for products called from serial code; inside a parallel region everything runs on the calling thread.
template <class T>
struct GemmExtras {
    std::function<void(std::size_t first, std::size_t rows)> epilogue;
    profile::Kind epilogue_kind = profile::Kind::elementwise;  // what `iclab bench`'s profile counts the epilogue as
    std::size_t side_parts = 0;
    std::function<void(std::size_t part)> side;
};

namespace detail {
template <class T>
inline void run_epilogue(const GemmExtras<T>* extras, std::size_t first, std::size_t rows) {
    if (extras == nullptr || !extras->epilogue) return;
    const profile::Scope scope(extras->epilogue_kind);
    extras->epilogue(first, rows);
}
// The side parts, shared by the team of the enclosing region (nowait: the product's blocks follow at once).
template <class T>
inline void run_side_parts(const GemmExtras<T>* extras) {
    if (extras == nullptr || extras->side_parts == 0) return;
#pragma omp for schedule(static) nowait
    for (std::size_t part = 0; part < extras->side_parts; ++part) {
        const profile::Scope scope(profile::Kind::elementwise);
        extras->side(part);
    }
}

// The blocked kernel over a product called from serial code (model.large_gemm: blocked): C in cells of rows × columns
// that the threads share, each one small_gemm_blocked call. Every element of C is Σ_p op(A)_ip op(B)_pj added in the
// order p = 0..k-1 whichever cell computes it (small_gemm.hpp), so the split changes no bit: the results depend on
// neither the thread count nor the cell sizes, which are chosen for balance (a weight gradient, m = C rows and k = B·T
// terms, is split by columns instead of summing inner blocks). op(B) is packed once for all the cells where each would
// copy it (below), else op(B)ᵀ is transposed once into a buffer kept per calling thread. With an epilogue the cells are whole rows (a row is final when its cell is).
template <class T>
void blocked_compute(T* out, std::size_t ldc, const T* a, std::size_t lda, const T* b, std::size_t ldb, std::size_t m,
                     std::size_t n, std::size_t k, bool transpose_a, bool transpose_b, T alpha, T beta,
                     const GemmExtras<T>* extras) {
    const bool epilogue = extras != nullptr && extras->epilogue;
    // A long sum over few rows (a weight gradient: m = C, k = B·T) is split into one column range per thread, all rows:
    // each thread's call runs its sum a chunk of terms at a time (small_gemm.hpp) with that chunk of op(A) and of its
    // columns of op(B) in cache, so every element of A and B is read once per thread instead of once per cell.
    const std::size_t threads = static_cast<std::size_t>(std::max(1, omp_get_max_threads()));
    const bool by_columns = !epilogue && k > kSmallKc && m <= 2 * kGemmRowBlock;
    // cells of whole register-tile panels (kSmallMr rows: 8 with AVX-512, 6 with AVX2), so that only a product's last
    // panel is an edge panel copied with zero padding
    // A large product's row cells (about kGemmRowBlock rows) come in a multiple of the thread count, so that the threads
    // get equal shares: m = 1920 (the cpu2 model's 64 × 30 tokens) in 16 cells of 120 rows, not 8 + 7 of 128.
    const std::size_t Mr = detail::kSmallMr;
    const auto balanced_rows = [&] {
        std::size_t cells = (m + kGemmRowBlock - 1) / kGemmRowBlock;
        cells = (cells + threads - 1) / threads * threads;
        return ((m + cells - 1) / cells + Mr - 1) / Mr * Mr;
    };
    const std::size_t cell_rows = by_columns              ? m
                                  : m >= 4 * kGemmRowBlock ? balanced_rows()
                                                           : kBlockedMinRows / Mr * Mr;
    const std::size_t row_cells = (m + cell_rows - 1) / cell_rows;
    const std::size_t Nr = detail::small_nr<T>();
    const std::size_t cell_cols = by_columns ? ((n + threads - 1) / threads + Nr - 1) / Nr * Nr
                                  : epilogue || row_cells >= 8 ? n
                                                               : kBlockedColumns;
    const std::size_t col_cells = (n + cell_cols - 1) / cell_cols;
    // op(B) packed once for all the cells (small_gemm_blocked's packed_b), by the team, where every row cell would
    // otherwise copy it again (detail::copy_b_pays: rows far apart, read as op(B) or as its transposed copy below), up to
    // kSharedPackBytes unless op(B) is transposed (the packed panels then replace the transposed copy, of the same size).
    // The paper model's QKV product (n = 384) copied op(B) in each of its 32 row cells; the KJV model's logits (n = 50257)
    // transposed W_te and then copied each 64-column slice again in each of 4 row cells (1.2-1.3x faster packed once,
    // docs/performance.md). Copies only: no bit changes.
    static_assert(kBlockedColumns % small_nr<T>() == 0, "column cells must start on a panel");
    const std::size_t b_panels = (n + Nr - 1) / Nr, panel_stride = packed_b_stride<T>(k);
    const bool cells_copy = copy_b_pays(cell_rows, cell_cols, k, (transpose_b ? n : ldb) * sizeof(T));
    const bool shared_pack = !by_columns && row_cells > 1 && cells_copy &&
                             (transpose_b || b_panels * panel_stride * sizeof(T) <= kSharedPackBytes);
    thread_local std::vector<T> kept_pack;  // the calling thread's, kept between calls; shared with the team below
    if (shared_pack && kept_pack.size() < b_panels * panel_stride) kept_pack.resize(b_panels * panel_stride);
    T* const pack = shared_pack ? kept_pack.data() : nullptr;
    if (transpose_b && row_cells > 1 && !shared_pack) {  // the cells read op(B) in place from its transposed copy
        thread_local std::vector<T> b_t;  // op(B) (k, n), rows n apart
        if (b_t.size() < k * n) b_t.resize(k * n);
        detail::transpose_copy(b_t.data(), n, b, ldb, n, k);
        b = b_t.data();
        ldb = n;
        transpose_b = false;
    }
#pragma omp parallel if (!omp_in_parallel() && row_cells * col_cells > 1)
    {
        run_side_parts(extras);
        if (pack != nullptr) {
#pragma omp for schedule(static)
            for (std::size_t jp = 0; jp < b_panels; ++jp) pack_b_panels(pack, b, ldb, n, k, transpose_b, jp, jp + 1);
        }  // (the loop's barrier: every panel is written before any cell reads it)
#pragma omp for schedule(static)
        for (std::size_t cell = 0; cell < row_cells * col_cells; ++cell) {
            const std::size_t i0 = (cell / col_cells) * cell_rows, rows = std::min(cell_rows, m - i0);
            const std::size_t j0 = (cell % col_cells) * cell_cols, cols = std::min(cell_cols, n - j0);
            const T* a_cell = transpose_a ? a + i0 : a + i0 * lda;
            const T* b_cell = transpose_b ? b + j0 * ldb : b + j0;
            small_gemm_blocked(out + i0 * ldc + j0, ldc, a_cell, lda, b_cell, ldb, rows, cols, k, transpose_a, transpose_b,
                               alpha, beta, Triangle::none, pack != nullptr ? pack + (j0 / Nr) * panel_stride : nullptr);
            if (epilogue) run_epilogue(extras, i0, rows);
        }
    }
}

template <class T>
void gemm_compute(T* out, std::size_t out_ld, const T* a, std::size_t a_cols, const T* b, std::size_t b_cols,
                  std::size_t m, std::size_t n, std::size_t k, bool transpose_a, bool transpose_b, T alpha, T beta,
                  const GemmExtras<T>* extras = nullptr) {
    // a_cols, b_cols, out_ld: the leading dimensions (row strides) of a, b and out
    const int lda = static_cast<int>(std::max<std::size_t>(a_cols, 1)), ldb = static_cast<int>(std::max<std::size_t>(b_cols, 1));
    const int ldc = static_cast<int>(out_ld);
    const std::size_t blocks = (m + kGemmRowBlock - 1) / kGemmRowBlock;
    const std::size_t inner_blocks = (k + kGemmInnerBlock - 1) / kGemmInnerBlock;
    if (blocks == 1 && inner_blocks >= 2) {
        // out = beta out + Σ_p alpha op(a)[:, K_p] op(b)[K_p, :] over fixed inner blocks K_p, summed in order p = 0, 1, ...
        // (P, m, n), every block fully written below (beta 0): a buffer kept per thread, so the weight-gradient
        // products (k = B·T) do not allocate and page-fault megabytes each call (measured: 7 % of a paper-config step)
        thread_local std::vector<T> scratch;
        if (scratch.size() < inner_blocks * m * n) scratch.resize(inner_blocks * m * n);
        T* const partial = scratch.data();  // the calling thread's buffer, shared with the team below
        // one region: the side parts, the partial products, a barrier, then their sums
#pragma omp parallel if (!omp_in_parallel())
        {
            run_side_parts(extras);
#pragma omp for schedule(static)
            for (std::size_t p = 0; p < inner_blocks; ++p) {
                const std::size_t first = p * kGemmInnerBlock, terms = std::min(kGemmInnerBlock, k - first);
                // columns [first, first + terms) of op(a), rows [first, first + terms) of op(b)
                const T* a_block = transpose_a ? a + first * a_cols : a + first;
                const T* b_block = transpose_b ? b + first : b + first * b_cols;
                blas_gemm(transpose_a, transpose_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(terms), alpha,
                          a_block, lda, b_block, ldb, T(0), partial + p * m * n, static_cast<int>(n));
            }
            if (out_ld == n) {
#pragma omp for schedule(static)
                for (std::size_t i = 0; i < m * n; ++i) {
                    T sum = beta == T(0) ? T(0) : beta * out[i];
                    for (std::size_t p = 0; p < inner_blocks; ++p) sum += partial[p * m * n + i];
                    out[i] = sum;
                }
            } else {  // the same sums, rows of out out_ld apart
#pragma omp for schedule(static)
                for (std::size_t r = 0; r < m; ++r)
                    for (std::size_t c = 0; c < n; ++c) {
                        T sum = beta == T(0) ? T(0) : beta * out[r * out_ld + c];
                        for (std::size_t p = 0; p < inner_blocks; ++p) sum += partial[p * m * n + r * n + c];
                        out[r * out_ld + c] = sum;
                    }
            }
            if (extras != nullptr && extras->epilogue) {
#pragma omp for schedule(static) nowait
                for (std::size_t r = 0; r < m; ++r) run_epilogue(extras, r, 1);
            }
        }
        return;
    }
    if (blocks == 1) {
        if (extras != nullptr)
            for (std::size_t part = 0; part < extras->side_parts; ++part) extras->side(part);
        blas_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, out, ldc);
        run_epilogue(extras, 0, m);
        return;
    }
#pragma omp parallel if (!omp_in_parallel())
    {
        run_side_parts(extras);
#pragma omp for schedule(static)
        for (std::size_t block = 0; block < blocks; ++block) {
            const std::size_t first = block * kGemmRowBlock, rows = std::min(kGemmRowBlock, m - first);
            // rows [first, first + rows) of op(a): rows of a, or columns of a when transposed
            const T* a_block = transpose_a ? a + first : a + first * a_cols;
            blas_gemm(transpose_a, transpose_b, static_cast<int>(rows), n, k, alpha, a_block, lda, b, ldb, beta,
                      out + first * out_ld, ldc);
            run_epilogue(extras, first, rows);
        }
    }
}
}  // namespace detail

namespace detail {
// The product on its path (gemm_checked has checked the shapes).
template <class T>
void gemm_dispatch(MatrixRef<T> out, MatrixRef<const T> a, MatrixRef<const T> b, std::size_t m, std::size_t n, std::size_t k,
                   bool transpose_a, bool transpose_b, T alpha, T beta, SmallGemm kernel, const GemmExtras<T>* extras,
                   Triangle triangle) {
    const std::size_t ldc = out.leading();
    // the blocked kernel over a product from serial code (model.large_gemm), k > 0: cells shared by the threads
    if (kernel == SmallGemm::blocked && triangle == Triangle::none && m > 0 && n > 0 && k > 0 && omp_get_level() == 0) {
        blocked_compute(out.data, ldc, a.data, a.leading(), b.data, b.leading(), m, n, k, transpose_a, transpose_b, alpha,
                        beta, extras);
        return;
    }
    if (m == 0 || n == 0 || k == 0 || kernel == SmallGemm::blocked) {  // one serial call (and the extras serially)
        if (extras != nullptr)
            for (std::size_t part = 0; part < extras->side_parts; ++part) extras->side(part);
        if (m == 0 || n == 0) return;
        if (k == 0) {  // BLAS would be asked for an empty inner product: define the result ourselves
            for (std::size_t r = 0; r < m; ++r)
                for (std::size_t c = 0; c < n; ++c) {
                    T& y = out.data[r * ldc + c];
                    y = beta == T(0) ? T(0) : beta * y;
                }
        } else {
            small_gemm_blocked(out.data, ldc, a.data, a.leading(), b.data, b.leading(), m, n, k, transpose_a, transpose_b,
                               alpha, beta, triangle);
        }
        run_epilogue(extras, 0, m);
        return;
    }
    // (the counted time includes any extras: they run inside the product's parallel region)
    gemm_compute(out.data, ldc, a.data, a.leading(), b.data, b.leading(), m, n, k, transpose_a, transpose_b, alpha, beta,
                 extras);
}

template <class T>
void gemm_checked(MatrixRef<T> out, MatrixRef<const T> a, MatrixRef<const T> b, bool transpose_a, bool transpose_b, T alpha,
                  T beta, SmallGemm kernel, const GemmExtras<T>* extras, Triangle triangle = Triangle::none) {
    const std::size_t m = transpose_a ? a.cols : a.rows;
    const std::size_t k = transpose_a ? a.rows : a.cols;
    const std::size_t k_b = transpose_b ? b.cols : b.rows;
    const std::size_t n = transpose_b ? b.rows : b.cols;
    ICLAB_CHECK(k == k_b, "gemm: inner dimensions differ: op(a) is " << m << "x" << k << ", op(b) is " << k_b << "x" << n);
    ICLAB_CHECK(out.rows == m && out.cols == n,
                "gemm: output is " << out.rows << "x" << out.cols << " but op(a)·op(b) is " << m << "x" << n);
    ICLAB_CHECK(out.leading() >= out.cols && a.leading() >= a.cols && b.leading() >= b.cols,
                "gemm: a row stride is smaller than its row");
    ICLAB_CHECK(triangle == Triangle::none || kernel == SmallGemm::blocked, "gemm: a triangular product needs the blocked kernel");
    // small: called inside a parallel region (per (batch, head)); omp_get_level counts a team of one thread too
    const profile::Scope scope(profile::profiler.enabled && omp_get_level() > 0 ? profile::Kind::gemm_small
                                                                                : profile::Kind::gemm_large);
    // The counter's one place (`iclab bench`, ICLAB_COUNT_WORK): every product with m, n, k > 0, whichever path below
    // runs it (the per-(batch, head) attention products inside a parallel region included), 2 m n k FLOP each (a
    // triangular product too). Off: one predictable branch before and after.
    const bool counted = gemm_counter.enabled && m > 0 && n > 0 && k > 0;
    const double start = counted ? omp_get_wtime() : 0.0;
    gemm_dispatch(out, a, b, m, n, k, transpose_a, transpose_b, alpha, beta, kernel, extras, triangle);
    if (counted) gemm_counter.record(m, n, k, transpose_a, transpose_b, omp_get_wtime() - start);
}

// Compiled once, in framework/nn/gemm.cpp, for float and double (issue 44, build time): every translation unit that
// multiplies used to compile the whole machinery (the kernels, the cells, the dispatch) again, ~6 s of CPU a unit at
// -O3, six units; the linker kept one copy. The code, and so every bit, is the same.
extern template void gemm_checked<float>(MatrixRef<float>, MatrixRef<const float>, MatrixRef<const float>, bool, bool,
                                         float, float, SmallGemm, const GemmExtras<float>*, Triangle);
extern template void gemm_checked<double>(MatrixRef<double>, MatrixRef<const double>, MatrixRef<const double>, bool, bool,
                                          double, double, SmallGemm, const GemmExtras<double>*, Triangle);

}  // namespace detail

// out = alpha * op(a) · op(b) + beta * out. transpose_a / transpose_b apply op = transpose.
// kernel: SmallGemm::blocked (default since 2026-11-27; small_gemm.hpp: each element one multiply-add chain over p in
// order, so the same bits whatever the CPU, the thread count or OpenBLAS's core) or SmallGemm::openblas (the row/inner
// blocking above; its bits depend on the kernel OpenBLAS picks): with blocked, inside a parallel region one serial call
// (the per-(batch, head) attention products, model.small_gemm), from serial code the cells of blocked_compute shared by
// the threads (the linear layers, model.large_gemm).
// triangle (blocked kernel only): the causal structure the product may skip (small_gemm.hpp, Triangle).
template <class T>
void gemm(MatrixRef<T> out, MatrixRef<const T> a, MatrixRef<const T> b, bool transpose_a, bool transpose_b,
          T alpha = T(1), T beta = T(0), SmallGemm kernel = SmallGemm::blocked, Triangle triangle = Triangle::none) {
    detail::gemm_checked(out, a, b, transpose_a, transpose_b, alpha, beta, kernel, static_cast<const GemmExtras<T>*>(nullptr),
                         triangle);
}

// The same with an epilogue and/or side work in the product's parallel region (GemmExtras above).
template <class T>
void gemm(MatrixRef<T> out, MatrixRef<const T> a, MatrixRef<const T> b, bool transpose_a, bool transpose_b, T alpha, T beta,
          const GemmExtras<T>& extras, SmallGemm kernel = SmallGemm::blocked) {
    detail::gemm_checked(out, a, b, transpose_a, transpose_b, alpha, beta, kernel, &extras);
}

template <class T>
void gemm(MatrixRef<T> out, MatrixRef<T> a, MatrixRef<T> b, bool transpose_a, bool transpose_b, T alpha = T(1),
          T beta = T(0), SmallGemm kernel = SmallGemm::blocked) {
    gemm<T>(out, MatrixRef<const T>{a.data, a.rows, a.cols, a.stride}, MatrixRef<const T>{b.data, b.rows, b.cols, b.stride},
            transpose_a, transpose_b, alpha, beta, kernel);
}

}  // namespace iclab::nn
