#pragma once
// Experiment `iclaa`, internal: its config keys and rules, and its memory and work estimate.
#include "framework/config/config.hpp"
#include "framework/run/memory_estimate.hpp"

namespace iclab::experiments::iclaa_detail {

void declare_keys(config::Schema& schema);
run::RunEstimate estimate(const config::Config& cfg);

}  // namespace iclab::experiments::iclaa_detail
