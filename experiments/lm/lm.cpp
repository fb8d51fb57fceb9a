// Experiment `lm`: GPT-2-shaped language models over a real vocabulary (issue 22, experiments/lm/README.md). Trains
// the model the config describes on a token file (framework/run/lm_training.hpp: random windows of /train, held-out
// loss and perplexity on /heldout), or describes a run folder `iclab import gpt2` wrote (framework/run/lm_run.hpp:
// task.vocab_size, task.context_length and the model.* keys). predict, convert, generate and export read its folders.
#include <cstdio>

#include <cmath>

#include "framework/core/check.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/run/lm_training.hpp"

namespace iclab::experiments {

using namespace iclab::run;

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

// Memory and work of an lm run (framework/run/memory_estimate.hpp). The real vocabulary dominates small models:
// embeddings (and the untied unembedding) in parameters, gradients and both Adam moments, and the (B, T, V) logits,
// probabilities and their gradient; the trunk is 12 C^2 + 13 C parameters a layer, and softmax attention keeps
// (B, H, T, T) scores. FLOPs: forward + backward = 3 forwards of 2 per multiply-add, per step and per evaluation.
RunEstimate estimate_lm(const config::Config& cfg) {
    const double V = static_cast<double>(cfg.get_int("task.vocab_size")), ctx = static_cast<double>(cfg.get_int("task.context_length"));
    const double T = cfg.get_int("task.seq_len") > 0 ? static_cast<double>(cfg.get_int("task.seq_len")) : ctx;
    const double L = static_cast<double>(cfg.get_int("model.layers")), C = static_cast<double>(cfg.get_int("model.width"));
    const double H = static_cast<double>(cfg.get_int("model.heads"));
    const double B = static_cast<double>(cfg.get_int("train.batch_size")), steps = static_cast<double>(cfg.get_int("train.steps"));
    const double bytes = cfg.get_string("model.dtype") == "float64" ? 8.0 : 4.0;
    const double tied = cfg.get_bool("model.tie_embeddings") ? 1.0 : 2.0;
    const double trunk = L * (12.0 * C * C + 13.0 * C);
    const double parameters = tied * V * C + ctx * C + trunk;
    RunEstimate e;
    e.memory_gib = (4.0 * parameters + B * T * (L * (16.0 * C + H * T) + 3.0 * V)) * bytes / (1024.0 * 1024.0 * 1024.0);
    const double forward_per_token = 2.0 * (trunk + V * C) + 4.0 * L * T * C;  // matrices, logits, attention
    const double evaluations = std::floor(steps / static_cast<double>(cfg.get_int("eval.every"))) + 1.0;
    e.flops = 3.0 * forward_per_token * B * T * steps + forward_per_token * static_cast<double>(cfg.get_int("eval.sequences")) * T * evaluations;
    e.keys = {"model.width", "model.layers", "task.vocab_size", "train.batch_size", "task.seq_len", "train.steps"};
    return e;
}

}  // namespace

Experiment lm() {
    return {"lm",
            "GPT-2-shaped language model over a BPE vocabulary trained on a token file (issue 22; paper 000 §6.4's model class); "
            "iclab import gpt2 writes the same run folders",
            {KeyGroup::output, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_lm,
            estimate_lm};
}

}  // namespace iclab::experiments
