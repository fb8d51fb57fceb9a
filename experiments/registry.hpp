#pragma once
// The experiments `iclab run` knows (one line each in registry.cpp).
#include "framework/run/experiment.hpp"

namespace iclab::experiments {

const run::Catalog& catalog();

}  // namespace iclab::experiments
