#pragma once
// Shared config key groups and their translation into framework specs. An experiment says which groups it
// uses (framework/run/experiment.hpp); the keys are declared here once:
//   output: seed, output.dir, output.name, output.checkpoint
//   model:  model.* (the transformer: attention, feature map, RoPE, mask, sizes, init)
//   train:  train.*, eval.every, eval.sequences, log.every (the Trainer and its optimizer)
// The induction-head task keys (task.*) are in framework/run/induction_training.hpp.
#include <cstddef>
#include <string>
#include <utility>

#include "framework/config/config.hpp"
#include "framework/model/transformer.hpp"
#include "framework/train/optimizer.hpp"

namespace iclab::run {

void add_output_keys(config::Schema& schema);
void add_model_keys(config::Schema& schema);
void add_train_keys(config::Schema& schema);

// The warmup in steps: train.warmup_fraction x train.steps when the fraction is set, else train.warmup_steps.
std::size_t warmup_steps(const config::Config& cfg);
// model.performer_input_scale as used: the configured value, or D^(-1/4) for 0.
double performer_scale(double configured, std::size_t head_dim);

model::ModelSpec model_spec_from_config(const config::Config& cfg, std::size_t vocab, std::size_t max_seq_len);
train::OptimizerSpec optimizer_spec_from_config(const config::Config& cfg);
train::ScheduleSpec schedule_spec_from_config(const config::Config& cfg);

template <class T>
constexpr const char* dtype_name() {
    return sizeof(T) == 4 ? "float32" : "float64";
}

// Calls work(float{}) or work(double{}) as model.dtype says; `work` is a generic lambda
// `[&](auto zero) { using T = decltype(zero); ... }`. The one float/double dispatch of the experiments.
template <class Work>
decltype(auto) with_model_dtype(const config::Config& cfg, Work&& work) {
    if (cfg.get_string("model.dtype") == "float64") return std::forward<Work>(work)(double{});
    return std::forward<Work>(work)(float{});
}

}  // namespace iclab::run
