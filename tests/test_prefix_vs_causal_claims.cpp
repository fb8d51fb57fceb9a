// Paper 003 Part B claims beyond prefix < causal (experiments/prefix_vs_causal/claims.hpp): Tables 4-6's "errors grow
// as k shrinks" (Kendall's tau per run), Table 7's permuted vs unpermuted runs (paired on train.permute_examples) and
// Figure 3's probe claims (paired on model.mask, from the run's own probes). The statistics against hand-computed
// cases, constructed seeds where each rule must hold and must fail, and end to end through the iclab binary: every
// pooled value recomputed from the stored tables, the in-run probes equal to the prefix_vs_causal_probes experiment's,
// and runs that would pair ambiguously (two permuted causal runs of one seed) or a wrong arm refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "experiments/prefix_vs_causal/claims.hpp"
#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/rank_test.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_prefix_vs_causal_claims {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;
namespace part_b = iclab::experiments::part_b;
using iclab::io::ClaimResult;
using iclab::io::Verdict;

namespace {

const std::string kTiny =
    "configs/quick/prefix_vs_causal.yaml task.x_dim=3 task.examples=6 task.queries=3 task.pool_sequences=200 "
    "model.layers=3 model.width=16 train.steps=60 train.batch_size=16 eval.every=30 eval.sequences=96 "
    "prefix_vs_causal.first_sequences=32 prefix_vs_causal.pool_eval_sequences=50 'prefix_vs_causal.test_examples=[3, 5]' --quiet";

// A Table 1 LR cell (SL-L2) of one mask; errors by k = 2, 4 and the full test set's 8 examples.
part_b::Cell cell(const std::string& mask, const std::string& permute, double test, std::vector<double> fewer,
                  std::vector<double> probes = {}, const std::string& task = "linear") {
    part_b::Cell c;
    c.task = task, c.mask = mask, c.permute_examples = permute, c.x_dim = 4, c.examples = 8, c.test_error = test;
    c.fewer_examples = {2, 4}, c.fewer_errors = std::move(fewer), c.probe_errors = std::move(probes);
    // chance as the experiment sets it: a uniform guess's error in points for MC (3 classes), else the zero predictor's
    // MSE, here well above every test error of these cases (an arm at chance is built explicitly below)
    c.chance_error = task == "classification" ? 100.0 * (1.0 - 1.0 / 3.0) : 10.0;
    return c;
}

// Pools the claims of the given runs (one entry per run) and returns the pooled claim `id`.
ClaimResult pooled(const std::vector<std::vector<ClaimResult>>& runs, const std::string& id) {
    std::vector<std::pair<std::string, std::vector<ClaimResult>>> named;
    for (std::size_t i = 0; i < runs.size(); ++i) named.push_back({"run" + std::to_string(i), runs[i]});
    for (const ClaimResult& r : iclab::io::pool_claims(named))
        if (r.claim.id == id) return r;
    FAIL("no pooled claim " << id);
    return {};
}

std::map<std::string, double> column_by_set(const fs::path& run, const std::string& column) {
    iclab::io::ResultsReader reader((run / "results.h5").string());
    const auto set = reader.read_column_string("/tables/prefix_vs_causal/set");
    const auto value = reader.read_column_double("/tables/prefix_vs_causal/" + column);
    std::map<std::string, double> out;
    for (std::size_t i = 0; i < set.size(); ++i) out[set[i]] = value[i];
    return out;
}

std::vector<double> probe_mse(const fs::path& run) {
    return iclab::io::ResultsReader((run / "results.h5").string()).read_column_double("/tables/probes/query_mse");
}

}  // namespace

