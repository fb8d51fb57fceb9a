// A NaN never passes (issue 45): the reductions over measured errors keep a NaN (framework/core/measure.hpp), and
// every check built on one fails or is inconclusive — gd_duals' dual_error and its summary row, lsa_gd's gates and
// their claims, and a claim pooled by `iclab claims` from run folders. For finite values the reductions return what
// std::max, std::min, std::max_element and a left-to-right sum return, bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "experiments/gd_duals/sweeps.hpp"
#include "experiments/lsa_gd/study.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/gd_dual.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "framework/run/run_folder.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_nan_reductions {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_bits(double a, double b) { return std::signbit(a) == std::signbit(b) && (a == b || (std::isnan(a) && std::isnan(b))); }

}  // namespace

TEST_CASE("nan reductions: a NaN anywhere makes max, min, sum and mean NaN", "[nan]") {
    // std::max drops it (the reason for these): max(0, NaN) is 0, and max_element drops it unless it comes first
    CHECK(std::max(0.0, kNaN) == 0.0);
    const std::vector<double> one_nan{1.0, kNaN};
    CHECK(*std::max_element(one_nan.begin(), one_nan.end()) == 1.0);
    CHECK(std::isnan(iclab::max_or_nan(0.0, kNaN)));
    CHECK(std::isnan(iclab::max_or_nan(kNaN, 0.0)));
    CHECK(std::isnan(iclab::min_or_nan(kInf, kNaN)));
    CHECK(std::isnan(iclab::min_or_nan(kNaN, 1.0)));
    for (const std::vector<double>& values : {std::vector<double>{kNaN, 1.0, 2.0}, {1.0, kNaN, 2.0}, {1.0, 2.0, kNaN}, {kNaN}}) {
        CHECK(std::isnan(iclab::max_of(values)));
        CHECK(std::isnan(iclab::min_of(values)));
        CHECK(std::isnan(iclab::sum_of(values)));
        CHECK(std::isnan(iclab::mean_of(values)));
    }
    CHECK(std::isnan(iclab::max_of({})));
    CHECK(std::isnan(iclab::min_of({})));
    CHECK(iclab::sum_of({}) == 0.0);
    CHECK(std::isnan(iclab::sum_of({kInf, -kInf})));
    CHECK(iclab::max_of({1.0, kInf}) == kInf);
}

TEST_CASE("nan reductions: finite values give the bits std::max, std::min and a plain sum give", "[nan]") {
    const std::vector<double> values{0.0, -0.0, 3e-17, -2.5, 1e300, 0.1, 0.2, -0.0, 0.3, 1e-300};
    double running_max = -kInf, running_min = kInf, sum = 0.0;
    for (double a : values) {
        for (double b : values) {  // including the tie +0 / -0: the first argument, as std::max / std::min
            CHECK(same_bits(iclab::max_or_nan(a, b), std::max(a, b)));
            CHECK(same_bits(iclab::min_or_nan(a, b), std::min(a, b)));
        }
        running_max = std::max(running_max, a), running_min = std::min(running_min, a), sum += a;
    }
    CHECK(same_bits(iclab::max_of(values), *std::max_element(values.begin(), values.end())));
    CHECK(same_bits(iclab::min_of(values), *std::min_element(values.begin(), values.end())));
    CHECK(same_bits(iclab::max_of(values), running_max));
    CHECK(same_bits(iclab::sum_of(values), sum));
    CHECK(same_bits(iclab::mean_of(values), sum / static_cast<double>(values.size())));
    CHECK(same_bits(iclab::max_of({-0.0, 0.0}), -0.0));  // max_element keeps the first of equals
}

TEST_CASE("nan reductions: dual_error refuses a NaN output instead of scoring it 0", "[nan][gd_duals]") {
    const std::vector<double> gd{1.0, 2.0, 3.0};
    const std::vector<double> close{1.0, 2.0 + 1e-13, 3.0};
    CHECK(iclab::icl::dual_error(close.data(), gd.data(), 3) == Approx(1e-13 / 3.0).epsilon(1e-3));
    // an all-NaN attention output scored 0 with std::max (|NaN - g| was dropped, the scale stayed 1)
    const std::vector<double> all_nan(3, kNaN);
    CHECK_THROWS_AS(iclab::icl::dual_error(all_nan.data(), gd.data(), 3), iclab::Error);
    for (std::size_t at = 0; at < 3; ++at) {  // one NaN, first, middle or last, on either side
        std::vector<double> attention = close, reference = gd;
        attention[at] = kNaN;
        CHECK_THROWS_AS(iclab::icl::dual_error(attention.data(), gd.data(), 3), iclab::Error);
        reference[at] = kNaN;
        CHECK_THROWS_AS(iclab::icl::dual_error(close.data(), reference.data(), 3), iclab::Error);
    }
    const std::vector<float> gd32{1.0f, 2.0f}, nan32{1.0f, std::numeric_limits<float>::quiet_NaN()};
    CHECK_THROWS_AS(iclab::icl::dual_error(nan32.data(), gd32.data(), 2), iclab::Error);
}

TEST_CASE("nan reductions: a NaN error shows in the gd_duals summary row and fails it", "[nan][gd_duals]") {
    iclab::experiments::duals::Results results;
    results.add("x", "float64", "cell", 0, 1e-14, 1.0, 1e-12, 1e-4, "");
    results.add("x", "float64", "cell", 1, kNaN, 1.0, 1e-12, 1e-4, "");
    results.add("x", "float64", "cell", 2, 2e-14, 1.0, 1e-12, 1e-4, "");
    REQUIRE(results.summary.size() == 1);
    CHECK(std::isnan(results.summary[0].max_error));  // was 2e-14: std::max dropped the NaN
    CHECK_FALSE(results.summary[0].pass());
}

