// Paper 003 Figure 6's declared claims (experiments/prefix_vs_causal/claims.hpp figure6_claims): which run declares
// which claim, the three rules on constructed seeds (each must hold and must fail), and end to end through the iclab
// binary: tiny runs over four pools and both masks pooled into one setting, every pooled value recomputed from the
// stored tables (Kendall's p from the Mahonian numbers of n = 4 by hand), a repeated run and bad settings refused
// (exit 2, named, nothing written).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "experiments/prefix_vs_causal/claims.hpp"
#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_prefix_vs_causal_figure6 {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;
namespace part_b = iclab::experiments::part_b;
using iclab::io::ClaimResult;
using iclab::io::Verdict;

namespace {

const std::vector<std::int64_t> kPools = {640, 1920, 6400, 19200, 64000};

part_b::Cell point(const std::string& mask, std::int64_t pool, double test, double train_pool, const std::string& task = "linear") {
    part_b::Cell c;
    c.task = task, c.mask = mask, c.pool = pool, c.test_error = test, c.train_pool_error = train_pool;
    return c;
}

// The claims of a grid: errors[mask][seed][pool index] (test error; the train-pool error is half of it).
std::map<std::string, ClaimResult> pooled_grid(const std::map<std::string, std::vector<std::vector<double>>>& errors,
                                               const std::string& task = "linear") {
    std::vector<std::pair<std::string, std::vector<ClaimResult>>> runs;
    for (const auto& [mask, seeds] : errors)
        for (std::size_t s = 0; s < seeds.size(); ++s)
            for (std::size_t p = 0; p < kPools.size(); ++p)
                runs.push_back({mask + std::to_string(s) + "_" + std::to_string(p),
                                part_b::figure6_claims(point(mask, kPools[p], seeds[s][p], seeds[s][p] / 2, task),
                                                       static_cast<std::int64_t>(s), kPools)});
    std::map<std::string, ClaimResult> out;
    for (const ClaimResult& r : iclab::io::pool_claims(runs)) out[r.claim.id] = r;
    return out;
}

const std::string kTiny =
    "configs/quick/prefix_vs_causal.yaml task.x_dim=3 task.examples=6 task.queries=3 model.layers=3 model.width=16 "
    "train.steps=60 train.batch_size=16 eval.every=30 eval.sequences=96 prefix_vs_causal.first_sequences=32 "
    "prefix_vs_causal.pool_eval_sequences=50 'prefix_vs_causal.test_examples=[3, 5]' prefix_vs_causal.claims=false "
    "'prefix_vs_causal.figure6_pools=[50, 100, 150, 200]' --quiet";

std::map<std::string, double> column_by_set(const fs::path& run) {
    iclab::io::ResultsReader reader((run / "results.h5").string());
    const auto set = reader.read_column_string("/tables/prefix_vs_causal/set");
    const auto value = reader.read_column_double("/tables/prefix_vs_causal/query_mse");
    std::map<std::string, double> out;
    for (std::size_t i = 0; i < set.size(); ++i) out[set[i]] = value[i];
    return out;
}

}  // namespace

