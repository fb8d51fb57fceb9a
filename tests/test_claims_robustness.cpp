// The robustness columns of the claims table (issue 45, "Robustness shown"): leave-one-seed-out marks a claim whose
// verdict one seed decides "fragile" (io::leave_one_out_text, set by pool_claims), and a setting's rounding twin (the
// same runs with train.perturb_init_ulps = 1) gives no rows of its own but the base rows' `rounding` column
// (run::pool_run_claims, claims_table).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"

namespace iclab_test_claims_robustness {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab::io;

namespace {

Claim above_zero(const std::string& id, ClaimRule rule) {
    Claim c;
    c.id = id, c.paper = "003", c.source = "Table 1", c.kind = ClaimKind::qualitative;
    c.statement = "causal worse than prefix", c.metric = "ln(causal / prefix) of the test MSE";
    c.rule = rule;
    return c;
}

// One run per seed, each with the claim's value of that seed.
std::vector<std::pair<std::string, std::vector<ClaimResult>>> runs_of(const Claim& c, const std::vector<double>& values) {
    std::vector<std::pair<std::string, std::vector<ClaimResult>>> runs;
    for (std::size_t s = 0; s < values.size(); ++s)
        runs.push_back({"seed" + std::to_string(s), {evaluate_claim(c, {static_cast<std::int64_t>(s)}, {values[s]})}});
    return runs;
}

struct Scratch {
    fs::path path = fs::temp_directory_path() / ("iclab_claims_robustness_" + std::to_string(::getpid()));
    Scratch() { fs::remove_all(path), fs::create_directories(path); }
    ~Scratch() { fs::remove_all(path); }
};

std::string text_of(const iclab::run::WideTable& t, std::size_t row, const std::string& column) {
    return std::get<std::string>(t.cell(row, column));
}

}  // namespace

TEST_CASE("leave one seed out: a verdict one seed decides is fragile, a robust one holds", "[claims]") {
    // 4 of 5 seeds above 0 (the rule asks for 4/5): any seed above 0 dropped leaves 3 of 4, where 4/5 of 4 rounds up
    // to every value -> not reproduced; seed 2 (the one below) dropped leaves 4 of 4 -> reproduced as before
    const Claim share = above_zero("share", ClaimRule::count_above(0.0, {4, 5}));
    const auto fragile = pool_claims(runs_of(share, {0.5, 0.6, -0.1, 0.7, 0.8}));
    REQUIRE(fragile.size() == 1);
    CHECK(fragile[0].verdict == Verdict::reproduced);
    CHECK(fragile[0].leave_one_out ==
          "fragile: without seed 0 \u2192 not reproduced; without seed 1 \u2192 not reproduced; without seed 3 \u2192 not reproduced; "
          "without seed 4 \u2192 not reproduced");
    CHECK(fragile[0].leave_one_out == leave_one_out_text(fragile[0]));
    // every seed well above 0: any 4 of them still hold the interval above 0
    const Claim interval = above_zero("interval", ClaimRule::interval_above(0.0));
    const auto robust = pool_claims(runs_of(interval, {1.0, 1.1, 0.9, 1.05, 0.95}));
    CHECK(robust[0].verdict == Verdict::reproduced);
    CHECK(robust[0].leave_one_out == "holds");
    // one outlying seed decides an interval: without seed 2 the interval lies wholly above 0
    const auto outlier = pool_claims(runs_of(interval, {1.0, 1.1, -5.0, 1.05, 0.95}));
    CHECK(outlier[0].verdict == Verdict::inconclusive);
    CHECK(outlier[0].leave_one_out == "fragile: without seed 2 \u2192 reproduced");
    // fewer than 3 seeds, or a claim over instances: no leave-one-out
    CHECK(pool_claims(runs_of(interval, {1.0, 1.1}))[0].leave_one_out.empty());
    Claim instances = interval;
    instances.unit = "instance";
    instances.pooling = iclab::io::ClaimPooling::instances;
    CHECK(pool_claims({{"a", {evaluate_claim(instances, {0, 1, 2, 3}, {1.0, 1.1, 0.9, 1.0})}}})[0].leave_one_out.empty());
}

TEST_CASE("leave one seed out: a share's own minimum does not make every drop inconclusive", "[claims]") {
    // paper 003's sign tests: "x <= -1 in >= 5/6 of the values, at least 5", 5 of 5 seeds. Without one seed the rule
    // would need 5 of 4 (inconclusive for every drop: "fragile" by the rule alone); its n - 1 form asks 4 of 4.
    Claim falls = above_zero("falls", ClaimRule::count_at_most(-1.0, {5, 6}));
    const auto all_five = pool_claims(runs_of(falls, {-1.0, -1.0, -1.0, -1.0, -1.0}));
    REQUIRE(all_five.size() == 1);
    CHECK(all_five[0].verdict == Verdict::reproduced);
    CHECK(all_five[0].leave_one_out == "holds");
    // 4 of 5: not reproduced, and the one seed that fails it decides: without it, 4 of 4
    const auto four = pool_claims(runs_of(falls, {-1.0, -1.0, 0.2, -1.0, -1.0}));
    CHECK(four[0].verdict == Verdict::not_reproduced);
    CHECK(four[0].leave_one_out == "fragile: without seed 2 → reproduced");
    // the full set still needs its minimum: 4 seeds are 5/6 of 4 (4 of 4) by the share, but the rule asks 5
    CHECK(evaluate_claim(falls, {0, 1, 2, 3}, {-1.0, -1.0, -1.0, -1.0}).verdict == Verdict::inconclusive);
    // the declaration itself is unchanged by leave-one-out
    CHECK(all_five[0].claim.rule.needed == 5);
    CHECK(all_five[0].claim.rule.out_of == 6);
}

TEST_CASE("leave one seed out drops a seed's per-seed mean of a seed_means claim", "[claims]") {
    Claim c = above_zero("means", ClaimRule::interval_above(0.0));
    c.unit = "instance", c.pooling = ClaimPooling::seed_means;
    std::vector<std::pair<std::string, std::vector<ClaimResult>>> runs;
    const std::vector<std::vector<double>> per_seed = {{1.0, 1.2}, {0.9, 1.1}, {1.1, 0.9}, {-3.0, -2.0}};
    for (std::size_t s = 0; s < per_seed.size(); ++s) runs.push_back({"s" + std::to_string(s), {evaluate_claim(c, {0, 1}, per_seed[s])}});
    const auto pooled = pool_claims(runs, {10, 11, 12, 13});
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].claim.unit == "seed");
    CHECK(pooled[0].verdict == Verdict::inconclusive);  // means 1.1, 1.0, 1.0, -2.5
    CHECK(pooled[0].leave_one_out == "fragile: without seed 13 \u2192 reproduced");
}

