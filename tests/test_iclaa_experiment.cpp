// Experiment iclaa end to end through the iclab binary on a small softmax model: the exact prompt cache equals the
// model with the prompt (fp64), the learned map closes more of the gap than random features of the same F, the
// trade-off table holds only methods cheaper than the exact cache, the G claims (framework/icl/iclaa_claims.hpp) hold
// one G per pair that agrees with /tables/pairs and /tables/iclaa; ICLAA adapter files: convert, predict, compose
// by reconversion, and the refusals (two ICLAA adapters at once, ICLCA on softmax, ICLAA on a linear model, a
// linear model for the experiment).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "framework/icl/iclaa_claims.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

using namespace iclab;
using namespace iclab_test;

namespace {

const std::string kSmall =
    "train.steps=400 train.warmup_steps=50 eval.every=200 eval.sequences=64 iclaa.pairs=20 iclaa.batch_size=8 "
    "'iclaa.random_features=[16,64]' iclaa.feature_seeds=2 'iclaa.learned.features=[16]' iclaa.learned.steps=150 "
    "'iclaa.keep_tokens=[4]' iclaa.bootstrap=100";

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

    // the G claims: prf and orf at the largest random F (64), one G per pair, no paper band on a derived number
    CHECK_FALSE(reader.has_attr("/tables/iclaa", "paper_bands"));
    CHECK_FALSE(reader.has("/tables/iclaa/paper_gap_closed"));
    CHECK(reader.read_attr_double("/", "paper_gap_closed") == icl::paper_gap_closed());
    const auto claims = io::read_claims(reader);
    REQUIRE(claims.size() == 4);
    const auto before_pairs = reader.read_column_double("/tables/pairs/rel_error_before");
    for (std::size_t i = 0; i < claims.size(); ++i) {
        const io::ClaimResult& c = claims[i];
        const std::string map = i < 2 ? "prf" : "orf";
        CHECK(c.claim.id == std::string(i % 2 ? "000-6.4 iclaa G>=paper " : "000-6.4 iclaa G>0 ") + map + " F=64");
        CHECK(c.claim.kind == (i % 2 ? io::ClaimKind::own_check : io::ClaimKind::qualitative));
        CHECK(c.claim.unit == "instance");
        REQUIRE(c.values.size() == 20);
        for (std::size_t p = 0; p < 20; ++p) CHECK(c.units[p] == static_cast<std::int64_t>(p));
        CHECK(c.values == claims[i - i % 2].values);  // both claims of a map judge the same G
        CHECK(std::isfinite(c.interval.low));
        // G_p = 1 − e_p / before_p with e_p the pair's error averaged over the feature seeds: the mean of the e_p
        // is the row's mean error of /tables/iclaa (the mean over seeds of the mean over pairs)
        double mean_error = 0.0;
        for (std::size_t p = 0; p < 20; ++p) mean_error += (1.0 - c.values[p]) * before_pairs[p] / 20.0;
        CHECK(mean_error == Approx(rel[row_of(methods, map + " F=64")]).epsilon(1e-12));
        CHECK(mean_error != Approx(rel[row_of(methods, map + " F=16")]).epsilon(1e-6));  // control: another row differs
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
    CHECK(count_entries(scratch.path) <= 2);  // stdout.txt and stderr.txt only
}