TEST_CASE("prefix_vs_causal Figure 6: each pool declares its claims", "[prefix_vs_causal][claims][figure6]") {
    auto ids = [](const std::vector<ClaimResult>& claims) {
        std::vector<std::string> out;
        for (const auto& r : claims) out.push_back(r.claim.id);
        return out;
    };
    const auto smallest = part_b::figure6_claims(point("prefix", 640, 0.2, 0.05), 1, kPools);
    CHECK(ids(smallest) == std::vector<std::string>{"003-F6 LR SL-L2 prefix: test error falls with the pool",
                                                     "003-F6 LR SL-L2 prefix smallest pool: train pool < test"});
    const auto& falls = smallest[0].claim;
    CHECK(falls.source == "Figure 6");
    CHECK(falls.kind == iclab::io::ClaimKind::qualitative);
    CHECK(falls.pair.key == "task.pool_sequences");
    CHECK(falls.pair.arms == std::vector<std::string>{"640", "1920", "6400", "19200", "64000"});
    CHECK(falls.pair.arm == "640");
    CHECK(falls.rule.text() == "x <= 0.05 in >= 5/6 of the values, at least 5");  // the rank test's p <= 0.05, 5 of 5 seeds
    CHECK_THAT(falls.provenance, Catch::Contains("second audit") && Catch::Contains("p <= 0.05") && Catch::Contains("refused"));
    CHECK(smallest[0].values == std::vector<double>{0.2});  // the raw arm value: the run's test error
    CHECK(smallest[1].values[0] == Approx(std::log(0.2 / 0.05)).epsilon(1e-15));
    CHECK(ids(part_b::figure6_claims(point("causal", 6400, 0.2, 0.1), 1, kPools)) ==
          std::vector<std::string>{"003-F6 LR SL-L2 causal: test error falls with the pool"});
    const auto largest = part_b::figure6_claims(point("causal", 64000, 0.2, 0.1), 1, kPools);
    REQUIRE(largest.size() == 2);
    CHECK(largest[1].claim.id == "003-F6 LR SL-L2 largest pool: prefix <= causal");
    CHECK(largest[1].claim.pair.key == "model.mask");
    CHECK(largest[1].claim.pair.arm == "causal");
    // MC: points, not ratios
    const auto mc = part_b::figure6_claims(point("prefix", 640, 41.0, 0.4, "classification"), 0, kPools);
    CHECK(mc[1].claim.id == "003-F6 MC SL-L2 prefix smallest pool: train pool < test");
    CHECK(mc[1].values[0] == Approx(40.6).epsilon(1e-15));
    CHECK_THROWS_AS(part_b::figure6_claims(point("prefix", 1000, 0.2, 0.1), 0, kPools), iclab::Error);  // not a pool of the list
    CHECK_THROWS_AS(part_b::figure6_claims(point("prefix", 640, 0.2, 0.1), 0, {640, 1920, 6400}), iclab::Error);  // 3 pools
}

TEST_CASE("prefix_vs_causal Figure 6: the rules hold and fail on constructed seeds", "[prefix_vs_causal][claims][figure6]") {
    // prefix falls in every seed (strictly: p = 1/120; with one pair out of order: p = 5/120, both <= 0.05); causal rises
    // in every seed (the negative control) and stays above prefix at the largest pool in 4 of 5 seeds, mean well above
    std::map<std::string, std::vector<std::vector<double>>> grid{
        {"prefix", {{5, 4, 3, 2, 1}, {5, 4, 3, 1, 2}, {5, 4, 3, 2, 1.5}, {4, 5, 3, 2, 1}, {3, 2, 1.5, 1.2, 1.1}}},
        {"causal", {{6, 7, 8, 9, 10}, {1, 1.5, 1.6, 1.7, 1.8}, {2, 3, 4, 5, 6}, {3, 4, 5, 6, 7}, {2, 2.5, 3, 3.5, 4}}}};
    auto claims = pooled_grid(grid);
    const ClaimResult& prefix = claims.at("003-F6 LR SL-L2 prefix: test error falls with the pool");
    CHECK(prefix.values[0] == Approx(1.0 / 120).epsilon(1e-14));
    CHECK(prefix.values[1] == Approx(5.0 / 120).epsilon(1e-14));
    CHECK(prefix.on_side == 5);
    CHECK(prefix.verdict == Verdict::reproduced);  // p <= 0.05 in 5 of 5 seeds
    const ClaimResult& causal = claims.at("003-F6 LR SL-L2 causal: test error falls with the pool");
    CHECK(causal.values == std::vector<double>(5, 1.0));
    CHECK(causal.on_side == 0);
    CHECK(causal.verdict == Verdict::not_reproduced);
    // ln(causal / prefix) at 64000: ln 10, ln(1.8 / 2), ln 4, ln 7, ln(4 / 1.1): the interval of the mean above 0
    const ClaimResult& largest = claims.at("003-F6 LR SL-L2 largest pool: prefix <= causal");
    CHECK(largest.values[0] == Approx(std::log(10.0)).epsilon(1e-14));
    CHECK(largest.values[1] == Approx(std::log(0.9)).epsilon(1e-14));
    CHECK(largest.interval.low > 0.0);
    CHECK(largest.verdict == Verdict::reproduced);
    // train pool = test / 2 in pooled_grid: ln 2 > 0 in every seed
    const ClaimResult& memorised = claims.at("003-F6 LR SL-L2 causal smallest pool: train pool < test");
    CHECK(memorised.values == std::vector<double>(5, std::log(2.0)));
    CHECK(memorised.verdict == Verdict::reproduced);
    // 4 of 5 falling (a fair coin's 19 %) is not enough: seed 4's prefix errors rise with the pool
    grid["prefix"][4] = {1, 1.2, 1.5, 2, 3};
    claims = pooled_grid(grid);
    CHECK(claims.at("003-F6 LR SL-L2 prefix: test error falls with the pool").on_side == 4);
    CHECK(claims.at("003-F6 LR SL-L2 prefix: test error falls with the pool").verdict == Verdict::not_reproduced);
    // prefix above causal at the largest pool in every seed: not reproduced
    for (auto& errors : grid["causal"]) errors.back() = 0.5;
    CHECK(pooled_grid(grid).at("003-F6 LR SL-L2 largest pool: prefix <= causal").verdict == Verdict::not_reproduced);
}

