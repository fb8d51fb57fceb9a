// Prompt baking into ICLAA's kernel biases of a softmax model (prompt_baking.hpp): the student's prompt terms hold the
// learned b̂_kv, b̂_d; the model's backward adds their gradients ((K2)-(K3), softmax_attention.hpp) into one flat buffer
// the optimizer steps on, the same KL objective and loop as bake_prompt.
#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/icl/prompt_baking.hpp"

namespace iclab::icl {

void check_kernel_baking_assumptions(const model::ModelSpec& spec) {
    check_baking_assumptions(spec, BakeTarget::lora);  // mask, shared layers, vector inputs: as for every target
    if (spec.attention != model::ModelSpec::Attention::softmax)
        throw InputError("baking into ICLAA's kernel biases needs softmax attention; a linearized model has b_KV, b_D of its "
                         "own (paper 000 Eq. 13): bake into them (target biases) instead");
}

std::size_t kernel_bias_value_count(const model::ModelSpec& spec, std::size_t features) {
    return spec.layers * spec.heads * features * (spec.head_dim() + 1);
}

KernelStart parse_kernel_start(const std::string& name) {
    if (name == "closed_form") return KernelStart::closed_form;
    if (name == "zero") return KernelStart::zero;
    throw InputError("unknown kernel baking start '" + name + "' (closed_form | zero)");
}

const char* kernel_start_name(KernelStart start) { return start == KernelStart::closed_form ? "closed_form" : "zero"; }

template <class T>
KernelMaps<T> cast_kernel_maps(const LayerHeadMaps& maps) {
    KernelMaps<T> out(maps.size());
    for (std::size_t l = 0; l < maps.size(); ++l)
        for (const auto& map : maps[l]) {
            nn::KernelFeatures<T> m;
            m.kind = map.kind;
            m.dim = map.dim;
            m.features = map.features;
            m.input_scale = map.input_scale;
            m.lambda = map.lambda;
            m.w.assign(map.w.begin(), map.w.end());
            m.c.assign(map.c.begin(), map.c.end());
            out[l].push_back(std::move(m));
        }
    return out;
}

template <class T>
KernelTerms<T> cast_kernel_terms(const PromptTerms& terms, const KernelMaps<T>& maps) {
    ICLAB_CHECK(terms.size() == maps.size(), "terms and maps disagree on the layers");
    KernelTerms<T> out(terms.size());
    for (std::size_t l = 0; l < terms.size(); ++l)
        for (std::size_t h = 0; h < terms[l].size(); ++h) {
            const auto& from = terms[l][h];
            ICLAB_CHECK(from.cache_length == 0 && from.features != nullptr && h < maps[l].size(), "kernel terms only, one map per head");
            nn::SoftmaxPromptHead<T> head;
            head.features = &maps[l][h];
            head.rotate_query = from.rotate_query;
            head.b_d.assign(from.b_d.begin(), from.b_d.end());
            head.b_kv.assign(from.b_kv.begin(), from.b_kv.end());
            head.log_b_d = static_cast<T>(from.log_b_d);
            head.log_b_kv = static_cast<T>(from.log_b_kv);
            out[l].push_back(std::move(head));
        }
    return out;
}

template <class T>
KernelBakeResult<T> bake_prompt_kernel(model::Transformer<T>& model, const BakingData<T>& data, const BakingSettings& settings,
                                       const KernelTerms<T>& start, KernelStart how) {
    const model::ModelSpec& spec = model.spec();
    check_kernel_baking_assumptions(spec);
    ICLAB_CHECK(model.mode() == model::Transformer<T>::Mode::training, "baking needs a training-mode model (gradients)");
    ICLAB_INPUT_CHECK(settings.batch >= 1 && data.samples >= 1, "baking needs continuations and a batch of at least one");
    ICLAB_INPUT_CHECK(settings.optimizer.kind != train::OptimizerKind::adamw || settings.optimizer.weight_decay == 0.0,
                      "baking does not decay its delta (optimizer weight decay 0)");
    ICLAB_CHECK(start.size() == spec.layers, "kernel terms for " << start.size() << " layers, the model has " << spec.layers);
    KernelBakeResult<T> result;
    result.terms = start;
    // b̂_kv (F, D) then b̂_d (F) of every layer and head in one flat buffer, gradients in another of the same layout
    model::ParameterLayout layout;
    for (std::size_t l = 0; l < spec.layers; ++l) {
        ICLAB_CHECK(start[l].size() == spec.heads, "kernel terms for " << start[l].size() << " heads, the model has " << spec.heads);
        for (std::size_t h = 0; h < spec.heads; ++h) {
            auto& head = result.terms[l][h];
            ICLAB_CHECK(head.features != nullptr && head.cache_length == 0, "kernel baking learns kernel terms (no exact cache)");
            const std::size_t F = head.features->features, D = spec.head_dim();
            const std::string p = "blocks." + std::to_string(l) + ".kernel." + std::to_string(h) + ".";
            layout.add(p + "b_kv", {F, D}, true, false, "(F, D): b_KV = e^{log_b_kv} b_kv");
            layout.add(p + "b_d", {F}, true, false, "(F): b_D = e^{log_b_d} b_d", settings.bias_d_nonnegative);
            if (how == KernelStart::zero) {
                std::fill(head.b_kv.begin(), head.b_kv.end(), T(0));
                std::fill(head.b_d.begin(), head.b_d.end(), T(0));
            }
            // a zero sum in the closed form leaves log = −inf: its unit-scale vector can only be learned at scale 1
            if (!std::isfinite(head.log_b_kv)) head.log_b_kv = T(0);
            if (!std::isfinite(head.log_b_d)) head.log_b_d = T(0);
        }
    }
    std::vector<T> values(layout.total()), grads(layout.total(), T(0));
    std::size_t at = 0;
    for (auto& layer : result.terms)
        for (auto& head : layer) {
            std::copy(head.b_kv.begin(), head.b_kv.end(), values.begin() + at);
            head.d_b_kv = grads.data() + at;
            at += head.b_kv.size();
            std::copy(head.b_d.begin(), head.b_d.end(), values.begin() + at);
            head.d_b_d = grads.data() + at;
            at += head.b_d.size();
        }
    const auto install = [&] {
        std::size_t offset = 0;
        for (auto& layer : result.terms)
            for (auto& head : layer) {
                std::copy(values.begin() + offset, values.begin() + offset + head.b_kv.size(), head.b_kv.begin());
                offset += head.b_kv.size();
                std::copy(values.begin() + offset, values.begin() + offset + head.b_d.size(), head.b_d.begin());
                offset += head.b_d.size();
            }
    };
    struct Reset {  // the model without the terms again on every exit
        model::Transformer<T>& m;
        ~Reset() { m.set_softmax_prompt(nullptr); }
    } reset{model};
    model.set_softmax_prompt(&result.terms);
    const auto full_kl = [&] {
        double total = 0.0;
        for (std::size_t first = 0; first < data.samples; first += settings.batch) {
            const std::size_t count = std::min(settings.batch, data.samples - first);
            total += baking_loss(model, data, first, count, false) * static_cast<double>(count);
        }
        return total / static_cast<double>(data.samples);
    };
    result.initial_kl = full_kl();
    train::Optimizer<T> optimizer(settings.optimizer, layout);
    for (std::size_t step = 0; step < settings.steps; ++step) {
        const std::size_t first = (step * settings.batch) % data.samples;
        const std::size_t count = std::min(settings.batch, data.samples - first);
        std::fill(grads.begin(), grads.end(), T(0));
        result.loss.push_back(baking_loss(model, data, first, count, true));  // the heads' d_b_kv, d_b_d: into grads
        optimizer.step(values, grads, settings.lr);
        install();
    }
    result.final_kl = full_kl();
    for (auto& layer : result.terms)
        for (auto& head : layer) head.d_b_kv = head.d_b_d = nullptr;
    return result;
}

#define ICLAB_INSTANTIATE(T)                                                                                                   \
    template KernelMaps<T> cast_kernel_maps<T>(const LayerHeadMaps&);                                                          \
    template KernelTerms<T> cast_kernel_terms<T>(const PromptTerms&, const KernelMaps<T>&);                                    \
    template KernelBakeResult<T> bake_prompt_kernel(model::Transformer<T>&, const BakingData<T>&, const BakingSettings&,       \
                                                    const KernelTerms<T>&, KernelStart);
ICLAB_INSTANTIATE(float)
ICLAB_INSTANTIATE(double)
#undef ICLAB_INSTANTIATE

}  // namespace iclab::icl
