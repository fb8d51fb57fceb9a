// Experiment iclca_induction (paper 000 Table 2): the (prompt, input) generator's rules for both designs, and the
// experiment end to end through the iclab binary on a tiny model: Table 2 and the per-pair table present with
// their columns; M_new's accuracy equals M_old-with-prompt's exactly, pair by pair, and the float64 logit error
// is <= 1e-10 (ICLCA is an exact conversion); a model read from a finished run (source.run_dir) gives the same
// numbers as the same model trained inline; keys that contradict the source run are refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/tasks/induction_head.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclca_induction {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab_test;

namespace {

bool is_trigger(const tasks::InductionHeadSpec& spec, int token) {
    return std::find(spec.triggers.begin(), spec.triggers.end(), token) != spec.triggers.end();
}

// The rules every pair must satisfy, whatever the design.
void check_pair(const tasks::PromptPair& pair, const tasks::InductionHeadSpec& spec, std::size_t M, std::size_t N) {
    REQUIRE(pair.prompt.size() == M);
    REQUIRE(pair.input.size() == N);
    REQUIRE(pair.targets.size() == N);
    REQUIRE(pair.kinds.size() == N);
    // every trigger is shown followed by its committed successor inside X'
    for (int trigger : spec.triggers) {
        REQUIRE(pair.committed[trigger] >= 0);
        bool shown = false;
        for (std::size_t t = 0; t + 1 < M; ++t) shown = shown || pair.prompt[t] == trigger;
        REQUIRE(shown);
    }
    // [X'; X; last target] is a path of the chain with these commitments
    std::vector<int> path(pair.prompt.begin(), pair.prompt.end());
    path.insert(path.end(), pair.input.begin(), pair.input.end());
    path.push_back(pair.targets.back());
    for (std::size_t t = 0; t + 1 < path.size(); ++t)
        if (is_trigger(spec, path[t])) REQUIRE(path[t + 1] == pair.committed[path[t]]);
        else REQUIRE(pair.committed[path[t]] == -1);
    for (std::size_t t = 0; t < N; ++t) REQUIRE(pair.targets[t] == path[M + t + 1]);
    // scored positions (first_trigger): a trigger not seen earlier in X; icl: seen earlier in X
    std::set<int> seen;
    for (std::size_t t = 0; t < N; ++t) {
        const int token = pair.input[t];
        const auto expected = !is_trigger(spec, token)     ? tasks::PositionKind::non_trigger
                              : seen.count(token) == 0 ? tasks::PositionKind::first_trigger
                                                       : tasks::PositionKind::icl;
        REQUIRE(pair.kinds[t] == expected);
        seen.insert(token);
    }
}

}  // namespace

TEST_CASE("ICL prompt pairs: chain prompts show every trigger and [X' X] is a path of the task's chain", "[iclca_induction]") {
    tasks::InductionHeadSpec spec;
    Rng rng(3);
    std::size_t scored = 0, repeats = 0;
    for (int i = 0; i < 300; ++i) {
        const auto pair = tasks::sample_prompt_pair(spec, tasks::PromptDesign::chain, 24, 20, rng);
        check_pair(pair, spec, 24, 20);
        for (auto kind : pair.kinds) {
            scored += kind == tasks::PositionKind::first_trigger;
            repeats += kind == tasks::PositionKind::icl;
        }
    }
    CHECK(scored > 100);  // the checks above had positions of both kinds to look at
    CHECK(repeats > 10);
    // successors: any lets a trigger commit to a trigger; the chain still holds
    spec.successors = tasks::InductionHeadSpec::Successors::any;
    for (int i = 0; i < 100; ++i) check_pair(tasks::sample_prompt_pair(spec, tasks::PromptDesign::chain, 40, 20, rng), spec, 40, 20);
}

