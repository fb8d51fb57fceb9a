// Experiment `lm`: GPT-2-shaped language models over a real vocabulary (issue 22, experiments/lm/README.md). Trains
// the model the config describes on a token file (framework/run/lm_training.hpp: random windows of /train, held-out
// loss and perplexity on /heldout), or describes a run folder `iclab import gpt2` wrote (framework/run/lm_run.hpp:
// task.vocab_size, task.context_length and the model.* keys). predict, convert, generate and export read its folders.
#include <cstdio>

#include "framework/core/check.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/run/lm_training.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace lm_cpp {


namespace {

void declare_keys(config::Schema& schema) {
    add_lm_task_keys(schema);
    add_lm_training_keys(schema);
    schema.add_rule([](const config::Config& cfg) {
        const bool learned = cfg.get_string("model.position_embedding") == "learned";
        if (!learned && !cfg.get_bool("model.rope"))
            cfg.fail({"model.position_embedding", "model.rope"},
                     "a language model needs positions: model.position_embedding: learned (GPT-2) or model.rope: true");
    });
    schema.add_rule([](const config::Config& cfg) {
        if (cfg.get_int("task.seq_len") > cfg.get_int("task.context_length"))
            cfg.fail({"task.seq_len", "task.context_length"}, "task.seq_len is longer than the model's context task.context_length");
    });
}

RunOutcome run_lm(const RunContext& context) {
    check_lm_training_inputs(context.config);  // a refused run makes no folder
    RunFolder run(context.config, context.options);
    const LmTraining training = train_lm(context.config, context.options, run);
    if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
    run.commit();
    if (!context.options.quiet)
        std::printf("\nheld-out loss %.4f nats/token, perplexity %.2f (%zu parameters, %zu train / %zu held-out tokens, %.1f s)\n",
                    training.final_eval_loss, training.final_eval_perplexity, training.parameter_count, training.train_tokens,
                    training.heldout_tokens, training.wall_time_s);
    return {run.path(), true, training.steps_total, training.steps_total};
}

}  // namespace
}  // namespace lm_cpp

Experiment lm() {
    using namespace lm_cpp;
    return {"lm",
            "GPT-2-shaped language model over a BPE vocabulary trained on a token file (issue 22; paper 000 §6.4's model class); "
            "iclab import gpt2 writes the same run folders",
            {KeyGroup::output, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_lm,
            estimate_lm_training,
            check_lm_data_files};
}

}  // namespace iclab::experiments
