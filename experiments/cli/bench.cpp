// `iclab bench`: the dispatch by config, and the token models (induction-head and lm configs: token inputs,
// vocabulary logits, the mean cross-entropy over all positions). Regression models: bench_regression.cpp; timing and table: bench_report.cpp.
#include "experiments/cli/bench.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/cli/bench_common.hpp"
#include "experiments/registry.hpp"
#include "framework/core/check.hpp"
#include "framework/core/rng.hpp"
#include "framework/io/output_path.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::cli {

using namespace iclab::run;

namespace {

template <class T>
void write_export(const std::string& path, bool overwrite, const config::Config& cfg, const model::ModelSpec& spec,
                  const std::vector<std::int32_t>& tokens, const std::vector<std::int32_t>& targets, std::size_t batch,
                  std::size_t time) {
    // A fresh model from the trainer's initialization, constants perturbed (perturb_constant_parameters).
    model::Transformer<T> model(spec);
    Rng init_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBenchInitStream);
    Rng perturb_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBenchExportPerturbStream);
    model.init(init_rng);
    perturb_constant_parameters(model, perturb_rng);
    const std::size_t N = batch * time, V = spec.vocab;
    std::vector<T> weights(N, static_cast<T>(1.0 / static_cast<double>(N)));  // the mean loss over all positions
    model.forward(tokens.data(), batch, time);
    const double loss = model.loss(targets.data(), weights.data());
    model.zero_grad();
    model.backward(targets.data(), weights.data());

    io::ResultsWriter writer(path, overwrite);
    writer.set_attr("config", cfg.to_yaml());
    writer.set_attr("config_source", cfg.source_path());
    writer.set_attr("dtype", dtype_name<T>());
    writer.set_attr("loss", loss);
    writer.set_attr("parameter_count", model.parameter_count());
    writer.set_attr("note",
                    "iclab bench --export: parameters (/checkpoint, initialization with biases, LayerNorm "
                    "parameters, b_KV and b_D perturbed), inputs (/check/tokens, /check/targets, (B, T)), "
                    "logits (/check/logits, (B, T, V)), the mean cross-entropy over all positions (attribute loss) "
                    "and its gradient (/check/grads/<parameter>), before clipping");
    io::write_provenance(writer);
    write_checkpoint(writer, model);
    writer.write_tensor("/check/tokens", tokens.data(), {batch, time});
    writer.write_tensor("/check/targets", targets.data(), {batch, time});
    writer.write_tensor("/check/logits", model.logits(), {batch, time, V});
    for (const auto& entry : model.layout().entries())
        writer.write_tensor("/check/grads/" + entry.name, model.grads.data() + entry.offset, entry.shape);
    writer.commit();
    std::printf("export: %s (parameters, tokens, logits, loss %.6f, gradients)\n", path.c_str(), loss);
}

