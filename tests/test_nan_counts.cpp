// Counts over measured values keep a NaN (issue 45, second audit): a NaN is neither above nor below a bar, so a count
// that skipped it read a NaN curve as "0 increases", "0 sequences with rho > 1" or "never below 1e-2", and lsa_gd's
// claims "= 0" and "> 100" passed on it. framework/core/measure.hpp's count_above, count_increases and
// first_index_below are NaN when any value they read is NaN, and the finite counts of the loops they replace
// otherwise; each of lsa_gd's three sites is checked with a NaN injected (causal_ice_mse_increases,
// fig2r_mu0_first_n_below_1e-2_min, causal2_eta*_sequences_with_rho_S_above_1).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "experiments/lsa_gd/study.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/rng.hpp"

namespace iclab_test_nan_counts {  // this file's names (unity build: CMakeLists.txt)

namespace lsa = iclab::experiments::lsa_study;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const lsa::Check& check_named(const lsa::Study& study, const std::string& name) {
    for (const lsa::Check& c : study.checks)
        if (c.name == name) return c;
    FAIL("no check " << name);
    return study.checks.front();
}

}  // namespace

TEST_CASE("nan counts: a NaN anywhere makes count_above, count_increases and first_index_below NaN", "[nan]") {
    const std::vector<double> values{0.5, 2.0, 1.5, 3.0, 0.1};
    CHECK(iclab::count_above(values, 1.0) == 3.0);
    CHECK(iclab::count_increases(values) == 2.0);
    CHECK(iclab::first_index_below(values, 1, 4, 1.0) == 4.0);
    CHECK(iclab::first_index_below(values, 1, 3, 1.0) == 4.0);  // none in [1, 3]: last + 1
    CHECK(iclab::first_index_below(values, 0, 4, 1.0) == 0.0);
    for (std::size_t at = 0; at < values.size(); ++at) {  // first, middle, last
        std::vector<double> with_nan = values;
        with_nan[at] = kNaN;
        CHECK(std::isnan(iclab::count_above(with_nan, 1.0)));
        CHECK(std::isnan(iclab::count_increases(with_nan)));
        CHECK(std::isnan(iclab::first_index_below(with_nan, 0, 4, 1.0)));
    }
    // only the values it reads: a NaN outside [first, last] leaves the index as it was
    std::vector<double> outside = values;
    outside[0] = kNaN;
    CHECK(iclab::first_index_below(outside, 1, 4, 1.0) == 4.0);
    CHECK(iclab::count_above({}, 0.0) == 0.0);
    CHECK(iclab::count_increases({}) == 0.0);
    CHECK(iclab::count_increases({kNaN}) != iclab::count_increases({kNaN}));  // NaN: one value, still NaN
    CHECK_THROWS_AS(iclab::first_index_below(values, 3, 5, 1.0), iclab::Error);
}

TEST_CASE("nan counts: finite values give the counts and indices of the loops they replace", "[nan]") {
    iclab::Rng rng(17);
    for (int trial = 0; trial < 100; ++trial) {
        std::vector<double> v(12);
        for (double& x : v) x = static_cast<double>(rng.uniform_int(5)) * 0.25;  // ties included
        double above = 0, increases = 0;
        std::size_t crossing = 11 + 1;
        for (double x : v) above += x > 0.5 ? 1 : 0;
        for (std::size_t l = 1; l < v.size(); ++l) increases += v[l] > v[l - 1] ? 1 : 0;
        for (std::size_t j = 1; j <= 11 && crossing > 11; ++j)
            if (v[j] < 0.3) crossing = j;
        CHECK(iclab::count_above(v, 0.5) == above);
        CHECK(iclab::count_increases(v) == increases);
        CHECK(iclab::first_index_below(v, 1, 11, 0.3) == static_cast<double>(crossing));
    }
}

