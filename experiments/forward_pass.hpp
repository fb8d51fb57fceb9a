#pragma once
// Experiment `forward_pass`: the forward-only (inference-mode) path at scale. Builds a randomly initialized
// model of the configured size without gradient or activation caches, runs forward passes over random
// tokens and records throughput and peak resident memory (issue 3 item 7: a 1.98B-parameter fp32 model
// within this machine's 24 GB; paper 000 Table 1's largest size).
#include <filesystem>

#include "experiments/common.hpp"

namespace iclab::experiments {

config::Schema forward_pass_schema();
RunOutcome run_forward_pass(const config::Config& cfg, const RunOptions& options);

}  // namespace iclab::experiments