TEST_CASE("ICL prompt pairs: the pairs design is each trigger once with its successor among non-trigger letters", "[iclca_induction]") {
    tasks::InductionHeadSpec spec;
    Rng rng(4);
    for (std::size_t M : {10, 17}) {
        for (int i = 0; i < 200; ++i) {
            const auto pair = tasks::sample_prompt_pair(spec, tasks::PromptDesign::pairs, M, 12, rng);
            check_pair(pair, spec, M, 12);
            std::size_t triggers = 0;
            for (std::size_t t = 0; t < M; ++t) {
                if (!is_trigger(spec, pair.prompt[t])) continue;
                ++triggers;
                REQUIRE(!is_trigger(spec, pair.committed[pair.prompt[t]]));
            }
            REQUIRE(triggers == spec.triggers.size());  // once each
            if (M == 10)                                // "a x b y c z d w e v" in some order
                for (std::size_t t = 0; t < M; t += 2) REQUIRE(is_trigger(spec, pair.prompt[t]));
        }
    }
    // the same seed gives the same pair; too short a prompt is refused
    Rng a(9), b(9);
    CHECK(tasks::sample_prompt_pair(spec, tasks::PromptDesign::pairs, 14, 8, a).prompt ==
          tasks::sample_prompt_pair(spec, tasks::PromptDesign::pairs, 14, 8, b).prompt);
    CHECK_THROWS_AS(tasks::sample_prompt_pair(spec, tasks::PromptDesign::pairs, 9, 8, a), InputError);
    CHECK_THROWS_AS(tasks::sample_prompt_pair(spec, tasks::PromptDesign::chain, 9, 8, a), InputError);
}

namespace {

// A tiny model trained for a few steps: its accuracy means nothing, the conversion's exactness does.
const std::string kTinyTraining =
    "train.steps=30 train.warmup_steps=2 eval.every=10 task.seq_len=24 eval.sequences=16 train.batch_size=8 "
    "model.width=16";
const std::string kTinyIclca = "iclca.prompt_length=12 iclca.input_length=12 iclca.pairs=40 iclca.batch_size=16";

struct Table2 {
    std::vector<std::string> models;
    std::vector<double> accuracy, paper;
    std::vector<std::int64_t> correct, positions;
    std::vector<std::int64_t> pair_old_icl, pair_new, pair_scored;
    std::vector<double> pair_error;
    double max_error = 0.0, agreement = 0.0;
};

Table2 read_table2(const fs::path& run_dir) {
    iclab::io::ResultsReader reader((run_dir / "results.h5").string());
    CHECK(reader.read_attr_string("/tables/table2", "column_order") ==
          "model,input,icl_accuracy,correct,positions,paper_icl_accuracy,repeat_accuracy,repeat_correct,repeat_positions");
    CHECK(reader.read_attr_string("/tables/pairs", "column_order") ==
          "pair,prompt,input,scored_positions,correct_old_icl,correct_old_no_icl,correct_new_no_icl,repeat_positions,"
          "argmax_agreement,relative_logit_error");
    Table2 t;
    t.models = reader.read_column_string("/tables/table2/model");
    t.accuracy = reader.read_column_double("/tables/table2/icl_accuracy");
    t.paper = reader.read_column_double("/tables/table2/paper_icl_accuracy");
    t.correct = reader.read_column_int64("/tables/table2/correct");
    t.positions = reader.read_column_int64("/tables/table2/positions");
    t.pair_old_icl = reader.read_column_int64("/tables/pairs/correct_old_icl");
    t.pair_new = reader.read_column_int64("/tables/pairs/correct_new_no_icl");
    t.pair_scored = reader.read_column_int64("/tables/pairs/scored_positions");
    t.pair_error = reader.read_column_double("/tables/pairs/relative_logit_error");
    t.max_error = reader.read_attr_double("/", "max_relative_logit_error");
    t.agreement = reader.read_attr_double("/", "argmax_agreement");
    return t;
}

}  // namespace

