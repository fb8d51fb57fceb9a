#pragma once
// Paper 003 Figure 3 (E.2; spec B2, choice Q13): per-layer least-squares probes of a trained prefix_vs_causal model.
// For every depth l = 0..L the residual stream h_l at the query positions is read out by the least-squares map
// [h_l, 1] W_l ≈ y, fitted in fp64 on the query positions of the run's first pool sequences (a tiny ridge keeps it
// defined), then evaluated on the run's test set. Used by the `prefix_vs_causal_probes` experiment (a finished run)
// and by `prefix_vs_causal` itself with prefix_vs_causal.probes: true (the Figure 3 claims, experiments/
// prefix_vs_causal/claims.hpp): one function, so both give the same numbers.
#include <cstddef>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/model/transformer.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab::experiments::part_b {

constexpr std::size_t kProbeFitSequences = 1024;  // Q13: the query positions of 1,024 pool sequences
constexpr double kProbeRidge = 1e-8;              // relative to the normal equations' mean diagonal

struct ProbeCurve {
    std::vector<double> query_mse;  // (L + 1): depth 0 = the read-in, depth L = the trunk's output
    std::vector<double> error_pct;  // (L + 1): MC argmax error in %, NaN for regression
};

// `model` in training mode (it keeps the residual streams) holding the run's weights; `source` the run's config (its
// pool, test stream, eval.sequences, train.batch_size). The run must have a fixed pool (task.pool_sequences > 0).
ProbeCurve probe_layers(model::Transformer<double>& model, const tasks::RegressionSpec& task, const config::Config& source,
                        std::size_t fit_sequences, double ridge);

}  // namespace iclab::experiments::part_b