TEST_CASE("prefix_vs_causal Figure 6: runs over pools pooled end to end, recomputed from their tables",
          "[prefix_vs_causal][cli][claims][figure6]") {
    Scratch scratch;
    std::map<std::pair<std::string, int>, fs::path> runs;
    std::vector<fs::path> dirs;
    for (const char* mask : {"prefix", "causal"})
        for (int pool : {50, 100, 150, 200}) {
            const auto result = run_iclab("run " + kTiny + " model.mask=" + mask + " task.pool_sequences=" + std::to_string(pool) +
                                              " output.dir=" + (scratch.path / (std::string(mask) + std::to_string(pool))).string(),
                                          scratch.path);
            INFO(result.err);
            REQUIRE(result.status == 0);
            runs[{mask, pool}] = last_line(result.out);
            dirs.push_back(last_line(result.out));
        }
    const auto settings = iclab::run::pool_run_claims(dirs);
    REQUIRE(settings.size() == 1);  // the pools and the masks are arms, not settings
    CHECK(settings[0].runs.size() == 8);
    std::map<std::string, ClaimResult> claims;
    for (const auto& r : settings[0].claims) claims[r.claim.id] = r;
    CHECK(claims.size() == 5);
    const double mahonian4[] = {1, 3, 5, 6, 5, 3, 1};  // M(4, k): orders of 4 with k discordant pairs
    for (const std::string mask : {"prefix", "causal"}) {
        const ClaimResult& r = claims.at("003-F6 LR SL-L2 " + mask + ": test error falls with the pool");
        REQUIRE(r.values.size() == 1);
        CHECK(r.verdict == Verdict::inconclusive);  // one seed: the rule needs 5
        std::vector<double> test;
        for (int pool : {50, 100, 150, 200}) test.push_back(column_by_set(runs[{mask, pool}]).at("test"));
        int discordant = 0;  // pairs whose larger pool has the smaller error (falling)
        for (int i = 0; i < 4; ++i)
            for (int j = i + 1; j < 4; ++j) discordant += test[j] < test[i];
        double tail = 0;
        for (int k = discordant; k <= 6; ++k) tail += mahonian4[k];
        CHECK(r.values[0] == Approx(tail / 24).epsilon(1e-14));
        const ClaimResult& smallest = claims.at("003-F6 LR SL-L2 " + mask + " smallest pool: train pool < test");
        const auto table = column_by_set(runs[{mask, 50}]);
        CHECK(smallest.values[0] == Approx(std::log(table.at("test") / table.at("train_pool"))).epsilon(1e-12));
    }
    CHECK(claims.at("003-F6 LR SL-L2 largest pool: prefix <= causal").values[0] ==
          Approx(std::log(column_by_set(runs[{"causal", 200}]).at("test") / column_by_set(runs[{"prefix", 200}]).at("test"))).epsilon(1e-12));

    // `iclab claims` lists them; a second prefix run of pool 100 and seed 0 (another folder) is refused, naming both
    const auto listed = run_iclab("claims " + scratch.path.string() + " --out " + (scratch.path / "claims.csv").string(), scratch.path);
    INFO(listed.err);
    CHECK(listed.status == 0);
    CHECK_THAT(read_file(scratch.path / "claims.csv"), Catch::Contains("003-F6 LR SL-L2 prefix: test error falls with the pool"));
    const auto again = run_iclab("run " + kTiny + " model.mask=prefix task.pool_sequences=100 output.dir=" + (scratch.path / "again").string(),
                                 scratch.path);
    REQUIRE(again.status == 0);
    const auto refused = run_iclab("claims " + scratch.path.string(), scratch.path);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("task.pool_sequences = 100") && Catch::Contains(") is in both") &&
                                Catch::Contains("same seed"));
    fs::remove_all(scratch.path / "again");
    // a run of another setting (another lr) is not a fifth arm: its own setting, its claim missing three pools
    const auto other = run_iclab("run " + kTiny + " model.mask=prefix task.pool_sequences=100 train.lr=0.001 output.dir=" +
                                     (scratch.path / "other").string(), scratch.path);
    REQUIRE(other.status == 0);
    dirs.push_back(last_line(other.out));
    const auto two = iclab::run::pool_run_claims(dirs);
    REQUIRE(two.size() == 2);
    CHECK(two[1].claims[0].values.empty());
    CHECK_THAT(two[1].claims[0].note, Catch::Contains("seed 0 (no task.pool_sequences = 50, 150, 200)"));
}

