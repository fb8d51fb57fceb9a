// Experiment iclaa end to end through the iclab binary on a small softmax model: the exact prompt cache equals the
// model with the prompt (fp64), the learned map closes more of the gap than random features of the same F, the
// trade-off table holds only methods cheaper than the exact cache, the G claims (framework/icl/iclaa_claims.hpp) hold
// one G per test pair that agrees with /tables/pairs and /tables/iclaa, the learned map's F is the argmin of the stored
// validation errors and its claims judge that row; validation pairs are disjoint from the test pairs and the same for a
// seed, and `iclab claims` pools seeds by their mean G; ICLAA adapter files: convert, predict, compose
// by reconversion, and the refusals (two ICLAA adapters at once, ICLCA on softmax, ICLAA on a linear model, a
// linear model for the experiment).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "framework/icl/iclaa_claims.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclaa_experiment {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab_test;

namespace {

const std::string kSmall =
    "train.steps=400 train.warmup_steps=50 eval.every=200 eval.sequences=64 iclaa.pairs=20 iclaa.batch_size=8 "
    "'iclaa.random_features=[16,64]' iclaa.feature_seeds=2 'iclaa.learned.features=[16,32]' iclaa.learned.steps=150 "
    "iclaa.learned.fit_seeds=2 iclaa.validation_pairs=10 'iclaa.keep_tokens=[4]' iclaa.bootstrap=100";

// Only what the pairs and a learned pick need: a barely trained model, one short fit per F.
const std::string kPairsOnly =
    "train.steps=20 train.warmup_steps=5 eval.every=20 eval.sequences=16 iclaa.pairs=20 iclaa.validation_pairs=10 iclaa.batch_size=10 "
    "'iclaa.feature_maps=[learned]' 'iclaa.learned.features=[16,32]' iclaa.learned.steps=5 iclaa.learned.fit_seeds=1 "
    "iclaa.hybrid=false 'iclaa.keep_tokens=[4]' iclaa.bootstrap=0";

std::size_t row_of(const std::vector<std::string>& methods, const std::string& name) {
    const auto it = std::find(methods.begin(), methods.end(), name);
    REQUIRE(it != methods.end());
    return static_cast<std::size_t>(it - methods.begin());
}

}  // namespace

