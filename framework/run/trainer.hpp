#pragma once
// The training loop every experiment shares. It works on a flat parameter buffer and its gradients and
// knows nothing of the task: the experiment supplies a TrainingTask (one training step's forward and
// backward, an evaluation, the tokens per step). The Trainer owns the optimizer and its schedule,
// gradient-norm clipping, the NaN/Inf stop, progress output, the /curves and /steps tables,
// periodic checkpoints and resuming from them.
//
//   Trainer<float> trainer(trainer_settings_from_config(cfg), model.layout(), model.params, model.grads,
//                          task, run, options);
//   if (!trainer.train(data_rng)) return;          // stopped early (--stop-after): checkpoint written
//   trainer.write_tables(run.results());           // /curves, /steps
//
// Resuming (RunFolder::resumed()): train() first loads <run folder>/checkpoint.h5 (parameters,
// optimizer moments and step count, the data stream's state, the rows so far and the running sums of
// the current evaluation interval) and continues with the next step, so the resumed run's /steps,
// /curves (but the wall-time columns tokens_per_s and elapsed_s) and parameters are bit-identical to
// an uninterrupted run's. docs/checkpoint_format.md lists the file's contents.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/core/rng.hpp"
#include "framework/model/parameters.hpp"
#include "framework/train/optimizer.hpp"
#include "framework/train/progress.hpp"

namespace iclab::run {

// Named evaluation results in column order: each name becomes a /curves column.
using Metrics = std::vector<std::pair<std::string, double>>;

struct TrainerSettings {
    std::size_t steps = 1;                 // train.steps
    train::OptimizerSpec optimizer;        // train.optimizer, beta1, beta2, eps, weight_decay, momentum
    train::ScheduleSpec schedule;          // train.lr, schedule, warmup_steps, min_lr_ratio
    double grad_clip = 0.0;                // train.grad_clip (0: off)
    std::size_t eval_every = 100;          // eval.every: evaluate after every N steps and after the last
    std::size_t checkpoint_every = 500;    // train.checkpoint_every: checkpoint every N steps and at the end (0: at the end)
    std::size_t log_every = 50;            // log.every
    std::int64_t perturb_init_ulps = 0;    // train.perturb_init_ulps: train() first moves every trainable parameter
                                           // by this many ulps (framework/train/perturb.hpp); 0: off
    std::uint64_t seed = 0;                // seed: the root of the perturbation's directions
};
TrainerSettings trainer_settings_from_config(const config::Config& cfg);

// What the experiment supplies. Everything random in a training step must come from data_rng: it is
// the one stream the Trainer saves in checkpoints.
struct TrainingTask {
    // Samples a batch from data_rng, runs forward and loss, zero_grad and backward: afterwards the
    // gradient buffer holds the gradient of the returned loss.
    std::function<double(Rng& data_rng)> train_step;
    // Evaluates the current parameters (without changing them or data_rng).
    std::function<Metrics()> evaluate;
    std::size_t tokens_per_step = 0;  // for the tokens_per_s curve
    std::string progress_metric;      // metric shown on the progress line next to the loss ("": none)
};

template <class T>
class Trainer {
public:
    // params and grads are the model's flat buffers in `layout`; they must outlive the Trainer.
    Trainer(const TrainerSettings& settings, const model::ParameterLayout& layout, std::vector<T>& params,
            std::vector<T>& grads, TrainingTask task, RunFolder& run, const RunOptions& options);

    // Trains from step 0 drawing batches from data_rng or, in a resumed run folder, from its checkpoint
    // (which replaces the parameters, the optimizer state and data_rng's state). From step 0 with
    // settings.perturb_init_ulps > 0 it first perturbs the initialized parameters (train::perturb_parameters_by_ulps):
    // the one place every trained model of the framework passes through after its initialization. Returns true when step
    // settings.steps is reached, false when stopped by RunOptions::stop_after (after a checkpoint).
    // Throws iclab::Error (exit status 1) when the loss or the gradient norm is NaN or Inf, naming the
    // step and the quantity; the last checkpoint stays as it was.
    bool train(Rng data_rng);

    // /curves: step, train_loss, <each metric>, lr, grad_norm, tokens_per_s, elapsed_s (one row per
    // evaluation); /steps: step, loss, lr, grad_norm (one row per step).
    void write_tables(io::ResultsWriter& writer) const;

    std::size_t steps_done() const { return next_step_; }
    // The training loss of every step done (index t: step t + 1), as /steps's loss column (restored on resume).
    const std::vector<double>& step_losses() const { return step_loss_; }
    // Metrics of the last evaluation, or empty when there was none (in this process or before).
    const Metrics& last_metrics() const { return last_metrics_; }
    // Wall time of the run: this process plus the sessions before the checkpoint it resumed from.
    double elapsed_seconds() const;

private:
    void load_checkpoint();
    void write_checkpoint();
    void append_curve_row(std::size_t step, double lr, double elapsed);
    // RUN_DIR/curves.csv: the whole table (rewrite) or its last row appended.
    void write_live_curves(bool rewrite) const;
    [[noreturn]] void diverged(std::size_t step, const std::string& quantity, double value);

    TrainerSettings settings_;
    const model::ParameterLayout& layout_;
    std::vector<T>& params_;
    std::vector<T>& grads_;
    TrainingTask task_;
    RunFolder& run_;
    RunOptions options_;
    train::Optimizer<T> optimizer_;
    Rng data_rng_;
    std::unique_ptr<train::Progress> progress_;

    std::size_t next_step_ = 0;            // 0-based index of the next step = steps done
    std::size_t last_checkpoint_step_ = 0; // 0: none written or loaded
    double elapsed_before_ = 0.0;          // wall time of earlier sessions, up to their last checkpoint

    // Running sums of the current evaluation interval (reset at each evaluation).
    double interval_loss_ = 0.0, interval_grad_norm_ = 0.0, interval_train_seconds_ = 0.0;
    std::size_t interval_steps_ = 0;

    // /steps rows
    std::vector<std::int64_t> step_index_;
    std::vector<double> step_loss_, step_lr_, step_grad_norm_;
    // /curves rows: column names and one vector per column
    std::vector<std::string> curve_names_;
    std::vector<std::vector<double>> curve_columns_;
    Metrics last_metrics_;
};

extern template class Trainer<float>;
extern template class Trainer<double>;

}  // namespace iclab::run
