// Service: "train the in-context regression model this config describes" (papers 003, 004; Garg et al.): linear
// regression, sigmoid regression and multiclass classification with real-valued tokens (read-in/read-out) and a
// squared-error loss at the query positions, evaluated against the zero predictor and, for linear tasks, the
// least-squares solution on the same held-out sequences. Random streams of `seed`: 1 initialization, 2 training
// data, 3 evaluation set.
#include "framework/run/regression_training.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <optional>
#include <string>

#include "framework/core/profile.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/trainer.hpp"
#include "framework/core/check.hpp"
#include "framework/nn/layers.hpp"

namespace iclab::run {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using Position = tasks::RegressionPosition;

// Least squares on one sequence's context, solved in double through the normal equations with a tiny ridge
// (min-norm-like when N < d): ŵ = (XᵀX + λI)⁻¹ Xᵀ y, λ = 1e-10·trace/d. Returns Σ_q |ŵ x_q − y_q|².
template <class T>
double least_squares_error(const tasks::RegressionBatch<T>& data, std::size_t b, const tasks::RegressionSpec& task) {
    const std::size_t d = task.x_dim, N = task.examples, Q = task.queries, O = tasks::regression_output_dim(task);
    std::vector<double> A(d * d, 0.0), rhs(d * O, 0.0);
    for (std::size_t i = 0; i < N; ++i)
        for (std::size_t r = 0; r < d; ++r) {
            const double xr = data.x(b, i, r);
            for (std::size_t c = 0; c < d; ++c) A[r * d + c] += xr * static_cast<double>(data.x(b, i, c));
            for (std::size_t o = 0; o < O; ++o) rhs[r * O + o] += xr * static_cast<double>(data.y(b, i, o));
        }
    double trace = 0.0;
    for (std::size_t r = 0; r < d; ++r) trace += A[r * d + r];
    for (std::size_t r = 0; r < d; ++r) A[r * d + r] += 1e-10 * std::max(trace, 1.0) / d;
    // Cholesky A = L Lᵀ, then two triangular solves per output column.
    for (std::size_t j = 0; j < d; ++j) {
        double diag = A[j * d + j];
        for (std::size_t k = 0; k < j; ++k) diag -= A[j * d + k] * A[j * d + k];
        A[j * d + j] = std::sqrt(std::max(diag, 1e-300));
        for (std::size_t i = j + 1; i < d; ++i) {
            double s = A[i * d + j];
            for (std::size_t k = 0; k < j; ++k) s -= A[i * d + k] * A[j * d + k];
            A[i * d + j] = s / A[j * d + j];
        }
    }
    std::vector<double> w(d * O);
    for (std::size_t o = 0; o < O; ++o) {
        std::vector<double> z(d);
        for (std::size_t i = 0; i < d; ++i) {
            double s = rhs[i * O + o];
            for (std::size_t k = 0; k < i; ++k) s -= A[i * d + k] * z[k];
            z[i] = s / A[i * d + i];
        }
        for (std::size_t i = d; i-- > 0;) {
            double s = z[i];
            for (std::size_t k = i + 1; k < d; ++k) s -= A[k * d + i] * w[k * O + o];
            w[i * O + o] = s / A[i * d + i];
        }
    }
    double error = 0.0;
    for (std::size_t q = N; q < N + Q; ++q)
        for (std::size_t o = 0; o < O; ++o) {
            double prediction = 0.0;
            for (std::size_t r = 0; r < d; ++r) prediction += static_cast<double>(data.x(b, q, r)) * w[r * O + o];
            const double e = prediction - static_cast<double>(data.y(b, q, o));
            error += e * e;
        }
    return error;
}

template <class T>
RegressionTraining train_regression_typed(const config::Config& cfg, const RunOptions& options, RunFolder& run) {
    const tasks::RegressionSpec task = regression_spec_from_config(cfg);
    const std::size_t TT = tasks::regression_seq_len(task), d_in = tasks::regression_token_dim(task);
    const std::size_t prefix = tasks::regression_prefix_length(task);
    const model::ModelSpec spec = regression_model_spec(cfg);
    const TrainerSettings settings = trainer_settings_from_config(cfg);
    const std::size_t batch_size = cfg.get_int("train.batch_size");
    const RegressionLossSettings loss_settings = regression_loss_settings(cfg);
    const std::uint64_t pool_size = static_cast<std::uint64_t>(cfg.get_int("task.pool_sequences"));
    const std::string permute = cfg.get_string("train.permute_examples");
    std::vector<std::size_t> order(task.examples);
    Rng init_rng = regression_stream(cfg, RegressionStream::init), data_rng = regression_stream(cfg, RegressionStream::train_data);
    Rng eval_rng = regression_stream(cfg, RegressionStream::eval_data);
    const Rng pool = regression_stream(cfg, RegressionStream::pool);
    model::Transformer<T> model(spec);
    model.init(init_rng);  // a resumed run replaces the parameters with the checkpoint's
    model.set_prefix_length(prefix);
    tasks::RegressionBatch<T> eval_data, batch;
    tasks::sample_regression_batch(eval_data, cfg.get_int("eval.sequences"), task, eval_rng);
    run.log() << "model: " << model.parameter_count() << " parameters, " << spec.layers << " layers, width " << spec.width
              << ", tokens of " << d_in << ", T = " << TT << ", prefix " << prefix << "\n";

    RegressionLossWeights<T> weights;
    RegressionLossScratch<T> scratch;
    std::optional<RegressionEvaluation> last;
    TrainingTask training;
    training.train_step = [&](Rng& rng) {
        if (pool_size > 0)  // paper 003 B0: batch_size distinct sequences of the fixed pool, uniformly, each step
            tasks::sample_regression_pool_batch(batch, tasks::draw_distinct_indices(batch_size, pool_size, rng), task, pool);
        else
            tasks::sample_regression_batch(batch, batch_size, task, rng);
        if (permute != "none") {  // paper 003 E.5 / Table 7: [C] draws one order per step for the whole batch
            for (std::size_t b = 0; b < batch_size; ++b) {
                if (b == 0 || permute == "per_sequence") {
                    std::iota(order.begin(), order.end(), std::size_t(0));
                    shuffle_with(order, rng);
                }
                tasks::permute_regression_examples(batch, b, order, task);
            }
        }
        regression_loss_weights(weights, batch, loss_settings);
        return regression_forward_backward(model, batch, weights, loss_settings.l2, scratch);
    };
    training.evaluate = [&]() {
        last = evaluate_regression(model, eval_data, task, batch_size);
        Metrics metrics{{"query_mse", last->query_mse},
                        {"zero_predictor_mse", last->zero_mse},
                        {"relative_query_mse", last->query_mse / last->zero_mse},
                        {"context_mse", last->context_mse},
                        {"context_output_sq", last->context_output_norm}};
        if (task.kind == tasks::RegressionKind::linear) metrics.push_back({"least_squares_mse", last->least_squares_mse});
        if (task.kind == tasks::RegressionKind::classification) metrics.push_back({"query_accuracy", last->query_accuracy});
        return metrics;
    };
    training.tokens_per_step = batch_size * TT;
    training.progress_metric = "relative_query_mse";

    RegressionTraining result;
    result.spec = spec;
    result.task = task;
    result.steps_total = settings.steps;
    Trainer<T> trainer(settings, model.layout(), model.params, model.grads, training, run, options);
    if (!trainer.train(data_rng)) {
        result.steps_done = trainer.steps_done();
        return result;
    }
    if (!last) last = evaluate_regression(model, eval_data, task, batch_size);

    io::ResultsWriter& w = run.results();
    trainer.write_tables(w);
    std::vector<std::string> names{"model", "zero predictor"};
    std::vector<double> mse{last->query_mse, last->zero_mse};
    if (task.kind == tasks::RegressionKind::linear) {
        names.push_back("least squares on the context");
        mse.push_back(last->least_squares_mse);
    }
    std::vector<double> relative;
    for (double m : mse) relative.push_back(m / last->zero_mse);
    w.write_columns("/tables/final_eval", {{"predictor", names}, {"query_mse", mse}, {"relative_to_zero_predictor", relative}});
    w.set_attr("final_query_mse", last->query_mse);
    w.set_attr("final_zero_predictor_mse", last->zero_mse);
    w.set_attr("final_relative_query_mse", last->query_mse / last->zero_mse);
    if (task.kind == tasks::RegressionKind::linear) w.set_attr("final_least_squares_mse", last->least_squares_mse);
    if (task.kind == tasks::RegressionKind::classification) w.set_attr("final_query_accuracy", last->query_accuracy);
    w.set_attr("parameter_count", static_cast<std::int64_t>(model.parameter_count()));
    w.set_attr("wall_time_s", trainer.elapsed_seconds());
    if (cfg.get_bool("output.checkpoint")) write_checkpoint(w, model);

    result.completed = true;
    result.steps_done = settings.steps;
    result.parameters.assign(model.params.begin(), model.params.end());
    result.final_eval = *last;
    result.wall_time_s = trainer.elapsed_seconds();
    result.step_losses = trainer.step_losses();
    result.warmup_steps = settings.schedule.warmup_steps;
    return result;
}

}  // namespace

