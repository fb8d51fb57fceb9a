// Decayed linear attention in the model (model.decay, issue 43, docs/decay.md): the per-layer γ_h that the attention
// kernels read (nn::LinearAttentionOptions::decay), the learned decay's parametrisation γ_h = sigmoid(θ_h), its
// initialization and the chain rule dθ = dγ · γ (1 − γ).
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/model/transformer.hpp"
#include "framework/model/transformer_detail.hpp"

namespace iclab::model {

namespace detail {

void validate_decay(const ModelSpec& spec) {
    if (spec.decay == ModelSpec::Decay::none) return;
    ICLAB_CHECK(spec.mask == nn::MaskKind::causal && !spec.isolate_queries,
                "attention decay needs the causal mask (the state S_i = gamma S_{i-1} + ... runs forward in time)");
    if (spec.decay == ModelSpec::Decay::fixed) {
        ICLAB_CHECK(spec.decay_gamma.size() == spec.heads,
                    "attention decay: " << spec.decay_gamma.size() << " values of gamma for " << spec.heads << " heads");
        for (double gamma : spec.decay_gamma)
            ICLAB_CHECK(gamma > 0.0 && gamma <= 1.0, "attention decay gamma must be in (0, 1], got " << gamma);
    }
}

template <class T>
void init_decay_logits(T* theta, std::size_t heads) {
    for (std::size_t h = 0; h < heads; ++h) theta[h] = static_cast<T>(std::log(std::exp2(5.0 + static_cast<double>(h)) - 1.0));
}
template void init_decay_logits<float>(float*, std::size_t);
template void init_decay_logits<double>(double*, std::size_t);

}  // namespace detail

namespace {
double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
}  // namespace

template <class T>
std::vector<double> Transformer<T>::attention_decay(std::size_t layer) const {
    ICLAB_CHECK(layer < spec_.layers, "layer " << layer << " of " << spec_.layers);
    switch (spec_.decay) {
        case ModelSpec::Decay::none: return {};
        case ModelSpec::Decay::fixed: return spec_.decayed() ? spec_.decay_gamma : std::vector<double>{};  // γ = 1: none
        case ModelSpec::Decay::learned: break;
    }
    const std::size_t offset = block_offsets_[layer].decay_logit;
    std::vector<double> gamma(spec_.heads);
    for (std::size_t h = 0; h < spec_.heads; ++h) gamma[h] = sigmoid(static_cast<double>(params[offset + h]));
    for (double g : gamma)
        ICLAB_CHECK(g > 0.0, "the learned attention decay of layer " << layer << " underflowed to 0 (theta below -745)");
    return gamma;
}

template <class T>
void Transformer<T>::accumulate_decay_gradient(std::size_t layer, const std::vector<T>& d_gamma) {
    const std::size_t offset = block_offsets_[layer].decay_logit;
    for (std::size_t h = 0; h < spec_.heads; ++h) {
        const double gamma = sigmoid(static_cast<double>(params[offset + h]));
        grads[offset + h] += static_cast<T>(static_cast<double>(d_gamma[h]) * gamma * (1.0 - gamma));  // dγ/dθ = γ(1 − γ)
    }
}

template std::vector<double> Transformer<float>::attention_decay(std::size_t) const;
template std::vector<double> Transformer<double>::attention_decay(std::size_t) const;
template void Transformer<float>::accumulate_decay_gradient(std::size_t, const std::vector<float>&);
template void Transformer<double>::accumulate_decay_gradient(std::size_t, const std::vector<double>&);

}  // namespace iclab::model
