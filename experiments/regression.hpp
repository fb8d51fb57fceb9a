#pragma once
// Experiment `regression`: train a transformer on in-context regression-family tasks — linear regression
// (papers 003, 004; Garg et al.), sigmoid regression and multiclass classification (paper 003 E.2) — with
// real-valued tokens (read-in/read-out) and a squared-error loss at the query positions, and log the query
// error against the zero predictor's and, for linear tasks, the least-squares solution's on the same
// held-out sequences. Paper 004 §5.1's single Performer attention layer and paper 003's LSA are configs of it.
#include "experiments/common.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab::experiments {

config::Schema regression_schema();
tasks::RegressionSpec regression_spec_from_config(const config::Config& cfg);
RunOutcome run_regression(const config::Config& cfg, const RunOptions& options);

// Errors of a model on a fixed set of sequences.
struct RegressionEvaluation {
    double query_mse = 0.0;          // mean over queries of |ŷ − y|² (sum over output channels)
    double zero_mse = 0.0;           // the same for the predictor ŷ = 0
    double least_squares_mse = 0.0;  // linear tasks: ŵ = argmin Σ_context |W x − y|² (min-norm), else NaN
    double context_mse = 0.0;        // mean over context prediction positions of |ŷ − y|²
    double context_output_norm = 0.0;// mean over context prediction positions of |ŷ|² (what the L2 term penalizes)
    double query_accuracy = 0.0;     // classification: argmax ŷ = the label's class, else NaN
};

template <class T>
RegressionEvaluation evaluate_regression(model::Transformer<T>& model, const tasks::RegressionBatch<T>& data,
                                         const tasks::RegressionSpec& task, std::size_t chunk_size);

}  // namespace iclab::experiments
