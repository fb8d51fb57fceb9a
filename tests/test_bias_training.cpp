// Experiment bias_training (paper 000 Figure 1) end to end through the iclab binary on a tiny model: one
// results.h5 with every (variant, seed)'s curves, a summary consistent with them (recomputed here), the same
// seed giving both variants the same start, trainable biases actually trained, and a run stopped inside a
// sub-run and resumed ending with the same tables as an uninterrupted one.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "experiments/bias_training/claims.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_bias_training {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

// Thresholds 0 (reached at the first evaluation) and 0.999 (never reached by this tiny model): both branches.
const std::string kTinyBias =
    "configs/quick/bias_training.yaml train.steps=12 train.warmup_steps=2 eval.every=4 task.seq_len=24 eval.sequences=8 "
    "train.batch_size=8 model.width=16 'bias_training.seeds=[0, 1]' 'bias_training.thresholds=[0.0, 0.999]' "
    "'bias_training.variants=[no_bias, trainable_bias, trainable_bias_nonnegative]' --quiet";

std::vector<std::string> column_order(const iclab::io::ResultsReader& reader, const std::string& group) {
    std::vector<std::string> names;
    std::stringstream order(reader.read_attr_string(group, "column_order"));
    for (std::string name; std::getline(order, name, ',');) names.push_back(name);
    return names;
}

double mean_of(const std::vector<double>& v) {
    double sum = 0.0;
    for (double x : v) sum += x;
    return sum / v.size();
}

double sample_std(const std::vector<double>& v) {
    const double m = mean_of(v);
    double squares = 0.0;
    for (double x : v) squares += (x - m) * (x - m);
    return std::sqrt(squares / (v.size() - 1));
}

}  // namespace

