#pragma once
// Service: "train the induction-head model this config describes" (paper 000 §6.2). Experiments that need a
// trained induction-head model (induction_head, iclca_induction, bias_training's sub-runs, ...) ask for it here
// instead of calling another experiment. Also the task's config keys and the per-position-kind evaluation.
#include <cstddef>
#include <limits>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/model/transformer.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::run {

// Key group induction_task: task.seq_len, task.triggers, task.successors, task.loss_positions.
void add_induction_task_keys(config::Schema& schema);
// Rules of the induction-head task with the model keys: refuses model settings under which the model cannot do
// the task or the task is not what it seems (prefix and full masks, isolated queries).
void add_induction_model_rules(config::Schema& schema);
tasks::InductionHeadSpec induction_spec_from_config(const config::Config& cfg);

// Evaluation of a model on a fixed set of sequences, per position kind (non_trigger, first_trigger, icl).
struct KindMetrics {
    std::size_t positions = 0;
    double loss_sum = 0.0;
    std::size_t correct = 0;
    bool undefined = false;  // a position with a NaN logit: no prediction, so no accuracy (NaN, never a token-0 guess)
    double loss() const { return positions ? loss_sum / positions : 0.0; }
    double accuracy() const {
        return undefined ? std::numeric_limits<double>::quiet_NaN() : positions ? static_cast<double>(correct) / positions : 0.0;
    }
};
struct InductionEvaluation {
    KindMetrics kinds[3];  // indexed by tasks::PositionKind
    KindMetrics all;
    // Smallest kernel normalizer over layers, heads, positions and sequences (NaN: none; see
    // Transformer::min_attention_denominator). Values near 0 or below mean unstable attention outputs.
    double min_attention_denominator = std::numeric_limits<double>::quiet_NaN();
};

template <class T>
InductionEvaluation evaluate_induction(model::Transformer<T>& model, const tasks::TokenBatch& data, std::size_t chunk_size);

// What train_induction_model leaves: the trained parameters and their final evaluation.
struct InductionTraining {
    bool completed = false;  // false: stopped by RunOptions::stop_after (checkpoint written, results untouched)
    std::size_t steps_done = 0, steps_total = 0;
    model::ModelSpec spec;
    std::vector<double> parameters;  // in spec's layout; float32 parameters convert exactly
    InductionEvaluation final_eval;
    double wall_time_s = 0.0;
};

// Trains the model the config describes (task.*, model.*, train.*, eval.*, seed) in `run`, with the Trainer's
// checkpoints and resume, and writes /curves, /steps, /tables/final_eval, the summary attributes and
// (output.checkpoint) /checkpoint into run.results() — all but run.commit(). Random streams of `seed`:
// 1 initialization, 2 training data, 3 evaluation set.
InductionTraining train_induction_model(const config::Config& cfg, const RunOptions& options, RunFolder& run);
// The "final evaluation" table on stdout.
void print_final_evaluation(const InductionTraining& training, const config::Config& cfg);

}  // namespace iclab::run