TEST_CASE("nan counts: a NaN ICE curve does not pass lsa_gd's causal_ice_mse_increases", "[nan][lsa_gd]") {
    lsa::Settings s;
    s.dim = 3, s.examples = 6, s.queries = 2, s.sequences = 2, s.replicates = 1, s.layers = 5;
    s.eta = 0.1, s.eta_causal2 = 0.1, s.rate_layer = 5, s.convergence_layers = 10, s.deep_queries = 2, s.fp32 = false;
    s.eta_sweep_replicates = 1;
    const auto causal_increases = [&](std::vector<double> grid) {
        s.eta_sweep = std::move(grid);
        lsa::Study study;
        lsa::study_layers(s, iclab::Rng(3), iclab::Rng(4), study);
        return std::make_pair(check_named(study, "causal_ice_mse_increases"), study.etas);
    };
    const auto [finite, finite_rows] = causal_increases({0.1, 0.2});
    CHECK(finite.ours == 0.0);
    CHECK(finite.verdict == "reproduced");
    for (const lsa::EtaRow& row : finite_rows) CHECK(row.ice_mse_increases >= 0);
    // a NaN eta makes every ICE MSE of its curves NaN: the count skipped them (0 increases, reproduced)
    const auto [poisoned, nan_rows] = causal_increases({0.1, kNaN});
    CHECK(std::isnan(poisoned.ours));
    CHECK(poisoned.verdict == "inconclusive");
    bool marked = false;
    for (const lsa::EtaRow& row : nan_rows)
        if (std::isnan(row.eta)) marked = row.ice_mse_increases == -1;  // the table's "no count"
    CHECK(marked);
    const auto claims = lsa::claims_of(lsa::Study{{poisoned}, {}, {}, {}, {}}, 0);
    REQUIRE(claims.size() == 1);
    CHECK(claims[0].verdict == iclab::io::Verdict::inconclusive);
}

TEST_CASE("nan counts: a NaN stationary curve does not pass lsa_gd's fig2r_mu0_first_n_below_1e-2_min", "[nan][lsa_gd]") {
    lsa::Settings s;
    s.stationary_replicates = 1, s.stationary_examples = 120, s.stationary_step = 20, s.mus = {0.0};
    std::vector<double> curve(121, 1.0);  // n = 0..120: above 1e-2 up to n = 110, below it from n = 111
    for (std::size_t j = 111; j <= 120; ++j) curve[j] = 1e-3;
    const auto first_n = [&](const std::vector<double>& c) {
        lsa::Study study;
        lsa::study_stationary_checks(s, {c}, {c}, study);
        return check_named(study, "fig2r_mu0_first_n_below_1e-2_min");
    };
    const lsa::Check finite = first_n(curve);
    CHECK(finite.ours == 111.0);
    CHECK(finite.verdict == "reproduced");
    for (std::size_t at : {1, 50, 115}) {  // before the crossing, and after it
        std::vector<double> with_nan = curve;
        with_nan[at] = kNaN;
        const lsa::Check poisoned = first_n(with_nan);
        CHECK(std::isnan(poisoned.ours));
        CHECK(poisoned.verdict == "inconclusive");
    }
    std::vector<double> never(121, 1.0);  // never below 1e-2: n = 121, "more than 100"
    CHECK(first_n(never).ours == 121.0);
}

TEST_CASE("nan counts: a NaN rho does not pass lsa_gd's causal2 sequences_with_rho_S_above_1", "[nan][lsa_gd]") {
    lsa::Settings s;
    s.dim = 4, s.examples = 8, s.sequences = 3, s.replicates = 2;
    const iclab::Rng root(9);
    const lsa::Causal2Stability stable = lsa::causal2_stability(s, root, 1e-3);
    CHECK(stable.unstable == 0.0);
    CHECK(stable.worst < 1.0);
    const lsa::Causal2Stability unstable = lsa::causal2_stability(s, root, 1e3);
    CHECK(unstable.unstable == 6.0);  // every sequence of both replicates
    CHECK(unstable.worst > 1.0);
    const lsa::Causal2Stability poisoned = lsa::causal2_stability(s, root, kNaN);  // "rho > 1" skipped it: 0, and "= 0" passed
    CHECK(std::isnan(poisoned.unstable));
    CHECK(std::isnan(poisoned.worst));
    lsa::Study study;
    study.checks.push_back(lsa::gated("A7", "causal2_eta_nan_sequences_with_rho_S_above_1", "converges", poisoned.unstable, 0, 0, "= 0"));
    CHECK(study.checks[0].verdict == "inconclusive");
}

}  // namespace iclab_test_nan_counts