TEST_CASE("nan reductions: a NaN negative control fails the gd_duals row, and no control is not a NaN", "[nan][gd_duals]") {
    using iclab::experiments::duals::kNoControl;
    iclab::experiments::duals::Results results;
    results.add("x", "float64", "cell", 0, 1e-14, 1.0, 1e-12, 1e-4, "");
    results.add("x", "float64", "cell", 1, 1e-14, kNaN, 1e-12, 1e-4, "");  // a control measured as NaN
    results.add("x", "float64", "cell", 2, 1e-14, 2.0, 1e-12, 1e-4, "");
    results.add("y", "float64", "cell", 0, 1e-14, kNoControl, 1e-12, 1e-4, "");  // a check with no control
    REQUIRE(results.summary.size() == 2);
    CHECK(results.instances[1].has_control);
    CHECK(std::isnan(results.summary[0].control_error));  // was 1.0: the NaN read as "does not apply"
    CHECK_FALSE(results.summary[0].pass());
    CHECK(std::string(results.summary[0].verdict()) == "inconclusive");
    CHECK_FALSE(results.instances[3].has_control);
    CHECK(std::isnan(results.instances[3].control));  // written as NaN in the instances table, as before
    CHECK(results.summary[1].pass());
    CHECK(std::string(results.summary[1].verdict()) == "reproduced");
}

TEST_CASE("nan reductions: a NaN loss fails lsa_gd's gate and its claim is inconclusive", "[nan][lsa_gd]") {
    namespace lsa = iclab::experiments::lsa_study;
    // 003-A3 "causal does not diverge at eta = 3.2": the worst query MSE over the swept replicates, <= 1. Started at
    // 0 with std::max, a NaN loss passed it.
    const double worst = iclab::max_of({0.02, kNaN, 0.03});
    lsa::Study study;
    study.checks.push_back(lsa::gated("A3", "eta3.2_causal_query_mse_l50_max", "causal does not diverge at eta = 3.2", worst, 0, 1.0,
                                      "<= 1 at l = L, every swept replicate"));
    study.checks.push_back(lsa::gated("A3", "finite", "a finite value within its band", 0.5, 0, 1.0, "<= 1"));
    CHECK(study.checks[0].verdict != study.checks[1].verdict);  // the NaN row does not pass
    const auto claims = lsa::claims_of(study, 0);
    REQUIRE(claims.size() == 2);
    CHECK(claims[0].verdict == iclab::io::Verdict::inconclusive);
    CHECK(claims[0].note == "a non-finite value");
    CHECK(claims[1].verdict == iclab::io::Verdict::reproduced);
}

TEST_CASE("nan reductions: a NaN value in one run's claim keeps the pooled claim from being reproduced", "[nan][claims][cli]") {
    // Three run folders of one setting (seeds 0-2), as `iclab run` leaves them, each with one value of a count claim;
    // seed 1's value is NaN. `iclab claims` (and run::pool_run_claims beneath it) must not call it reproduced.
    Scratch scratch;
    iclab::io::Claim c;
    c.id = "NaN-test error below the bar";
    c.paper = "002", c.source = "Theorem 1", c.kind = iclab::io::ClaimKind::own_check;
    c.statement = "the error stays below 1", c.metric = "error / bar", c.rule = iclab::io::ClaimRule::count_at_most(1.0);
    std::vector<fs::path> dirs;
    const double values[3] = {0.1, kNaN, 0.2};
    for (int seed = 0; seed < 3; ++seed) {
        const fs::path dir = scratch.path / ("run_seed" + std::to_string(seed));
        fs::create_directories(dir);
        const std::string config = "experiment: gd_duals\nseed: " + std::to_string(seed) + "\nthm1_002:\n  instances: 2\n";
        std::ofstream(dir / iclab::run::kConfigFile) << config;
        iclab::io::ResultsWriter w(dir / iclab::run::kResultsFile);
        w.set_attr("experiment", "gd_duals");
        w.set_attr("config", config);
        w.set_attr("config_source", "configs/quick/gd_duals.yaml");
        iclab::io::write_claims(w, {iclab::io::evaluate_claim(c, {seed}, {values[seed]})});
        w.commit();
        dirs.push_back(dir);
    }
    const auto pooled = iclab::run::pool_run_claims(dirs);
    REQUIRE(pooled.size() == 1);
    REQUIRE(pooled[0].claims.size() == 1);
    const auto& r = pooled[0].claims[0];
    CHECK(r.values.size() == 3);
    CHECK(std::isnan(r.values[1]));
    CHECK(r.verdict == iclab::io::Verdict::inconclusive);
    CHECK(r.note == "a non-finite value");
    const auto table = iclab::run::claims_table(pooled);
    CHECK(std::get<std::string>(table.cell(0, "verdict")) == "inconclusive");
    // the same through the binary
    const fs::path csv = scratch.path / "claims.csv";
    const auto result = run_iclab("claims " + dirs[0].string() + " " + dirs[1].string() + " " + dirs[2].string() + " --out " + csv.string(),
                                  scratch.path);
    INFO(result.out << result.err);
    REQUIRE(result.status == 0);
    const std::string written = read_file(csv);
    CHECK_THAT(written, Catch::Contains("NaN-test error below the bar") && Catch::Contains("inconclusive"));
    CHECK_THAT(written, !Catch::Contains(",reproduced,"));
}

}  // namespace iclab_test_nan_reductions