TEST_CASE("prefix_vs_causal claims: Kendall's tau and the last-third log-slope by hand", "[prefix_vs_causal][claims]") {
    CHECK(iclab::io::kendall_tau({4, 6, 8, 10}, {4, 3, 2, 1}) == -1.0);
    CHECK(iclab::io::kendall_tau({4, 6, 8, 10}, {1, 2, 3, 4}) == 1.0);
    // one swapped pair (k = 6, 8): of 6 pairs 1 concordant, 5 discordant
    CHECK(iclab::io::kendall_tau({4, 6, 8, 10}, {4, 2, 3, 1}) == Approx(-4.0 / 6.0).epsilon(1e-15));
    // a tie in the error is neither: -2/3, not -1
    CHECK(iclab::io::kendall_tau({4, 6, 8}, {3, 2, 2}) == Approx(-2.0 / 3.0).epsilon(1e-15));
    // equal k are no pair: (4, 8) twice, both falling
    CHECK(iclab::io::kendall_tau({4, 8, 8}, {3, 2, 1}) == -1.0);
    CHECK(std::isnan(iclab::io::kendall_tau({8, 8}, {3, 2})));
    // a NaN error is no tie: tau is NaN (the claim inconclusive), never a finite 0 or -1
    const double nan = std::numeric_limits<double>::quiet_NaN();
    CHECK(std::isnan(iclab::io::kendall_tau({4, 6, 8}, {nan, nan, nan})));
    CHECK(std::isnan(iclab::io::kendall_tau({4, 6, 8}, {3, nan, 1})));
    CHECK(std::isnan(iclab::io::kendall_tau({4, nan, 8}, {3, 2, 1})));
    // L = 3: depths 2..3; L = 6: depths 4..6 (two layers)
    CHECK(part_b::last_third_log_slope({1.0, 0.1, 0.01, 0.001}) == Approx(-1.0).epsilon(1e-12));
    CHECK(part_b::last_third_log_slope({1, 1, 1, 1, 1.0, 0.5, 0.01}) == Approx(-1.0).epsilon(1e-12));
    CHECK(part_b::last_third_log_slope({1.0, 0.1}) == Approx(-1.0).epsilon(1e-12));
    CHECK_THROWS_AS(part_b::last_third_log_slope({1.0}), iclab::Error);
}

