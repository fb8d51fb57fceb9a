// Experiment `prefix_vs_causal` (paper 003 §5.2, App. E.2-E.5; spec shared/specs/paper003.md Part B): train the
// softmax transformer of the config on LR, N-LR or MC with a prefixLM or causalLM mask (model.mask), then measure
// the query error on the test set (all of it and its first 64 sequences, the paper's count), on the training pool
// (Figure 6's memorisation check) and on test sets with fewer in-context examples (Tables 4-6, layout Q12: the k
// ICEs at positions 0..k-1, the queries right after). The prefix and causal runs of one seed share initialization,
// pool and test sets (framework/run/regression_training.hpp streams), so every comparison is paired.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "experiments/prefix_vs_causal/claims.hpp"
#include "experiments/prefix_vs_causal/fallback.hpp"
#include "experiments/prefix_vs_causal/probes.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/regression_training.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace prefix_vs_causal_cpp {


namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void declare_keys(config::Schema& schema) {
    schema.add_int_list("prefix_vs_causal.test_examples", {}, 1, 1 << 16,
                        "k values of the fewer-ICE test (paper 003 Tables 4-6: 16, 24, 32 of 40; cpu2: 8, 12, 16 of 20); "
                        "each is a fresh test set of eval.sequences sequences")
        .add_int("prefix_vs_causal.first_sequences", 64, 1, 1 << 24,
                 "also report the error on the first N test sequences (the paper's test set has 64)")
        .add_int("prefix_vs_causal.pool_eval_sequences", 1024, 1, 1 << 24,
                 "training-pool sequences (the first N of the pool) whose query error is reported (Figure 6)")
        .add_string("prefix_vs_causal.profile", "", {"", "smoke", "quick", "cpu2", "cpu2-long", "paper-task-small", "paper"},
                    "the spec's profile name (specs/paper003.md, Part B), recorded in results.h5; empty: none")
        .add_bool("prefix_vs_causal.claims", true,
                  "declare the paper's Table 1/3, 4-6 and 7 claims for this run (experiments/prefix_vs_causal/claims.hpp); "
                  "false for runs that are not a table cell (Figure 6's smaller pools)")
        .add_int_list("prefix_vs_causal.figure6_pools", {}, 1, std::int64_t{1} << 40,
                      "Figure 6's training pool sizes (task.pool_sequences of the grid's runs, >= 4): this run is one of "
                      "its points and declares the Figure 6 claims (errors fall with the pool, ranked over these pools; "
                      "prefix <= causal at the largest; train pool < test at the smallest); empty: not a Figure 6 run")
        .add_bool("prefix_vs_causal.probes", false,
                  "after training, fit Figure 3's per-layer least-squares probes (as prefix_vs_causal_probes: 1,024 pool "
                  "sequences, ridge 1e-8), write /tables/probes and declare the Figure 3 claims (SL-L2 runs); needs a pool")
        .add_rule([](const config::Config& cfg) {
            const auto first = cfg.get_int("prefix_vs_causal.first_sequences"), eval = cfg.get_int("eval.sequences");
            if (first > eval)
                cfg.fail({"prefix_vs_causal.first_sequences", "eval.sequences"},
                         "prefix_vs_causal.first_sequences = " + std::to_string(first) + " exceeds the test set, eval.sequences = " +
                             std::to_string(eval));
            const auto pool = cfg.get_int("task.pool_sequences"), pool_eval = cfg.get_int("prefix_vs_causal.pool_eval_sequences");
            if (cfg.get_bool("prefix_vs_causal.probes") && pool == 0)
                cfg.fail({"prefix_vs_causal.probes", "task.pool_sequences"},
                         "prefix_vs_causal.probes fits on the training pool: set task.pool_sequences > 0");
            if (pool > 0 && pool_eval > pool)
                cfg.fail({"prefix_vs_causal.pool_eval_sequences", "task.pool_sequences"},
                         "prefix_vs_causal.pool_eval_sequences = " + std::to_string(pool_eval) +
                             " exceeds the training pool, task.pool_sequences = " + std::to_string(pool));
        })
        .add_rule([](const config::Config& cfg) {  // a Figure 6 point: one of >= 4 pools, no table cell, prefix or causal
            std::vector<std::int64_t> pools = cfg.get_int_list("prefix_vs_causal.figure6_pools");
            if (pools.empty()) return;
            std::sort(pools.begin(), pools.end());
            if (pools.size() < 4 || std::adjacent_find(pools.begin(), pools.end()) != pools.end())
                cfg.fail({"prefix_vs_causal.figure6_pools"},
                         "prefix_vs_causal.figure6_pools needs >= 4 distinct pool sizes (with 3, the exact one-sided p of "
                         "Kendall's tau is >= 1/6 and the rule p <= 0.05 can never hold)");
            if (!std::binary_search(pools.begin(), pools.end(), cfg.get_int("task.pool_sequences")))
                cfg.fail({"prefix_vs_causal.figure6_pools", "task.pool_sequences"},
                         "task.pool_sequences = " + std::to_string(cfg.get_int("task.pool_sequences")) +
                             " is none of prefix_vs_causal.figure6_pools");
            if (cfg.get_bool("prefix_vs_causal.claims"))
                cfg.fail({"prefix_vs_causal.figure6_pools", "prefix_vs_causal.claims"},
                         "a Figure 6 run (prefix_vs_causal.figure6_pools) is no table cell: set prefix_vs_causal.claims: false");
            if (cfg.get_string("model.mask") == "full" || cfg.get_string("train.permute_examples") != "none")
                cfg.fail({"prefix_vs_causal.figure6_pools", "model.mask", "train.permute_examples"},
                         "Figure 6 compares prefix and causal runs trained without permuted ICEs");
        })
        .add_rule([](const config::Config& cfg) {  // the trained positions end at examples + queries
            for (const auto k : cfg.get_int_list("prefix_vs_causal.test_examples"))
                if (k > cfg.get_int("task.examples"))
                    cfg.fail({"prefix_vs_causal.test_examples", "task.examples"},
                             "fewer-ICE tests need k <= task.examples = " + std::to_string(cfg.get_int("task.examples")) +
                                 ", got " + std::to_string(k));
        });
    part_b::declare_fallback_keys(schema);
}