// Loss weights per position (B·T): the mean squared error over the query positions (and over the context
// prediction positions with task.loss_positions: all), times the batch size with train.loss_reduction: sum, plus — as a second target set — λ · mean |ŷ|² over
// the context prediction positions (paper 003 E.2's optional L2 regularizer on in-context outputs).
// all_positions (paper 003 E.2 as [C]'s even_loss codes it): one mean over every query and in-context position,
// the in-context ones with target 0 and weight λ: (Σ_q |ŷ − y|² + λ Σ_ctx |ŷ|²) / (#queries + #contexts).
template <class T>
void regression_loss_weights(RegressionLossWeights<T>& out, const tasks::RegressionBatch<T>& batch, bool context_in_loss, double l2,
                  double scale, bool all_positions) {
    const std::size_t n = batch.positions.size();
    out.fit.assign(n, T(0));
    out.l2.assign(n, T(0));
    std::size_t fitted = 0, contexts = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const auto kind = static_cast<Position>(batch.positions.data()[i]);
        fitted += kind == Position::query || (context_in_loss && kind == Position::context);
        contexts += kind == Position::context;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto kind = static_cast<Position>(batch.positions.data()[i]);
        if (kind == Position::query || (context_in_loss && kind == Position::context)) out.fit[i] = static_cast<T>(scale / fitted);
        if (kind == Position::context && l2 > 0.0 && contexts > 0) out.l2[i] = static_cast<T>(scale * l2 / contexts);
        if (all_positions && l2 > 0.0) {  // without the penalty [C] keeps the plain query mean
            const double total = static_cast<double>(std::max<std::size_t>(fitted + (context_in_loss ? 0 : contexts), 1));
            if (out.fit[i] != T(0)) out.fit[i] = static_cast<T>(scale / total);
            if (out.l2[i] != T(0)) out.l2[i] = static_cast<T>(scale * l2 / total);
        }
    }
}

