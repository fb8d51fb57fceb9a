// Kendall's tau and its exact one-sided p-value (framework/io/rank_test.hpp).
#include "framework/io/rank_test.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "framework/core/check.hpp"

namespace iclab::io {

namespace {

int sign(double v) { return (v > 0.0) - (v < 0.0); }

// S of y against x (the top of rank_test.hpp), y read through `order` (y[order[i]] stands at x[i]).
long long score(const std::vector<double>& x, const std::vector<double>& y, const std::vector<std::size_t>& order) {
    long long s = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = i + 1; j < x.size(); ++j) s += sign(x[j] - x[i]) * sign(y[order[j]] - y[order[i]]);
    return s;
}

bool has_ties(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) != v.end();
}

// M(n, k), k = 0..n(n-1)/2: the permutations of n items with k inversions (insert item m: 0..m-1 more inversions).
std::vector<double> inversion_counts(std::size_t n) {
    std::vector<double> counts{1.0};
    for (std::size_t m = 2; m <= n; ++m) {
        std::vector<double> next(counts.size() + m - 1, 0.0);
        for (std::size_t k = 0; k < counts.size(); ++k)
            for (std::size_t extra = 0; extra < m; ++extra) next[k + extra] += counts[k];
        counts = std::move(next);
    }
    return counts;
}

}  // namespace

double kendall_tau(const std::vector<double>& x, const std::vector<double>& y) {
    ICLAB_CHECK(x.size() == y.size(), "kendall_tau: " << x.size() << " x for " << y.size() << " y");
    // A NaN makes tau NaN (second audit of issue 45): sign(NaN) would count its pairs as ties, so an all-NaN error
    // column gave tau = 0, a finite value that "errors grow" then judged "not reproduced" instead of inconclusive.
    for (std::size_t i = 0; i < x.size(); ++i)
        if (std::isnan(x[i]) || std::isnan(y[i])) return std::numeric_limits<double>::quiet_NaN();
    std::vector<std::size_t> identity(x.size());
    std::iota(identity.begin(), identity.end(), 0);
    std::size_t pairs = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        for (std::size_t j = i + 1; j < x.size(); ++j) pairs += x[i] != x[j];
    return pairs > 0 ? static_cast<double>(score(x, y, identity)) / static_cast<double>(pairs) : std::numeric_limits<double>::quiet_NaN();
}

KendallTest kendall_falls(const std::vector<double>& x, const std::vector<double>& y) {
    const std::size_t n = x.size();
    ICLAB_INPUT_CHECK(n == y.size() && n >= 2, "Kendall's test needs two sequences of one length >= 2, got " << n << " and " << y.size());
    for (std::size_t i = 0; i < n; ++i)
        ICLAB_INPUT_CHECK(std::isfinite(x[i]) && std::isfinite(y[i]), "Kendall's test: value " << i << " is not finite");
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    KendallTest t;
    t.score = score(x, y, order);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) t.pairs += x[i] != x[j];
    t.tau = t.pairs > 0 ? static_cast<double>(t.score) / static_cast<double>(t.pairs) : std::numeric_limits<double>::quiet_NaN();
    if (!has_ties(x) && !has_ties(y)) {
        ICLAB_INPUT_CHECK(n <= 18, "Kendall's exact test: " << n << " values, at most 18");
        // S = C(n, 2) - 2 D; S' <= S  <=>  D' >= D
        const std::size_t discordant = static_cast<std::size_t>((static_cast<long long>(t.pairs) - t.score) / 2);
        const std::vector<double> counts = inversion_counts(n);
        double tail = 0.0, total = 0.0;
        for (std::size_t k = 0; k < counts.size(); ++k) total += counts[k], tail += k >= discordant ? counts[k] : 0.0;
        t.p = tail / total;
        return t;
    }
    ICLAB_INPUT_CHECK(n <= 9, "Kendall's exact test with tied values enumerates the n! orders: " << n << " values, at most 9");
    double at_most = 0.0, total = 0.0;  // every order of the y values against x, the tied ones told apart
    do {
        total += 1.0;
        at_most += score(x, y, order) <= t.score ? 1.0 : 0.0;
    } while (std::next_permutation(order.begin(), order.end()));
    t.p = at_most / total;
    return t;
}

}  // namespace iclab::io
