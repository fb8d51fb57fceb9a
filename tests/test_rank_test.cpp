// Kendall's tau and its exact one-sided p-value (framework/io/rank_test.hpp) against hand-counted cases: the n = 5
// values scripts/python/rank_test.py is tested on (ctest python_rank_test: the same five-pool orders and p = 1/120,
// 5/120, 14/120, 71/120), the Mahonian numbers of n = 5 (OEIS A008302) over all 120 orders, ties in y and in x
// counted by hand, the Mahonian path against a brute-force count over every order, a rising series that must fail
// the declared rule p <= 0.05, and bad input refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/rank_test.hpp"

namespace iclab_test_rank_test {  // this file's names (unity build: CMakeLists.txt)

using iclab::io::kendall_falls;
using iclab::io::kendall_tau;

namespace {

const std::vector<double> kPools = {10, 30, 100, 300, 1000};  // Figure 6's batches (cpu2: x 64 sequences)

// P(S' <= S) by counting every order of y against x (independent of rank_test.cpp: its own S, its own loop).
double brute_p(const std::vector<double>& x, const std::vector<double>& y) {
    auto s_of = [&](const std::vector<double>& v) {
        long long s = 0;
        for (std::size_t i = 0; i < x.size(); ++i)
            for (std::size_t j = i + 1; j < x.size(); ++j) {
                const double d = (x[j] - x[i]) * (v[j] - v[i]);
                s += (d > 0) - (d < 0);
            }
        return s;
    };
    const long long observed = s_of(y);
    std::vector<std::size_t> order(y.size());
    std::iota(order.begin(), order.end(), 0);
    double hits = 0, total = 0;
    do {
        std::vector<double> v;
        for (std::size_t i : order) v.push_back(y[i]);
        total += 1, hits += s_of(v) <= observed;
    } while (std::next_permutation(order.begin(), order.end()));
    return hits / total;
}

}  // namespace

TEST_CASE("rank test: tau and exact p of five pools by hand (the Python twin's cases)", "[rank_test][claims]") {
    auto t = kendall_falls(kPools, {5, 4, 3, 2, 1});  // every pair falls
    CHECK(t.tau == -1.0);
    CHECK(t.score == -10);
    CHECK(t.pairs == 10);
    CHECK(t.p == Approx(1.0 / 120).epsilon(1e-14));
    t = kendall_falls(kPools, {5, 4, 3, 1, 2});  // one pair out of order: D = 9, p = (M(5,9) + M(5,10)) / 120 = 5/120
    CHECK(t.tau == Approx(-0.8).epsilon(1e-15));
    CHECK(t.p == Approx(5.0 / 120).epsilon(1e-14));
    CHECK(t.p <= 0.05);  // the declared rule holds with one pair of ten out of order
    t = kendall_falls(kPools, {5, 3, 4, 1, 2});  // two out of order: D = 8, p = (9 + 4 + 1) / 120
    CHECK(t.tau == Approx(-0.6).epsilon(1e-15));
    CHECK(t.p == Approx(14.0 / 120).epsilon(1e-14));
    CHECK(t.p > 0.05);  // ... and fails with two
    // experiments/prefix_vs_causal/README.md Figure 6, cpu2 seed 0, N-LR prefix: the end points fall, the ranks do
    // not: C = D = 5, tau = 0, p = P(D' >= 5) = (22 + 20 + 15 + 9 + 4 + 1) / 120 = 71/120
    t = kendall_falls(kPools, {8.94e-04, 9.73e-05, 5.48e-05, 1.87e-03, 6.01e-04});
    CHECK(t.tau == 0.0);
    CHECK(t.p == Approx(71.0 / 120).epsilon(1e-14));
    t = kendall_falls(kPools, {43.7, 37.3, 30.9, 30.0, 29.9});  // MC causal: tau = -1
    CHECK(t.p == Approx(1.0 / 120).epsilon(1e-14));
    CHECK(kendall_tau(kPools, {1, 3, 2, 4, 5}) == Approx(0.8).epsilon(1e-15));
}

TEST_CASE("rank test: a rising series fails the rule (negative control)", "[rank_test][claims]") {
    const auto t = kendall_falls(kPools, {1, 2, 3, 4, 5});
    CHECK(t.tau == 1.0);
    CHECK(t.p == 1.0);  // every order has S' <= 10
    CHECK_FALSE(t.p <= 0.05);
    const auto almost = kendall_falls(kPools, {2, 1, 3, 4, 5});  // rising but one pair: tau = 0.8, p = 119/120
    CHECK(almost.p == Approx(119.0 / 120).epsilon(1e-14));
}

TEST_CASE("rank test: p over all 120 orders of five is the Mahonian tail", "[rank_test][claims]") {
    const double mahonian[] = {1, 4, 9, 15, 20, 22, 20, 15, 9, 4, 1};  // M(5, k), k = 0..10 discordant pairs
    std::vector<double> y = {1, 2, 3, 4, 5};
    int orders = 0;
    do {
        int discordant = 0;
        for (int i = 0; i < 5; ++i)
            for (int j = i + 1; j < 5; ++j) discordant += y[j] < y[i];
        double tail = 0;
        for (int k = discordant; k <= 10; ++k) tail += mahonian[k];
        const auto t = kendall_falls(kPools, y);
        INFO("order " << orders << ", " << discordant << " discordant");
        CHECK(t.p == Approx(tail / 120).epsilon(1e-14));
        CHECK(t.tau == Approx(1.0 - 4.0 * discordant / 20.0).margin(1e-15));
        ++orders;
    } while (std::next_permutation(y.begin(), y.end()));
    CHECK(orders == 120);
}

TEST_CASE("rank test: ties in y and in x, counted by hand", "[rank_test][claims]") {
    // y = 5, 4, 4, 2, 1: the tied pair counts 0, the other 9 fall: S = -9, tau = -0.9. S' = -9 needs the 9 untied pairs
    // all falling: 5 first, the two 4s next in either order, then 2, 1: 2 of 120 orders, p = 1/60.
    auto t = kendall_falls(kPools, {5, 4, 4, 2, 1});
    CHECK(t.score == -9);
    CHECK(t.tau == Approx(-0.9).epsilon(1e-15));
    CHECK(t.p == Approx(1.0 / 60).epsilon(1e-14));
    // n = 3, y = 1, 1, 0 (the 1s told apart as a, b): orders a b 0 and b a 0 give S' = -2, a 0 b and b 0 a give 0,
    // 0 a b and 0 b a give 2: p = P(S' <= -2) = 2/6.
    t = kendall_falls({1, 2, 3}, {1, 1, 0});
    CHECK(t.tau == Approx(-2.0 / 3).epsilon(1e-15));
    CHECK(t.p == Approx(1.0 / 3).epsilon(1e-14));
    // a tie in x: x = 4, 8, 8 leaves 2 pairs; y = 3, 2, 1 falls on both (tau = -1). S' = -2 needs y_0 the largest:
    // 2 of 6 orders.
    t = kendall_falls({4, 8, 8}, {3, 2, 1});
    CHECK(t.pairs == 2);
    CHECK(t.tau == -1.0);
    CHECK(t.p == Approx(1.0 / 3).epsilon(1e-14));
    CHECK(std::isnan(kendall_tau({8, 8}, {3, 2})));
}

TEST_CASE("rank test: the Mahonian path equals a count over every order", "[rank_test][claims]") {
    std::mt19937 gen(7);
    std::normal_distribution<double> normal;
    for (int trial = 0; trial < 20; ++trial) {
        std::vector<double> x = {1, 2, 3, 4, 5, 6}, y(6);
        for (double& v : y) v = normal(gen);
        INFO("trial " << trial);
        CHECK(kendall_falls(x, y).p == Approx(brute_p(x, y)).epsilon(1e-14));
    }
}

TEST_CASE("rank test: bad input refused", "[rank_test][claims]") {
    CHECK_THROWS_AS(kendall_falls({1, 2, 3}, {1, 2}), iclab::InputError);
    CHECK_THROWS_AS(kendall_falls({1}, {1}), iclab::InputError);
    CHECK_THROWS_AS(kendall_falls({1, 2, 3}, {1, std::numeric_limits<double>::quiet_NaN(), 3}), iclab::InputError);
    std::vector<double> ten(10), tied(10, 1.0);
    std::iota(ten.begin(), ten.end(), 0.0);
    CHECK_THROWS_WITH(kendall_falls(ten, tied), Catch::Contains("at most 9"));
}

}  // namespace iclab_test_rank_test