TEST_CASE("iclca_induction: Table 2 with M_new equal to M_old with the prompt, exactly", "[iclca_induction][cli]") {
    Scratch scratch;
    for (const std::string design : {"chain", "pairs"}) {
        DYNAMIC_SECTION(design << " prompts") {
            const auto result = run_iclab("run configs/quick/iclca_induction.yaml " + kTinyTraining + " " + kTinyIclca +
                                              " iclca.prompt=" + design + " output.dir=" + scratch.path.string() + " --quiet",
                                          scratch.path);
            INFO(result.err);
            REQUIRE(result.status == 0);
            const fs::path run_dir = last_line(result.out);
            const Table2 t = read_table2(run_dir);
            REQUIRE(t.models == std::vector<std::string>{"M_old, ICL", "M_old, no ICL", "M_new, no ICL"});
            CHECK(t.paper == std::vector<double>{0.9995, 0.0223, 0.9995});
            CHECK(t.positions[0] > 20);  // ~2 scored positions per pair
            CHECK(t.positions[0] == t.positions[2]);
            // the exact conversion: the same correct positions, pair by pair
            CHECK(t.correct[2] == t.correct[0]);
            CHECK(t.accuracy[2] == t.accuracy[0]);
            REQUIRE(t.pair_new.size() == 40);
            CHECK(t.pair_new == t.pair_old_icl);
            std::int64_t scored = 0;
            for (auto s : t.pair_scored) scored += s;
            CHECK(scored == t.positions[0]);
            CHECK(t.max_error <= 1e-10);
            CHECK(*std::max_element(t.pair_error.begin(), t.pair_error.end()) == t.max_error);
            CHECK(t.agreement == 1.0);
            // the training part is the induction_head run's: curves and final evaluation are there too
            iclab::io::ResultsReader reader((run_dir / "results.h5").string());
            CHECK(reader.has("/curves/icl_accuracy"));
            CHECK(reader.has("/tables/final_eval"));
            CHECK(reader.has("/checkpoint/blocks.0.attn.b_kv"));
            // the claims (issue 45): one printed number (M_old with ICL), the no-ICL rule separates it from a model with
            // ICL, and M_new is the identity with M_old on every pair (its exactness), not a second accuracy
            const auto claims = iclab::io::read_claims(reader);
            REQUIRE(claims.size() == 3);
            CHECK(claims[0].claim.kind == iclab::io::ClaimKind::printed_number);
            CHECK(claims[0].claim.paper_value == 0.9995);
            CHECK(claims[1].claim.kind == iclab::io::ClaimKind::own_check);  // a check of the evaluation (no prompt leak)
            CHECK(claims[1].claim.rule.test == iclab::io::ClaimRule::Test::interval_below);
            CHECK(claims[1].claim.rule.threshold == Approx((1.0 / 47 + 0.9995) / 2));
            CHECK_FALSE(claims[1].claim.rule.on_claimed_side(0.9995));  // a model with ICL fails it
            CHECK_THAT(claims[1].claim.statement, Catch::Contains("2.23 %"));
            CHECK(claims[2].claim.kind == iclab::io::ClaimKind::own_check);
            CHECK(claims[2].values == t.pair_error);  // one relative logit error per pair, each <= the fp64 bar
            CHECK(claims[2].claim.rule.threshold == 1e-12);
            CHECK(claims[2].verdict == iclab::io::Verdict::reproduced);
            CHECK_FALSE(claims[2].claim.provenance.empty());
            CHECK_FALSE(claims[1].claim.provenance.empty());
        }
    }
}