TEST_CASE("prefix_vs_causal claims: each new rule holds and fails on constructed seeds", "[prefix_vs_causal][claims]") {
    const std::string trend_id = "003-T4-6 LR SL-L2 prefix: errors grow as k shrinks";
    SECTION("errors vs k: tau = -1 in 5 of 5 seeds holds, in 4 of 5 fails, 3 seeds decide nothing") {
        std::vector<std::vector<ClaimResult>> runs{part_b::claims(cell("prefix", "none", 0.1, {0.9, 0.5}), 0),
                                                   part_b::claims(cell("prefix", "none", 0.1, {0.8, 0.4}), 1),
                                                   part_b::claims(cell("prefix", "none", 0.05, {0.9, 0.3}), 2),
                                                   part_b::claims(cell("prefix", "none", 0.2, {0.7, 0.3}), 3),
                                                   part_b::claims(cell("prefix", "none", 0.1, {0.6, 0.5}), 4)};
        ClaimResult r = pooled(runs, trend_id);
        REQUIRE(r.values.size() == 5);
        CHECK(r.values[0] == -1.0);
        CHECK(r.claim.unit == "seed");
        CHECK_FALSE(r.claim.pair.paired());
        CHECK(r.claim.rule.text(5) == "x <= -1 in >= 5/6 of the values, at least 5 (here 5 of 5)");
        CHECK_THAT(r.claim.provenance, Catch::StartsWith("chosen after the first runs (2026-11-29)") && Catch::Contains("19 %") &&
                                           Catch::Contains("ceb3f5a") && Catch::Contains("refused"));
        CHECK(r.on_side == 5);
        CHECK(r.verdict == Verdict::reproduced);
        runs[4] = part_b::claims(cell("prefix", "none", 0.1, {0.9, 0.05}), 4);  // (2, 4) and (2, 8) fall, (4, 8) rises
        r = pooled(runs, trend_id);
        CHECK(r.values[4] == Approx(-1.0 / 3.0).epsilon(1e-15));  // < 0, but not every step grows: the seed fails
        CHECK(r.on_side == 4);
        CHECK(r.verdict == Verdict::not_reproduced);  // 4 of 5: a fair coin's 19 %, not enough
        runs.resize(3);  // 3 of 3 would pass a coin 12.5 %: the rule needs 5 seeds
        r = pooled(runs, trend_id);
        CHECK(r.on_side == 3);
        CHECK(r.verdict == Verdict::inconclusive);
        CHECK_THAT(r.note, Catch::Contains("3 values, the rule needs 5"));
    }
    SECTION("a 4-of-5 pattern the old rule (>= 2/3 of the seeds) passed is not reproduced now; 5 of 5 is") {
        // the k = 2 test set, ln(causal / prefix) per seed: 4 of 5 above 0, one far below (mean 0.08)
        const double prefix_k2[] = {0.5, 0.5, 0.5, 0.5, 0.5}, causal_k2[] = {0.6, 0.65, 0.7, 0.6, 0.25};
        std::vector<std::vector<ClaimResult>> runs;
        for (std::int64_t seed = 0; seed < 5; ++seed) {
            runs.push_back(part_b::claims(cell("prefix", "none", 0.1, {prefix_k2[seed], 0.3}), seed));
            runs.push_back(part_b::claims(cell("causal", "none", 0.2, {causal_k2[seed], 0.3}), seed));
        }
        const std::string id = "003-T4-6 LR SL-L2 k=2: prefix < causal";
        ClaimResult r = pooled(runs, id);
        REQUIRE(r.values.size() == 5);
        CHECK(r.claim.rule.test == iclab::io::ClaimRule::Test::interval_above);
        CHECK(r.on_side == 4);
        CHECK(r.interval.mean > 0.0);
        CHECK(r.verdict == Verdict::inconclusive);  // the interval straddles 0: no verdict either way
        iclab::io::Claim old = r.claim;
        old.rule = iclab::io::ClaimRule::count_above(0.0, {2, 3});
        CHECK(iclab::io::evaluate_claim(old, r.units, r.values).verdict == Verdict::reproduced);  // what the audit faulted
        runs[9] = part_b::claims(cell("causal", "none", 0.2, {0.62, 0.3}), 4);  // 5 of 5 above 0
        r = pooled(runs, id);
        CHECK(r.on_side == 5);
        CHECK(r.interval.low > 0.0);
        CHECK(r.verdict == Verdict::reproduced);
        // the sign test on tau of the same pattern: tau = -1 in every seed, then one seed only mostly growing (tau = -1/3)
        runs.clear();
        for (std::int64_t seed = 0; seed < 5; ++seed) runs.push_back(part_b::claims(cell("causal", "none", 0.1, {0.9, 0.5}), seed));
        CHECK(pooled(runs, "003-T4-6 LR SL-L2 causal: errors grow as k shrinks").verdict == Verdict::reproduced);
        runs[4] = part_b::claims(cell("causal", "none", 0.1, {0.9, 0.05}), 4);  // tau = -1/3 < 0: not every step grows
        CHECK(pooled(runs, "003-T4-6 LR SL-L2 causal: errors grow as k shrinks").verdict == Verdict::not_reproduced);
    }
    SECTION("Table 7 causal: permuted <= unpermuted; prefix within x1.5") {
        // per seed: the unpermuted (none) and the permuted (per_step) run of each mask
        std::vector<std::vector<ClaimResult>> runs;
        const double causal_permuted[] = {0.2, 0.3, 0.25, 0.2, 0.3}, prefix_permuted[] = {0.1, 0.11, 0.095, 0.1, 0.105};
        for (std::int64_t seed = 0; seed < 5; ++seed) {
            runs.push_back(part_b::claims(cell("causal", "none", 0.4, {0.9, 0.5}), seed));
            runs.push_back(part_b::claims(cell("causal", "per_step", causal_permuted[seed], {0.9, 0.5}), seed));
            runs.push_back(part_b::claims(cell("prefix", "none", 0.1, {0.9, 0.5}), seed));
            runs.push_back(part_b::claims(cell("prefix", "per_step", prefix_permuted[seed], {0.9, 0.5}), seed));
        }
        const ClaimResult causal = pooled(runs, "003-T7 LR SL-L2 causal: permuted <= unpermuted");
        CHECK(causal.claim.pair.key == "train.permute_examples");
        REQUIRE(causal.values.size() == 5);
        CHECK(causal.values[0] == Approx(std::log(0.4 / 0.2)).epsilon(1e-15));  // ln(unpermuted / permuted)
        CHECK(causal.values[2] == Approx(std::log(0.4 / 0.25)).epsilon(1e-15));
        CHECK(causal.verdict == Verdict::reproduced);  // the interval of the mean above 0
        ClaimResult prefix = pooled(runs, "003-T7 LR SL-L2 prefix: permuted within x1.5 of unpermuted");
        CHECK(prefix.values[0] == Approx(0.0).margin(1e-15));
        CHECK(prefix.claim.rule.test == iclab::io::ClaimRule::Test::interval_within);
        CHECK(prefix.verdict == Verdict::reproduced);  // the interval inside [-ln 1.5, ln 1.5]
        // the permuted-only prefix <= causal claim still pairs on the mask
        const ClaimResult masks = pooled(runs, "003-T7 LR SL-L2 permuted: prefix <= causal");
        CHECK(masks.claim.pair.key == "model.mask");
        CHECK(masks.values[2] == Approx(std::log(0.25 / 0.095)).epsilon(1e-15));
        CHECK(masks.verdict == Verdict::reproduced);
        // prefix permuted x2.5 to x3.3 better: the interval wholly above ln 1.5, not reproduced
        const double far[] = {0.03, 0.035, 0.03, 0.04, 0.03};
        for (std::int64_t seed = 0; seed < 5; ++seed) runs[4 * seed + 3] = part_b::claims(cell("prefix", "per_step", far[seed], {0.9, 0.5}), seed);
        prefix = pooled(runs, "003-T7 LR SL-L2 prefix: permuted within x1.5 of unpermuted");
        CHECK(prefix.interval.low > std::log(1.5));
        CHECK(prefix.verdict == Verdict::not_reproduced);
        // causal permuted worse in every seed: not reproduced
        for (std::int64_t seed = 0; seed < 5; ++seed)
            runs[4 * seed + 1] = part_b::claims(cell("causal", "per_step", 0.6 + 0.01 * static_cast<double>(seed), {0.9, 0.5}), seed);
        CHECK(pooled(runs, "003-T7 LR SL-L2 causal: permuted <= unpermuted").verdict == Verdict::not_reproduced);
    }
    SECTION("Table 7 MC: points, within +-1.5") {
        std::vector<std::vector<ClaimResult>> runs;
        for (std::int64_t seed = 0; seed < 5; ++seed) {
            runs.push_back(part_b::claims(cell("prefix", "none", 20.0, {50, 40}, {}, "classification"), seed));  // both learned:
            runs.push_back(part_b::claims(cell("prefix", "per_step", 23.0 + static_cast<double>(seed), {50, 40}, {}, "classification"), seed));  // <= 33.3
        }
        const ClaimResult r = pooled(runs, "003-T7 MC SL-L2 prefix: permuted within 1.5 points of unpermuted");
        CHECK(r.values == std::vector<double>{-3.0, -4.0, -5.0, -6.0, -7.0});  // unpermuted - permuted
        CHECK(r.interval.high < -1.5);
        CHECK(r.verdict == Verdict::not_reproduced);
    }
    SECTION("Table 7 prefix: two arms at chance pass the band alone; the learned gate makes the claim inconclusive") {
        // MC, 3 classes: a uniform guess errs 66.7 %; both arms at ~66 % differ by < 1.5 points in every seed
        auto at = [](const std::string& permute, double error) {
            part_b::Cell c = cell("prefix", permute, error, {70, 68}, {}, "classification");
            c.chance_error = 100.0 * (1.0 - 1.0 / 3.0);
            return c;
        };
        std::vector<std::vector<ClaimResult>> runs;
        for (std::int64_t seed = 0; seed < 5; ++seed) {
            runs.push_back(part_b::claims(at("none", 66.0), seed));
            runs.push_back(part_b::claims(at("per_step", 66.5), seed));
        }
        ClaimResult r = pooled(runs, "003-T7 MC SL-L2 prefix: permuted within 1.5 points of unpermuted");
        REQUIRE(r.values.size() == 5);
        CHECK(std::isnan(r.values[0]));
        CHECK(r.verdict == Verdict::inconclusive);  // without the gate: -0.5 in every seed, reproduced
        CHECK_THAT(r.claim.statement, Catch::Contains("an arm counts only when it learned"));
        // both arms learned (<= 33.3 %): the band decides
        for (std::int64_t seed = 0; seed < 5; ++seed) {
            runs[2 * seed] = part_b::claims(at("none", 25.0), seed);
            runs[2 * seed + 1] = part_b::claims(at("per_step", 25.5 + 0.1 * static_cast<double>(seed)), seed);
        }
        r = pooled(runs, "003-T7 MC SL-L2 prefix: permuted within 1.5 points of unpermuted");
        CHECK(r.values[0] == Approx(-0.5));
        CHECK(r.verdict == Verdict::reproduced);        // a NaN chance error (a NaN target) shows no learning: that seed's value is NaN, the claim inconclusive
        auto nan_chance = at("per_step", 25.5);
        nan_chance.chance_error = std::nan("");
        runs[1] = part_b::claims(nan_chance, 0);
        r = pooled(runs, "003-T7 MC SL-L2 prefix: permuted within 1.5 points of unpermuted");
        CHECK(std::isnan(r.values[0]));
        CHECK(r.verdict == Verdict::inconclusive);
    }
    SECTION("Figure 3: final probe and the LR slope over the last third") {
        const std::vector<double> falls{1.0, 0.1, 0.01, 0.001}, flattens{1.0, 0.1, 0.05, 0.04};
        std::vector<std::vector<ClaimResult>> runs;
        for (std::int64_t seed = 0; seed < 5; ++seed) {
            runs.push_back(part_b::claims(cell("prefix", "none", 0.1, {0.9, 0.5}, falls), seed));
            runs.push_back(part_b::claims(cell("causal", "none", 0.2, {0.9, 0.5}, flattens), seed));
        }
        ClaimResult last = pooled(runs, "003-F3 LR SL-L2: prefix final-layer probe < causal");
        ClaimResult slope = pooled(runs, "003-F3 LR SL-L2: causal probe curve flatter over the last third");
        CHECK(last.values[0] == Approx(std::log(0.04 / 0.001)).epsilon(1e-12));
        CHECK(slope.values[0] == Approx(std::log10(0.04 / 0.05) + 1.0).epsilon(1e-12));  // causal - prefix slope
        CHECK(last.verdict == Verdict::reproduced);
        CHECK(slope.verdict == Verdict::reproduced);
        for (std::int64_t seed = 0; seed < 5; ++seed) {  // the masks' curves swapped: both fail
            runs[2 * seed] = part_b::claims(cell("prefix", "none", 0.1, {0.9, 0.5}, flattens), seed);
            runs[2 * seed + 1] = part_b::claims(cell("causal", "none", 0.2, {0.9, 0.5}, falls), seed);
        }
        CHECK(pooled(runs, "003-F3 LR SL-L2: prefix final-layer probe < causal").verdict == Verdict::not_reproduced);
        CHECK(pooled(runs, "003-F3 LR SL-L2: causal probe curve flatter over the last third").verdict == Verdict::not_reproduced);
    }
    SECTION("who declares what") {
        auto ids = [](const std::vector<ClaimResult>& claims) {
            std::vector<std::string> out;
            for (const auto& r : claims) out.push_back(r.claim.id);
            return out;
        };
        // a Table 3 setting (UL-L2): no Tables 4-6, Table 7 or Figure 3 claims
        part_b::Cell ul = cell("prefix", "none", 0.1, {0.9, 0.5}, {1.0, 0.1});
        ul.shared = false;
        CHECK(ids(part_b::claims(ul, 0)) == std::vector<std::string>{"003-T3 LR UL-L2: prefix < causal"});
        // a Table 1 setting (SL-L2): Table 1 and Table 3's row are one claim on the same values, at the spec's bar 1.5
        const auto sl = part_b::claims(cell("prefix", "none", 0.1, {0.9, 0.5}), 0);
        CHECK(sl[0].claim.id == "003-T1 LR SL-L2: ratio >= 1.5");
        CHECK(sl[0].claim.source == "Tables 1 and 3");
        CHECK(sl[0].claim.rule.text() == "95 % t-interval of the mean > 0.4055");
        for (const auto& id : ids(sl)) CHECK(id.rfind("003-T3 ", 0) == std::string::npos);
        // every rule of Part B is an interval or a count of every one of 5 seeds, and says when it was chosen
        for (const auto& r : sl) {
            INFO(r.claim.id);
            if (r.claim.rule.counts()) CHECK((r.claim.rule.needed_of(5) == 5 && r.claim.rule.needed_of(4) == 5));
            CHECK_THAT(r.claim.provenance, Catch::StartsWith("chosen after the first runs (2026-11-29): second audit"));
        }
        // per_sequence: another scheme than Table 7's, no permuted-vs-unpermuted pair
        CHECK(ids(part_b::claims(cell("causal", "per_sequence", 0.1, {0.9, 0.5}), 0)) ==
              std::vector<std::string>{"003-T7 LR SL-L2 permuted: prefix <= causal"});
        // MC: no slope claim
        const auto mc = ids(part_b::claims(cell("causal", "none", 30, {50, 40}, {60, 40, 35}, "classification"), 0));
        CHECK(std::find(mc.begin(), mc.end(), "003-F3 MC SL-L2: prefix final-layer probe < causal") != mc.end());
        for (const auto& id : mc) CHECK(id.find("flatter") == std::string::npos);
    }
}

