#pragma once
// The one matrix-multiply entry point of iclab (CONVENTIONS.md). Every GEMM goes through here.
//   C (m, n) = alpha * op(A) (m, k) · op(B) (k, n) + beta * C        (row-major storage)
// The shapes are always checked: BLAS does not check the output's shape (a wrong one makes OpenBLAS
// print "illegal value" and return silently).
//
// Threading: OpenBLAS runs single-threaded (framework/core/threads.hpp); large products are split here
// into blocks of kGemmRowBlock rows of C that OpenMP threads share. The blocks are fixed by the shape
// alone, never by the thread count: OpenBLAS's result for a row depends on how many rows one call
// gets (measured: splitting 512 rows in two halves changed float results), so a split that followed
// the thread count would make results depend on it. tests/test_gemm.cpp checks 1 vs 2 threads.
// We call CBLAS directly rather than xt::blas::gemm because a row block of op(A) = Aᵀ is a column block
// of A, which needs a leading dimension that xtensor adaptors cannot express without a copy.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstddef>

#include "framework/core/check.hpp"

namespace iclab::nn {

// A row-major matrix viewed over memory owned elsewhere (a flat parameter or activation buffer).
template <class T>
struct MatrixRef {
    T* data;
    std::size_t rows;
    std::size_t cols;
};

template <class T>
MatrixRef<T> matrix(T* data, std::size_t rows, std::size_t cols) {
    return {data, rows, cols};
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
}  // namespace detail

// out = alpha * op(a) · op(b) + beta * out. transpose_a / transpose_b apply op = transpose.
template <class T>
void gemm(MatrixRef<T> out, MatrixRef<const T> a, MatrixRef<const T> b, bool transpose_a, bool transpose_b,
          T alpha = T(1), T beta = T(0)) {
    const std::size_t m = transpose_a ? a.cols : a.rows;
    const std::size_t k = transpose_a ? a.rows : a.cols;
    const std::size_t k_b = transpose_b ? b.cols : b.rows;
    const std::size_t n = transpose_b ? b.rows : b.cols;
    ICLAB_CHECK(k == k_b, "gemm: inner dimensions differ: op(a) is " << m << "x" << k << ", op(b) is " << k_b << "x" << n);
    ICLAB_CHECK(out.rows == m && out.cols == n,
                "gemm: output is " << out.rows << "x" << out.cols << " but op(a)·op(b) is " << m << "x" << n);
    if (m == 0 || n == 0) return;
    if (k == 0) {  // BLAS would be asked for an empty inner product: define the result ourselves
        for (std::size_t i = 0; i < m * n; ++i) out.data[i] = beta == T(0) ? T(0) : beta * out.data[i];
        return;
    }
    const int lda = static_cast<int>(std::max<std::size_t>(a.cols, 1)), ldb = static_cast<int>(std::max<std::size_t>(b.cols, 1));
    const int ldc = static_cast<int>(n);
    const std::size_t blocks = (m + detail::kGemmRowBlock - 1) / detail::kGemmRowBlock;
    if (blocks == 1) {
        detail::blas_gemm(transpose_a, transpose_b, m, n, k, alpha, a.data, lda, b.data, ldb, beta, out.data, ldc);
        return;
    }
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (std::size_t block = 0; block < blocks; ++block) {
        const std::size_t first = block * detail::kGemmRowBlock, rows = std::min(detail::kGemmRowBlock, m - first);
        // rows [first, first + rows) of op(a): rows of a, or columns of a when transposed
        const T* a_block = transpose_a ? a.data + first : a.data + first * a.cols;
        detail::blas_gemm(transpose_a, transpose_b, static_cast<int>(rows), n, k, alpha, a_block, lda, b.data, ldb, beta,
                          out.data + first * n, ldc);
    }
}

template <class T>
void gemm(MatrixRef<T> out, MatrixRef<T> a, MatrixRef<T> b, bool transpose_a, bool transpose_b, T alpha = T(1),
          T beta = T(0)) {
    gemm<T>(out, MatrixRef<const T>{a.data, a.rows, a.cols}, MatrixRef<const T>{b.data, b.rows, b.cols}, transpose_a,
            transpose_b, alpha, beta);
}

}  // namespace iclab::nn
