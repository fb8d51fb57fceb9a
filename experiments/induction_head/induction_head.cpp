// Experiment `induction_head` (paper 000 §6.2): train a linearized-attention transformer on the bigram
// induction-head task and log curves, a final evaluation table and the trained parameters. The training itself
// is the shared service framework/run/induction_training.hpp.
#include "framework/run/experiment.hpp"
#include "framework/run/induction_training.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace induction_head_cpp {


namespace {

RunOutcome run_induction_head(const RunContext& context) {
    RunFolder run(context.config, context.options);
    const InductionTraining training = train_induction_model(context.config, context.options, run);
    if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
    run.commit();
    if (!context.options.quiet) print_final_evaluation(training, context.config);
    return {run.path(), true, training.steps_total, training.steps_total};
}

}  // namespace
}  // namespace induction_head_cpp

Experiment induction_head() {
    using namespace induction_head_cpp;
    return {"induction_head",
            "train a linearized-attention transformer on the bigram induction-head task (paper 000 §6.2)",
            {KeyGroup::output, KeyGroup::induction_task, KeyGroup::model, KeyGroup::train},
            nullptr,
            run_induction_head,
            estimate_training};
}

}  // namespace iclab::experiments
