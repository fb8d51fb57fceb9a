// The declared lr fallback of prefix_vs_causal (experiments/prefix_vs_causal/fallback.hpp) end to end through the
// iclab binary: a rule forced to fire retrains each arm at prefix_vs_causal.fallback.lr in <run>/fallback/, the
// results hold both measurements and both claim sets, and the fallback claims pair the fallback runs' errors; a rule
// that does not fire leaves every declared number bit-identical to a run with rule none.
#include <catch2/catch.hpp>

#include <cstring>

#include <algorithm>
#include <cmath>

#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_prefix_vs_causal_fallback {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {
const std::string kTiny =
    "configs/quick/prefix_vs_causal.yaml task.x_dim=3 task.examples=6 task.queries=3 task.pool_sequences=200 "
    "model.layers=2 model.width=16 train.steps=60 train.batch_size=16 eval.every=30 eval.sequences=96 "
    "prefix_vs_causal.first_sequences=32 prefix_vs_causal.pool_eval_sequences=50 'prefix_vs_causal.test_examples=[3]' --quiet";
// spike_factor 1 with a 5-step mean: any rise of the mean after the 12-step warmup fires (the tiny runs are noisy)
const std::string kForced = " prefix_vs_causal.fallback.rule=spike_or_plateau prefix_vs_causal.fallback.spike_factor=1 "
                            "prefix_vs_causal.fallback.window=5";

std::vector<double> column(const fs::path& run_dir, const std::string& path) {
    return iclab::io::ResultsReader((run_dir / "results.h5").string()).read_column_double(path);
}
}  // namespace