template <class T>
double regression_forward_backward(model::Transformer<T>& model, const tasks::RegressionBatch<T>& batch,
                                   const RegressionLossWeights<T>& weights, double l2, RegressionLossScratch<T>& scratch) {
    const std::size_t B = batch.inputs.shape()[0], TT = batch.inputs.shape()[1], O = batch.targets.shape()[2], N = B * TT;
    ICLAB_CHECK(weights.fit.size() == N && weights.l2.size() == N, "regression: loss weights for " << weights.fit.size()
                                                                       << " positions, the batch has " << N);
    {
        const profile::Scope scope(profile::Kind::allocation);
        scratch.losses.resize(N);
        scratch.zeros.assign(N * O, T(0));
        scratch.d_outputs.assign(N * O, T(0));
    }
    model.forward(batch.inputs.data(), B, TT);
    const T* out = model.outputs();  // (B·T, O)
    double loss = nn::squared_error_forward(scratch.losses.data(), out, batch.targets.data(), weights.fit.data(), N, O);
    if (l2 > 0.0) loss += nn::squared_error_forward(scratch.losses.data(), out, scratch.zeros.data(), weights.l2.data(), N, O);
    nn::squared_error_backward(scratch.d_outputs.data(), out, batch.targets.data(), weights.fit.data(), N, O);
    if (l2 > 0.0) nn::squared_error_backward(scratch.d_outputs.data(), out, scratch.zeros.data(), weights.l2.data(), N, O);
    model.zero_grad();
    model.backward_outputs(scratch.d_outputs.data());
    return loss;
}

template double regression_forward_backward<float>(model::Transformer<float>&, const tasks::RegressionBatch<float>&,
                                                   const RegressionLossWeights<float>&, double, RegressionLossScratch<float>&);
template double regression_forward_backward<double>(model::Transformer<double>&, const tasks::RegressionBatch<double>&,
                                                    const RegressionLossWeights<double>&, double, RegressionLossScratch<double>&);

template void regression_loss_weights<float>(RegressionLossWeights<float>&, const tasks::RegressionBatch<float>&, bool, double,
                                            double, bool);
template void regression_loss_weights<double>(RegressionLossWeights<double>&, const tasks::RegressionBatch<double>&, bool,
                                             double, double, bool);

