// Experiment `lm`: GPT-2-shaped language models over a real vocabulary (issue 22). This version declares the
// config a language-model run folder carries (framework/run/lm_run.hpp: task.vocab_size, task.context_length and
// the model.* keys) so that `iclab import gpt2` can write run folders predict and export read; training on token
// files is not implemented here yet and is refused, saying so.
#include "framework/core/check.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/lm_run.hpp"

namespace iclab::experiments {

using namespace iclab::run;

namespace {

void declare_keys(config::Schema& schema) {
    add_lm_task_keys(schema);
    schema.add_rule([](const config::Config& cfg) {
        const bool learned = cfg.get_string("model.position_embedding") == "learned";
        if (!learned && !cfg.get_bool("model.rope"))
            cfg.fail({"model.position_embedding", "model.rope"},
                     "a language model needs positions: model.position_embedding: learned (GPT-2) or model.rope: true");
    });
}

RunOutcome run_lm(const RunContext& context) {
    throw InputError("experiment lm: training a language model from token files is not implemented in this version; "
                     "lm run folders come from `iclab import gpt2 DIR --out RUN_DIR` (docs/gpt2.md). Config: " +
                     context.config.source_path());
}

}  // namespace

Experiment lm() {
    return {"lm",
            "GPT-2-shaped language model over a BPE vocabulary (issue 22): run folders from iclab import gpt2; training not yet",
            {KeyGroup::output, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_lm};
}

}  // namespace iclab::experiments
