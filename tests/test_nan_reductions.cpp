// A NaN never passes (issue 45): the reductions over measured errors keep a NaN (framework/core/measure.hpp: max, min,
// sum, mean, median, quantile, argmax), and every check built on one fails or is inconclusive — gd_duals' dual_error
// and its summary row, lsa_gd's gates and their claims, a claim pooled by `iclab claims` from run folders, and (second
// audit) iclca_induction's Table 2 claims, gd004_example's median-error claims and decay_attention's table max and
// claims. For finite values the reductions return what std::max, std::min, std::max_element, a left-to-right sum and
// the sorts they replace return, bit for bit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "experiments/decay_attention/claims.hpp"
#include "experiments/gd004_example/claims.hpp"
#include "experiments/gd_duals/sweeps.hpp"
#include "experiments/iclca_induction/table2.hpp"
#include "experiments/lsa_gd/study.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/gd_dual.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/tasks/induction_head.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "framework/run/run_folder.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_nan_reductions {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool same_bits(double a, double b) { return std::signbit(a) == std::signbit(b) && (a == b || (std::isnan(a) && std::isnan(b))); }

using iclab::io::Verdict;
using Runs = std::vector<std::pair<std::string, std::vector<iclab::io::ClaimResult>>>;

// (N, V) logits whose argmax at position t is tokens[t].
std::vector<double> pointing_at(const std::vector<std::int32_t>& tokens, std::size_t V) {
    std::vector<double> z(tokens.size() * V, 0.0);
    for (std::size_t t = 0; t < tokens.size(); ++t) z[t * V + static_cast<std::size_t>(tokens[t])] = 1.0;
    return z;
}

const iclab::io::ClaimResult& claim_named(const std::vector<iclab::io::ClaimResult>& claims, const std::string& start) {
    for (const auto& c : claims)
        if (c.claim.id.rfind(start, 0) == 0) return c;
    FAIL("no claim " << start);
    return claims.front();
}

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
    CHECK(std::isnan(iclab::not_below(kNaN, 1.0)));  // "a < b on every instance": a NaN is no win and no loss
    CHECK(std::isnan(iclab::not_below(1.0, kNaN)));
    CHECK(iclab::not_below(1.0, 2.0) == 0.0);
    CHECK(iclab::not_below(2.0, 2.0) == 1.0);  // a tie is no win
    CHECK(iclab::not_below(3.0, 2.0) == 1.0);
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

TEST_CASE("nan reductions: first_index_reaching stops at a NaN before the crossing, not after it", "[nan]") {
    using iclab::first_index_reaching;
    CHECK(first_index_reaching({0.1, 0.5, 0.95, 0.97}, 0.9) == 2.0);
    CHECK(first_index_reaching({0.1, 0.95, kNaN}, 0.9) == 1.0);  // a NaN after the crossing does not undo it
    CHECK(std::isnan(first_index_reaching({0.1, kNaN, 0.95}, 0.9)));  // the loop it replaces returned 2
    CHECK(std::isnan(first_index_reaching({0.1, 0.5}, 0.9)));  // never reached
    CHECK(std::isnan(first_index_reaching({}, 0.9)));
}

TEST_CASE("nan reductions: median_of, quantile_of and the bootstrap interval are NaN with a NaN anywhere", "[nan]") {
    // std::sort over a NaN is undefined behaviour: the "middle" of such a list could come out finite
    for (std::size_t at = 0; at < 5; ++at) {
        std::vector<double> values{0.4, 0.1, 0.3, 0.5, 0.2};
        values[at] = kNaN;
        CHECK(std::isnan(iclab::median_of(values)));
        CHECK(std::isnan(iclab::quantile_of(values, 0.5)));
        CHECK(std::isnan(iclab::quantile_of(values, 0.9)));
        CHECK(std::isnan(iclab::quantile_of(values, 0.0)));
        iclab::Rng rng(7);
        const auto interval = iclab::bootstrap_mean_interval(values, 0.95, 200, rng);
        CHECK(std::isnan(interval.low));
        CHECK(std::isnan(interval.high));
    }
    CHECK(std::isnan(iclab::median_of({})));
    CHECK(std::isnan(iclab::quantile_of({}, 0.5)));
    CHECK_THROWS_AS(iclab::quantile_of({1.0}, 1.5), iclab::Error);
}

