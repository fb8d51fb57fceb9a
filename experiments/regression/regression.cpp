// Experiment `regression` (papers 003, 004; Garg et al.): train a transformer on in-context regression-family
// tasks — linear regression, sigmoid regression, multiclass classification — with real-valued tokens, and log
// the query error against the zero predictor's and, for linear tasks, the least-squares solution's. Paper 004
// §5.1's single Performer attention layer and paper 003's LSA are configs of it. The training is the shared
// service framework/run/regression_training.hpp.
#include "framework/run/experiment.hpp"
#include "framework/run/regression_training.hpp"

namespace iclab::experiments {

using namespace iclab::run;

namespace {

RunOutcome run_regression(const RunContext& context) {
    RunFolder run(context.config, context.options);
    const RegressionTraining training = train_regression_model(context.config, context.options, run);
    if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
    run.commit();
    if (!context.options.quiet) print_regression_evaluation(training, context.config);
    return {run.path(), true, training.steps_total, training.steps_total};
}

}  // namespace

Experiment regression() {
    return {"regression",
            "train on in-context linear/sigmoid regression or classification with real-valued tokens (papers 003, 004)",
            {KeyGroup::output, KeyGroup::model, KeyGroup::train, KeyGroup::regression_task},
            nullptr,
            run_regression,
            estimate_training};
}

}  // namespace iclab::experiments