// Training, then forward passes over the test sets (the fewer-ICE tests and the pool's first sequences).
RunEstimate estimate(const config::Config& cfg) {
    RunEstimate e = estimate_training(cfg);
    const double T = static_cast<double>(cfg.get_int("task.examples") + cfg.get_int("task.queries"));
    const double sets = 2.0 + static_cast<double>(cfg.get_int_list("prefix_vs_causal.test_examples").size());
    e.flops += sets * static_cast<double>(cfg.get_int("eval.sequences")) * transformer_forward_flops(cfg, T, vector_io_width(cfg)) +
               static_cast<double>(cfg.get_int("prefix_vs_causal.pool_eval_sequences")) * transformer_forward_flops(cfg, T, vector_io_width(cfg));
    if (cfg.get_bool("prefix_vs_causal.probes"))  // Figure 3: forward passes over the probes' fit and test sequences
        e.flops += static_cast<double>(part_b::kProbeFitSequences + cfg.get_int("eval.sequences")) * transformer_forward_flops(cfg, T, vector_io_width(cfg));
    e.gemm_flops = e.flops;  // all transformer forwards
    return e;
}

// One row of /tables/prefix_vs_causal.
struct Rows {
    std::vector<std::string> set;
    std::vector<std::int64_t> examples, sequences;
    std::vector<double> query_mse, zero_mse, relative, error_pct;
    void add(const std::string& name, std::size_t k, std::size_t n, const RegressionEvaluation& e, bool classification) {
        set.push_back(name);
        examples.push_back(static_cast<std::int64_t>(k));
        sequences.push_back(static_cast<std::int64_t>(n));
        query_mse.push_back(e.query_mse);
        zero_mse.push_back(e.zero_mse);
        relative.push_back(e.query_mse / e.zero_mse);
        // MC: classification error in % = 100 · mean[argmax ŷ ≠ argmax y] over the queries (spec §1 Metrics).
        error_pct.push_back(classification ? 100.0 * (1.0 - e.query_accuracy) : kNaN);
    }
};

