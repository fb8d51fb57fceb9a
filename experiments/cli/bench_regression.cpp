// `iclab bench` for in-context regression models (papers 003, 004: task.kind, task.format; e.g. the paper-003
// cpu2 model configs/cpu2/prefix_vs_causal.yaml): real-valued tokens through the read-in, outputs through the
// read-out, the squared-error loss at the query positions plus the L2 penalty on in-context outputs. The model,
// the batch, the loss weights and the forward/loss/backward are the trainer's (framework/run/regression_training):
// regression_model_spec, sample_regression_batch, regression_loss_weights, regression_forward_backward.
// One batch is drawn once (throughput does not depend on the values); the timed training step is the trainer's
// step without the data sampling: forward + loss + zero_grad + backward + clipping + optimizer step.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "experiments/cli/bench_common.hpp"
#include "framework/core/check.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/regression_training.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab::cli {

using namespace iclab::run;

namespace {

// The cross-check file: perturbed initial parameters, one batch (inputs, targets, position kinds), the outputs,
// the loss and its gradient (before clipping) of one forward/backward.
template <class T>
void write_regression_export(const std::string& path, bool overwrite, const config::Config& cfg, const model::ModelSpec& spec,
                             const tasks::RegressionBatch<T>& batch, const RegressionLossWeights<T>& weights,
                             const RegressionLossSettings& settings, std::size_t prefix) {
    model::Transformer<T> model(spec);
    Rng init_rng = regression_stream(cfg, RegressionStream::init);
    Rng perturb_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBenchExportPerturbStream);
    model.init(init_rng);
    perturb_constant_parameters(model, perturb_rng);
    model.set_prefix_length(prefix);
    RegressionLossScratch<T> scratch;
    const double loss = regression_forward_backward(model, batch, weights, settings.l2, scratch);

    const std::size_t B = batch.inputs.shape()[0], TT = batch.inputs.shape()[1], d_in = batch.inputs.shape()[2];
    const std::size_t O = batch.targets.shape()[2];
    std::vector<std::int32_t> positions(batch.positions.begin(), batch.positions.end());  // (B, T) RegressionPosition
    io::ResultsWriter writer(path, overwrite);
    writer.set_attr("config", cfg.to_yaml());
    writer.set_attr("config_source", cfg.source_path());
    writer.set_attr("model_kind", "regression");
    writer.set_attr("dtype", dtype_name<T>());
    writer.set_attr("loss", loss);
    writer.set_attr("parameter_count", model.parameter_count());
    writer.set_attr("prefix_length", prefix);
    writer.set_attr("note",
                    "iclab bench --export (regression model): parameters (/checkpoint, initialization with biases and "
                    "LayerNorm parameters perturbed), inputs (/check/inputs, (B, T, d_in)), targets (/check/targets, "
                    "(B, T, d_out)), position kinds (/check/positions, (B, T): 0 none, 1 context, 2 query), outputs "
                    "(/check/outputs, (B, T, d_out)), the training loss (attribute loss: the query squared error plus "
                    "train.context_output_l2 on in-context outputs, in train.context_output_l2_form) and its gradient "
                    "(/check/grads/<parameter>), before clipping");
    io::write_provenance(writer);
    write_checkpoint(writer, model);
    writer.write_tensor("/check/inputs", batch.inputs.data(), {B, TT, d_in});
    writer.write_tensor("/check/targets", batch.targets.data(), {B, TT, O});
    writer.write_tensor("/check/positions", positions.data(), {B, TT});
    writer.write_tensor("/check/outputs", model.outputs(), {B, TT, O});
    for (const auto& entry : model.layout().entries())
        writer.write_tensor("/check/grads/" + entry.name, model.grads.data() + entry.offset, entry.shape);
    writer.commit();
    std::printf("export: %s (parameters, inputs, outputs, loss %.6g, gradients)\n", path.c_str(), loss);
}

template <class T>
void run_regression_bench(const config::Config& cfg, const BenchOptions& options) {
    const tasks::RegressionSpec task = regression_spec_from_config(cfg);
    const model::ModelSpec spec = regression_model_spec(cfg);
    const std::size_t B = static_cast<std::size_t>(cfg.get_int("train.batch_size"));
    const std::size_t TT = tasks::regression_seq_len(task), prefix = tasks::regression_prefix_length(task);
    const RegressionLossSettings settings = regression_loss_settings(cfg);
    const double grad_clip = cfg.get_float("train.grad_clip");
    const train::ScheduleSpec schedule = schedule_spec_from_config(cfg);

    tasks::RegressionBatch<T> batch;
    Rng data_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBenchDataStream);
    tasks::sample_regression_batch(batch, B, task, data_rng);
    RegressionLossWeights<T> weights;
    regression_loss_weights(weights, batch, settings);

    if (!options.export_path.empty())
        write_regression_export<T>(options.export_path, options.overwrite, cfg, spec, batch, weights, settings, prefix);
    if (options.iters <= 0) return;

    model::Transformer<T> model(spec);
    Rng init_rng = regression_stream(cfg, RegressionStream::init);
    model.init(init_rng);
    model.set_prefix_length(prefix);
    train::Optimizer<T> optimizer(optimizer_spec_from_config(cfg), model.layout());
    RegressionLossScratch<T> scratch;
    std::size_t step = 0;
    const auto train_step = [&] {
        const double loss = regression_forward_backward(model, batch, weights, settings.l2, scratch);
        ICLAB_CHECK(std::isfinite(loss), "bench: the loss is " << loss << " at step " << step + 1);
        const double grad_norm = train::clip_gradient_norm(model.grads, model.layout(), grad_clip);
        ICLAB_CHECK(std::isfinite(grad_norm), "bench: the gradient norm is " << grad_norm << " at step " << step + 1);
        optimizer.step(model.params, model.grads, train::learning_rate(schedule, std::min(step, schedule.total_steps - 1)));
        ++step;
    };

    BenchSubject subject;
    subject.model_line = bench_model_line(spec, model.parameter_count(), dtype_name<T>()) + "; " +
                         tasks::regression_kind_name(task.kind) + " task, " + tasks::token_format_name(task.format) +
                         " tokens of " + std::to_string(spec.input_dim) + ", " + std::to_string(task.examples) +
                         " examples + " + std::to_string(task.queries) + " queries, mask " + nn::mask_kind_name(spec.mask) +
                         (spec.isolate_queries ? " (isolated queries)" : "");
    subject.batch = B;
    subject.time = TT;
    subject.parameter_count = model.parameter_count();
    describe_attention(subject, spec, TT);
    subject.forward = [&] { model.forward(batch.inputs.data(), B, TT); };
    subject.train_step = train_step;
    report_bench<T>(cfg, options, subject);
}

}  // namespace

void bench_regression(const config::Config& cfg, const BenchOptions& options) {
    with_model_dtype(cfg, [&](auto zero) { run_regression_bench<decltype(zero)>(cfg, options); });
}

}  // namespace iclab::cli
