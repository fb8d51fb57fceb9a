// The blocked kernel over whole products (model.large_gemm: blocked; framework/nn/gemm.hpp blocked_compute): the
// products called from serial code are split into cells that the threads share, and op(B)ᵀ is transposed once. Each
// element is still Σ_p in order, so the split must change no bit: every product equals one serial small_gemm_blocked
// call byte for byte, with 1 and 2 threads, and so do the linear layers' fused epilogues and side work. (Accuracy
// against the exact product: tests/test_small_gemm.cpp, whose sizes up to 65 rows also run through the cells.)
#include <catch2/catch.hpp>

#include <omp.h>

#include <vector>

#include "framework/core/rng.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/layers.hpp"
#include "tests/attention_variants.hpp"

namespace iclab_test_large_gemm {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

template <class T>
std::vector<T> random_values(std::size_t n, Rng& rng) {
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(rng.normal());
    return v;
}

using testing::same_bits;

// C = alpha op(A) op(B) + beta C0 (C rows `pad` longer than n) through nn::gemm (cells, threads) and as one serial call.
template <class T>
void check_cells(std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb, T alpha, T beta, std::size_t pad, Rng& rng) {
    const std::size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n, ldc = n + pad;
    const auto a = random_values<T>(a_rows * a_cols, rng), b = random_values<T>(b_rows * b_cols, rng);
    const auto c0 = random_values<T>(m * ldc, rng);
    std::vector<T> serial = c0;
    nn::small_gemm_blocked(serial.data(), ldc, a.data(), a_cols, b.data(), b_cols, m, n, k, ta, tb, alpha, beta);
    const int saved = omp_get_max_threads();
    for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        std::vector<T> cells = c0;
        nn::gemm<T>(nn::strided_matrix(cells.data(), m, n, ldc), nn::matrix(a.data(), a_rows, a_cols),
                    nn::matrix(b.data(), b_rows, b_cols), ta, tb, alpha, beta, nn::SmallGemm::blocked);
        INFO("m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb << " beta " << beta << " threads " << threads);
        CHECK(same_bits(cells, serial));
    }
    omp_set_num_threads(saved);
}

// linear_forward with bias and residual (the epilogue) and linear_backward (d_in, d_W, d_b as side work), blocked,
// against serial blocked products followed by the adds in the same order.
template <class T>
void check_linear(std::size_t rows, std::size_t in_dim, std::size_t out_dim, Rng& rng) {
    const auto x = random_values<T>(rows * in_dim, rng), w = random_values<T>(in_dim * out_dim, rng);
    const auto bias = random_values<T>(out_dim, rng), residual = random_values<T>(rows * out_dim, rng);
    const auto d_y = random_values<T>(rows * out_dim, rng), d_w0 = random_values<T>(in_dim * out_dim, rng);
    const auto d_b0 = random_values<T>(out_dim, rng);
    std::vector<T> y_ref(rows * out_dim), d_x_ref(rows * in_dim), d_w_ref = d_w0, d_b_ref = d_b0;
    nn::small_gemm_blocked(y_ref.data(), out_dim, x.data(), in_dim, w.data(), out_dim, rows, out_dim, in_dim, false, false,
                           T(1), T(0));
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out_dim; ++o) {
            y_ref[r * out_dim + o] += bias[o];
            y_ref[r * out_dim + o] += residual[r * out_dim + o];
        }
    nn::small_gemm_blocked(d_x_ref.data(), in_dim, d_y.data(), out_dim, w.data(), out_dim, rows, in_dim, out_dim, false, true,
                           T(1), T(0));
    nn::small_gemm_blocked(d_w_ref.data(), out_dim, x.data(), in_dim, d_y.data(), out_dim, in_dim, out_dim, rows, true, false,
                           T(1), T(1));
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t o = 0; o < out_dim; ++o) d_b_ref[o] += d_y[r * out_dim + o];
    const int saved = omp_get_max_threads();
    for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        std::vector<T> y(rows * out_dim), d_x(rows * in_dim), d_w = d_w0, d_b = d_b0;
        nn::linear_forward<T>(y.data(), x.data(), w.data(), bias.data(), rows, in_dim, out_dim, residual.data(),
                              nn::SmallGemm::blocked);
        nn::linear_backward<T>(d_x.data(), d_w.data(), d_b.data(), d_y.data(), x.data(), w.data(), rows, in_dim, out_dim, false,
                               nn::SmallGemm::blocked);
        INFO("rows " << rows << " in " << in_dim << " out " << out_dim << " threads " << threads);
        CHECK(same_bits(y, y_ref));
        CHECK(same_bits(d_x, d_x_ref));
        CHECK(same_bits(d_w, d_w_ref));
        CHECK(same_bits(d_b, d_b_ref));
    }
    omp_set_num_threads(saved);
}

}  // namespace

TEST_CASE("blocked products split into cells equal one serial blocked call byte for byte, 1 and 2 threads",
          "[gemm][large_gemm][determinism]") {
    Rng rng(71);
    struct Shape {
        std::size_t m, n, k;
    };
    // row cells of about 128, as many as a multiple of the threads (m >= 512: 1920 = 16 × 120, 600 = 5 × 104 + 80) and of
    // 32 with column cells of 64; a weight gradient (m small, k = B·T); edges
    for (const Shape s : {Shape{1920, 40, 20}, Shape{600, 70, 33}, Shape{520, 130, 90}, Shape{40, 150, 3000}, Shape{129, 65, 17}, Shape{7, 200, 300},
                          Shape{256, 384, 128}})
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                check_cells<float>(s.m, s.n, s.k, ta, tb, 1.0f, 0.0f, 0, rng);
                check_cells<float>(s.m, s.n, s.k, ta, tb, 0.5f, 1.0f, 3, rng);
                check_cells<double>(s.m, s.n, s.k, ta, tb, 1.0, 0.0, 0, rng);
                check_cells<double>(s.m, s.n, s.k, ta, tb, -2.0, 0.5, 5, rng);
            }
}

TEST_CASE("linear layers with the blocked kernel equal serial blocked products plus the adds byte for byte",
          "[gemm][large_gemm][fused]") {
    Rng rng(72);
    check_linear<float>(640, 48, 144, rng);  // row cells of 128 (epilogue: whole rows)
    check_linear<float>(96, 64, 256, rng);   // row cells of 32, column cells for the weight gradient
    check_linear<double>(530, 24, 40, rng);
}

}  // namespace iclab_test_large_gemm
