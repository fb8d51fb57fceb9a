#include "framework/run/memory_estimate.hpp"

#include <cstdio>

#include "framework/core/measure.hpp"

namespace iclab::run {

MemoryEstimate estimate_training_memory(const config::Config& cfg) {
    const double L = static_cast<double>(cfg.get_int("model.layers")), C = static_cast<double>(cfg.get_int("model.width"));
    const double H = static_cast<double>(cfg.get_int("model.heads"));
    const double mlp = cfg.get_bool("model.mlp") ? static_cast<double>(cfg.get_int("model.mlp_ratio")) : 0.0;
    const bool tokens = cfg.has("task.seq_len");
    const double T = tokens ? static_cast<double>(cfg.get_int("task.seq_len"))
                            : static_cast<double>(cfg.get_int("task.examples") + cfg.get_int("task.queries"));
    const double V = tokens ? 52.0 : 64.0;  // output width: the induction vocabulary, or a bound for vector tasks
    const double B = static_cast<double>(cfg.get_int("train.batch_size"));
    const double bytes = cfg.has("model.dtype") && cfg.get_string("model.dtype") == "float64" ? 8.0 : 4.0;
    const double gib = 1024.0 * 1024.0 * 1024.0;

    MemoryEstimate e;
    // Per block: q, k, v, o projections 4C^2 and the MLP 2 mlp C^2; embedding and unembedding V C each.
    const double blocks = cfg.has("model.shared_layers") && cfg.get_bool("model.shared_layers") ? 1.0 : L;
    e.parameters = blocks * (4.0 * C * C + 2.0 * mlp * C * C + 10.0 * C) + 2.0 * V * C;
    e.state_gib = 4.0 * e.parameters * bytes / gib;
    // Saved per token and layer: LayerNorm outputs, q, k, v, attention output, residuals (~12 C), the MLP's hidden
    // pre- and post-activation (2 mlp C) and one row of attention weights per head (H T, the quadratic form); logits
    // and their softmax per token (3 V).
    e.activations_gib = B * T * (L * ((12.0 + 2.0 * mlp) * C + H * T) + 3.0 * V) * bytes / gib;
    return e;
}

void check_training_memory(const config::Config& cfg) {
    const MemoryEstimate e = estimate_training_memory(cfg);
    const double available = available_memory_gib();
    if (available <= 0.0 || e.total_gib() <= available) return;
    char text[512];
    std::snprintf(text, sizeof text,
                  "this run needs about %.3g GiB (%.3g parameters: %.3g GiB with gradients and optimizer moments; "
                  "activations of train.batch_size x sequence length: %.3g GiB), this machine has %.3g GiB available; "
                  "lower model.width, model.layers, train.batch_size or the sequence length",
                  e.total_gib(), e.parameters, e.state_gib, e.activations_gib, available);
    cfg.fail({"model.width", "model.layers", "train.batch_size"}, text);
}

}  // namespace iclab::run
