#pragma once
// Experiment `iclca_serving` (paper 000 §7, issue 4 item 7): with an ICLCA adapter the model answers an
// N-token input at the cost of N tokens instead of M + N. For each prompt length M and input length N it
// times, in one run and on the same model, the logits of X with the prompt prepended ([X'; X] through the
// original model) against X alone through the converted model, and reports the measured speedup beside the
// token ratio (M + N) / N. The one-time conversion cost (a forward pass over X') is reported separately.
#include "experiments/common.hpp"

namespace iclab::experiments {

config::Schema iclca_serving_schema();
RunOutcome run_iclca_serving(const config::Config& cfg, const RunOptions& options);

}  // namespace iclab::experiments
