#pragma once
// Experiment `induction_head`: train a linearized-attention transformer on the bigram induction-head
// task of paper 000 §6.2 and log curves, a final evaluation table and the trained parameters.
#include <filesystem>
#include <limits>

#include "experiments/common.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::experiments {

config::Schema induction_head_schema();
// The keys of the induction-head model and its training (task.*, model.*, train.*, eval.*, log.*), for
// experiments that train this model too (iclca_induction, bias_training).
void add_induction_training_keys(config::Schema& schema);
tasks::InductionHeadSpec induction_spec_from_config(const config::Config& cfg);
RunOutcome run_induction_head(const config::Config& cfg, const RunOptions& options);

// Evaluation of a model on a fixed set of sequences, per position kind (non_trigger, first_trigger, icl).
struct KindMetrics {
    std::size_t positions = 0;
    double loss_sum = 0.0;
    std::size_t correct = 0;
    double loss() const { return positions ? loss_sum / positions : 0.0; }
    double accuracy() const { return positions ? static_cast<double>(correct) / positions : 0.0; }
};
struct InductionEvaluation {
    KindMetrics kinds[3];  // indexed by tasks::PositionKind
    KindMetrics all;
    // Smallest kernel normalizer over layers, heads, positions and sequences (NaN: none; see
    // Transformer::min_attention_denominator). Values near 0 or below mean unstable attention outputs.
    double min_attention_denominator = std::numeric_limits<double>::quiet_NaN();
};

template <class T>
InductionEvaluation evaluate_induction(model::Transformer<T>& model, const tasks::TokenBatch& data,
                                       std::size_t chunk_size);

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
// (output.checkpoint) /checkpoint into run.results() — all but run.commit(). `induction_head` is this plus
// commit; other experiments (iclca_induction) train their model with it and add their own tables.
InductionTraining train_induction_model(const config::Config& cfg, const RunOptions& options, RunFolder& run);
// The "final evaluation" table on stdout.
void print_final_evaluation(const InductionTraining& training, const config::Config& cfg);

}  // namespace iclab::experiments