TEST_CASE("prefix_vs_causal fallback: a triggered rule stores the fallback run and a second claim set", "[prefix_vs_causal][cli][fallback]") {
    Scratch scratch;
    std::vector<fs::path> runs;
    for (const char* mask : {"prefix", "causal"}) {
        const auto result = run_iclab("run " + kTiny + kForced + " model.mask=" + mask + " output.dir=" + scratch.path.string(), scratch.path);
        INFO(result.err);
        REQUIRE(result.status == 0);
        runs.push_back(last_line(result.out));
    }
    for (const auto& run : runs) {
        iclab::io::ResultsReader reader((run / "results.h5").string());
        REQUIRE(reader.read_attr_string("/", "fallback_triggered") == "true");
        CHECK(reader.read_attr_string("/", "fallback_rule") == "spike_or_plateau");
        CHECK(reader.read_attr_int64("/", "fallback_step") > 12);  // after the warmup (0.2 x 60 steps)
        CHECK(reader.read_attr_string("/fallback/detector", "kind") == "spike");
        CHECK(reader.read_column_double("/fallback/detector/ratio")[0] > 1.0);
        // the fallback run: its own folder and config (train.lr 3e-4, no detector, no claims), the same test sets
        const fs::path nested = run / "fallback";
        REQUIRE(fs::exists(nested / "results.h5"));
        const std::string config = read_file(nested / "config.yaml");
        CHECK_THAT(config, Catch::Contains("lr: 0.0003"));
        const auto declared_zero = column(run, "/tables/prefix_vs_causal/zero_predictor_mse");
        const auto fallback_zero = column(run, "/tables/prefix_vs_causal_fallback/zero_predictor_mse");
        CHECK(declared_zero == fallback_zero);  // same sequences
        CHECK(column(run, "/tables/prefix_vs_causal_fallback/query_mse") == column(nested, "/tables/prefix_vs_causal/query_mse"));
        CHECK(column(run, "/tables/prefix_vs_causal_fallback/query_mse")[0] != column(run, "/tables/prefix_vs_causal/query_mse")[0]);
        CHECK(column(run, "/tables/prefix_vs_causal_fallback/lr") == std::vector<double>(4, 3e-4));
        // the nested run starts from the same initialization: its first step's loss equals the declared run's
        CHECK(column(nested, "/steps/loss")[0] == column(run, "/steps/loss")[0]);
        CHECK(column(nested, "/steps/loss")[1] != column(run, "/steps/loss")[1]);
        CHECK(reader.has("/claims"));
        CHECK_FALSE(iclab::io::ResultsReader((nested / "results.h5").string()).has("/claims"));
    }
    // Pooled (the nested runs found too, as `iclab claims <folder>` finds them: they declare nothing): the declared
    // claims pair the declared errors, the "(with triggered fallback)" Table 1 claims the fallback runs' errors.
    std::vector<fs::path> dirs;
    for (const auto& entry : fs::recursive_directory_iterator(scratch.path))
        if (entry.path().filename() == "results.h5") dirs.push_back(entry.path().parent_path());
    REQUIRE(dirs.size() == 4);
    const auto pooled = iclab::run::pool_run_claims(dirs);
    REQUIRE(pooled.size() == 1);
    std::vector<std::string> ids;
    for (const auto& r : pooled[0].claims) ids.push_back(r.claim.id);
    std::sort(ids.begin(), ids.end());
    CHECK(ids == std::vector<std::string>{"003-T1 LR SL-L2: ratio >= 1.5", "003-T1 LR SL-L2: ratio >= 1.5 (with triggered fallback)",
                                          "003-T4-6 LR SL-L2 causal: errors grow as k shrinks", "003-T4-6 LR SL-L2 k=3: prefix < causal",
                                          "003-T4-6 LR SL-L2 prefix: errors grow as k shrinks",
                                          "003-T7 LR SL-L2 causal: permuted <= unpermuted",
                                          "003-T7 LR SL-L2 prefix: permuted within x1.5 of unpermuted"});
    auto pooled_claim = [&](const std::string& id) {
        for (const auto& r : pooled[0].claims)
            if (r.claim.id == id) return r;
        FAIL("no pooled claim " << id);
        return pooled[0].claims[0];
    };
    const double declared = std::log(column(runs[1], "/tables/prefix_vs_causal/query_mse")[0] /
                                      column(runs[0], "/tables/prefix_vs_causal/query_mse")[0]);
    const double fallback = std::log(column(runs[1], "/tables/prefix_vs_causal_fallback/query_mse")[0] /
                                     column(runs[0], "/tables/prefix_vs_causal_fallback/query_mse")[0]);
    for (const std::string id : {"003-T1 LR SL-L2: ratio >= 1.5"}) {
        const auto plain = pooled_claim(id), with = pooled_claim(id + " (with triggered fallback)");
        REQUIRE(plain.values.size() == 1);
        CHECK(plain.values[0] == Approx(declared).epsilon(1e-12));
        REQUIRE(with.values.size() == 1);
        CHECK(with.values[0] == Approx(fallback).epsilon(1e-12));
        CHECK(with.claim.source == "Tables 1 and 3");
        // the rule's provenance (issue 45, second audit) and the detector's (2026-11-26), both
        CHECK_THAT(with.claim.provenance, Catch::Contains("(2026-11-29): second audit") && Catch::Contains("lr-fallback detector"));
    }
}

TEST_CASE("prefix_vs_causal fallback: a run stopped before the end and resumed gives the same fallback", "[prefix_vs_causal][cli][fallback]") {
    Scratch scratch;
    const std::string run = "run " + kTiny + kForced + " train.checkpoint_every=10 output.name=r output.dir=";
    const auto whole = run_iclab(run + (scratch.path / "whole").string(), scratch.path);
    const auto stopped = run_iclab(run + (scratch.path / "stopped").string() + " --stop-after 30", scratch.path);
    INFO(whole.err << stopped.err);
    REQUIRE(whole.status == 0);
    REQUIRE(stopped.status == 0);
    CHECK_FALSE(fs::exists(scratch.path / "stopped" / "r" / "fallback"));  // the detector runs on the whole history only
    const auto resumed = run_iclab("run --resume " + (scratch.path / "stopped" / "r").string() + " --quiet", scratch.path);
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    for (const char* table : {"/tables/prefix_vs_causal/query_mse", "/tables/prefix_vs_causal_fallback/query_mse", "/fallback/detector/step"})
        CHECK(column(scratch.path / "whole" / "r", table) == column(scratch.path / "stopped" / "r", table));
}

