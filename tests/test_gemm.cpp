// The checked GEMM wrapper: against a naive triple loop for every transpose combination and each way of
// splitting a product (rows, inner dimension), shape errors,
// and bit-identical results for 1 and 2 threads (row blocks never split an inner product).
#include <catch2/catch.hpp>

#include <omp.h>

#include <cstring>

#include "framework/core/rng.hpp"
#include "framework/nn/gemm.hpp"

namespace iclab_test_gemm {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {
struct GemmShape {
    std::size_t m, n, k;  // op(a) (m, k), op(b) (k, n)
};
}  // namespace

TEST_CASE("gemm matches a naive product for every transpose combination", "[gemm]") {
    Rng rng(5);
    // one row block; several row blocks; one row block with a long inner dimension (split along k)
    for (const auto& shape : {GemmShape{67, 45, 93}, GemmShape{300, 45, 93}, GemmShape{67, 45, 2500}}) {
        const std::size_t m = shape.m, n = shape.n, k = shape.k;
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            std::vector<double> a(m * k), b(k * n), c(m * n), expected(m * n);
            for (auto& x : a) x = rng.normal();
            for (auto& x : b) x = rng.normal();
            for (auto& x : c) x = rng.normal();
            auto A = [&](std::size_t i, std::size_t p) { return ta ? a[p * m + i] : a[i * k + p]; };
            auto B = [&](std::size_t p, std::size_t j) { return tb ? b[j * k + p] : b[p * n + j]; };
            for (std::size_t i = 0; i < m; ++i)
                for (std::size_t j = 0; j < n; ++j) {
                    double s = 0.0;
                    for (std::size_t p = 0; p < k; ++p) s += A(i, p) * B(p, j);
                    expected[i * n + j] = 0.5 * s + 2.0 * c[i * n + j];
                }
            nn::gemm<double>(nn::matrix(c.data(), m, n), nn::matrix<const double>(a.data(), ta ? k : m, ta ? m : k),
                             nn::matrix<const double>(b.data(), tb ? n : k, tb ? k : n), ta, tb, 0.5, 2.0);
            for (std::size_t i = 0; i < m * n; ++i) REQUIRE(c[i] == Approx(expected[i]).epsilon(1e-12).margin(1e-11));  // sums of ~k unit terms
        }
    }
}

TEST_CASE("gemm rejects mismatched shapes", "[gemm]") {
    std::vector<float> a(6), b(6), c(4), d(9);
    CHECK_THROWS_WITH(nn::gemm<float>(nn::matrix(c.data(), 2, 2), nn::matrix<const float>(a.data(), 2, 3),
                                      nn::matrix<const float>(b.data(), 2, 3), false, false),
                      Catch::Contains("inner dimensions"));
    // aᵀ (3x2) · b (2x3) is 3x3: a 2x2 output is refused, a 3x3 one accepted
    CHECK_THROWS_WITH(nn::gemm<float>(nn::matrix(c.data(), 2, 2), nn::matrix<const float>(a.data(), 2, 3),
                                      nn::matrix<const float>(b.data(), 2, 3), true, false),
                      Catch::Contains("output is 2x2"));
    CHECK_NOTHROW(nn::gemm<float>(nn::matrix(d.data(), 3, 3), nn::matrix<const float>(a.data(), 2, 3),
                                  nn::matrix<const float>(b.data(), 2, 3), true, false));
}

TEST_CASE("gemm results do not depend on the thread count", "[gemm][determinism]") {
    Rng rng(9);
    // split by rows (512 x 96 x 384) and along the inner dimension (128 x 96 x 4096)
    for (const auto& shape : {GemmShape{512, 96, 384}, GemmShape{128, 96, 4096}}) {
        const std::size_t m = shape.m, n = shape.n, k = shape.k;
    std::vector<float> a(m * k), b(k * n);
    for (auto& x : a) x = static_cast<float>(rng.normal());
    for (auto& x : b) x = static_cast<float>(rng.normal());
    for (bool ta : {false, true}) {
        std::vector<float> one(m * n), two(m * n);
        const int saved = omp_get_max_threads();
        omp_set_num_threads(1);
        nn::gemm<float>(nn::matrix(one.data(), m, n), nn::matrix<const float>(a.data(), ta ? k : m, ta ? m : k),
                        nn::matrix<const float>(b.data(), k, n), ta, false);
        omp_set_num_threads(2);
        nn::gemm<float>(nn::matrix(two.data(), m, n), nn::matrix<const float>(a.data(), ta ? k : m, ta ? m : k),
                        nn::matrix<const float>(b.data(), k, n), ta, false);
        omp_set_num_threads(saved);
        CHECK(one == two);
    }
    }
}

TEST_CASE("the gemm counter records FLOPs and calls per shape only while enabled", "[gemm][bench]") {
    std::vector<float> a(300 * 40), b(40 * 20), c(300 * 20);
    const auto product = [&] {
        nn::gemm<float>(nn::matrix(c.data(), 300, 20), nn::matrix<const float>(a.data(), 300, 40),
                        nn::matrix<const float>(b.data(), 40, 20), false, false);
    };
    nn::gemm_counter.reset();
    product();
    CHECK(nn::gemm_counter.shapes.empty());  // off by default
    nn::gemm_counter.enabled = true;
    product();
    product();
#pragma omp parallel for num_threads(2)
    for (int i = 0; i < 4; ++i)  // calls from inside a parallel region (as attention makes them), each on its own output
        nn::gemm<float>(nn::matrix(c.data() + i * 20, 1, 20), nn::matrix<const float>(a.data(), 1, 40),
                        nn::matrix<const float>(b.data(), 40, 20), false, false, 1.0f, 0.0f);
    nn::gemm_counter.enabled = false;
    product();
    const nn::GemmTally total = nn::gemm_counter.total();
    CHECK(total.calls == 6);
    CHECK(total.flops == 2.0 * (2 * 300 * 20 * 40 + 4 * 1 * 20 * 40));
    CHECK(total.seconds > 0.0);
    REQUIRE(nn::gemm_counter.shapes.size() == 2);
    const nn::GemmTally& big = nn::gemm_counter.shapes.at(nn::GemmShapeKey{300, 20, 40, false, false, false});
    CHECK(big.calls == 2);
    nn::gemm_counter.reset();
    CHECK(nn::gemm_counter.shapes.empty());
}