TEST_CASE("prefix_vs_causal claims: runs paired on train.permute_examples and the mask, recomputed from the tables",
          "[prefix_vs_causal][cli][claims]") {
    Scratch scratch;
    std::map<std::string, fs::path> runs;  // "prefix none", "causal per_step", ...
    for (const char* mask : {"prefix", "causal"})
        for (const char* permute : {"none", "per_step"}) {
            const std::string name = std::string(mask) + " " + permute;
            const auto result = run_iclab(std::string("run ") + kTiny + " prefix_vs_causal.probes=true model.mask=" + mask +
                                              " train.permute_examples=" + permute + " output.dir=" +
                                              (scratch.path / (std::string(mask) + "_" + permute)).string(), scratch.path);
            INFO(result.err);
            REQUIRE(result.status == 0);
            runs[name] = last_line(result.out);
        }
    std::vector<fs::path> dirs;
    for (const auto& [name, dir] : runs) dirs.push_back(dir);
    const auto settings = iclab::run::pool_run_claims(dirs);
    REQUIRE(settings.size() == 1);  // the mask and the permutation are arms, not settings
    REQUIRE(settings[0].runs.size() == 4);
    std::map<std::string, ClaimResult> claims;
    for (const auto& r : settings[0].claims) claims[r.claim.id] = r;
    auto value = [&](const std::string& id) {
        INFO(id);
        REQUIRE(claims.count(id) == 1);
        REQUIRE(claims[id].values.size() == 1);
        CHECK(claims[id].units == std::vector<std::int64_t>{0});
        CHECK(claims[id].verdict == Verdict::inconclusive);  // one seed: no interval, and the sign tests need 5
        return claims[id].values[0];
    };
    const auto prefix = column_by_set(runs["prefix none"], "query_mse"), causal = column_by_set(runs["causal none"], "query_mse");
    const auto prefix_permuted = column_by_set(runs["prefix per_step"], "query_mse");
    const auto causal_permuted = column_by_set(runs["causal per_step"], "query_mse");

    // Tables 4-6, errors vs k: Kendall's tau over k = 3, 5 and the full set's 6, counted here pair by pair
    for (const auto& [mask, table] : {std::pair<std::string, std::map<std::string, double>>{"prefix", prefix}, {"causal", causal}}) {
        const double e3 = table.at("test_k3"), e5 = table.at("test_k5"), e6 = table.at("test");
        const double sign = ((e5 < e3) - (e5 > e3)) + ((e6 < e3) - (e6 > e3)) + ((e6 < e5) - (e6 > e5));  // +1 per falling pair
        CHECK(value("003-T4-6 LR SL-L2 " + mask + ": errors grow as k shrinks") == Approx(-sign / 3.0).epsilon(1e-15));
    }
    // Table 7: ln(unpermuted / permuted) per mask; prefix vs causal among the permuted runs
    CHECK(value("003-T7 LR SL-L2 causal: permuted <= unpermuted") ==
          Approx(std::log(causal.at("test") / causal_permuted.at("test"))).epsilon(1e-12));
    // the prefix equivalence counts an arm only when it learned (error <= 0.5 of the zero predictor's), else NaN
    const auto prefix_zero = column_by_set(runs["prefix none"], "zero_predictor_mse");
    const auto prefix_permuted_zero = column_by_set(runs["prefix per_step"], "zero_predictor_mse");
    const bool both_learned = prefix.at("test") <= 0.5 * prefix_zero.at("test") &&
                              prefix_permuted.at("test") <= 0.5 * prefix_permuted_zero.at("test");
    const double equivalence = value("003-T7 LR SL-L2 prefix: permuted within x1.5 of unpermuted");
    if (both_learned)
        CHECK(equivalence == Approx(std::log(prefix.at("test") / prefix_permuted.at("test"))).epsilon(1e-12));
    else
        CHECK(std::isnan(equivalence));
    CHECK(value("003-T7 LR SL-L2 permuted: prefix <= causal") ==
          Approx(std::log(causal_permuted.at("test") / prefix_permuted.at("test"))).epsilon(1e-12));
    CHECK(value("003-T1 LR SL-L2: ratio >= 1.5") == Approx(std::log(causal.at("test") / prefix.at("test"))).epsilon(1e-12));
    // Figure 3 from /tables/probes (model.layers 3: depths 0..3, the last third = depths 2..3)
    const auto probes_prefix = probe_mse(runs["prefix none"]), probes_causal = probe_mse(runs["causal none"]);
    REQUIRE(probes_prefix.size() == 4);
    CHECK(value("003-F3 LR SL-L2: prefix final-layer probe < causal") == Approx(std::log(probes_causal[3] / probes_prefix[3])).epsilon(1e-12));
    CHECK(value("003-F3 LR SL-L2: causal probe curve flatter over the last third") ==
          Approx(std::log10(probes_causal[3] / probes_causal[2]) - std::log10(probes_prefix[3] / probes_prefix[2])).epsilon(1e-12));
    CHECK(claims.size() == 10);  // T1 (Tables 1 and 3), 2 x k, 2 x errors vs k, 2 x F3, 2 x T7 permuted vs unpermuted, T7 prefix vs causal

    // The in-run probes are the prefix_vs_causal_probes experiment's, bit for bit.
    const auto probed = run_iclab("run configs/quick/prefix_vs_causal_probes.yaml source.run_dir='\"" + runs["causal none"].string() +
                                      "\"' output.dir=" + (scratch.path / "probes").string() + " --quiet", scratch.path);
    INFO(probed.err);
    REQUIRE(probed.status == 0);
    CHECK(probe_mse(last_line(probed.out)) == probes_causal);

    // The probes come after training and measurement: without them, every declared number is the same bit for bit.
    const auto plain = run_iclab(std::string("run ") + kTiny + " model.mask=causal output.dir=" + (scratch.path / "plain").string(),
                                 scratch.path);
    REQUIRE(plain.status == 0);
    CHECK(column_by_set(last_line(plain.out), "query_mse") == causal);
    CHECK_FALSE(iclab::io::ResultsReader((fs::path(last_line(plain.out)) / "results.h5").string()).has("/tables/probes"));

    // Ambiguous: a second permuted causal run of seed 0 (another folder) in the same setting is refused, naming both.
    const auto again = run_iclab(std::string("run ") + kTiny + " prefix_vs_causal.probes=true model.mask=causal "
                                 "train.permute_examples=per_step output.dir=" + (scratch.path / "again").string(), scratch.path);
    REQUIRE(again.status == 0);
    dirs.push_back(last_line(again.out));
    try {
        iclab::run::pool_run_claims(dirs);
        FAIL("two permuted causal runs of seed 0 were pooled");
    } catch (const iclab::InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("seed 0 (") && Catch::Contains("train.permute_examples = per_step") &&
                                 Catch::Contains("is in both") && Catch::Contains("same seed"));
    }
    // per_sequence is not an arm of the Table 7 pair: its run is another setting, not a third arm
    const auto other = run_iclab(std::string("run ") + kTiny + " prefix_vs_causal.probes=true model.mask=causal "
                                 "train.permute_examples=per_sequence output.dir=" +
                                     (scratch.path / "other").string(), scratch.path);
    REQUIRE(other.status == 0);
    dirs.back() = last_line(other.out);
    const auto with_other = iclab::run::pool_run_claims(dirs);
    CHECK(with_other.size() == 2);
}