TEST_CASE("nan reductions: quantile_of and median_of give the bits of the formulas they replace", "[nan]") {
    const std::vector<double> values{0.3, -1.0, 2.5, 0.1, 7.0, 0.2, -0.0, 1e-17};
    std::vector<double> sorted = values;
    std::sort(sorted.begin(), sorted.end());
    for (double q : {0.0, 0.1, 0.25, 0.5, 0.9, 1.0}) {  // gd004_example's quantile(), as it was
        const double position = q * static_cast<double>(sorted.size() - 1);
        const std::size_t lo = static_cast<std::size_t>(position), hi = std::min(lo + 1, sorted.size() - 1);
        CHECK(same_bits(iclab::quantile_of(values, q), sorted[lo] + (position - static_cast<double>(lo)) * (sorted[hi] - sorted[lo])));
    }
    CHECK(same_bits(iclab::median_of(values), 0.5 * (sorted[3] + sorted[4])));
    CHECK(iclab::median_of({3.0, 1.0, 2.0}) == 2.0);
    iclab::Rng a(3), b(3);
    const auto with = iclab::bootstrap_mean_interval(values, 0.95, 100, a);
    CHECK(with.low < with.high);
    std::vector<double> with_nan = values;
    with_nan[3] = kNaN;
    iclab::bootstrap_mean_interval(with_nan, 0.95, 100, b);
    CHECK(a.next_u64() == b.next_u64());  // the same draws whether or not a value is NaN
}

TEST_CASE("nan reductions: argmax_of has no index for a NaN logit and std::max_element's index otherwise", "[nan]") {
    const std::vector<double> z{0.1, 0.7, 0.7, -0.2};
    CHECK(iclab::argmax_of(z.data(), 4) == 1);  // the first of equals
    for (std::size_t at = 0; at < 4; ++at) {
        std::vector<double> with_nan = z;
        with_nan[at] = kNaN;
        CHECK(iclab::argmax_of(with_nan.data(), 4) == 4);
    }
    const std::vector<double> all_nan(4, kNaN);
    CHECK(static_cast<std::size_t>(std::max_element(all_nan.begin(), all_nan.end()) - all_nan.begin()) == 0);  // predicts token 0
    CHECK(iclab::argmax_of(all_nan.data(), 4) == 4);
    CHECK(iclab::argmax_of(z.data(), 0) == 0);
    iclab::Rng rng(11);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<double> row(9);
        for (double& v : row) v = static_cast<double>(rng.uniform_int(4)) - 1.5;  // many ties
        CHECK(iclab::argmax_of(row.data(), row.size()) == static_cast<std::size_t>(std::max_element(row.begin(), row.end()) - row.begin()));
    }
}

