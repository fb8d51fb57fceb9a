#include "framework/run/lm_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <system_error>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"

namespace iclab::run {

namespace {
constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

struct Dims {
    double L, C, H, D, F, V, hidden, context;
    bool softmax, layernorm, final_norm, rope;
};

Dims dims_of(const model::ModelSpec& spec) {
    Dims d{};
    d.L = static_cast<double>(spec.layers);
    d.C = static_cast<double>(spec.width);
    d.H = static_cast<double>(spec.heads);
    d.D = static_cast<double>(spec.head_dim());
    d.F = static_cast<double>(spec.feature_dim());
    d.V = static_cast<double>(spec.output_size());
    d.hidden = spec.mlp ? static_cast<double>(spec.mlp_ratio) * d.C : 0.0;
    d.context = static_cast<double>(spec.max_seq_len);
    d.softmax = spec.attention == model::ModelSpec::Attention::softmax;
    d.layernorm = spec.layernorm;
    d.final_norm = spec.final_norm();
    d.rope = spec.rope;
    return d;
}

// FLOPs of one token's pass through the weights (a multiply-add counts 2): q, k, v and W_o, the MLP, the read-out.
double weight_flops_per_token(const Dims& d, const model::ModelSpec& spec) {
    const double projections = 3.0 * d.C * d.C + (spec.output_projection ? d.C * d.C : 0.0) + 2.0 * d.hidden * d.C;
    return 2.0 * (d.L * projections + d.V * d.C);
}

// FLOPs of attention for one query over `keys` keys in one layer: softmax scores and weighted values (4 D per key and
// head); linear attention: the features and the state's update and read (~8 D F per head), whatever the keys.
double attention_flops(const Dims& d, double keys) { return d.softmax ? 4.0 * d.C * keys : 8.0 * d.C * d.F; }
}  // namespace

RunEstimate estimate_lm_parameters(const model::ModelSpec& spec, double bytes) {
    const double count = static_cast<double>(model::build_parameter_layout(spec).total());
    RunEstimate e;
    e.memory_gib = count * bytes / kGib;
    e.flops = count;  // converted and checked once
    return e;
}

double lm_reading_memory_gib(const model::ModelSpec& spec, const std::filesystem::path& results_file) {
    double largest = 0;
    const model::ParameterLayout layout = model::build_parameter_layout(spec);
    for (const auto& entry : layout.entries()) largest = std::max(largest, static_cast<double>(entry.size));
    std::error_code error;
    const auto file_bytes = std::filesystem::file_size(results_file, error);
    return ((error ? 0.0 : static_cast<double>(file_bytes)) + 8.0 * largest) / kGib;
}

RunEstimate estimate_lm_forward(const model::ModelSpec& spec, double bytes, double tokens) {
    const Dims d = dims_of(spec);
    const double T = tokens;
    // Per token (transformer.cpp allocate(): one block's buffers in inference mode): LN1 and its mean and rstd, qkv,
    // attention output, mid, LN2, the MLP's hidden pre- and post-activation; the two-buffer stream, the trunk's output
    // and the final norm; the logits.
    double per_token = (d.layernorm ? d.C + 2.0 : 0.0) + 3.0 * d.C + 2.0 * d.C;
    if (spec.mlp) per_token += (d.layernorm ? d.C + 2.0 : 0.0) + 2.0 * d.hidden;
    per_token += 3.0 * d.C + (d.final_norm ? d.C + 2.0 : 0.0) + d.V;
    // Attention caches: softmax keeps (H, T, T) probabilities even in inference, and rotated q and k with RoPE; linear
    // attention keeps φ(q), φ(k) and their rotations (4 H F) and the normalizer.
    per_token += d.softmax ? d.H * T + (d.rope ? 2.0 * d.C : 0.0) : 4.0 * d.H * d.F + d.H;
    RunEstimate e;
    e.memory_gib = (T * per_token * bytes + 4.0 * T) / kGib;
    // the causal prefix: T / 2 keys per query on average
    e.flops = T * (weight_flops_per_token(d, spec) + d.L * attention_flops(d, T / 2.0));
    return e;
}

RunEstimate estimate_lm_decoding(const model::ModelSpec& spec, double bytes, double prompt, double steps, double chunk) {
    const Dims d = dims_of(spec);
    RunEstimate e;
    // transformer_decode.cpp: keys and values (H, T_max, D) per layer, allocated for the whole context; or the state
    // (H, F, D) and key sum (H, F) per layer.
    const double state = d.softmax ? 2.0 * d.L * d.C * d.context : d.L * d.H * d.F * (d.D + 1.0);
    // Scratch of one append of `rows` tokens: x, normed, qkv, att, mid (7 C), mean and rstd, the MLP (2 hidden), logits.
    const double rows = std::max(1.0, std::min(prompt, chunk));
    e.memory_gib = (state + rows * (7.0 * d.C + 2.0 + 2.0 * d.hidden + d.V)) * bytes / kGib;
    const double tokens = prompt + steps;
    // The prompt through the weights in blocks (GEMMs, the nominal rate); each step's token alone, and every token's
    // attention (softmax: token i reads i + 1 cached keys and values, ~tokens^2 / 2 in all), at kStreamingWeight.
    const double attention = d.L * (d.softmax ? attention_flops(d, 1.0) * tokens * (tokens + 1.0) / 2.0 : tokens * attention_flops(d, 0.0));
    e.flops = prompt * weight_flops_per_token(d, spec) + kStreamingWeight * (steps * weight_flops_per_token(d, spec) + attention);
    return e;
}

double results_file_memory_gib(double bytes) { return 2.0 * bytes / kGib; }

double adapter_files_memory_gib(const std::vector<std::filesystem::path>& files) {
    double bytes = 0;
    for (const auto& file : files) {
        std::error_code error;
        const auto size = std::filesystem::file_size(file, error);
        if (!error) bytes += 2.0 * static_cast<double>(size);
    }
    return bytes / kGib;
}

void check_command_estimate(const RunEstimate& e, const std::string& who, const std::string& lower, bool quiet) {
    const double available = available_memory_gib();
    char needs[64];
    std::snprintf(needs, sizeof needs, "%.3g GiB", e.memory_gib);
    ICLAB_INPUT_CHECK(!(e.memory_gib > available), who << ": needs about " << needs << " (estimated " << describe_estimate(e)
                                                       << "), this machine has " << describe_available_memory() << "; lower " << lower);
    ICLAB_INPUT_CHECK(!(e.flops > kMaxRunFlops), who << ": would take " << describe_estimate(e) << "; iclab refuses more than "
                                                     << kMaxRunFlops << " FLOP; lower " << lower);
    if (!quiet && e.flops >= kPrintEstimateFlops) std::fprintf(stderr, "%s: estimated %s\n", who.c_str(), describe_estimate(e).c_str());
}

}  // namespace iclab::run
