#pragma once
// The one matrix-multiply entry point of iclab (CONVENTIONS.md). Every GEMM goes through here.
//   C (m, n) = alpha * op(A) (m, k) · op(B) (k, n) + beta * C        (row-major storage)
// xt::blas::gemm does not check the output's shape (a wrong one makes OpenBLAS print
// "illegal value" and return silently), so the shapes are checked here, always.
#include <cstddef>
#include <xtensor-blas/xblas.hpp>
#include <xtensor/xadapt.hpp>

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
    if (k == 0) {  // BLAS would be asked for a zero-size inner product: define the result ourselves
        for (std::size_t i = 0; i < m * n; ++i) out.data[i] = beta == T(0) ? T(0) : beta * out.data[i];
        return;
    }
    auto a_view = xt::adapt(a.data, a.rows * a.cols, xt::no_ownership(), std::array<std::size_t, 2>{a.rows, a.cols});
    auto b_view = xt::adapt(b.data, b.rows * b.cols, xt::no_ownership(), std::array<std::size_t, 2>{b.rows, b.cols});
    auto out_view = xt::adapt(out.data, out.rows * out.cols, xt::no_ownership(), std::array<std::size_t, 2>{out.rows, out.cols});
    xt::blas::gemm(a_view, b_view, out_view, transpose_a, transpose_b, alpha, beta);
}

template <class T>
void gemm(MatrixRef<T> out, MatrixRef<T> a, MatrixRef<T> b, bool transpose_a, bool transpose_b, T alpha = T(1),
          T beta = T(0)) {
    gemm<T>(out, MatrixRef<const T>{a.data, a.rows, a.cols}, MatrixRef<const T>{b.data, b.rows, b.cols}, transpose_a,
            transpose_b, alpha, beta);
}

}  // namespace iclab::nn