TEST_CASE("bias_training: curves of every (variant, seed) and a summary consistent with them", "[bias_training][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run " + kTinyBias + " output.dir=" + scratch.path.string(), scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    const fs::path run_dir = last_line(result.out);
    CHECK(!fs::exists(run_dir / "checkpoint.h5"));  // the parent's resume marker is gone once complete
    iclab::io::ResultsReader reader((run_dir / "results.h5").string());
    CHECK(column_order(reader, "/tables/summary") ==
          std::vector<std::string>{"variant", "seeds",
                                   "steps_to_0pct_mean", "steps_to_0pct_std", "steps_to_0pct_min", "steps_to_0pct_max", "reached_0pct",
                                   "steps_to_99.9pct_mean", "steps_to_99.9pct_std", "steps_to_99.9pct_min", "steps_to_99.9pct_max",
                                   "reached_99.9pct",
                                   "final_train_loss_mean", "final_train_loss_std", "final_train_loss_min", "final_train_loss_max",
                                   "final_icl_accuracy_mean", "final_icl_accuracy_std", "final_icl_accuracy_min",
                                   "final_icl_accuracy_max"});
    CHECK(column_order(reader, "/tables/runs") ==
          std::vector<std::string>{"variant", "seed", "steps_to_0pct", "steps_to_99.9pct", "final_train_loss", "final_icl_accuracy",
                                   "best_icl_accuracy", "min_attention_denominator", "wall_time_s", "run_dir"});
    const auto variants = reader.read_column_string("/tables/summary/variant");
    REQUIRE(variants == std::vector<std::string>{"no_bias", "trainable_bias", "trainable_bias_nonnegative"});
    CHECK(reader.read_column_int64("/tables/summary/seeds") == std::vector<std::int64_t>{2, 2, 2});

    std::map<std::string, std::vector<double>> first_step, final_loss, final_accuracy;
    for (const auto& variant : variants)
        for (int seed : {0, 1}) {
            const std::string group = "/curves/" + variant + "_seed" + std::to_string(seed);
            REQUIRE(reader.has(group));
            const auto steps = reader.read_column_double(group + "/step");
            const auto accuracy = reader.read_column_double(group + "/icl_accuracy");
            const auto loss = reader.read_column_double(group + "/train_loss");
            REQUIRE(steps == std::vector<double>{4, 8, 12});
            for (double a : accuracy) REQUIRE(a < 0.999);  // so NaN is the right answer for that threshold
            first_step[variant].push_back(steps[0]);         // accuracy >= 0 at the first evaluation
            final_loss[variant].push_back(loss.back());
            final_accuracy[variant].push_back(accuracy.back());
            CHECK(reader.read_column_double("/steps/" + variant + "_seed" + std::to_string(seed) + "/loss").size() == 12);
            // each sub-run is a complete induction_head run in its own folder
            CHECK(fs::exists(run_dir / "runs" / (variant + "_seed" + std::to_string(seed)) / "results.h5"));
        }
    const auto summary = [&](const std::string& column) { return reader.read_column_double("/tables/summary/" + column); };
    for (std::size_t v = 0; v < variants.size(); ++v) {
        const std::string& variant = variants[v];
        CHECK(summary("steps_to_0pct_mean")[v] == 4.0);
        CHECK(summary("steps_to_0pct_std")[v] == 0.0);
        CHECK(std::isnan(summary("steps_to_99.9pct_mean")[v]));
        CHECK(std::isnan(summary("steps_to_99.9pct_max")[v]));
        CHECK(reader.read_column_int64("/tables/summary/reached_99.9pct")[v] == 0);
        CHECK(reader.read_column_int64("/tables/summary/reached_0pct")[v] == 2);
        CHECK(summary("final_train_loss_mean")[v] == Approx(mean_of(final_loss[variant])).epsilon(1e-14));
        CHECK(summary("final_train_loss_std")[v] == Approx(sample_std(final_loss[variant])).epsilon(1e-12));
        CHECK(summary("final_train_loss_min")[v] == std::min(final_loss[variant][0], final_loss[variant][1]));
        CHECK(summary("final_train_loss_max")[v] == std::max(final_loss[variant][0], final_loss[variant][1]));
        CHECK(summary("final_icl_accuracy_mean")[v] == Approx(mean_of(final_accuracy[variant])).epsilon(1e-14));
    }
    // Same seed, same start: b_KV = b_D = 0 either way, so the first step's loss is the same; after that the
    // trainable variant's biases move and the no_bias variant's stay zero.
    const auto loss_of = [&](const std::string& sub) { return reader.read_column_double("/steps/" + sub + "/loss"); };
    CHECK(loss_of("no_bias_seed0")[0] > 0.0);
    CHECK(loss_of("no_bias_seed0")[0] == loss_of("trainable_bias_seed0")[0]);
    CHECK(loss_of("no_bias_seed0") != loss_of("trainable_bias_seed0"));
    CHECK(loss_of("no_bias_seed0") != loss_of("no_bias_seed1"));
    const auto bias_of = [&](const std::string& sub, const std::string& name = "b_kv") {
        iclab::io::ResultsReader sub_reader((run_dir / "runs" / sub / "results.h5").string());
        return sub_reader.read_tensor_double("/checkpoint/blocks.0.attn." + name).values;
    };
    double trained = 0.0, fixed = 0.0;
    for (double b : bias_of("trainable_bias_seed0")) trained += std::abs(b);
    for (double b : bias_of("no_bias_seed0")) fixed += std::abs(b);
    CHECK(trained > 0.0);
    CHECK(fixed == 0.0);
    // b_D: free in trainable_bias (here some entries went negative), projected onto >= 0 in the nonnegative variant,
    // which still trains it (some entries moved up).
    const auto free_bd = bias_of("trainable_bias_seed0", "b_d"), kept_bd = bias_of("trainable_bias_nonnegative_seed0", "b_d");
    CHECK(*std::min_element(free_bd.begin(), free_bd.end()) < 0.0);
    CHECK(*std::min_element(kept_bd.begin(), kept_bd.end()) >= 0.0);
    CHECK(*std::max_element(kept_bd.begin(), kept_bd.end()) > 0.0);
    // the per-run table's diagnostics come from the sub-runs' curves
    const auto best = reader.read_column_double("/tables/runs/best_icl_accuracy");
    const auto final_accuracy_column = reader.read_column_double("/tables/runs/final_icl_accuracy");
    const auto denominators = reader.read_column_double("/tables/runs/min_attention_denominator");
    for (std::size_t i = 0; i < best.size(); ++i) {
        CHECK(best[i] >= final_accuracy_column[i]);
        CHECK(std::isfinite(denominators[i]));
    }
    // Figure 1's claims: two per variant with biases, one value per seed (the pair with no_bias of that seed)
    const auto claims = iclab::io::read_claims(reader);
    REQUIRE(claims.size() == 4);
    CHECK(claims[0].claim.id == "000-F1 trainable_bias: faster to 0 % ICL accuracy");
    CHECK(claims[1].claim.id == "000-F1 trainable_bias: lower final training loss");
    for (const auto& c : claims) {
        INFO(c.claim.id);
        CHECK(c.units == std::vector<std::int64_t>{0, 1});
        CHECK_FALSE(c.claim.provenance.empty());
    }
    // the paper's variant gives paper claims, trainable_bias_nonnegative (ours, not in paper 000) own checks
    CHECK(claims[0].claim.kind == iclab::io::ClaimKind::qualitative);
    CHECK(claims[1].claim.kind == iclab::io::ClaimKind::qualitative);
    CHECK(claims[2].claim.kind == iclab::io::ClaimKind::own_check);
    CHECK(claims[3].claim.kind == iclab::io::ClaimKind::own_check);
    CHECK_THAT(claims[2].claim.source, Catch::Contains("our variant"));
    CHECK_THAT(claims[3].claim.source, Catch::Contains("our variant"));
    // "faster" is a sign count over the seeds, every seed: never reproduced here (2 seeds, below `iclab claims`' floor of
    // 5; at threshold 0 % both reach it at the first evaluation, a tie that counts against)
    CHECK(claims[0].claim.rule.test == iclab::io::ClaimRule::Test::count_above);
    CHECK(claims[0].verdict != iclab::io::Verdict::reproduced);
}

