// Experiment `iclca_induction` (paper 000 §6.2, Table 2): on a trained induction-head model, the in-context
// accuracy of
//   M_old, ICL     the model on [X'; X], scored at X's positions,
//   M_old, no ICL  the model on X alone,
//   M_new, no ICL  the model with the biases ICLCA (Algorithm 1, framework/icl/iclca.hpp) made from X', on X alone,
// over many seeded (prompt X', input X) pairs (tasks::sample_prompt_pair: X' shows every trigger with its
// committed successor, X continues the chain). Scored positions are X's first occurrences of a trigger: their
// answer is known only from X'. All three run in double on the trained parameters (float32 values convert
// exactly), and the run reports the relative logit error between M_new(X) and M_old([X'; X]).
//
// The model is trained here with the induction_head keys (train_induction_model: same curves, checkpoints,
// --resume), or read from a finished run with source.run_dir (no training; its task.* and model.* apply).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "experiments/iclca_induction/table2.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/threads.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/io/claims.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/induction_training.hpp"

namespace iclab::experiments {

using namespace iclab::run;
using namespace iclab::experiments::iclca_table2;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace iclca_induction_cpp {


namespace {

// Sub-stream of the run's seed for the (prompt, input) pairs; 1-3 are induction_head's init, data and eval.
constexpr std::uint64_t kPromptPairStream = 4;

// The source run's config, checked: every task.* / model.* key this config sets explicitly must equal the
// source's (the keys left at their defaults simply come from the source), and the prompt and input must fit it.
// InputError before anything is written.
void check_source_config(const config::Config& cfg, const config::Config& source, const std::filesystem::path& source_dir) {
    check_model_keys_agree(cfg, source, (source_dir / kConfigFile).string());
    const auto M = cfg.get_int("iclca.prompt_length"), N = cfg.get_int("iclca.input_length");
    ICLAB_INPUT_CHECK(M + N <= source.get_int("task.seq_len"),
                      "config error: iclca.prompt_length + iclca.input_length = " << M + N << " exceeds the source model's training length task.seq_len = "
                                                                                  << source.get_int("task.seq_len")
                                                                                  << " (RoPE offsets it never saw)");
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(M) >= 2 * source.get_string_list("task.triggers").size(),
                      "config error: iclca.prompt_length " << M << " cannot show the source model's "
                                                           << source.get_string_list("task.triggers").size()
                                                           << " triggers with their successors");
}

std::string letters(const std::vector<std::int32_t>& tokens) {
    return tasks::decode_tokens(std::vector<int>(tokens.begin(), tokens.end()));
}

// Table 2 on `net` (double, trained parameters, its own b_KV, b_D as trained): draws the pairs, runs the three
// models, writes /tables/table2, /tables/pairs and the summary attributes into run.results() and prints Table 2.
void evaluate_conversion(const config::Config& cfg, const config::Config& model_cfg, model::Transformer<double>& net,
                         RunFolder& run, bool quiet) {
    const auto start = std::chrono::steady_clock::now();
    const tasks::InductionHeadSpec task = induction_spec_from_config(model_cfg);
    const tasks::PromptDesign design = tasks::parse_prompt_design(cfg.get_string("iclca.prompt"));
    const std::size_t M = cfg.get_int("iclca.prompt_length"), N = cfg.get_int("iclca.input_length");
    const std::size_t P = cfg.get_int("iclca.pairs"), chunk = cfg.get_int("iclca.batch_size"), V = tasks::kInductionVocab;
    Rng rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kPromptPairStream);
    const icl::AttentionBiases<double> original = icl::read_biases(net);
    const std::string fingerprint = icl::model_fingerprint(net);
    run.log() << "ICLCA on " << P << " pairs: " << tasks::prompt_design_name(design) << " prompts of " << M << " tokens, inputs of "
              << N << ", model fingerprint " << fingerprint << "\n"
              << std::flush;

    std::vector<PairScores> scores;
    std::vector<std::string> prompt_text, input_text;
    std::vector<tasks::PromptPair> pairs;
    std::vector<std::int32_t> with_prompt, alone;
    std::vector<double> old_icl, old_no_icl, converted;
    for (std::size_t first = 0; first < P; first += chunk) {
        const std::size_t rows = std::min(chunk, P - first);
        pairs.clear();
        with_prompt.clear();
        alone.clear();
        for (std::size_t r = 0; r < rows; ++r) {
            pairs.push_back(tasks::sample_prompt_pair(task, design, M, N, rng));
            const auto& pair = pairs.back();
            with_prompt.insert(with_prompt.end(), pair.prompt.begin(), pair.prompt.end());
            with_prompt.insert(with_prompt.end(), pair.input.begin(), pair.input.end());
            alone.insert(alone.end(), pair.input.begin(), pair.input.end());
        }
        // M_old on [X'; X], kept at X's positions M..M+N-1; M_old on X alone.
        net.forward(with_prompt.data(), rows, M + N);
        old_icl.resize(rows * N * V);
        for (std::size_t r = 0; r < rows; ++r)
            std::copy(net.logits() + (r * (M + N) + M) * V, net.logits() + (r * (M + N) + M + N) * V, old_icl.begin() + r * N * V);
        net.forward(alone.data(), rows, N);
        old_no_icl.assign(net.logits(), net.logits() + rows * N * V);
        // M_new: the biases of X' (Algorithm 1) on X alone, then the original biases back.
        const SingleThreaded one_thread;  // M_new runs one pair at a time (B = 1): too small to share
        for (std::size_t r = 0; r < rows; ++r) {
            const auto& pair = pairs[r];
            converted = icl::converted_logits(net, pair.prompt.data(), M, pair.input.data(), N, original);
            const double* logits[kRows] = {old_icl.data() + r * N * V, old_no_icl.data() + r * N * V, converted.data()};
            scores.push_back(score_pair(pair, logits, N, V));
            prompt_text.push_back(letters(pair.prompt));
            std::vector<std::int32_t> whole = pair.input;
            whole.push_back(pair.targets.back());
            input_text.push_back(letters(whole));
        }
    }
    ICLAB_CHECK(icl::model_fingerprint(net) == fingerprint && icl::read_biases(net).b_kv == original.b_kv,
                "the model changed during the evaluation");

    // Totals over the pairs.
    std::int64_t scored = 0, repeats = 0, agreement = 0, correct[kRows] = {}, repeat_correct[kRows] = {}, undefined[kRows] = {};
    double max_error = 0.0, sum_error = 0.0;
    for (const auto& s : scores) {
        scored += s.scored;
        repeats += s.repeats;
        agreement += s.argmax_agreement;
        for (int m = 0; m < kRows; ++m) {
            correct[m] += s.correct[m];
            repeat_correct[m] += s.repeat_correct[m];
            undefined[m] += s.undefined[m];
        }
        max_error = max_or_nan(max_error, s.relative_logit_error);
        sum_error += s.relative_logit_error;
    }
    for (int m = 0; m < kRows; ++m)
        if (undefined[m] > 0)
            run.log() << "ICLCA: " << kRowNames[m] << " has NaN logits at " << undefined[m] << " positions of X: its accuracy is NaN\n";
    const auto ratio = [](std::int64_t a, std::int64_t b) { return b > 0 ? static_cast<double>(a) / b : std::nan(""); };
    const double eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    io::ResultsWriter& w = run.results();
    std::vector<std::string> names, inputs;
    std::vector<double> accuracy, paper, repeat_accuracy;
    std::vector<std::int64_t> correct_column, positions, repeat_correct_column, repeat_positions;
    for (int m = 0; m < kRows; ++m) {
        names.push_back(kRowNames[m]);
        inputs.push_back(kRowInputs[m]);
        accuracy.push_back(iclca_table2::accuracy(correct[m], scored, undefined[m]));  // NaN with a NaN logit
        correct_column.push_back(correct[m]);
        positions.push_back(scored);
        paper.push_back(kPaperAccuracy[m]);
        repeat_accuracy.push_back(iclca_table2::accuracy(repeat_correct[m], repeats, undefined[m]));
        repeat_correct_column.push_back(repeat_correct[m]);
        repeat_positions.push_back(repeats);
    }
    w.write_columns("/tables/table2", {{"model", names},
                                       {"input", inputs},
                                       {"icl_accuracy", accuracy},
                                       {"correct", correct_column},
                                       {"positions", positions},
                                       {"paper_icl_accuracy", paper},
                                       {"repeat_accuracy", repeat_accuracy},
                                       {"repeat_correct", repeat_correct_column},
                                       {"repeat_positions", repeat_positions}},
                      {{"paper_icl_accuracy", "paper 000 Table 2 as printed; the claims are in /claims"}});
    // Paper 000 Table 2 (§6.2 prints 99.95 % / 2.23 % / 99.95 %): the claims, one per distinct measurement (table2.cpp)
    const std::vector<io::ClaimResult> claims = iclca_table2::claims(accuracy, scores, model_cfg.get_int("seed"));
    io::write_claims(w, claims);
    std::vector<std::int64_t> index, pair_scored, pair_repeats, pair_agreement, pair_correct[kRows];
    std::vector<double> pair_error;
    for (std::size_t p = 0; p < scores.size(); ++p) {
        index.push_back(static_cast<std::int64_t>(p));
        pair_scored.push_back(scores[p].scored);
        pair_repeats.push_back(scores[p].repeats);
        for (int m = 0; m < kRows; ++m) pair_correct[m].push_back(scores[p].correct[m]);
        pair_agreement.push_back(scores[p].argmax_agreement);
        pair_error.push_back(scores[p].relative_logit_error);
    }
    w.write_columns("/tables/pairs", {{"pair", index},
                                      {"prompt", prompt_text},
                                      {"input", input_text},
                                      {"scored_positions", pair_scored},
                                      {"correct_old_icl", pair_correct[kOldIcl]},
                                      {"correct_old_no_icl", pair_correct[kOldNoIcl]},
                                      {"correct_new_no_icl", pair_correct[kNewNoIcl]},
                                      {"repeat_positions", pair_repeats},
                                      {"argmax_agreement", pair_agreement},
                                      {"relative_logit_error", pair_error}});
    w.set_attr("icl_accuracy_old_icl", accuracy[kOldIcl]);
    w.set_attr("icl_accuracy_old_no_icl", accuracy[kOldNoIcl]);
    w.set_attr("icl_accuracy_new_no_icl", accuracy[kNewNoIcl]);
    w.set_attr("scored_positions", scored);
    w.set_attr("max_relative_logit_error", max_error);
    w.set_attr("mean_relative_logit_error", sum_error / static_cast<double>(scores.size()));
    w.set_attr("argmax_agreement", ratio(agreement, static_cast<std::int64_t>(P * N)));
    w.set_attr("iclca_precision", "float64");
    w.set_attr("bias_parameter_count", static_cast<std::int64_t>(original.parameter_count()));
    w.set_attr("model_fingerprint", fingerprint);
    w.set_attr("iclca_seconds", eval_seconds);
    run.log() << "ICLCA: icl accuracy " << accuracy[kOldIcl] << " / " << accuracy[kOldNoIcl] << " / " << accuracy[kNewNoIcl]
              << " on " << scored << " positions; max relative logit error " << max_error << "; " << eval_seconds << " s\n"
              << std::flush;

    if (quiet) return;
    std::printf("\nICLCA on the induction head (paper 000 Table 2): %zu (prompt, input) pairs, %s prompts X' of %zu tokens, "
                "inputs X of %zu, float64\n",
                P, tasks::prompt_design_name(design), M, N);
    std::printf("scored: X's first occurrence of each trigger (answer only in X'), %lld positions\n", static_cast<long long>(scored));
    std::printf("  %-15s %-8s %12s %10s %14s   %s\n", "model", "input", "ICL accuracy", "correct", "paper (Table 2)",
                "repeated triggers in X");
    for (int m = 0; m < kRows; ++m)
        std::printf("  %-15s %-8s %11.2f%% %10lld %13.2f%%   %.2f%% of %lld\n", kRowNames[m], kRowInputs[m], 100.0 * accuracy[m],
                    static_cast<long long>(correct[m]), 100.0 * kPaperAccuracy[m], 100.0 * repeat_accuracy[m],
                    static_cast<long long>(repeats));
    std::printf("relative logit error |M_new(X) - M_old([X'; X])| / |M_old([X'; X])|: max %.2e, mean %.2e over pairs; "
                "argmax agreement %.6f; %.1f s\n",
                max_error, sum_error / static_cast<double>(scores.size()), ratio(agreement, static_cast<std::int64_t>(P * N)),
                eval_seconds);
}

void declare_keys(config::Schema& schema) {
    schema.add_string_free("source.run_dir", "",
                           "a finished induction_head (or iclca_induction) run folder whose trained model to convert; "
                           "its task.* and model.* apply (keys set here must agree) and nothing is trained. Empty: "
                           "train the model here with the task/model/train keys, as induction_head does")
        .add_string("iclca.prompt", "chain", {"chain", "pairs"},
                    "ICL prompt X': chain = a sample path of the task's chain in which every trigger occurs followed "
                    "by its successor (rejection sampling); pairs = the bigrams 'trigger successor' once each at random "
                    "places among uniform non-trigger letters (prompt_length = 2 x triggers: 'a x b y c z d w e v')")
        .add_int("iclca.prompt_length", 32, 2, 1 << 20, "M: tokens of the ICL prompt X'")
        .add_int("iclca.input_length", 32, 1, 1 << 20,
                 "N: tokens of the input X, which continues the chain of X' (M + N <= task.seq_len)")
        .add_int("iclca.pairs", 1000, 1, 1 << 24, "(prompt, input) pairs, drawn from the seed's sub-stream 4")
        .add_int("iclca.batch_size", 32, 1, 1 << 16,
                 "pairs per forward pass of M_old (M_new runs one pair at a time: its biases differ per pair)");
    schema.add_rule([](const config::Config& cfg) {
        const auto M = cfg.get_int("iclca.prompt_length");
        const auto K = static_cast<std::int64_t>(cfg.get_string_list("task.triggers").size());
        if (cfg.get_string("source.run_dir").empty() && M < 2 * K)
            cfg.fail({"iclca.prompt_length", "task.triggers"}, "iclca.prompt_length " + std::to_string(M) + " cannot show " +
                                                                   std::to_string(K) + " triggers with their successors (needs " +
                                                                   std::to_string(2 * K) + ")");
    });
    schema.add_rule([](const config::Config& cfg) {
        const auto total = cfg.get_int("iclca.prompt_length") + cfg.get_int("iclca.input_length");
        if (cfg.get_string("source.run_dir").empty() && total > cfg.get_int("task.seq_len"))
            cfg.fail({"iclca.prompt_length", "iclca.input_length", "task.seq_len"},
                     "iclca.prompt_length + iclca.input_length = " + std::to_string(total) +
                         " exceeds the training length task.seq_len = " + std::to_string(cfg.get_int("task.seq_len")) +
                         ": [X'; X] would hold RoPE offsets the model never saw");
    });
    schema.add_rule([](const config::Config& cfg) {
        const std::string dir = cfg.get_string("source.run_dir");
        if (!dir.empty() && !std::filesystem::exists(std::filesystem::path(dir) / kResultsFile))
            cfg.fail({"source.run_dir"}, "'" + dir + "' holds no finished run (no " + kResultsFile + ")");
    });
    schema.add_rule([](const config::Config& cfg) {
        if (!cfg.get_string("source.run_dir").empty()) return;
        try {
            icl::check_iclca_assumptions(model_spec_from_config(cfg, tasks::kInductionVocab, cfg.get_int("task.seq_len")));
        } catch (const InputError& error) {
            cfg.fail({"model.attention", "model.mask", "model.isolate_queries", "model.shared_layers"}, error.what());
        }
    });
}

RunOutcome run_iclca_induction(const RunContext& context) {
    const config::Config& cfg = context.config;
    const RunOptions& options = context.options;
    const std::string source_dir = cfg.get_string("source.run_dir");
    if (source_dir.empty()) {
        // Train the model first, as induction_head does (same folder contents, checkpoints and --resume).
        RunFolder run(cfg, options);
        const InductionTraining training = train_induction_model(cfg, options, run);
        if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
        if (!options.quiet) print_final_evaluation(training, cfg);
        model::Transformer<double> net(model_spec_from_config(cfg, tasks::kInductionVocab, cfg.get_int("task.seq_len")),
                                       model::Transformer<double>::Mode::inference);
        ICLAB_CHECK(net.params.size() == training.parameters.size(), "trained parameters do not fit the model");
        std::copy(training.parameters.begin(), training.parameters.end(), net.params.begin());
        evaluate_conversion(cfg, cfg, net, run, options.quiet);
        run.commit();
        return {run.path(), true, training.steps_total, training.steps_total};
    }
    ICLAB_INPUT_CHECK(options.stop_after == 0, "--stop-after stops training, and with source.run_dir nothing is trained");
    InductionRun loaded = load_induction_run(source_dir, context.catalog, 0, "source.run_dir",
                                             model::Transformer<double>::Mode::inference);
    const config::Config& source = loaded.config;
    check_source_config(cfg, source, source_dir);
    model::Transformer<double>& net = *loaded.model;
    icl::check_iclca_assumptions(net.spec());
    RunFolder run(cfg, options);
    run.log() << "model: the trained parameters of " << source_dir << " (no training here)\n";
    run.results().set_attr("source_run_dir", std::filesystem::absolute(source_dir).string());
    run.results().set_attr("source_config", source.to_yaml());
    run.results().set_attr("parameter_count", static_cast<std::int64_t>(net.parameter_count()));
    evaluate_conversion(cfg, source, net, run, options.quiet);
    run.commit();
    return {run.path(), true, 0, 0};
}

}  // namespace
}  // namespace iclca_induction_cpp