TEST_CASE("prefix_vs_causal fallback: a rule that does not fire changes no declared number", "[prefix_vs_causal][cli][fallback]") {
    Scratch scratch;
    const auto none = run_iclab("run " + kTiny + " output.dir=" + (scratch.path / "none").string(), scratch.path);
    // the cpu2 rule at its defaults (window 50 of 60 steps: the spike rule has 10 means to compare; plateau 500 steps:
    // no window fits) does not fire on the tiny run
    const auto quiet = run_iclab("run " + kTiny + " prefix_vs_causal.fallback.rule=spike_or_plateau output.dir=" +
                                     (scratch.path / "rule").string(), scratch.path);
    INFO(none.err << quiet.err);
    REQUIRE(none.status == 0);
    REQUIRE(quiet.status == 0);
    const fs::path a = last_line(none.out), b = last_line(quiet.out);
    iclab::io::ResultsReader ra((a / "results.h5").string()), rb((b / "results.h5").string());
    CHECK_FALSE(ra.has("/fallback"));
    CHECK(rb.read_attr_string("/", "fallback_triggered") == "false");
    CHECK(rb.read_column_double("/fallback/detector/triggered")[0] == 0.0);
    CHECK_FALSE(rb.has("/tables/prefix_vs_causal_fallback"));
    CHECK_FALSE(fs::exists(b / "fallback"));
    for (const char* name : {"query_mse", "zero_predictor_mse", "relative_query_mse"})  // bit for bit
        CHECK(ra.read_column_double(std::string("/tables/prefix_vs_causal/") + name) ==
              rb.read_column_double(std::string("/tables/prefix_vs_causal/") + name));
    CHECK(ra.read_column_double("/steps/loss") == rb.read_column_double("/steps/loss"));
    // the fallback claims carry the declared value when the run's detector did not fire
    const auto ca = iclab::io::read_claims(ra), cb = iclab::io::read_claims(rb);
    REQUIRE(ca.size() == 4);  // Tables 1 and 3 (one claim), k = 3, errors vs k, permuted vs unpermuted
    REQUIRE(cb.size() == 5);
    const auto same_bits = [](const std::vector<double>& x, const std::vector<double>& y) {  // NaN equal to NaN
        return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(double)) == 0;
    };
    for (std::size_t c = 0; c < 4; ++c) {
        CHECK(cb[c].claim.id == ca[c].claim.id);
        CHECK(same_bits(cb[c].values, ca[c].values));
    }
    CHECK(cb[4].claim.id == ca[0].claim.id + " (with triggered fallback)");
    CHECK(cb[4].values == ca[0].values);
}

TEST_CASE("prefix_vs_causal fallback: bad rule settings are refused naming the key", "[prefix_vs_causal][cli][fallback]") {
    Scratch scratch;
    const auto same = run_iclab("run " + kTiny + " prefix_vs_causal.fallback.rule=spike prefix_vs_causal.fallback.lr=0.003 output.dir=" +
                                    scratch.path.string(), scratch.path);  // the quick config's train.lr
    CHECK(same.status == 2);
    CHECK_THAT(same.err, Catch::Contains("prefix_vs_causal.fallback.lr"));
    const auto window = run_iclab("run " + kTiny + " prefix_vs_causal.fallback.rule=plateau prefix_vs_causal.fallback.window=60 output.dir=" +
                                      scratch.path.string(), scratch.path);
    CHECK(window.status == 2);
    CHECK_THAT(window.err, Catch::Contains("prefix_vs_causal.fallback.window"));
    const auto kind = run_iclab("run " + kTiny + " prefix_vs_causal.fallback.rule=spikes output.dir=" + scratch.path.string(), scratch.path);
    CHECK(kind.status == 2);
    CHECK_THAT(kind.err, Catch::Contains("prefix_vs_causal.fallback.rule"));
    const auto factor = run_iclab("run " + kTiny + " prefix_vs_causal.fallback.spike_factor=0.5 output.dir=" + scratch.path.string(), scratch.path);
    CHECK(factor.status == 2);
    CHECK_THAT(factor.err, Catch::Contains("prefix_vs_causal.fallback.spike_factor"));
    for (const auto& entry : fs::recursive_directory_iterator(scratch.path)) CHECK(entry.path().filename() != "results.h5");  // nothing written
}

}  // namespace iclab_test_prefix_vs_causal_fallback