RegressionLossSettings regression_loss_settings(const config::Config& cfg) {
    RegressionLossSettings settings;
    settings.context_in_loss = cfg.get_string("task.loss_positions") == "all";
    settings.l2 = cfg.get_float("train.context_output_l2");
    settings.scale = cfg.get_string("train.loss_reduction") == "sum" ? static_cast<double>(cfg.get_int("train.batch_size")) : 1.0;
    settings.all_positions = cfg.get_string("train.context_output_l2_form") == "all_positions";
    return settings;
}

Rng regression_stream(const config::Config& cfg, RegressionStream which) {
    return Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(static_cast<std::uint64_t>(which));
}

template <class T>
RegressionEvaluation evaluate_regression(model::Transformer<T>& model, const tasks::RegressionBatch<T>& data,
                                         const tasks::RegressionSpec& task, std::size_t chunk_size) {
    RegressionEvaluation result;
    const std::size_t B = data.inputs.shape()[0], TT = data.inputs.shape()[1], d_in = data.inputs.shape()[2];
    const std::size_t O = tasks::regression_output_dim(task);
    model.set_prefix_length(tasks::regression_prefix_length(task));
    std::size_t queries = 0, contexts = 0, correct = 0;
    bool undefined = false;  // a query row with a NaN output: no prediction, the accuracy NaN (never a class-0 guess)
    double least_squares = 0.0;
    for (std::size_t first = 0; first < B; first += chunk_size) {
        const std::size_t rows = std::min(chunk_size, B - first);
        model.forward(data.inputs.data() + first * TT * d_in, rows, TT);
        const T* out = model.outputs();
        for (std::size_t n = 0; n < rows * TT; ++n) {
            const auto kind = static_cast<Position>(data.positions.data()[first * TT + n]);
            if (kind == Position::none) continue;
            const T* y = data.targets.data() + (first * TT + n) * O;
            double error = 0.0, norm = 0.0, target_norm = 0.0;
            std::size_t predicted = 0, label = 0;
            bool nan_output = false;
            for (std::size_t o = 0; o < O; ++o) {
                nan_output = nan_output || std::isnan(out[n * O + o]);
                const double e = static_cast<double>(out[n * O + o]) - static_cast<double>(y[o]);
                error += e * e;
                norm += static_cast<double>(out[n * O + o]) * out[n * O + o];
                target_norm += static_cast<double>(y[o]) * y[o];
                if (out[n * O + o] > out[n * O + predicted]) predicted = o;
                if (y[o] > y[label]) label = o;
            }
            if (kind == Position::query) {
                ++queries;
                result.query_mse += error;
                result.zero_mse += target_norm;
                correct += predicted == label;
                undefined = undefined || nan_output;
            } else {
                ++contexts;
                result.context_mse += error;
                result.context_output_norm += norm;
            }
        }
    }
    if (task.kind == tasks::RegressionKind::linear)
        for (std::size_t b = 0; b < B; ++b) least_squares += least_squares_error(data, b, task);
    result.query_mse /= std::max<std::size_t>(queries, 1);
    result.zero_mse /= std::max<std::size_t>(queries, 1);
    result.context_mse = contexts ? result.context_mse / contexts : 0.0;
    result.context_output_norm = contexts ? result.context_output_norm / contexts : 0.0;
    result.least_squares_mse = task.kind == tasks::RegressionKind::linear ? least_squares / std::max<std::size_t>(queries, 1) : kNaN;
    result.query_accuracy = task.kind == tasks::RegressionKind::classification && !undefined
                                ? static_cast<double>(correct) / std::max<std::size_t>(queries, 1)
                                : kNaN;
    return result;
}