// Issue 44: the counter sits in one place (detail::gemm_checked), so every path counts a product once, 2 m n k FLOP:
// the blocked cells from serial code, the per-(batch, head) calls in a parallel region (a causal triangle counted
// whole, as the estimates count it), the OpenBLAS row blocks; an empty inner product is not counted.
TEST_CASE("the gemm counter counts a product once on every kernel path", "[gemm][bench]") {
    const std::size_t T = 24, F = 8;
    std::vector<double> q(T * F, 0.5), k(T * F, 0.25), s(T * T), big_a(300 * 40, 1.0), big_b(40 * 20, 1.0), big_c(300 * 20);
    nn::gemm_counter.reset();
    nn::gemm_counter.enabled = true;
#pragma omp parallel for num_threads(2)
    for (int head = 0; head < 2; ++head) {  // attention's scores S = tril(Q Kᵀ), one product per head
        std::vector<double> own(T * T);
        nn::gemm<double>(nn::matrix(own.data(), T, T), nn::matrix<const double>(q.data(), T, F), nn::matrix<const double>(k.data(), T, F),
                         false, true, 1.0, 0.0, nn::SmallGemm::blocked, nn::Triangle::lower_out);
    }
    for (const nn::SmallGemm kernel : {nn::SmallGemm::blocked, nn::SmallGemm::openblas})
        nn::gemm<double>(nn::matrix(big_c.data(), 300, 20), nn::matrix<const double>(big_a.data(), 300, 40),
                         nn::matrix<const double>(big_b.data(), 40, 20), false, false, 1.0, 0.0, kernel);
    nn::gemm<double>(nn::matrix(s.data(), T, T), nn::matrix<const double>(q.data(), T, 0), nn::matrix<const double>(k.data(), 0, T),
                     false, false);  // k = 0: C = 0, no arithmetic
    nn::gemm_counter.enabled = false;
    const nn::GemmTally total = nn::gemm_counter.total();
    CHECK(total.calls == 4);
    CHECK(total.flops == 2.0 * (2.0 * T * T * F + 2.0 * 300 * 20 * 40));
    CHECK(big_c[0] == 40.0);
    nn::gemm_counter.reset();
}

// Strided views (a head's columns of the QKV activations, read and written in place by the attention kernels) give
// the same bits as the same product on contiguous copies, in every path of the wrapper, and leave the elements
// between the rows of the output untouched.
TEST_CASE("gemm on strided views equals gemm on contiguous copies bit for bit", "[gemm]") {
    Rng rng(8);
    const std::size_t pad = 7;  // extra columns on each row of every strided buffer
    for (const auto& shape : {GemmShape{64, 32, 64}, GemmShape{64, 64, 32}, GemmShape{300, 45, 93}, GemmShape{67, 45, 2500}}) {
        const std::size_t m = shape.m, n = shape.n, k = shape.k;
        for (bool ta : {false, true})
            for (bool tb : {false, true})
                for (float beta : {0.0f, 1.0f}) {
                    const std::size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
                    std::vector<float> a(a_rows * a_cols), b(b_rows * b_cols), c(m * n);
                    for (auto& x : a) x = static_cast<float>(rng.normal());
                    for (auto& x : b) x = static_cast<float>(rng.normal());
                    for (auto& x : c) x = static_cast<float>(rng.normal());
                    // the same values with rows cols + pad apart; the padding holds a marker
                    const auto widen = [&](const std::vector<float>& x, std::size_t rows, std::size_t cols) {
                        std::vector<float> wide(rows * (cols + pad), -123.0f);
                        for (std::size_t r = 0; r < rows; ++r)
                            std::copy(x.begin() + r * cols, x.begin() + (r + 1) * cols, wide.begin() + r * (cols + pad));
                        return wide;
                    };
                    const std::vector<float> a_wide = widen(a, a_rows, a_cols), b_wide = widen(b, b_rows, b_cols);
                    std::vector<float> c_wide = widen(c, m, n);
                    nn::gemm<float>(nn::matrix(c.data(), m, n), nn::matrix<const float>(a.data(), a_rows, a_cols),
                                    nn::matrix<const float>(b.data(), b_rows, b_cols), ta, tb, 1.0f, beta);
                    nn::gemm<float>(nn::strided_matrix(c_wide.data(), m, n, n + pad),
                                    nn::strided_matrix(a_wide.data(), a_rows, a_cols, a_cols + pad),
                                    nn::strided_matrix(b_wide.data(), b_rows, b_cols, b_cols + pad), ta, tb, 1.0f, beta);
                    bool same = true, padding_kept = true;
                    for (std::size_t r = 0; r < m; ++r) {
                        same = same && std::memcmp(c.data() + r * n, c_wide.data() + r * (n + pad), n * sizeof(float)) == 0;
                        for (std::size_t j = n; j < n + pad; ++j) padding_kept = padding_kept && c_wide[r * (n + pad) + j] == -123.0f;
                    }
                    INFO("m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb << " beta " << beta);
                    CHECK(same);
                    CHECK(padding_kept);
                }
    }
}

}  // namespace iclab_test_gemm
