#include "experiments/iclca_induction.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "experiments/induction_head.hpp"
#include "experiments/registry.hpp"
#include "framework/core/check.hpp"
#include "framework/icl/iclca.hpp"

namespace iclab::experiments {

namespace {

// Sub-stream of the run's seed for the (prompt, input) pairs; 1-3 are induction_head's init, data and eval.
constexpr std::uint64_t kPromptPairStream = 4;

// Runs a scope with one OpenMP thread. M_new's forward passes are one pair each (B = 1): too small to share,
// and each of their many parallel regions ends in a barrier that waits for the other thread to be scheduled.
// Measured for the quick config's 1000 pairs on the shared 2-core machine: 64 s with 2 threads, 0.9 s with 1.
// Results do not depend on the thread count (tests/test_gemm.cpp).
class SingleThreaded {
public:
    SingleThreaded() : threads_(omp_get_max_threads()) { omp_set_num_threads(1); }
    ~SingleThreaded() { omp_set_num_threads(threads_); }
    SingleThreaded(const SingleThreaded&) = delete;
    SingleThreaded& operator=(const SingleThreaded&) = delete;

private:
    int threads_;
};

// Table 2 of paper 000, in the order of its rows.
enum ModelRow { kOldIcl = 0, kOldNoIcl = 1, kNewNoIcl = 2, kRows = 3 };
const char* const kRowNames[kRows] = {"M_old, ICL", "M_old, no ICL", "M_new, no ICL"};
const char* const kRowInputs[kRows] = {"[X'; X]", "X", "X"};
const double kPaperAccuracy[kRows] = {0.9995, 0.0223, 0.9995};

// The value of a declared key as text, whatever its type (for comparing two configs and saying how they differ).
std::string value_text(const config::Config& cfg, const config::KeySpec& key) {
    std::ostringstream text;
    text.precision(17);
    const auto list = [&](const auto& values) {
        text << "[";
        for (std::size_t i = 0; i < values.size(); ++i) text << (i ? ", " : "") << values[i];
        text << "]";
    };
    switch (key.type) {
        case config::ValueType::int_value: text << cfg.get_int(key.path); break;
        case config::ValueType::float_value: text << cfg.get_float(key.path); break;
        case config::ValueType::bool_value: text << (cfg.get_bool(key.path) ? "true" : "false"); break;
        case config::ValueType::string_value: text << cfg.get_string(key.path); break;
        case config::ValueType::int_list: list(cfg.get_int_list(key.path)); break;
        case config::ValueType::float_list: list(cfg.get_float_list(key.path)); break;
        case config::ValueType::string_list: list(cfg.get_string_list(key.path)); break;
    }
    return text.str();
}

// The config of the run in source.run_dir, checked: an induction-head model with a stored checkpoint, and every
// task.* / model.* key this config sets explicitly equal to the source's (the keys left at their defaults
// simply come from the source). InputError before anything is written.
config::Config load_source_config(const config::Config& cfg, const std::filesystem::path& source_dir) {
    const auto config_path = source_dir / kConfigFile, results_path = source_dir / kResultsFile;
    ICLAB_INPUT_CHECK(std::filesystem::exists(config_path), "source.run_dir: " << source_dir.string() << " is not a run folder (no "
                                                                               << kConfigFile << ")");
    ICLAB_INPUT_CHECK(std::filesystem::exists(results_path),
                      "source.run_dir: " << source_dir.string() << " has no " << kResultsFile << " (did the run finish?)");
    config::Config source = load_experiment_config(config_path.string(), {});
    const std::string experiment = source.get_string("experiment");
    ICLAB_INPUT_CHECK(experiment == "induction_head" || experiment == "iclca_induction",
                      "source.run_dir: " << source_dir.string() << " is a " << experiment
                                         << " run; ICLCA needs an induction_head (or iclca_induction) run");
    std::string differences;
    const config::Schema induction_keys = induction_head_schema();
    for (const auto& key : induction_keys.keys()) {
        const bool model_key = key.path.rfind("task.", 0) == 0 || key.path.rfind("model.", 0) == 0;
        if (!model_key || cfg.origin(key.path) == "default") continue;
        const std::string mine = value_text(cfg, key), theirs = value_text(source, key);
        if (mine != theirs)
            differences += "\n  " + key.path + ": " + mine + " (" + cfg.origin(key.path) + ") but " + theirs + " in " +
                           config_path.string();
    }
    ICLAB_INPUT_CHECK(differences.empty(), "config error: with source.run_dir the model and task are the source run's; "
                                           "these keys are set to other values:"
                                               << differences << "\n(leave them out, or make them equal)");
    const auto M = cfg.get_int("iclca.prompt_length"), N = cfg.get_int("iclca.input_length");
    ICLAB_INPUT_CHECK(M + N <= source.get_int("task.seq_len"),
                      "config error: iclca.prompt_length + iclca.input_length = " << M + N << " exceeds the source model's training length task.seq_len = "
                                                                                  << source.get_int("task.seq_len")
                                                                                  << " (RoPE offsets it never saw)");
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(M) >= 2 * source.get_string_list("task.triggers").size(),
                      "config error: iclca.prompt_length " << M << " cannot show the source model's "
                                                           << source.get_string_list("task.triggers").size()
                                                           << " triggers with their successors");
    return source;
}

// Scores of one (prompt, input) pair.
struct PairScores {
    std::int64_t scored = 0;              // X's first occurrences of a trigger (answer only in X')
    std::int64_t repeats = 0;             // X's repeated triggers (answer in X itself)
    std::int64_t correct[kRows] = {};     // argmax = target at scored positions, per model
    std::int64_t repeat_correct[kRows] = {};
    std::int64_t argmax_agreement = 0;    // positions of X where M_new and M_old,ICL have the same argmax
    double relative_logit_error = 0.0;    // ‖M_new(X) − M_old([X'; X])‖ / ‖M_old([X'; X])‖ over X's logits
};

std::size_t argmax(const double* z, std::size_t V) {
    std::size_t best = 0;
    for (std::size_t v = 1; v < V; ++v)
        if (z[v] > z[best]) best = v;
    return best;
}

// logits (N, V) of each model at X's positions -> the pair's scores.
PairScores score_pair(const tasks::PromptPair& pair, const double* const logits[kRows], std::size_t N, std::size_t V) {
    PairScores s;
    double diff = 0.0, norm = 0.0;
    for (std::size_t t = 0; t < N; ++t) {
        std::size_t best[kRows];
        for (int m = 0; m < kRows; ++m) best[m] = argmax(logits[m] + t * V, V);
        s.argmax_agreement += best[kNewNoIcl] == best[kOldIcl];
        for (std::size_t v = 0; v < V; ++v) {
            const double reference = logits[kOldIcl][t * V + v], e = logits[kNewNoIcl][t * V + v] - reference;
            diff += e * e;
            norm += reference * reference;
        }
        const bool scored = pair.kinds[t] == tasks::PositionKind::first_trigger, repeat = pair.kinds[t] == tasks::PositionKind::icl;
        s.scored += scored;
        s.repeats += repeat;
        for (int m = 0; m < kRows; ++m) {
            const bool correct = static_cast<std::int32_t>(best[m]) == pair.targets[t];
            s.correct[m] += scored && correct;
            s.repeat_correct[m] += repeat && correct;
        }
    }
    s.relative_logit_error = std::sqrt(diff / norm);
    return s;
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
    std::vector<double> old_icl, old_no_icl, converted(N * V);
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
        const SingleThreaded one_thread;
        for (std::size_t r = 0; r < rows; ++r) {
            const auto& pair = pairs[r];
            icl::write_biases(net, icl::iclca_convert(net, pair.prompt.data(), M));
            net.forward(pair.input.data(), 1, N);
            std::copy(net.logits(), net.logits() + N * V, converted.begin());
            icl::write_biases(net, original);
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
    std::int64_t scored = 0, repeats = 0, agreement = 0, correct[kRows] = {}, repeat_correct[kRows] = {};
    double max_error = 0.0, sum_error = 0.0;
    for (const auto& s : scores) {
        scored += s.scored;
        repeats += s.repeats;
        agreement += s.argmax_agreement;
        for (int m = 0; m < kRows; ++m) {
            correct[m] += s.correct[m];
            repeat_correct[m] += s.repeat_correct[m];
        }
        max_error = std::max(max_error, s.relative_logit_error);
        sum_error += s.relative_logit_error;
    }
    const auto ratio = [](std::int64_t a, std::int64_t b) { return b > 0 ? static_cast<double>(a) / b : std::nan(""); };
    const double eval_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    io::ResultsWriter& w = run.results();
    std::vector<std::string> names, inputs;
    std::vector<double> accuracy, paper, repeat_accuracy;
    std::vector<std::int64_t> correct_column, positions, repeat_correct_column, repeat_positions;
    for (int m = 0; m < kRows; ++m) {
        names.push_back(kRowNames[m]);
        inputs.push_back(kRowInputs[m]);
        accuracy.push_back(ratio(correct[m], scored));
        correct_column.push_back(correct[m]);
        positions.push_back(scored);
        paper.push_back(kPaperAccuracy[m]);
        repeat_accuracy.push_back(ratio(repeat_correct[m], repeats));
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
                                       {"repeat_positions", repeat_positions}});
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

}  // namespace

config::Schema iclca_induction_schema() {
    config::Schema schema;
    schema.add_string("experiment", "iclca_induction", {"iclca_induction"}, "which experiment this config runs");
    add_output_keys(schema);
    add_induction_training_keys(schema);
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
    return schema;
}

RunOutcome run_iclca_induction(const config::Config& cfg, const RunOptions& options) {
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
    const config::Config source = load_source_config(cfg, source_dir);
    model::Transformer<double> net(model_spec_from_config(source, tasks::kInductionVocab, source.get_int("task.seq_len")),
                                   model::Transformer<double>::Mode::inference);
    icl::check_iclca_assumptions(net.spec());
    {
        const io::ResultsReader reader(std::filesystem::path(source_dir) / kResultsFile);
        ICLAB_INPUT_CHECK(reader.has("/checkpoint"), "source.run_dir: " << source_dir << "/" << kResultsFile
                                                                        << " holds no trained parameters (output.checkpoint was false)");
        read_checkpoint(reader, net);
    }
    RunFolder run(cfg, options);
    run.log() << "model: the trained parameters of " << source_dir << " (no training here)\n";
    run.results().set_attr("source_run_dir", std::filesystem::absolute(source_dir).string());
    run.results().set_attr("source_config", source.to_yaml());
    run.results().set_attr("parameter_count", static_cast<std::int64_t>(net.parameter_count()));
    evaluate_conversion(cfg, source, net, run, options.quiet);
    run.commit();
    return {run.path(), true, 0, 0};
}

}  // namespace iclab::experiments