void add_regression_task_keys(config::Schema& schema) {
    schema.add_string("task.kind", "linear", {"linear", "sigmoid", "classification"},
                      "y = W x (papers 003, 004), sigmoid(W x) (paper 003 N-LR), or one-hot argmax of 3 class "
                      "scores (paper 003 MC); a fresh W per sequence")
        .add_string("task.format", "stacked", {"stacked", "interleaved"},
                    "one token [x; y] per example with the query's y = 0 (papers 003, 004), or x and y tokens "
                    "interleaved (Garg et al.)")
        .add_string("task.x_distribution", "uniform", {"uniform", "normal"}, "x ~ U(-1, 1)^d (papers 003, 004) or N(0, I) (Garg et al.)")
        .add_int("task.x_dim", 11, 1, 4096, "d_x (paper 004: 11)")
        .add_int("task.y_dim", 1, 1, 4096, "d_y of linear and sigmoid tasks (paper 004: 1)")
        .add_int("task.examples", 15, 1, 1 << 16, "N in-context examples per sequence (paper 004: N + 1 = 16 tokens)")
        .add_int("task.queries", 1, 1, 1 << 16, "queries per sequence after the examples (paper 003 E.1: 200, with "
                                                  "model.isolate_queries)")
        .add_int("task.classes", 3, 2, 4096, "classes of the classification task")
        .add_float("task.noise_std", 0.0, 0.0, 1e6, "std of Gaussian noise on y (linear, sigmoid)")
        .add_bool("task.sigmoid_shift", false, "sigmoid task: y = sigmoid(W x) - 0.5")
        .add_string("task.w_mode", "per_sequence", {"per_sequence", "fixed"},
                    "per_sequence: a fresh task W per sequence; fixed: one W ~ N(0, 1) drawn once from the seed and used "
                    "for every training and eval sequence (paper 004 A.3's single task)")
        .add_int("task.pool_sequences", 0, 0, std::int64_t(1) << 40,
                 "0: fresh sequences every step; N > 0: a fixed training pool of N sequences, each step takes "
                 "train.batch_size distinct ones uniformly (paper 003 §5.2, B0: 64,000)")
        .add_string("task.loss_positions", "query", {"query", "all"},
                    "squared error at the query positions only, or also at the in-context prediction positions "
                    "(meaningful for the interleaved format)");
    schema.add_string("model.read_in", "linear", {"linear", "identity"},
                      "tokens enter the model through x W + b, or as they are (needs model.width = token width "
                      "d_x + d_y; papers 003 and 004)")
        .add_string("model.read_out", "linear", {"linear", "slice"},
                    "prediction = LN(x) W + b, or the last d_y channels of the output (the y-part of the token, "
                    "papers 003 and 004)");
    schema.add_float("train.context_output_l2", 0.0, 0.0, 1e6,
                     "weight of an L2 penalty on the outputs at in-context positions (paper 003 E.2; 0: off)")
        .add_string("train.context_output_l2_form", "context_mean", {"context_mean", "all_positions"},
                    "context_mean: query MSE + lambda * mean over in-context positions of |y_hat|^2; all_positions: one "
                    "mean over all query and in-context positions, in-context targets 0 with weight lambda (paper 003 "
                    "E.2 as the authors' code: lambda 1)")
        .add_string("train.permute_examples", "none", {"none", "per_step", "per_sequence"},
                    "shuffle the in-context examples of every training sequence (queries stay; evaluation is never "
                    "permuted): one order per step shared by the batch, as the authors' code of paper 003 E.5 / Table 7, "
                    "or one order per sequence")
        .add_string("train.loss_reduction", "mean", {"mean", "sum"},
                    "the training loss is the mean over the batch's sequences of each sequence's mean squared error, "
                    "or their sum (then the SGD step size scales with train.batch_size)");
    schema.add_rule([](const config::Config& cfg) {
        if (cfg.get_bool("model.tie_embeddings"))
            cfg.fail({"model.tie_embeddings"}, "tied embeddings need a token model; in-context regression reads vectors (no embedding table)");
    });
    schema.add_rule([](const config::Config& cfg) {
        if (cfg.get_string("model.read_in") != "identity") return;
        const auto outputs = cfg.get_string("task.kind") == "classification" ? cfg.get_int("task.classes") : cfg.get_int("task.y_dim");
        const auto token = cfg.get_int("task.x_dim") + outputs;
        if (cfg.get_int("model.width") != token)
            cfg.fail({"model.width", "model.read_in"}, "identity read-in needs model.width = token width d_x + d_y = " +
                                                           std::to_string(token) + ", got " + std::to_string(cfg.get_int("model.width")));
    });
    schema.add_rule([](const config::Config& cfg) {
        const auto pool = cfg.get_int("task.pool_sequences");
        if (pool > 0 && cfg.get_string("task.w_mode") == "fixed")
            cfg.fail({"task.pool_sequences", "task.w_mode"}, "a training pool (paper 003) and one fixed task (paper 004 A.3) "
                                                             "are not combined: they share the seed's stream 4");
        if (pool > 0 && pool < cfg.get_int("train.batch_size"))
            cfg.fail({"task.pool_sequences", "train.batch_size"}, "a training pool needs at least train.batch_size = " +
                                                                      std::to_string(cfg.get_int("train.batch_size")) + " sequences");
    });
    schema.add_rule([](const config::Config& cfg) {
        if (cfg.get_string("task.kind") == "classification" && cfg.get_float("task.noise_std") > 0.0)
            cfg.fail({"task.noise_std", "task.kind"}, "the classification task takes no noise on its one-hot labels");
        if (cfg.get_string("task.kind") != "sigmoid" && cfg.get_bool("task.sigmoid_shift"))
            cfg.fail({"task.sigmoid_shift", "task.kind"}, "task.sigmoid_shift applies to the sigmoid task only");
    });
}