template <class T>
void run_bench(const config::Config& cfg, const BenchOptions& options) {
    // An lm config (task.vocab_size: GPT-2's vocabulary, learned positions, tied embeddings; the lm trainer's step) or
    // an induction-head config (its fixed vocabulary).
    const bool lm = cfg.has("task.vocab_size");
    const model::ModelSpec spec =
        lm ? lm_model_spec(cfg)
           : model_spec_from_config(cfg, tasks::kInductionVocab, static_cast<std::size_t>(cfg.get_int("task.seq_len")));
    const std::size_t TT = lm && cfg.get_int("task.seq_len") == 0 ? spec.max_seq_len
                                                                  : static_cast<std::size_t>(cfg.get_int("task.seq_len"));
    const std::size_t B = static_cast<std::size_t>(cfg.get_int("train.batch_size"));
    const std::size_t V = spec.vocab, N = B * TT;
    const double grad_clip = cfg.get_float("train.grad_clip");
    const train::ScheduleSpec schedule = schedule_spec_from_config(cfg);
    const char* dtype = dtype_name<T>();

    // Random tokens and targets: throughput does not depend on the token values.
    Rng token_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBenchDataStream);
    std::vector<std::int32_t> tokens(N), targets(N);
    for (auto& t : tokens) t = static_cast<std::int32_t>(token_rng.uniform_int(V));
    for (auto& t : targets) t = static_cast<std::int32_t>(token_rng.uniform_int(V));

    if (!options.export_path.empty())
        write_export<T>(options.export_path, options.overwrite, cfg, spec, tokens, targets, B, TT);
    if (options.iters <= 0) return;

    model::Transformer<T> model(spec);
    Rng init_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBenchInitStream);
    model.init(init_rng);
    train::Optimizer<T> optimizer(optimizer_spec_from_config(cfg), model.layout());
    std::vector<T> weights(N, static_cast<T>(1.0 / static_cast<double>(N)));  // mean loss over all positions
    std::size_t step = 0;
    // The trainer's step (experiments/induction_head.cpp, framework/run/lm_training.cpp) minus the data sampling.
    const auto train_step = [&] {
        model.forward(tokens.data(), B, TT);
        const double loss = model.loss(targets.data(), weights.data());
        ICLAB_CHECK(std::isfinite(loss), "bench: the loss is " << loss << " at step " << step + 1);
        model.zero_grad();
        model.backward(targets.data(), weights.data());
        const double grad_norm = train::clip_gradient_norm(model.grads, model.layout(), grad_clip);
        ICLAB_CHECK(std::isfinite(grad_norm), "bench: the gradient norm is " << grad_norm << " at step " << step + 1);
        optimizer.step(model.params, model.grads, train::learning_rate(schedule, std::min(step, schedule.total_steps - 1)));
        ++step;
    };
    const auto forward = [&] { model.forward(tokens.data(), B, TT); };

    BenchSubject subject;
    subject.model_line = bench_model_line(spec, model.parameter_count(), dtype);
    subject.batch = B;
    subject.time = TT;
    subject.parameter_count = model.parameter_count();
    describe_attention(subject, spec, TT);
    subject.forward = forward;
    subject.train_step = train_step;
    report_bench<T>(cfg, options, subject);
}

}  // namespace

void bench(const BenchOptions& options) {
    ICLAB_INPUT_CHECK(options.warmup >= 0, "iclab bench: --warmup must be >= 0");
    ICLAB_INPUT_CHECK(options.iters >= 0, "iclab bench: --iters must be >= 0");
    ICLAB_INPUT_CHECK(options.iters > 0 || !options.export_path.empty(), "iclab bench: --iters 0 only makes sense with --export");
    ICLAB_INPUT_CHECK(options.blas_size > 0, "iclab bench: --blas-size must be positive");
    // Three S x S matrices (6 GiB in fp64 at 16384) and 2 S^3 FLOP per timed product (8.8e12: ~15 min at 10 GFLOP/s).
    ICLAB_INPUT_CHECK(options.blas_size <= 16384, "iclab bench: --blas-size " << options.blas_size
                                                                             << " is too large: at most 16384 (3 S^2 values, 2 S^3 FLOP per product)");
    const config::Config cfg = experiments::catalog().load_config(options.config_path, options.overrides);
    // Which model by the task's keys, not by the experiment's name: induction-head tasks have trigger tokens,
    // in-context regression tasks (paper 003 prefix_vs_causal, regression, ...) a kind and a token format.
    const bool induction = cfg.has("task.triggers");
    const bool regression = cfg.has("task.kind") && cfg.has("task.format");
    const bool lm = cfg.has("task.vocab_size") && cfg.has("task.context_length");
    ICLAB_INPUT_CHECK((induction || regression || lm) && cfg.has("model.attention") && cfg.has("train.optimizer"),
                      "iclab bench knows the models of configs that train an induction-head model (task.triggers), an "
                      "in-context regression model (task.kind, task.format) or a language model (lm: task.vocab_size); "
                          << options.config_path << " is a " << cfg.get_string("experiment") << " config");
    // Refuse an existing output before spending minutes measuring.
    if (!options.out.empty()) io::check_output_file(options.out, options.overwrite, "iclab bench --out", {options.config_path});
    if (!options.export_path.empty()) io::check_output_file(options.export_path, options.overwrite, "iclab bench --export", {options.config_path});
    ICLAB_INPUT_CHECK(options.out.empty() || options.export_path.empty() || !io::same_output_file(options.out, options.export_path),
                      "iclab bench: --out and --export name the same file " << options.out << ": give two files");
    if (regression && !induction)
        bench_regression(cfg, options);
    else
        with_model_dtype(cfg, [&](auto zero) { run_bench<decltype(zero)>(cfg, options); });
}

}  // namespace iclab::cli
