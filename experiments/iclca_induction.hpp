#pragma once
// Experiment `iclca_induction` (paper 000 §6.2, Table 2): on a trained induction-head model, the in-context
// accuracy of
//   M_old, ICL     the model on [X'; X], scored at X's positions,
//   M_old, no ICL  the model on X alone,
//   M_new, no ICL  the model with the biases ICLCA (Algorithm 1, framework/icl/iclca.hpp) made from X', on X alone,
// over many seeded (prompt X', input X) pairs (tasks::sample_prompt_pair: X' shows every trigger with its
// committed successor, X continues the chain). Scored positions are X's first occurrences of a trigger: their
// answer is known only from X'. All three run in double on the trained parameters (float32 values convert
// exactly), and the run reports the relative logit error between M_new(X) and M_old([X'; X]).
//
// The model is trained here with the induction_head keys (train_induction_model: same curves, checkpoints,
// --resume), or read from a finished run with source.run_dir (no training; its task.* and model.* apply).
#include "experiments/common.hpp"

namespace iclab::experiments {

config::Schema iclca_induction_schema();
RunOutcome run_iclca_induction(const config::Config& cfg, const RunOptions& options);

}  // namespace iclab::experiments
