// The checked GEMM wrapper: against a naive triple loop for every transpose combination, shape errors,
// and bit-identical results for 1 and 2 threads (row blocks never split an inner product).
#include <catch2/catch.hpp>

#include <omp.h>

#include "framework/core/rng.hpp"
#include "framework/nn/gemm.hpp"

using namespace iclab;

TEST_CASE("gemm matches a naive product for every transpose combination", "[gemm]") {
    Rng rng(5);
    const std::size_t m = 67, n = 45, k = 93;
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
            for (std::size_t i = 0; i < m * n; ++i) REQUIRE(c[i] == Approx(expected[i]).epsilon(1e-12));
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
    const std::size_t m = 512, n = 96, k = 384;
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