tasks::RegressionSpec regression_spec_from_config(const config::Config& cfg) {
    tasks::RegressionSpec spec;
    spec.kind = tasks::parse_regression_kind(cfg.get_string("task.kind"));
    spec.format = tasks::parse_token_format(cfg.get_string("task.format"));
    spec.x_distribution = tasks::parse_input_distribution(cfg.get_string("task.x_distribution"));
    spec.x_dim = cfg.get_int("task.x_dim");
    spec.y_dim = cfg.get_int("task.y_dim");
    spec.examples = cfg.get_int("task.examples");
    spec.queries = cfg.get_int("task.queries");
    spec.classes = cfg.get_int("task.classes");
    spec.noise_std = cfg.get_float("task.noise_std");
    spec.sigmoid_shift = cfg.get_bool("task.sigmoid_shift");
    if (cfg.get_string("task.w_mode") == "fixed") {  // one W per run: its own stream of the seed
        Rng task_rng = regression_stream(cfg, RegressionStream::fixed_task);
        spec.fixed_weights.resize(tasks::regression_output_dim(spec) * spec.x_dim);
        for (double& w : spec.fixed_weights) w = task_rng.normal();
    }
    tasks::validate_regression_spec(spec);
    return spec;
}

model::ModelSpec regression_model_spec(const config::Config& cfg) {
    const tasks::RegressionSpec task = regression_spec_from_config(cfg);
    model::ModelSpec spec = model_spec_from_config(cfg, 0, tasks::regression_seq_len(task));
    spec.input = model::ModelSpec::Input::vectors;
    spec.input_dim = tasks::regression_token_dim(task);
    spec.output_dim = tasks::regression_output_dim(task);
    spec.read_in = cfg.get_string("model.read_in") == "identity" ? model::ModelSpec::ReadIn::identity : model::ModelSpec::ReadIn::linear;
    spec.read_out = cfg.get_string("model.read_out") == "slice" ? model::ModelSpec::ReadOut::slice : model::ModelSpec::ReadOut::linear;
    return spec;
}

RegressionTraining train_regression_model(const config::Config& cfg, const RunOptions& options, RunFolder& run) {
    return with_model_dtype(cfg, [&](auto zero) { return train_regression_typed<decltype(zero)>(cfg, options, run); });
}

void print_regression_evaluation(const RegressionTraining& training, const config::Config& cfg) {
    const RegressionEvaluation& e = training.final_eval;
    const tasks::RegressionSpec& task = training.task;
    std::printf("\nquery error on %lld held-out sequences (step %zu), %s task, %zu in-context examples:\n",
                static_cast<long long>(cfg.get_int("eval.sequences")), training.steps_total, tasks::regression_kind_name(task.kind),
                task.examples);
    std::printf("  %-30s %12s %14s\n", "predictor", "query MSE", "/ zero pred.");
    std::printf("  %-30s %12.5f %14.5f\n", "model", e.query_mse, e.query_mse / e.zero_mse);
    std::printf("  %-30s %12.5f %14.5f\n", "zero predictor", e.zero_mse, 1.0);
    if (task.kind == tasks::RegressionKind::linear)
        std::printf("  %-30s %12.5f %14.5f\n", "least squares on the context", e.least_squares_mse, e.least_squares_mse / e.zero_mse);
    if (task.kind == tasks::RegressionKind::classification)
        std::printf("  query accuracy %.4f (chance %.4f)\n", e.query_accuracy, 1.0 / task.classes);
    std::printf("wall time %.1f s, %zu parameters\n", training.wall_time_s, training.parameters.size());
}

template RegressionEvaluation evaluate_regression<float>(model::Transformer<float>&, const tasks::RegressionBatch<float>&,
                                                         const tasks::RegressionSpec&, std::size_t);
template RegressionEvaluation evaluate_regression<double>(model::Transformer<double>&, const tasks::RegressionBatch<double>&,
                                                          const tasks::RegressionSpec&, std::size_t);

}  // namespace iclab::run