Experiment iclca_induction() {
    using namespace iclca_induction_cpp;
    return {"iclca_induction",
            "ICLCA on a trained induction-head model: ICL accuracy of M_old with and without the prompt and of the "
            "converted M_new (paper 000 Table 2)",
            {KeyGroup::output, KeyGroup::induction_task, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_iclca_induction,
            [](const config::Config& cfg) {  // training (without source.run_dir), then per pair in fp64: M_old on [X'; X]
                                             // and on X, the conversion of X' (a forward) and M_new on X
                RunEstimate e = cfg.get_string("source.run_dir").empty() ? estimate_training(cfg) : RunEstimate{};
                const double M = static_cast<double>(cfg.get_int("iclca.prompt_length")), N = static_cast<double>(cfg.get_int("iclca.input_length"));
                e.flops += static_cast<double>(cfg.get_int("iclca.pairs")) *
                           (transformer_forward_flops(cfg, M + N, 52.0) + 2.0 * transformer_forward_flops(cfg, N, 52.0) +
                            transformer_forward_flops(cfg, M, 52.0));
                e.gemm_flops = e.flops;  // all transformer forwards
                e.keys = {"iclca.pairs", "model.width", "model.layers", "train.steps"};
                return e;
            }};
}

}  // namespace iclab::experiments
