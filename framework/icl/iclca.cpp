#include "framework/icl/iclca.hpp"

#include <cstdio>
#include <cstring>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"

namespace iclab::icl {

void check_iclca_assumptions(const model::ModelSpec& spec) {
    if (spec.attention != model::ModelSpec::Attention::linear)
        throw InputError("ICLCA needs linearized attention: softmax attention's normalizer sum_j exp(q.k_j) does not "
                         "separate into a prompt part and an input part with a shared query factor (paper 000 "
                         "Assumption 4.4); use the kernel approximation (ICLAA) instead");
    if (spec.mask != nn::MaskKind::causal || spec.isolate_queries)
        throw InputError(std::string("ICLCA needs an autoregressive model (paper 000 Assumption 4.2), but the mask is ") +
                         nn::mask_kind_name(spec.mask) + (spec.isolate_queries ? " with isolated queries" : "") +
                         ": the prompt's hidden states would depend on the input");
    if (spec.shared_layers)
        throw InputError("ICLCA writes a different b_KV, b_D into every layer, but this model shares one block's "
                         "weights across depth (model.shared_layers)");
    // Assumption 4.3 (relative positions): RoPE or no positions at all.
    if (spec.positions == model::ModelSpec::Positions::learned)
        throw InputError("ICLCA needs relative positions (paper 000 Assumption 4.3), but this model adds learned absolute "
                         "position embeddings (model.position_embedding: learned): after a prompt of M tokens the input sits "
                         "at positions M.., without it at 0.., and no bias can make up the difference");
}

template <class T>
std::size_t AttentionBiases<T>::parameter_count() const {
    std::size_t count = 0;
    for (const auto& v : b_kv) count += v.size();
    for (const auto& v : b_d) count += v.size();
    return count;
}

namespace {
std::string layer_prefix(std::size_t l) { return "blocks." + std::to_string(l) + "."; }
}  // namespace

template <class T>
AttentionBiases<T> read_biases(const model::Transformer<T>& model) {
    AttentionBiases<T> biases;
    for (std::size_t l = 0; l < model.spec().layers; ++l) {
        const auto& kv = model.layout().find(layer_prefix(l) + "attn.b_kv");
        const auto& d = model.layout().find(layer_prefix(l) + "attn.b_d");
        biases.b_kv.emplace_back(model.params.begin() + kv.offset, model.params.begin() + kv.offset + kv.size);
        biases.b_d.emplace_back(model.params.begin() + d.offset, model.params.begin() + d.offset + d.size);
    }
    return biases;
}

template <class T>
void write_biases(model::Transformer<T>& model, const AttentionBiases<T>& biases) {
    ICLAB_CHECK(biases.b_kv.size() == model.spec().layers && biases.b_d.size() == model.spec().layers,
                "biases for " << biases.b_kv.size() << " layers, the model has " << model.spec().layers);
    for (std::size_t l = 0; l < model.spec().layers; ++l) {
        const auto& kv = model.layout().find(layer_prefix(l) + "attn.b_kv");
        const auto& d = model.layout().find(layer_prefix(l) + "attn.b_d");
        ICLAB_CHECK(biases.b_kv[l].size() == kv.size && biases.b_d[l].size() == d.size, "bias shapes differ in layer " << l);
        std::copy(biases.b_kv[l].begin(), biases.b_kv[l].end(), model.params.begin() + kv.offset);
        std::copy(biases.b_d[l].begin(), biases.b_d[l].end(), model.params.begin() + d.offset);
    }
}

// ICLCA, Algorithm 1, paper 000 §4.5: one forward pass over X' (steps a and d for every layer at once), then
// per layer and head b'_KV = R_{-M} S_{M-1} (step b, Eq. 14) and b'_D = z_{M-1} (step c, Eq. 15). With decay the
// forward keeps the decayed states (docs/decay.md Algorithm 1'): the two steps are unchanged.
template <class T>
AttentionBiases<T> iclca_convert(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length) {
    const model::ModelSpec& spec = model.spec();
    check_iclca_assumptions(spec);
    ICLAB_INPUT_CHECK(prompt_length > 0, "the ICL prompt is empty");
    ICLAB_INPUT_CHECK(prompt_length <= spec.max_seq_len,
                      "the ICL prompt has " << prompt_length << " tokens, the model's max_seq_len is " << spec.max_seq_len);
    model.capture_attention_states(true);
    model.forward(prompt, 1, prompt_length);
    model.capture_attention_states(false);
    const std::size_t H = spec.heads, F = spec.feature_dim(), D = spec.head_dim(), M = prompt_length;
    AttentionBiases<T> converted;
    std::vector<T> column(F), rotated(F);
    for (std::size_t l = 0; l < spec.layers; ++l) {
        std::vector<T> b_kv = model.final_state(l);  // (1, H, F, D): S_{M-1} per head
        if (model.rope() != nullptr)                  // R_{-M} acts on the feature index f of every column d
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t d = 0; d < D; ++d) {
                    T* S = b_kv.data() + h * F * D;
                    for (std::size_t f = 0; f < F; ++f) column[f] = S[f * D + d];
                    model.rope()->rotate(rotated.data(), column.data(), M, true);  // R_Mᵀ = R_{-M}
                    for (std::size_t f = 0; f < F; ++f) S[f * D + d] = rotated[f];
                }
        converted.b_kv.push_back(std::move(b_kv));
        converted.b_d.push_back(model.final_key_sum(l));  // (1, H, F): z_{M-1}
    }
    return converted;
}