TEST_CASE("bias_training: Figure 1 claims pair each variant with no_bias of its seed, a NaN is never reproduced", "[bias_training]") {
    using iclab::experiments::bias_claims::BiasRun;
    const double nan = std::nan("");
    std::vector<BiasRun> runs;
    for (std::int64_t seed = 0; seed < 5; ++seed) {
        runs.push_back({"no_bias", seed, 1000.0 + 10.0 * seed, 0.5});
        runs.push_back({"trainable_bias", seed, 800.0 + 10.0 * seed, 0.4 + 0.001 * seed});
    }
    auto claims = iclab::experiments::bias_claims::claims_of(runs, 0.9);
    REQUIRE(claims.size() == 2);
    CHECK(claims[0].claim.id == "000-F1 trainable_bias: faster to 90 % ICL accuracy");
    CHECK(claims[0].claim.kind == iclab::io::ClaimKind::qualitative);
    CHECK(claims[0].claim.rule.text() == "x > 0 for every value");
    CHECK(claims[0].values[0] == Approx(std::log(1000.0 / 800.0)));
    CHECK(claims[0].verdict == iclab::io::Verdict::reproduced);
    CHECK(claims[1].verdict == iclab::io::Verdict::reproduced);
    // slower with the biases: not reproduced
    for (auto& r : runs) if (r.variant == "trainable_bias") r.steps_to += 400.0;
    CHECK(iclab::experiments::bias_claims::claims_of(runs, 0.9)[0].verdict == iclab::io::Verdict::not_reproduced);
    // a seed that never reached 90 % (NaN steps) or a NaN loss: inconclusive, never reproduced
    for (auto& r : runs) if (r.variant == "trainable_bias") r.steps_to -= 400.0;
    runs[3].steps_to = nan, runs[5].final_loss = nan;
    claims = iclab::experiments::bias_claims::claims_of(runs, 0.9);
    CHECK(claims[0].verdict == iclab::io::Verdict::inconclusive);
    CHECK(claims[1].verdict == iclab::io::Verdict::inconclusive);
    // no no_bias run: no claim
    std::vector<BiasRun> alone{{"trainable_bias", 0, 800.0, 0.4}};
    CHECK(iclab::experiments::bias_claims::claims_of(alone, 0.9).empty());
}

// Issue 45: evaluations every 50 steps make many pairs reach p % at the same evaluation (x = 0). A tie is not faster:
// the quick profile's 0.0392, 0, 0, 0, 0 (one seed faster) is never reproduced, nor are 4 strictly faster seeds of 5
// (a fair coin passes 4 of 5 with 19 %: second audit of issue 45); 5 of 5 are.
TEST_CASE("bias_training: faster is a sign count where ties count against, and the nonnegative variant is our own check", "[bias_training]") {
    using iclab::experiments::bias_claims::BiasRun;
    using iclab::io::Verdict;
    const auto faster_claims = [](const std::vector<double>& variant_steps) {
        std::vector<BiasRun> runs;
        for (std::int64_t seed = 0; seed < 5; ++seed) {
            runs.push_back({"no_bias", seed, 1000.0, 0.5});
            runs.push_back({"trainable_bias", seed, variant_steps[seed], 0.4});
            runs.push_back({"trainable_bias_nonnegative", seed, variant_steps[seed], 0.4});
        }
        return iclab::experiments::bias_claims::claims_of(runs, 0.9);
    };
    // one seed faster by one evaluation, four ties: the t-interval's case; 1 of 5 strictly faster
    const auto tied = faster_claims({961.5, 1000.0, 1000.0, 1000.0, 1000.0});
    REQUIRE(tied.size() == 4);
    CHECK(tied[0].on_side == 1);
    CHECK(tied[0].verdict != Verdict::reproduced);
    // three strictly faster, two ties: short of every seed
    const auto three = faster_claims({950.0, 950.0, 950.0, 1000.0, 1000.0});
    CHECK(three[0].on_side == 3);
    CHECK(three[0].verdict != Verdict::reproduced);
    // four strictly faster, one tie: not reproduced (a tie counts against)
    const auto four_tied = faster_claims({950.0, 950.0, 900.0, 950.0, 1000.0});
    CHECK(four_tied[0].on_side == 4);
    CHECK(four_tied[0].verdict == Verdict::not_reproduced);
    // all five strictly faster: reproduced, for the paper's variant and ours alike
    const auto four = faster_claims({950.0, 950.0, 900.0, 950.0, 990.0});
    CHECK(four[0].on_side == 5);
    CHECK(four[0].verdict == Verdict::reproduced);
    CHECK(four[2].verdict == Verdict::reproduced);
    // every seed slower: not reproduced
    CHECK(faster_claims({1050.0, 1100.0, 1050.0, 1050.0, 1100.0})[0].verdict == Verdict::not_reproduced);
    // the kinds: trainable_bias is paper 000's variant, trainable_bias_nonnegative ours
    CHECK(four[0].claim.kind == iclab::io::ClaimKind::qualitative);
    CHECK(four[1].claim.kind == iclab::io::ClaimKind::qualitative);
    CHECK(four[2].claim.id == "000-F1 trainable_bias_nonnegative: faster to 90 % ICL accuracy");
    CHECK(four[2].claim.kind == iclab::io::ClaimKind::own_check);
    CHECK(four[3].claim.kind == iclab::io::ClaimKind::own_check);
    CHECK_THAT(four[2].claim.source, Catch::Contains("not in paper 000"));
    CHECK(four[3].claim.rule.test == iclab::io::ClaimRule::Test::interval_above);  // the loss keeps its interval
}