TEST_CASE("prefix_vs_causal Figure 6: bad settings are refused, named", "[prefix_vs_causal][cli][claims][figure6]") {
    Scratch scratch;
    const std::pair<std::string, std::string> cases[] = {
        {"task.pool_sequences=120", "is none of prefix_vs_causal.figure6_pools"},
        {"task.pool_sequences=100 prefix_vs_causal.claims=true", "set prefix_vs_causal.claims: false"},
        {"task.pool_sequences=100 'prefix_vs_causal.figure6_pools=[50, 100, 200]'", "needs >= 4 distinct pool sizes"},
        {"task.pool_sequences=100 'prefix_vs_causal.figure6_pools=[50, 100, 100, 200]'", "needs >= 4 distinct pool sizes"},
        {"task.pool_sequences=100 model.mask=full", "Figure 6 compares prefix and causal"},
        {"task.pool_sequences=100 train.permute_examples=per_step", "trained without permuted ICEs"},
    };
    for (const auto& [overrides, message] : cases) {
        INFO(overrides);
        const auto result = run_iclab("run " + kTiny + " " + overrides + " output.dir=" + scratch.path.string(), scratch.path);
        CHECK(result.status == 2);
        CHECK_THAT(result.err, Catch::Contains(message) && Catch::Contains("prefix_vs_causal.figure6_pools"));
    }
    for (const auto& entry : fs::recursive_directory_iterator(scratch.path)) CHECK(entry.path().filename() != "results.h5");
}

TEST_CASE("prefix_vs_causal Figure 6: a run whose declared pool is not its config's is refused", "[prefix_vs_causal][claims][figure6]") {
    Scratch scratch;
    // Two hand-made run folders of seed 0, config pool 1920; one declares its claims as the 640 arm.
    auto write_run = [&](const std::string& name, std::int64_t declared_pool) {
        const fs::path dir = scratch.path / name;
        fs::create_directories(dir);
        iclab::io::ResultsWriter w(dir / "results.h5");
        w.set_attr("experiment", "prefix_vs_causal");
        w.set_attr("config_source", "hand-made");
        w.set_attr("config", "experiment: prefix_vs_causal\nseed: 0\nmodel:\n  mask: prefix\ntask:\n  pool_sequences: 1920\n");
        iclab::io::write_claims(w, part_b::figure6_claims(point("prefix", declared_pool, 0.1, 0.05), 0, kPools));
        w.commit();
        return dir;
    };
    const fs::path right = write_run("right", 1920), wrong = write_run("wrong", 640);
    CHECK(iclab::run::pool_run_claims({right}).size() == 1);
    try {
        iclab::run::pool_run_claims({right, wrong});
        FAIL("a run declaring pool 640 with task.pool_sequences 1920 was pooled");
    } catch (const iclab::InputError& e) {
        CHECK_THAT(e.what(), Catch::Contains("declares arm '640'") && Catch::Contains("task.pool_sequences is '1920'") &&
                                 Catch::Contains(wrong.string()));
    }
}

}  // namespace iclab_test_prefix_vs_causal_figure6