TEST_CASE("iclaa: the exact cache is the model with the prompt and a learned map beats random features", "[iclaa][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string() + " --quiet";
    const auto result = run_iclab("run configs/quick/iclaa.yaml " + kSmall + out, scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    const fs::path run_dir = last_line(result.out);
    io::ResultsReader reader((run_dir / "results.h5").string());
    const auto methods = reader.read_column_string("/tables/iclaa/method");
    const auto rel = reader.read_column_double("/tables/iclaa/rel_error_mean");
    const auto gap = reader.read_column_double("/tables/iclaa/gap_closed");
    const auto accuracy = reader.read_column_double("/tables/iclaa/icl_accuracy");
    const auto seeds = reader.read_column_double("/tables/iclaa/feature_seeds");
    const std::size_t before = row_of(methods, "no prompt (before)"), exact = row_of(methods, "exact cache (check)");
    const std::size_t prf = row_of(methods, "prf F=16"), learned = row_of(methods, "learned F=16");
    CHECK(rel[before] > 0.1);
    CHECK(gap[before] == 0.0);
    CHECK(rel[exact] <= 1e-12);
    CHECK(reader.read_attr_double("/", "rel_error_exact_cache_max") <= 1e-12);
    CHECK(accuracy[exact] == reader.read_attr_double("/", "icl_accuracy_with_prompt"));
    CHECK(seeds[prf] == 2);
    CHECK(gap[learned] > gap[prf] + 0.1);
    // k = 4 < M = 32: a truncated row of each kind (k >= M is refused at validation: tests/test_bad_configs.cpp)
    CHECK(std::find(methods.begin(), methods.end(), "recent k=4") != methods.end());
    CHECK(std::find(methods.begin(), methods.end(), "heavy k=4") != methods.end());
    const auto tradeoff_bytes = reader.read_column_double("/tables/tradeoff/bytes_vs_exact_cache");
    REQUIRE(!tradeoff_bytes.empty());
    for (double b : tradeoff_bytes) CHECK((b > 0.0 && b < 1.0));
    CHECK(reader.has("/tables/diagnostics/weighted_qk_norm2_median"));
    CHECK(reader.read_column_string("/tables/pairs/prompt").size() == 20);

    // the learned F, picked on the validation pairs: the argmin of the stored validation errors (recomputed here)
    const auto candidates = reader.read_column_int64("/tables/learned_selection/features");
    const auto validation = reader.read_column_double("/tables/learned_selection/validation_rel_error_mean");
    const auto picked = reader.read_column_int64("/tables/learned_selection/picked");
    REQUIRE(candidates == std::vector<std::int64_t>{16, 32});
    REQUIRE(validation.size() == 2);
    const std::size_t argmin = validation[1] < validation[0] ? 1 : 0;
    CHECK(validation[0] != validation[1]);
    CHECK(picked == std::vector<std::int64_t>{argmin == 0, argmin == 1});
    const std::int64_t F = candidates[argmin];
    CHECK(reader.read_attr_int64("/", "learned_selected_features") == F);
    CHECK(reader.read_attr_int64("/", "validation_pairs") == 10);
    // the test columns beside the pick are the /tables/iclaa rows (two fit seeds each)
    const auto test_error = reader.read_column_double("/tables/learned_selection/test_rel_error_mean");
    for (std::size_t i = 0; i < 2; ++i) {
        const std::size_t row = row_of(methods, "learned F=" + std::to_string(candidates[i]));
        CHECK(test_error[i] == rel[row]);
        CHECK(seeds[row] == 2);
    }

    // the G claims: prf and orf at the largest random F (64), the learned map at the picked F; one G per test pair, no
    // paper band on a derived number; pooled over model seeds by their means
    CHECK_FALSE(reader.has_attr("/tables/iclaa", "paper_bands"));
    CHECK_FALSE(reader.has("/tables/iclaa/paper_gap_closed"));
    CHECK(reader.read_attr_double("/", "paper_gap_closed") == icl::paper_gap_closed());
    const auto claims = io::read_claims(reader);
    REQUIRE(claims.size() == 6);
    const auto before_pairs = reader.read_column_double("/tables/pairs/rel_error_before");
    for (std::size_t i = 0; i < claims.size(); ++i) {
        const io::ClaimResult& c = claims[i];
        const std::string map = i < 2 ? "prf F=64" : i < 4 ? "orf F=64" : icl::kLearnedValidationRow;
        const std::string row = i < 4 ? map : "learned F=" + std::to_string(F), other = i < 4 ? "prf F=16" : "learned F=" + std::to_string(candidates[1 - argmin]);
        CHECK(c.claim.id == std::string(i % 2 ? "000-6.4 iclaa G>=paper " : "000-6.4 iclaa G>0 ") + map);
        CHECK(c.claim.kind == (i % 2 ? io::ClaimKind::own_check : io::ClaimKind::qualitative));
        CHECK(c.claim.unit == "instance");
        CHECK(c.claim.pooling == io::ClaimPooling::seed_means);
        CHECK(c.selection == (i < 4 ? "" : icl::learned_selection_text(static_cast<std::size_t>(F), candidates, validation)));
        REQUIRE(c.values.size() == 20);
        for (std::size_t p = 0; p < 20; ++p) CHECK(c.units[p] == static_cast<std::int64_t>(p));
        CHECK(c.values == claims[i - i % 2].values);  // both claims of a map judge the same G
        CHECK(std::isfinite(c.interval.low));
        // G_p = 1 − e_p / before_p with e_p the pair's error averaged over the feature (fit) seeds: the mean of the
        // e_p is the row's mean error of /tables/iclaa (the mean over seeds of the mean over pairs)
        double mean_error = 0.0;
        for (std::size_t p = 0; p < 20; ++p) mean_error += (1.0 - c.values[p]) * before_pairs[p] / 20.0;
        CHECK(mean_error == Approx(rel[row_of(methods, row)]).epsilon(1e-12));
        CHECK(mean_error != Approx(rel[row_of(methods, other)]).epsilon(1e-6));  // control: another row differs
    }

    // ICLAA adapters of this run
    const std::string run = run_dir.string(), a = (scratch.path / "a.h5").string(), b = (scratch.path / "b.h5").string();
    const auto converted = run_iclab("convert " + run + " --prompt abcdeaxbyczdwev --feature-map learned --random-features 16 "
                                     "--fit-steps 50 --out " + a, scratch.path);
    INFO(converted.err);
    REQUIRE(converted.status == 0);
    CHECK(last_line(converted.out) == a);
    io::ResultsReader adapter(a);
    CHECK(adapter.read_attr_string("/", "exact") == "false");
    CHECK(adapter.read_attr_string("/", "feature_map") == "learned");
    const auto with = run_iclab("predict " + run + " --text eaQcbd --adapter " + a + " --out " + (scratch.path / "p1.h5").string(),
                                scratch.path);
    REQUIRE(with.status == 0);
    const auto without = run_iclab("predict " + run + " --text eaQcbd --out " + (scratch.path / "p0.h5").string(), scratch.path);
    REQUIRE(without.status == 0);
    CHECK(io::ResultsReader((scratch.path / "p1.h5").string()).read_tensor_double("/logits").values !=
          io::ResultsReader((scratch.path / "p0.h5").string()).read_tensor_double("/logits").values);
    // composition by reconversion: one adapter for the two prompts together
    const auto composed = run_iclab("convert " + run + " --prompt xyzzy --adapter " + a + " --out " + b, scratch.path);
    REQUIRE(composed.status == 0);
    CHECK(io::ResultsReader(b).read_attr_int64("/", "prompt_length") == 20);
    // refusals, exit 2 and nothing written
    const auto two = run_iclab("predict " + run + " --text ab --adapter " + a + " --adapter " + b, scratch.path);
    CHECK(two.status == 2);
    CHECK_THAT(two.err, Catch::Contains("applied alone"));
    const auto iclca = run_iclab("convert " + run + " --prompt abcde --method iclca --out " + (scratch.path / "c.h5").string(),
                                 scratch.path);
    CHECK(iclca.status == 2);
    CHECK_THAT(iclca.err, Catch::Contains("Assumption 4.4"));
    CHECK_FALSE(fs::exists(scratch.path / "c.h5"));

    const auto linear = run_iclab("run configs/quick/induction_head.yaml train.steps=20 train.warmup_steps=5 eval.every=20 eval.sequences=16" + out,
                                  scratch.path);
    REQUIRE(linear.status == 0);
    const auto wrong_model = run_iclab("predict " + last_line(linear.out) + " --text ab --adapter " + a, scratch.path);
    CHECK(wrong_model.status == 2);
    CHECK_THAT(wrong_model.err, Catch::Contains("softmax"));
}

TEST_CASE("iclaa: validation pairs are disjoint from the test pairs and fixed by the seed, iclab claims pools seeds by mean G",
          "[iclaa][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string() + " --quiet";
    std::vector<std::string> dirs;
    for (const std::string seed : {"0", "1"}) {
        const auto result = run_iclab("run configs/quick/iclaa.yaml " + kPairsOnly + " seed=" + seed + out, scratch.path);
        INFO(result.err);
        REQUIRE(result.status == 0);
        dirs.push_back(last_line(result.out));
    }
    const auto again = run_iclab("run configs/quick/iclaa.yaml " + kPairsOnly + " seed=0 output.name=again" + out, scratch.path);
    REQUIRE(again.status == 0);
    const auto column = [](const std::string& dir, const std::string& name) {
        return io::ResultsReader((fs::path(dir) / "results.h5").string()).read_column_string(name);
    };
    const auto pairs_of = [&](const std::string& dir, const std::string& table) {
        const auto prompt = column(dir, table + "/prompt"), input = column(dir, table + "/input");
        std::vector<std::string> both;
        for (std::size_t p = 0; p < prompt.size(); ++p) both.push_back(prompt[p] + "|" + input[p]);
        return both;
    };
    const auto test0 = pairs_of(dirs[0], "/tables/pairs"), validation0 = pairs_of(dirs[0], "/tables/validation_pairs");
    REQUIRE(test0.size() == 20);
    REQUIRE(validation0.size() == 10);
    for (const auto& pair : validation0) CHECK(std::find(test0.begin(), test0.end(), pair) == test0.end());
    CHECK(pairs_of(last_line(again.out), "/tables/validation_pairs") == validation0);  // the same seed: the same pairs
    CHECK(pairs_of(last_line(again.out), "/tables/pairs") == test0);
    CHECK(pairs_of(dirs[1], "/tables/validation_pairs") != validation0);  // another seed: others
    // the two seeds pooled: one value per seed, its mean G over the test pairs; the pick of each seed named
    const auto pooled = run::pool_run_claims({dirs[0], dirs[1]});
    REQUIRE(pooled.size() == 1);
    REQUIRE(pooled[0].claims.size() == 2);
    const io::ClaimResult& g = pooled[0].claims[0];
    CHECK(g.claim.id == "000-6.4 iclaa G>0 " + icl::kLearnedValidationRow);
    CHECK(g.claim.unit == "seed");
    CHECK(g.units == std::vector<std::int64_t>{0, 1});
    for (std::size_t k = 0; k < 2; ++k) {
        io::ResultsReader reader((fs::path(dirs[k]) / "results.h5").string());
        const auto own = io::read_claims(reader);
        CHECK(g.values[k] == Approx(io::t_interval95(own[0].values).mean).epsilon(1e-14));
        CHECK_THAT(g.selection, Catch::Contains("seed " + std::to_string(k) + ": F=" +
                                                std::to_string(reader.read_attr_int64("/", "learned_selected_features")) + " ("));
    }
    const auto csv = (scratch.path / "claims.csv").string();
    const auto claims = run_iclab("claims " + dirs[0] + " " + dirs[1] + " --out " + csv, scratch.path);
    REQUIRE(claims.status == 0);
    CHECK_THAT(read_file(csv), Catch::Contains("[picked on validation data: seed 0: F="));
}

TEST_CASE("iclaa: configs the experiment cannot serve are refused with exit 2 before any work", "[iclaa][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string() + " --quiet";
    const auto linear = run_iclab("run configs/quick/iclaa.yaml model.attention=linear" + out, scratch.path);
    CHECK(linear.status == 2);
    CHECK_THAT(linear.err, Catch::Contains("model.attention") && Catch::Contains("ICLCA"));
    const auto odd = run_iclab("run configs/quick/iclaa.yaml 'iclaa.learned.features=[15]'" + out, scratch.path);
    CHECK(odd.status == 2);
    CHECK_THAT(odd.err, Catch::Contains("iclaa.learned.features"));
    const auto too_long = run_iclab("run configs/quick/iclaa.yaml iclaa.prompt_length=48" + out, scratch.path);
    CHECK(too_long.status == 2);
    CHECK_THAT(too_long.err, Catch::Contains("task.seq_len"));
    // learned maps need validation pairs to pick their F; a negative count is refused too
    for (const std::string bad : {"0", "-1"}) {
        const auto validation = run_iclab("run configs/quick/iclaa.yaml iclaa.validation_pairs=" + bad + out, scratch.path);
        CHECK(validation.status == 2);
        CHECK_THAT(validation.err, Catch::Contains("iclaa.validation_pairs"));
    }
    const auto fit_seeds = run_iclab("run configs/quick/iclaa.yaml iclaa.learned.fit_seeds=0" + out, scratch.path);
    CHECK(fit_seeds.status == 2);
    CHECK_THAT(fit_seeds.err, Catch::Contains("iclaa.learned.fit_seeds"));
    CHECK(count_entries(scratch.path) <= 2);  // stdout.txt and stderr.txt only
}

}  // namespace iclab_test_iclaa_experiment