TEST_CASE("iclca_induction: a finished run as source gives the numbers of the same model trained inline", "[iclca_induction][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string() + " --quiet";
    const auto trained = run_iclab("run configs/quick/induction_head.yaml " + kTinyTraining + out, scratch.path);
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    const std::string source = last_line(trained.out);
    const auto from_source =
        run_iclab("run configs/quick/iclca_induction.yaml " + kTinyTraining + " " + kTinyIclca + " source.run_dir=" + source + out,
                  scratch.path);
    INFO(from_source.err);
    REQUIRE(from_source.status == 0);
    const auto inline_run = run_iclab("run configs/quick/iclca_induction.yaml " + kTinyTraining + " " + kTinyIclca + out, scratch.path);
    REQUIRE(inline_run.status == 0);
    const Table2 a = read_table2(last_line(from_source.out)), b = read_table2(last_line(inline_run.out));
    CHECK(a.correct == b.correct);
    CHECK(a.pair_old_icl == b.pair_old_icl);
    CHECK(a.pair_error == b.pair_error);  // same parameters, same pairs, same arithmetic
    iclab::io::ResultsReader reader((fs::path(last_line(from_source.out)) / "results.h5").string());
    CHECK(!reader.has("/curves"));  // nothing trained
    CHECK(reader.read_attr_string("/", "source_run_dir") == fs::absolute(source).string());

    // convert and predict take an iclca_induction run that trained (same parameters as the source run here),
    // and refuse one that read its model from a source run, pointing at it.
    const auto predict_inline = run_iclab("predict " + last_line(inline_run.out) + " --text abcab --out " +
                                              (scratch.path / "p_inline.h5").string(), scratch.path);
    REQUIRE(predict_inline.status == 0);
    REQUIRE(run_iclab("predict " + source + " --text abcab --out " + (scratch.path / "p_source.h5").string(), scratch.path).status == 0);
    iclab::io::ResultsReader p_inline((scratch.path / "p_inline.h5").string()), p_source((scratch.path / "p_source.h5").string());
    CHECK(p_inline.read_tensor_double("/logits").values == p_source.read_tensor_double("/logits").values);
    const auto no_parameters = run_iclab("convert " + last_line(from_source.out) + " --prompt abcdexyz --out " +
                                             (scratch.path / "none.h5").string(), scratch.path);
    CHECK(no_parameters.status == 2);
    CHECK_THAT(no_parameters.err, Catch::Contains("holds no parameters") && Catch::Contains("use that run"));
    CHECK_FALSE(fs::exists(scratch.path / "none.h5"));

    // A key set here that contradicts the source run is refused before anything is written.
    const std::size_t before = count_entries(scratch.path);
    const auto contradicting = run_iclab("run configs/quick/iclca_induction.yaml " + kTinyTraining + " " + kTinyIclca +
                                             " model.width=32 source.run_dir=" + source + out,
                                         scratch.path);
    CHECK(contradicting.status == 2);
    CHECK_THAT(contradicting.err, Catch::Contains("model.width: 32") && Catch::Contains("16 in"));
    CHECK(count_entries(scratch.path) == before);
    // and a folder without a finished run
    const auto missing = run_iclab("run configs/quick/iclca_induction.yaml source.run_dir=" + scratch.path.string() + "/none" + out,
                                   scratch.path);
    CHECK(missing.status == 2);
    CHECK_THAT(missing.err, Catch::Contains("source.run_dir"));
}

TEST_CASE("iclca_induction: configs the conversion cannot serve are refused with exit 2", "[iclca_induction][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string() + " --dry-run";
    const auto too_long = run_iclab("run configs/quick/iclca_induction.yaml iclca.prompt_length=40" + out, scratch.path);
    CHECK(too_long.status == 2);
    CHECK_THAT(too_long.err, Catch::Contains("task.seq_len"));
    const auto softmax = run_iclab("run configs/quick/iclca_induction.yaml model.attention=softmax" + out, scratch.path);
    CHECK(softmax.status == 2);
    CHECK_THAT(softmax.err, Catch::Contains("Assumption 4.4"));
    const auto short_prompt = run_iclab("run configs/quick/iclca_induction.yaml iclca.prompt_length=8" + out, scratch.path);
    CHECK(short_prompt.status == 2);
    CHECK_THAT(short_prompt.err, Catch::Contains("iclca.prompt_length"));
}

}  // namespace iclab_test_iclca_induction