TEST_CASE("rounding twins: the perturbed setting gives the base rows a rounding column and no rows of its own", "[claims]") {
    Scratch scratch;
    // Hand-made runs of one setting over seeds 0-2, and its twin with train.perturb_init_ulps = 1: claim "same" keeps
    // its verdict (reproduced), claim "flips" is reproduced in the base and not reproduced in the twin.
    const Claim same = above_zero("same", ClaimRule::count_above(0.0, {2, 3}));
    const Claim flips = above_zero("flips", ClaimRule::count_above(0.0, {2, 3}));
    std::vector<fs::path> dirs;
    auto write_run = [&](int seed, int ulps, double same_value, double flips_value) {
        const fs::path dir = scratch.path / ("seed" + std::to_string(seed) + "_ulps" + std::to_string(ulps));
        fs::create_directories(dir);
        ResultsWriter w(dir / "results.h5");
        w.set_attr("experiment", "prefix_vs_causal");
        w.set_attr("config_source", "configs/quick/x.yaml");
        if (ulps != 0) w.set_attr("overrides", "train.perturb_init_ulps=" + std::to_string(ulps) + " seed=" + std::to_string(seed));
        w.set_attr("config", "experiment: prefix_vs_causal\nseed: " + std::to_string(seed) + "\ntrain:\n  steps: 400\n  perturb_init_ulps: " +
                                 std::to_string(ulps) + "\n");
        write_claims(w, {evaluate_claim(same, {seed}, {same_value}), evaluate_claim(flips, {seed}, {flips_value})});
        w.commit();
        dirs.push_back(dir);
    };
    for (int seed = 0; seed < 3; ++seed) write_run(seed, 0, 1.0 + seed, 1.0 + seed);
    for (int seed = 0; seed < 3; ++seed) write_run(seed, 1, 2.0 + seed, -1.0 - seed);
    const auto pooled = iclab::run::pool_run_claims(dirs);
    REQUIRE(pooled.size() == 1);  // the twin folded into the base setting
    CHECK(pooled[0].setting == "configs/quick/x.yaml");
    CHECK(pooled[0].runs.size() == 3);
    CHECK(pooled[0].rounding_runs.size() == 3);
    const auto t = iclab::run::claims_table(pooled);
    REQUIRE(t.rows() == 2);
    CHECK(text_of(t, 0, "id") == "same");
    CHECK(text_of(t, 0, "verdict") == "reproduced");
    CHECK(text_of(t, 0, "rounding") == "holds under rounding");
    CHECK(text_of(t, 0, "leave_one_out") == "holds");
    CHECK(text_of(t, 1, "id") == "flips");
    CHECK(text_of(t, 1, "verdict") == "reproduced");
    CHECK(text_of(t, 1, "rounding") == "depends on rounding: not reproduced at +1 ulp");
    // without the twin the column is empty; the twin alone is a setting of its own, with its override shown
    const auto base_only = iclab::run::claims_table(iclab::run::pool_run_claims({dirs[0], dirs[1], dirs[2]}));
    CHECK(text_of(base_only, 0, "rounding").empty());
    const auto twin_only = iclab::run::pool_run_claims({dirs[3], dirs[4], dirs[5]});
    REQUIRE(twin_only.size() == 1);
    CHECK(twin_only[0].setting == "configs/quick/x.yaml train.perturb_init_ulps=1");
    CHECK(twin_only[0].claims[1].verdict == Verdict::not_reproduced);
    CHECK(twin_only[0].claims[1].rounding.empty());
}

TEST_CASE("rounding text: holds when every twin agrees, names each twin that differs", "[claims]") {
    using iclab::run::rounding_text;
    CHECK(rounding_text(Verdict::reproduced, {}).empty());
    CHECK(rounding_text(Verdict::reproduced, {{"1", Verdict::reproduced}}) == "holds under rounding");
    CHECK(rounding_text(Verdict::reproduced, {{"1", Verdict::inconclusive}}) == "depends on rounding: inconclusive at +1 ulp");
    CHECK(rounding_text(Verdict::not_reproduced, {{"1", Verdict::not_reproduced}, {"2", Verdict::reproduced}}) ==
          "depends on rounding: reproduced at +2 ulps");
}

}  // namespace iclab_test_claims_robustness
