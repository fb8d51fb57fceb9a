#pragma once
// Service: "train the in-context regression model this config describes" (papers 003, 004): the regression
// experiment is this plus commit; experiments comparing trained models (prefix vs causal LM, GD duals) ask for it
// instead of calling another experiment. Also the task's config keys and the evaluation against the zero and
// least-squares predictors.
#include <cstddef>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/model/transformer.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab::run {

// Random streams of `seed` (root.derive(id)): model initialization, training batches (fresh sequences, or which
// pool sequences a step takes), the evaluation set, the fixed training pool (task.pool_sequences > 0; sequence i
// is pool.derive(i)), and extra evaluation sets an experiment draws (derive further from it).
// Sub-streams of the run's seed. Stream 4 is the training pool (paper 003) or, with task.w_mode fixed, the one task W
// (paper 004 A.3); validation refuses the two together, so each run's measured numbers keep their stream.
enum class RegressionStream : std::uint64_t { init = 1, train_data = 2, eval_data = 3, pool = 4, fixed_task = 4, extra_eval = 5 };
Rng regression_stream(const config::Config& cfg, RegressionStream which);

// Key group regression_task: task.* (kind, format, x distribution, sizes, noise, loss positions),
// model.read_in, model.read_out, train.context_output_l2, train.loss_reduction, and their rules.
void add_regression_task_keys(config::Schema& schema);
tasks::RegressionSpec regression_spec_from_config(const config::Config& cfg);
// model.* with the task's token and output widths and the read-in / read-out.
model::ModelSpec regression_model_spec(const config::Config& cfg);

// Per-position loss weights of a batch (B·T): `fit` weighs |ŷ − y|² (the mean over queries, and over in-context
// positions when context_in_loss), `l2` weighs |ŷ|² at in-context positions (λ = l2; paper 003 E.2). scale
// multiplies both (train.loss_reduction: sum). context_mean: fit mean + λ · mean over in-context positions;
// all_positions ([C]'s even_loss, with λ > 0): (Σ_q |ŷ − y|² + λ Σ_ctx |ŷ|²) / (#queries + #in-context positions).
template <class T>
struct RegressionLossWeights {
    std::vector<T> fit, l2;  // (B·T)
};
template <class T>
void regression_loss_weights(RegressionLossWeights<T>& out, const tasks::RegressionBatch<T>& batch, bool context_in_loss,
                             double l2, double scale, bool all_positions);
// The config's choices for regression_loss_weights: task.loss_positions (context_in_loss), train.context_output_l2
// (l2), train.loss_reduction (scale: 1, or train.batch_size for sum), train.context_output_l2_form (all_positions).
struct RegressionLossSettings {
    bool context_in_loss = false;
    double l2 = 0.0, scale = 1.0;
    bool all_positions = false;
};
RegressionLossSettings regression_loss_settings(const config::Config& cfg);
template <class T>
void regression_loss_weights(RegressionLossWeights<T>& out, const tasks::RegressionBatch<T>& batch,
                             const RegressionLossSettings& settings) {
    regression_loss_weights(out, batch, settings.context_in_loss, settings.l2, settings.scale, settings.all_positions);
}

// One forward, loss and backward of the regression model on a batch: the trainer's step before clipping and the
// optimizer (also `iclab bench`'s). loss = Σ_n fit_n |ŷ_n − y_n|² + Σ_n l2_n |ŷ_n|² (sums over output channels;
// weights from regression_loss_weights, the l2 term only when l2 > 0); the gradients are zeroed and then hold
// d loss / d params. The model's prefix length must be set (tasks::regression_prefix_length).
template <class T>
struct RegressionLossScratch {
    std::vector<T> losses, zeros, d_outputs;  // (B·T), (B·T·O), (B·T·O)
};
template <class T>
double regression_forward_backward(model::Transformer<T>& model, const tasks::RegressionBatch<T>& batch,
                                   const RegressionLossWeights<T>& weights, double l2, RegressionLossScratch<T>& scratch);

// Errors of a model on a fixed set of sequences.
struct RegressionEvaluation {
    double query_mse = 0.0;           // mean over queries of |ŷ − y|² (sum over output channels)
    double zero_mse = 0.0;            // the same for the predictor ŷ = 0
    double least_squares_mse = 0.0;   // linear tasks: ŵ = argmin Σ_context |W x − y|² (min-norm), else NaN
    double context_mse = 0.0;         // mean over context prediction positions of |ŷ − y|²
    double context_output_norm = 0.0; // mean over context prediction positions of |ŷ|² (what the L2 term penalizes)
    double query_accuracy = 0.0;      // classification: argmax ŷ = the label's class, else NaN
};

template <class T>
RegressionEvaluation evaluate_regression(model::Transformer<T>& model, const tasks::RegressionBatch<T>& data,
                                         const tasks::RegressionSpec& task, std::size_t chunk_size);

// What train_regression_model leaves: the trained parameters and their final evaluation.
struct RegressionTraining {
    bool completed = false;  // false: stopped by RunOptions::stop_after (checkpoint written, results untouched)
    std::size_t steps_done = 0, steps_total = 0;
    model::ModelSpec spec;
    tasks::RegressionSpec task;
    std::vector<double> parameters;  // in spec's layout; float32 parameters convert exactly
    RegressionEvaluation final_eval;
    double wall_time_s = 0.0;
    std::vector<double> step_losses;  // training loss of each step (index t: step t + 1), as /steps
    std::size_t warmup_steps = 0;     // the lr schedule's warmup
};

// Trains the model the config describes in `run` (checkpoints, --resume, --stop-after through the Trainer) and
// writes /curves, /steps, /tables/final_eval, the summary attributes and (output.checkpoint) /checkpoint into
// run.results() — all but run.commit().
RegressionTraining train_regression_model(const config::Config& cfg, const RunOptions& options, RunFolder& run);
// The query-error table on stdout.
void print_regression_evaluation(const RegressionTraining& training, const config::Config& cfg);

}  // namespace iclab::run