TEST_CASE("bias_training: stopped inside a sub-run and resumed, it ends as an uninterrupted run", "[bias_training][cli][resume]") {
    Scratch scratch;
    const std::string tiny = kTinyBias + " 'bias_training.variants=[trainable_bias]' train.checkpoint_every=4";
    const auto whole = run_iclab("run " + tiny + " output.dir=" + (scratch.path / "whole").string(), scratch.path);
    REQUIRE(whole.status == 0);
    const auto stopped = run_iclab("run " + tiny + " output.dir=" + (scratch.path / "parts").string() + " --stop-after 6", scratch.path);
    INFO(stopped.err);
    REQUIRE(stopped.status == 0);
    const fs::path run_dir = last_line(stopped.out);
    CHECK(!fs::exists(run_dir / "results.h5"));
    CHECK(fs::exists(run_dir / "runs" / "trainable_bias_seed0" / "checkpoint.h5"));
    CHECK(!fs::exists(run_dir / "runs" / "trainable_bias_seed1"));
    const auto resumed = run_iclab("run --resume " + run_dir.string() + " --quiet", scratch.path);
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK(last_line(resumed.out) == run_dir.string());
    iclab::io::ResultsReader a((fs::path(last_line(whole.out)) / "results.h5").string()), b((run_dir / "results.h5").string());
    for (const std::string column : {"steps_to_0pct_mean", "final_train_loss_mean", "final_train_loss_std", "final_icl_accuracy_mean"})
        CHECK(a.read_column_double("/tables/summary/" + column) == b.read_column_double("/tables/summary/" + column));
    for (const std::string sub : {"trainable_bias_seed0", "trainable_bias_seed1"}) {
        CHECK(a.read_column_double("/steps/" + sub + "/loss") == b.read_column_double("/steps/" + sub + "/loss"));
        CHECK(a.read_column_double("/curves/" + sub + "/icl_accuracy") == b.read_column_double("/curves/" + sub + "/icl_accuracy"));
    }
    CHECK_THAT(b.read_attr_string("/", "resumed_at"), Catch::Contains("step 0 at"));
    // a completed parent is not resumed again
    CHECK(run_iclab("run --resume " + run_dir.string() + " --quiet", scratch.path).status == 2);
}

TEST_CASE("bias_training: configs that would blur the comparison are refused", "[bias_training][cli]") {
    Scratch scratch;
    const std::string dry = " output.dir=" + scratch.path.string() + " --dry-run";
    const auto seed = run_iclab("run configs/quick/bias_training.yaml seed=4" + dry, scratch.path);
    CHECK(seed.status == 2);
    CHECK_THAT(seed.err, Catch::Contains("bias_training.seeds"));
    const auto trainable = run_iclab("run configs/quick/bias_training.yaml model.attention_bias_trainable=true" + dry, scratch.path);
    CHECK(trainable.status == 2);
    CHECK_THAT(trainable.err, Catch::Contains("per variant"));
    const auto constrained = run_iclab("run configs/quick/bias_training.yaml model.attention_bias_d=nonnegative" + dry, scratch.path);
    CHECK(constrained.status == 2);
    CHECK_THAT(constrained.err, Catch::Contains("model.attention_bias_d"));
    const auto twice = run_iclab("run configs/quick/bias_training.yaml 'bias_training.seeds=[1, 1]'" + dry, scratch.path);
    CHECK(twice.status == 2);
    CHECK_THAT(twice.err, Catch::Contains("listed twice"));
}

}  // namespace iclab_test_bias_training
