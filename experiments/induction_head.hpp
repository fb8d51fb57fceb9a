#pragma once
// Experiment `induction_head`: train a linearized-attention transformer on the bigram induction-head
// task of paper 000 §6.2 and log curves, a final evaluation table and the trained parameters.
#include <filesystem>

#include "experiments/common.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::experiments {

config::Schema induction_head_schema();
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
};

template <class T>
InductionEvaluation evaluate_induction(model::Transformer<T>& model, const tasks::TokenBatch& data,
                                       std::size_t chunk_size);

}  // namespace iclab::experiments