RunOutcome run_prefix_vs_causal(const RunContext& context) {
    const config::Config& cfg = context.config;
    RunFolder run(cfg, context.options);
    const RegressionTraining training = train_regression_model(cfg, context.options, run);
    if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};

    // The trained weights in fp64 (float32 parameters convert exactly), evaluated in inference mode.
    model::Transformer<double> model(training.spec, model::Transformer<double>::Mode::inference);
    model.params.assign(training.parameters.begin(), training.parameters.end());
    const tasks::RegressionSpec& task = training.task;
    const bool classification = task.kind == tasks::RegressionKind::classification;
    const std::size_t chunk = static_cast<std::size_t>(cfg.get_int("train.batch_size"));
    const std::size_t test_count = static_cast<std::size_t>(cfg.get_int("eval.sequences"));
    Rows rows;

    // The test set: the very sequences of the training service's evaluation (same stream, same draws).
    tasks::RegressionBatch<double> test;
    Rng eval_rng = regression_stream(cfg, RegressionStream::eval_data);
    tasks::sample_regression_batch(test, test_count, task, eval_rng);
    rows.add("test", task.examples, test_count, evaluate_regression(model, test, task, chunk), classification);
    const std::size_t first = std::min<std::size_t>(cfg.get_int("prefix_vs_causal.first_sequences"), test_count);
    tasks::RegressionBatch<double> cut;  // the test set's first `first` sequences
    cut.inputs.resize(std::array<std::size_t, 3>{first, test.inputs.shape()[1], test.inputs.shape()[2]});
    cut.targets.resize(std::array<std::size_t, 3>{first, test.targets.shape()[1], test.targets.shape()[2]});
    cut.positions.resize(std::array<std::size_t, 2>{first, test.positions.shape()[1]});
    cut.task_weights.resize(std::array<std::size_t, 3>{first, test.task_weights.shape()[1], test.task_weights.shape()[2]});
    cut.x.resize(std::array<std::size_t, 3>{first, test.x.shape()[1], test.x.shape()[2]});
    cut.y.resize(std::array<std::size_t, 3>{first, test.y.shape()[1], test.y.shape()[2]});
    for (std::size_t i = 0; i < first; ++i) tasks::copy_regression_sequence(cut, i, test, i);
    rows.add("test_first" + std::to_string(first), task.examples, first, evaluate_regression(model, cut, task, chunk), classification);

    // The training pool's first sequences (fixed pool only): train error < test error at small pools = memorisation.
    const std::uint64_t pool_size = static_cast<std::uint64_t>(cfg.get_int("task.pool_sequences"));
    if (pool_size > 0) {
        const std::size_t count = std::min<std::uint64_t>(cfg.get_int("prefix_vs_causal.pool_eval_sequences"), pool_size);
        std::vector<std::uint64_t> indices(count);
        for (std::size_t i = 0; i < count; ++i) indices[i] = i;
        tasks::RegressionBatch<double> pool_batch;
        tasks::sample_regression_pool_batch(pool_batch, indices, task, regression_stream(cfg, RegressionStream::pool));
        rows.add("train_pool", task.examples, count, evaluate_regression(model, pool_batch, task, chunk), classification);
    }

    // Tables 4-6 (E.4): k ICEs, then the same number of queries; fresh sequences from stream extra_eval.derive(k).
    for (const auto k : cfg.get_int_list("prefix_vs_causal.test_examples")) {
        tasks::RegressionSpec fewer = task;
        fewer.examples = static_cast<std::size_t>(k);
        ICLAB_INPUT_CHECK(tasks::regression_seq_len(fewer) <= training.spec.max_seq_len,
                          "prefix_vs_causal.test_examples: " << k << " examples do not fit the trained positions");
        Rng rng = regression_stream(cfg, RegressionStream::extra_eval).derive(static_cast<std::uint64_t>(k));
        tasks::RegressionBatch<double> data;
        tasks::sample_regression_batch(data, test_count, fewer, rng);
        rows.add("test_k" + std::to_string(k), fewer.examples, test_count, evaluate_regression(model, data, fewer, chunk),
                 classification);
    }

    // Figure 3 (probes.hpp): per-layer probes of the trained weights (a training-mode copy keeps the residual streams).
    part_b::ProbeCurve probes;
    if (cfg.get_bool("prefix_vs_causal.probes")) {
        model::Transformer<double> probed(training.spec);
        probed.params.assign(training.parameters.begin(), training.parameters.end());
        probes = part_b::probe_layers(probed, task, cfg, part_b::kProbeFitSequences, part_b::kProbeRidge);
    }

    // The declared fallback (fallback.hpp): the detector on the loss history; when it fires, the run at the fallback lr.
    const bool detector = cfg.get_string("prefix_vs_causal.fallback.rule") != "none";
    part_b::FallbackRun fallback;
    if (detector) fallback = part_b::run_fallback(context, run, training.step_losses, training.warmup_steps);
    if (!fallback.completed) return {run.path(), false, training.steps_total, training.steps_total};  // resume continues it

    io::ResultsWriter& w = run.results();
    w.write_columns("/tables/prefix_vs_causal",
                    {{"set", rows.set}, {"examples", rows.examples}, {"sequences", rows.sequences}, {"query_mse", rows.query_mse},
                     {"zero_predictor_mse", rows.zero_mse}, {"relative_query_mse", rows.relative}, {"error_pct", rows.error_pct}});
    if (!probes.query_mse.empty()) {
        std::vector<std::int64_t> depth;
        for (std::size_t l = 0; l < probes.query_mse.size(); ++l) depth.push_back(static_cast<std::int64_t>(l));
        w.write_columns("/tables/probes", {{"depth", depth}, {"query_mse", probes.query_mse}, {"error_pct", probes.error_pct}});
    }
    const std::vector<std::int64_t> figure6_pools = cfg.get_int_list("prefix_vs_causal.figure6_pools");
    const bool table_claims = cfg.get_bool("prefix_vs_causal.claims") && cfg.get_string("model.mask") != "full";
    if (table_claims || !figure6_pools.empty()) {  // one arm of each paired claim; `iclab claims` pairs the masks (and pools)
        part_b::Cell cell;
        cell.task = cfg.get_string("task.kind"), cell.mask = cfg.get_string("model.mask");
        cell.shared = cfg.get_bool("model.shared_layers"), cell.l2 = cfg.get_float("train.context_output_l2") > 0.0;
        cell.permute_examples = cfg.get_string("train.permute_examples"), cell.x_dim = cfg.get_int("task.x_dim");
        cell.examples = cfg.get_int("task.examples");
        cell.chance_error = classification ? 100.0 * (1.0 - 1.0 / static_cast<double>(cfg.get_int("task.classes"))) : rows.zero_mse[0];
        cell.probe_errors = classification ? probes.error_pct : probes.query_mse;
        const std::vector<double>& error = classification ? rows.error_pct : rows.query_mse;
        cell.test_error = error[0];
        for (std::size_t i = 0; i < rows.set.size(); ++i) {
            if (rows.set[i].rfind("test_k", 0) == 0) cell.fewer_examples.push_back(rows.examples[i]), cell.fewer_errors.push_back(error[i]);
            if (rows.set[i] == "train_pool") cell.train_pool_error = error[i];
        }
        cell.pool = cfg.get_int("task.pool_sequences");
        std::vector<io::ClaimResult> declared;
        if (table_claims) declared = part_b::claims(cell, cfg.get_int("seed"));
        if (table_claims && detector) {  // the Table 1 claims again, with this run's fallback measurement where it triggered
            const bool triggered = fallback.detection.triggered;
            const double fallback_error = triggered ? (classification ? fallback.error_pct : fallback.query_mse)[0] : kNaN;
            for (auto& claim : part_b::fallback_claims(cell, cfg.get_int("seed"), triggered, fallback_error))
                declared.push_back(std::move(claim));
        }
        if (!figure6_pools.empty())  // Figure 6 (config rules: a pool of the list, no table cell, prefix or causal)
            for (auto& claim : part_b::figure6_claims(cell, cfg.get_int("seed"), figure6_pools)) declared.push_back(std::move(claim));
        io::write_claims(w, declared);
    }
    if (detector) part_b::write_fallback(w, cfg, fallback);
    w.set_attr("test_query_mse", rows.query_mse[0]);
    w.set_attr("test_error_pct", rows.error_pct[0]);
    w.set_attr("profile", cfg.get_string("prefix_vs_causal.profile"));
    w.set_attr("mask", cfg.get_string("model.mask"));
    run.commit();
    if (!context.options.quiet) {
        print_regression_evaluation(training, cfg);
        std::printf("\n  %-16s %9s %9s %12s %10s\n", "set", "examples", "sequences", "query MSE", "error %");
        for (std::size_t i = 0; i < rows.set.size(); ++i)
            std::printf("  %-16s %9lld %9lld %12.5g %10.2f\n", rows.set[i].c_str(), static_cast<long long>(rows.examples[i]),
                        static_cast<long long>(rows.sequences[i]), rows.query_mse[i], rows.error_pct[i]);
        if (detector && fallback.detection.triggered)
            std::printf("\n  fallback triggered (%s); at lr %g: test query MSE %.5g, error %% %.2f (/tables/prefix_vs_causal_fallback)\n",
                        fallback.detection.reason.c_str(), fallback.lr, fallback.query_mse[0], fallback.error_pct[0]);
        else if (detector)
            std::printf("\n  fallback not triggered (%s)\n", fallback.detection.reason.c_str());
    }
    return {run.path(), true, training.steps_total, training.steps_total};
}

}  // namespace
}  // namespace prefix_vs_causal_cpp

Experiment prefix_vs_causal() {
    using namespace prefix_vs_causal_cpp;
    return {"prefix_vs_causal",
            "paper 003 §5.2: trained softmax transformers, prefixLM vs causalLM on LR / N-LR / MC (Tables 1, 3-6)",
            {KeyGroup::output, KeyGroup::model, KeyGroup::train, KeyGroup::regression_task},
            declare_keys,
            run_prefix_vs_causal,
            estimate};
}

}  // namespace iclab::experiments