template <class T>
std::vector<double> logits_with_prompt(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length,
                                       const std::int32_t* input, std::size_t input_length) {
    const std::size_t M = prompt_length, N = input_length, V = model.spec().output_size();
    std::vector<std::int32_t> joint(prompt, prompt + M);
    joint.insert(joint.end(), input, input + N);
    model.forward(joint.data(), 1, M + N);
    return std::vector<double>(model.logits() + M * V, model.logits() + (M + N) * V);
}

template <class T>
std::vector<double> converted_logits(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length,
                                     const std::int32_t* input, std::size_t input_length, const AttentionBiases<T>& original) {
    const std::size_t V = model.spec().output_size();
    write_biases(model, iclca_convert(model, prompt, prompt_length));  // M_new
    model.forward(input, 1, input_length);
    std::vector<double> logits(model.logits(), model.logits() + input_length * V);
    write_biases(model, original);  // back to M_old
    return logits;
}

template <class T>
std::string model_fingerprint(const model::Transformer<T>& model) {
    // FNV-1a over the spec's shape-defining values and every parameter value (as double) except b_KV and b_D.
    Fnv1a64 hash;
    const auto mix = [&](const void* data, std::size_t bytes) { hash.mix(data, bytes); };
    for (const auto& entry : model.layout().entries()) {
        if (entry.name.find("attn.b_kv") != std::string::npos || entry.name.find("attn.b_d") != std::string::npos) continue;
        mix(entry.name.data(), entry.name.size());
        for (std::size_t i = 0; i < entry.size; ++i) {  // as doubles: a float checkpoint loaded as double matches
            const double value = static_cast<double>(model.params[entry.offset + i]);
            mix(&value, sizeof value);
        }
    }
    const model::ModelSpec& s = model.spec();
    const double numbers[] = {double(s.width), double(s.heads), double(s.layers), double(s.feature_dim()),
                              double(s.normalize), s.normalizer_eps, s.unnormalized_scale, double(s.rope), s.rope_base,
                              double(static_cast<int>(s.feature_map)), s.performer_input_scale};
    mix(numbers, sizeof numbers);
    // A decayed model (model.decay, docs/decay.md): the adapter's b'_KV = R_{-M} S_{M-1} holds the prompt decayed by γ,
    // and only a model with the same γ applies γ^{i+1} to it as the prompt would. A learned γ is a parameter (hashed
    // above). Mixed only when on, so the fingerprints of every model without decay (and their adapters) stay as they were.
    if (s.decayed()) {
        const char tag[] = "decay";
        mix(tag, sizeof tag);
        const double kind = s.decay == model::ModelSpec::Decay::fixed ? 1.0 : 2.0;
        mix(&kind, sizeof kind);
        if (s.decay == model::ModelSpec::Decay::fixed) mix(s.decay_gamma.data(), s.decay_gamma.size() * sizeof(double));
    }
    return hash.hex();
}

template struct AttentionBiases<float>;
template struct AttentionBiases<double>;
template AttentionBiases<float> read_biases(const model::Transformer<float>&);
template AttentionBiases<double> read_biases(const model::Transformer<double>&);
template void write_biases(model::Transformer<float>&, const AttentionBiases<float>&);
template void write_biases(model::Transformer<double>&, const AttentionBiases<double>&);
template AttentionBiases<float> iclca_convert(model::Transformer<float>&, const std::int32_t*, std::size_t);
template AttentionBiases<double> iclca_convert(model::Transformer<double>&, const std::int32_t*, std::size_t);
template std::vector<double> logits_with_prompt(model::Transformer<float>&, const std::int32_t*, std::size_t, const std::int32_t*,
                                                std::size_t);
template std::vector<double> logits_with_prompt(model::Transformer<double>&, const std::int32_t*, std::size_t, const std::int32_t*,
                                                std::size_t);
template std::vector<double> converted_logits(model::Transformer<float>&, const std::int32_t*, std::size_t, const std::int32_t*,
                                              std::size_t, const AttentionBiases<float>&);
template std::vector<double> converted_logits(model::Transformer<double>&, const std::int32_t*, std::size_t, const std::int32_t*,
                                              std::size_t, const AttentionBiases<double>&);
template std::string model_fingerprint(const model::Transformer<float>&);
template std::string model_fingerprint(const model::Transformer<double>&);

}  // namespace iclab::icl
