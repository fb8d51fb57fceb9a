#pragma once
// Service for the paper 004 experiments (gd004_example, gd004_figures; specs/gd_duals.md §4-8): the weights of the
// trained single Performer layer of §5.1, as the GD-CL dual (icl::dual_004) and the attention-error sweep read them.
#include <cstddef>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/icl/gd_dual.hpp"
#include "framework/model/transformer.hpp"
#include "framework/run/regression_training.hpp"

namespace iclab::run {

// w_qkv (C, 3C) = [W_Q | W_K | W_V] (row convention), the layer's stored directions ω (C, R), and its input scale s.
template <class T>
icl::Dual004Weights<T> trained_004_layer(const RegressionTraining& training) {
    const model::ParameterLayout layout = model::build_parameter_layout(training.spec);
    icl::Dual004Weights<T> w;
    const auto& qkv = layout.find("blocks.0.attn.w_qkv");
    const auto& random = layout.find("blocks.0.attn.random_features");
    for (std::size_t i = 0; i < qkv.size; ++i) w.w_qkv.push_back(static_cast<T>(training.parameters[qkv.offset + i]));
    for (std::size_t i = 0; i < random.size; ++i) w.random.push_back(static_cast<T>(training.parameters[random.offset + i]));
    w.scale = training.spec.performer_input_scale;
    return w;
}

}  // namespace iclab::run

namespace iclab::run {

// Config rule: the model and task keys describe paper 004 §5.1's single layer, or cfg.fail names the key.
inline void require_004_layer(const config::Config& cfg, const std::string& experiment) {
    auto need = [&](bool ok, const char* key, const std::string& what) {
        if (!ok) cfg.fail({key}, experiment + " needs paper 004's single layer: " + what);
    };
    need(cfg.get_int("model.layers") == 1 && cfg.get_int("model.heads") == 1, "model.layers", "one layer, one head");
    need(cfg.get_int("model.width") == 12 && cfg.get_int("task.x_dim") == 11 && cfg.get_int("task.y_dim") == 1, "model.width",
         "width 12 = d_x 11 + d_y 1");
    need(cfg.get_string("model.attention") == "linear" && cfg.get_string("model.feature_map") == "performer" &&
             cfg.get_string("model.normalizer") == "kernel",
         "model.feature_map", "kernel attention with performer features");
    need(cfg.get_float("model.normalizer_eps") == 0.0, "model.normalizer_eps", "normalizer_eps 0 (Theorem 1's D exactly)");
    need(!cfg.get_bool("model.residual") && !cfg.get_bool("model.output_projection") && !cfg.get_bool("model.qkv_bias") &&
             !cfg.get_bool("model.layernorm") && !cfg.get_bool("model.mlp") && !cfg.get_bool("model.rope"),
         "model.residual", "no residual, W_o, q/k/v bias, LayerNorm, MLP or RoPE");
    need(!cfg.get_bool("model.isolate_queries") && cfg.get_string("model.mask") != "prefix", "model.isolate_queries",
         "the query attends to all N + 1 keys, its own included (A7)");
    need(cfg.get_string("model.read_in") == "identity" && cfg.get_string("model.read_out") == "slice", "model.read_out",
         "read_in identity, read_out slice");
    need(cfg.get_string("task.format") == "stacked" && cfg.get_int("task.queries") == 1 && cfg.get_string("task.kind") == "linear",
         "task.format", "stacked tokens, one query, linear task");
    need(cfg.get_string("task.w_mode") == "fixed", "task.w_mode", "one fixed task W (task.w_mode fixed, paper 004 A.3's single task)");
}

}  // namespace iclab::run