TEST_CASE("nan reductions: iclca_induction's Table 2 claims are never reproduced from NaN logits", "[nan][iclca_induction]") {
    namespace t2 = iclab::experiments::iclca_table2;
    iclab::tasks::InductionHeadSpec spec;
    iclab::Rng rng(5);
    const std::size_t N = 20, V = iclab::tasks::kInductionVocab;
    iclab::tasks::PromptPair pair;
    for (int draw = 0; draw < 100; ++draw) {  // a pair with two scored positions at least (most have ~2)
        pair = iclab::tasks::sample_prompt_pair(spec, iclab::tasks::PromptDesign::chain, 24, N, rng);
        if (std::count(pair.kinds.begin(), pair.kinds.end(), iclab::tasks::PositionKind::first_trigger) >= 2) break;
    }
    const std::vector<double> right = pointing_at(pair.targets, V), all_nan(N * V, kNaN);
    // M_old without the prompt all NaN: the argmax used to be token 0 (no successor: accuracy 0, "no ICL" passed)
    const double* nan_no_icl[t2::kRows] = {right.data(), all_nan.data(), right.data()};
    const t2::PairScores s = t2::score_pair(pair, nan_no_icl, N, V);
    REQUIRE(s.scored >= 2);
    CHECK(s.correct[t2::kOldIcl] == s.scored);
    CHECK(s.correct[t2::kOldNoIcl] == 0);
    CHECK(s.undefined[t2::kOldNoIcl] == static_cast<std::int64_t>(N));
    CHECK(s.undefined[t2::kOldIcl] == 0);
    CHECK(s.argmax_agreement == static_cast<std::int64_t>(N));
    CHECK(std::isnan(t2::accuracy(s.correct[t2::kOldNoIcl], s.scored, s.undefined[t2::kOldNoIcl])));
    CHECK(t2::accuracy(s.correct[t2::kOldIcl], s.scored, s.undefined[t2::kOldIcl]) == 1.0);
    // one NaN logit at one position is enough
    std::vector<double> one_nan = right;
    one_nan[3 * V + 7] = kNaN;
    const double* one_nan_no_icl[t2::kRows] = {right.data(), one_nan.data(), right.data()};
    CHECK(t2::score_pair(pair, one_nan_no_icl, N, V).undefined[t2::kOldNoIcl] == 1);
    // NaN logits of M_new (or of M_old with the prompt): the relative logit error refuses them, the run stops
    const double* nan_new[t2::kRows] = {right.data(), right.data(), all_nan.data()};
    CHECK_THROWS_AS(t2::score_pair(pair, nan_new, N, V), iclab::Error);
    // two models right on different positions: the same correct count (the rule before passed it), not the same logits
    std::vector<std::size_t> scored_at;
    for (std::size_t t = 0; t < N; ++t)
        if (pair.kinds[t] == iclab::tasks::PositionKind::first_trigger) scored_at.push_back(t);
    std::vector<std::int32_t> old_tokens = pair.targets, new_tokens = pair.targets;
    old_tokens[scored_at[0]] = (pair.targets[scored_at[0]] + 1) % static_cast<std::int32_t>(V);
    new_tokens[scored_at[1]] = (pair.targets[scored_at[1]] + 1) % static_cast<std::int32_t>(V);
    const std::vector<double> old_icl = pointing_at(old_tokens, V), new_logits = pointing_at(new_tokens, V);
    const double* apart[t2::kRows] = {old_icl.data(), right.data(), new_logits.data()};
    const t2::PairScores d = t2::score_pair(pair, apart, N, V);
    CHECK(d.correct[t2::kNewNoIcl] == d.correct[t2::kOldIcl]);
    CHECK(d.relative_logit_error > 0.1);
    const auto judged = t2::claims({1.0, 0.02, 1.0}, {d}, 0);
    REQUIRE(judged.size() == 3);
    CHECK(judged[2].claim.id == "000-T2 M_new, no ICL");
    CHECK(judged[2].claim.kind == iclab::io::ClaimKind::own_check);
    CHECK_FALSE(judged[2].claim.provenance.empty());
    CHECK(judged[2].verdict == Verdict::not_reproduced);

    // Five seeds pooled as `iclab claims` pools them; seed 2 carries the NaN.
    const auto pooled = [](double no_icl_seed2, double new_error_seed2) {
        Runs runs;
        for (int seed = 0; seed < 5; ++seed) {
            t2::PairScores exact, other;
            exact.relative_logit_error = 1e-15;
            other.relative_logit_error = seed == 2 ? new_error_seed2 : 2e-15;
            runs.push_back({"seed" + std::to_string(seed), t2::claims({1.0, seed == 2 ? no_icl_seed2 : 0.02, 1.0}, {exact, other}, seed)});
        }
        return iclab::io::pool_claims(runs);
    };
    const auto finite = pooled(0.02, 2e-15);  // the control: every claim reproduced
    REQUIRE(finite.size() == 3);
    for (const auto& r : finite) CHECK(r.verdict == Verdict::reproduced);
    CHECK(finite[2].values.size() == 10);  // exactness: every pair of every seed
    const auto nan_accuracy = pooled(kNaN, 2e-15);
    CHECK(nan_accuracy[1].verdict == Verdict::inconclusive);
    CHECK(nan_accuracy[1].note == "a non-finite value");
    const auto nan_error = pooled(0.02, kNaN);
    CHECK(nan_error[2].verdict == Verdict::inconclusive);
    CHECK(pooled(0.02, 1e-9)[2].verdict == Verdict::not_reproduced);  // one pair off the identity fails it
}

