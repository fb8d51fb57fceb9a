#pragma once
// What a training run will hold in memory, estimated from its config before anything is allocated, so that a
// config that cannot fit is refused at validation (exit 2) instead of dying in std::bad_alloc after the run folder
// was made (issue 15: width 4096 x 64 layers, or seq_len and batch of 2^20).
#include <string>

#include "framework/config/config.hpp"

namespace iclab::run {

struct MemoryEstimate {
    double parameters = 0;    // values
    double state_gib = 0;     // parameters, gradients and two optimizer moments
    double activations_gib = 0;  // saved for the backward pass at train.batch_size
    double total_gib() const { return state_gib + activations_gib; }
};

// For configs with the model and train key groups; the sequence length is task.seq_len (token tasks) or
// task.examples + task.queries (vector tasks). An estimate within ~2x: it counts the large tensors only.
MemoryEstimate estimate_training_memory(const config::Config& cfg);

// The validation rule: fails naming the estimate and the machine's available memory when the estimate exceeds it.
void check_training_memory(const config::Config& cfg);

}  // namespace iclab::run