TEST_CASE("prefix_vs_causal claims: probes need a pool, named", "[prefix_vs_causal][cli][claims]") {
    Scratch scratch;
    const auto result = run_iclab("run " + kTiny + " task.pool_sequences=0 prefix_vs_causal.pool_eval_sequences=50 "
                                  "prefix_vs_causal.probes=true output.dir=" + scratch.path.string(), scratch.path);
    CHECK(result.status == 2);
    CHECK_THAT(result.err, Catch::Contains("prefix_vs_causal.probes"));
    for (const auto& entry : fs::recursive_directory_iterator(scratch.path)) CHECK(entry.path().filename() != "results.h5");  // nothing written
}

TEST_CASE("prefix_vs_causal claims: a run whose declared arm is not its config's value is refused", "[prefix_vs_causal][claims]") {
    Scratch scratch;
    // Two hand-made run folders: the same LR SL-L2 cell, config mask prefix; one declares its claims as the causal arm.
    auto write_run = [&](const std::string& name, const std::string& declared_mask) {
        const fs::path dir = scratch.path / name;
        fs::create_directories(dir);
        iclab::io::ResultsWriter w(dir / "results.h5");
        w.set_attr("experiment", "prefix_vs_causal");
        w.set_attr("config_source", "hand-made");
        w.set_attr("config", "experiment: prefix_vs_causal\nseed: 0\nmodel:\n  mask: prefix\ntrain:\n  permute_examples: none\n");
        iclab::io::write_claims(w, part_b::claims(cell(declared_mask, "none", 0.1, {0.9, 0.5}), 0));
        w.commit();
        return dir;
    };
    const fs::path right = write_run("right", "prefix"), wrong = write_run("wrong", "causal");
    CHECK(iclab::run::pool_run_claims({right}).size() == 1);
    try {
        iclab::run::pool_run_claims({right, wrong});
        FAIL("a run declaring the causal arm with model.mask prefix was pooled");
    } catch (const iclab::InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("declares arm 'causal'") && Catch::Contains("model.mask is 'prefix'") &&
                                 Catch::Contains(wrong.string()));
    }
}

}  // namespace iclab_test_prefix_vs_causal_claims