TEST_CASE("nan reductions: gd004_example's median error is NaN with a NaN prediction and its claims are not reproduced", "[nan][gd004_example]") {
    namespace g = iclab::experiments::gd004_example_claims;
    const auto declared = g::declare_claims(15);
    const auto pooled = [&](double seed1_error) {
        Runs runs;
        for (int seed = 0; seed < 3; ++seed) {
            const std::vector<double> abs_err{0.05, 0.03, seed == 1 ? seed1_error : 0.045, 0.04}, abs_y{0.5, 0.6, 0.7, 0.8};
            g::Measured m;
            m.median_abs_err = iclab::quantile_of(abs_err, 0.5), m.median_abs_y = iclab::quantile_of(abs_y, 0.5);
            m.variant_err.resize(std::size(g::kVariants));
            m.variant_control.resize(std::size(g::kVariants)), m.variant_control_units.resize(std::size(g::kVariants));
            runs.push_back({"seed" + std::to_string(seed), g::evaluate_claims(declared, m, seed)});
        }
        return iclab::io::pool_claims(runs);
    };
    const auto finite = pooled(0.035);
    CHECK(claim_named(finite, "004-5.2 N=15 layer predicts the label").verdict == Verdict::reproduced);
    CHECK(claim_named(finite, "004-5.2 N=15 error scale").verdict == Verdict::reproduced);
    const auto with_nan = pooled(kNaN);  // one test prediction of seed 1 is NaN
    for (const std::string id : {"004-5.2 N=15 layer predicts the label", "004-5.2 N=15 error scale"}) {
        const auto& r = claim_named(with_nan, id);
        CHECK(std::isnan(r.values[1]));
        CHECK(r.verdict == Verdict::inconclusive);
    }
}

TEST_CASE("nan reductions: decay_attention's table max and claims are never reproduced with a NaN", "[nan][decay]") {
    namespace dc = iclab::experiments::decay_claims;
    CHECK(std::isnan(dc::fade_indicator(kNaN)));
    CHECK(dc::fade_indicator(0.2) == 1.0);
    CHECK(dc::fade_indicator(0.7) == 0.0);
    CHECK(std::isnan(dc::accuracy(3, 10, 1)));  // a position without prediction (NaN logits)
    CHECK(dc::accuracy(3, 10, 0) == 0.3);
    CHECK(std::isnan(dc::accuracy(0, 0, 0)));
    const auto measured = [](std::int64_t seed, double error, std::vector<double> fades, double reach) {
        dc::GammaMeasured m;
        m.gamma = 0.5, m.gamma_text = "0.5", m.seed = seed, m.reach_accuracy = reach, m.near_accuracy = 0.6;
        m.pair_errors = {1e-16, error, 2e-16, 1e-16};
        m.pair_fades = std::move(fades);
        return m;
    };
    const std::vector<double> fading{1, 1, 1, 1};
    // /tables/accuracy's max_relative_logit_error: std::max from 0 dropped the NaN, max_of keeps it
    CHECK(std::isnan(iclab::max_of(measured(0, kNaN, fading, 0.02).pair_errors)));
    const auto finite = dc::gamma_claims(measured(0, 3e-16, fading, 0.02));
    REQUIRE(finite.size() == 3);
    CHECK(finite[0].verdict == Verdict::reproduced);
    CHECK(finite[1].claim.pooling == iclab::io::ClaimPooling::seed_means);
    CHECK(finite[2].verdict == Verdict::reproduced);
    CHECK(dc::gamma_claims(measured(0, kNaN, fading, 0.02))[0].verdict == Verdict::inconclusive);
    // a NaN model predicts nothing at any position: decay-reach (once "accuracy below 0.5") used to pass at accuracy ~0
    CHECK(dc::gamma_claims(measured(0, 3e-16, fading, dc::accuracy(0, 40, 40)))[2].verdict == Verdict::inconclusive);
    CHECK(dc::gamma_claims(measured(0, 3e-16, {1, dc::fade_indicator(kNaN), 1, 1}, 0.02))[1].verdict == Verdict::inconclusive);
    // decay-fade over five trained models: one value per seed (its share of fading pairs)
    const auto fade_over_seeds = [&](std::vector<double> seed2_fades, std::vector<double> others) {
        Runs runs;
        for (int seed = 0; seed < 5; ++seed)
            runs.push_back({"seed" + std::to_string(seed), dc::gamma_claims(measured(seed, 3e-16, seed == 2 ? seed2_fades : others, 0.02))});
        return claim_named(iclab::io::pool_claims(runs, {0, 1, 2, 3, 4}), "decay-fade");
    };
    const auto fades = fade_over_seeds(fading, fading);
    CHECK(fades.claim.unit == "seed");
    CHECK(fades.values.size() == 5);
    CHECK(fades.verdict == Verdict::reproduced);
    CHECK(fade_over_seeds({1, kNaN, 1, 1}, fading).verdict == Verdict::inconclusive);
    CHECK(fade_over_seeds({1, 0, 1, 0}, {1, 0, 1, 0}).verdict == Verdict::not_reproduced);  // pairs fade by a coin
}

}  // namespace iclab_test_nan_reductions
