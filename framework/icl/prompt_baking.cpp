// Prompt baking (see prompt_baking.hpp): the KL objective, its gradient through the model's own backward, the LoRA
// delta on W_Q, W_K, W_V and the optimisation loop.
#include "framework/icl/prompt_baking.hpp"

#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/model/transformer_decode.hpp"

namespace iclab::icl {

BakeTarget parse_bake_target(const std::string& name) {
    if (name == "biases") return BakeTarget::biases;
    if (name == "lora") return BakeTarget::lora;
    throw InputError("unknown baking target '" + name + "' (biases | lora)");
}

const char* bake_target_name(BakeTarget target) { return target == BakeTarget::biases ? "biases" : "lora"; }

BakeWork bake_work(const std::function<double(double)>& forward, double S, double M, double N, double step_sequences, bool teacher,
                   double V) {
    BakeWork work;
    work.products = S * forward(M + N) + (teacher ? S * forward(M) : 0.0) + 2.0 * S * forward(N) + 3.0 * step_sequences * forward(N);
    work.decode = teacher ? S * (N - 1.0) * forward(1.0) : 0.0;
    const double softmax = kEstimateExpFlops + 3.0, objective = softmax + 2.0 * kEstimateExpFlops + 3.0;
    work.loops = V * N * ((teacher ? S * softmax : 0.0) + S * softmax + 2.0 * S * objective + step_sequences * (objective + 2.0));
    return work;
}

void check_baking_assumptions(const model::ModelSpec& spec, BakeTarget target) {
    if (spec.input != model::ModelSpec::Input::tokens) throw InputError("prompt baking distils token prompts; this model reads vectors");
    if (spec.mask != nn::MaskKind::causal || spec.isolate_queries)
        throw InputError(std::string("prompt baking compares the model with the prompt against the model without it, which needs "
                                     "an autoregressive model (the prompt's states must not depend on the input), but the mask is ") +
                         nn::mask_kind_name(spec.mask) + (spec.isolate_queries ? " with isolated queries" : ""));
    if (spec.shared_layers) throw InputError("prompt baking learns one delta per layer, but this model shares its layers (model.shared_layers)");
    if (target == BakeTarget::biases && spec.attention != model::ModelSpec::Attention::linear)
        throw InputError("baking into b_KV, b_D needs linearized attention (paper 000 Eq. 13): softmax attention has no such "
                         "biases; bake into a LoRA (target lora) instead");
}

std::size_t bias_value_count(const model::ModelSpec& spec) {
    const std::size_t F = spec.attention == model::ModelSpec::Attention::linear ? spec.feature_dim() : spec.head_dim();
    return spec.layers * spec.heads * F * (spec.head_dim() + 1);
}

std::size_t lora_value_count(const model::ModelSpec& spec, std::size_t rank) { return 6 * spec.width * rank * spec.layers; }

std::size_t lora_rank_for_equal_bytes(const model::ModelSpec& spec) { return bias_value_count(spec) / lora_value_count(spec, 1); }

template <class T>
LoraDelta<T> make_lora(const model::ModelSpec& spec, std::size_t rank) {
    ICLAB_INPUT_CHECK(rank >= 1 && rank <= spec.width, "a LoRA rank of " << rank << " on a model of width " << spec.width);
    LoraDelta<T> delta;
    delta.layers = spec.layers;
    delta.width = spec.width;
    delta.rank = rank;
    const std::size_t C = spec.width;
    for (std::size_t l = 0; l < spec.layers; ++l)
        for (const char* s : {"q", "k", "v"}) {
            const std::string p = "blocks." + std::to_string(l) + ".lora." + s + ".";
            delta.layout.add(p + "a", {C, rank}, true, false, "(C, r): W_" + std::string(s) + " += A B");
            delta.layout.add(p + "b", {rank, C}, true, false, "(r, C)");
        }
    delta.values.assign(delta.layout.total(), T(0));
    return delta;
}

namespace {

std::string block(std::size_t l) { return "blocks." + std::to_string(l) + "."; }

}  // namespace

template <class T>
void apply_lora(model::Transformer<T>& model, const std::vector<T>& base_params, const LoraDelta<T>& delta) {
    const std::size_t C = delta.width, r = delta.rank;
    ICLAB_CHECK(C == model.spec().width && delta.layers == model.spec().layers && base_params.size() == model.params.size(),
                "a LoRA or base parameters for another model");
    for (std::size_t l = 0; l < delta.layers; ++l) {
        const std::size_t offset = model.layout().find(block(l) + "attn.w_qkv").offset;  // (C, 3C)
        T* W = model.params.data() + offset;
        const T* W0 = base_params.data() + offset;
        for (std::size_t s = 0; s < 3; ++s) {
            const T *A = delta.a(l, s), *B = delta.b(l, s);
            for (std::size_t i = 0; i < C; ++i)
                for (std::size_t j = 0; j < C; ++j) {
                    T sum = T(0);  // (A B)_ij, k in order
                    for (std::size_t k = 0; k < r; ++k) sum += A[i * r + k] * B[k * C + j];
                    W[i * 3 * C + s * C + j] = W0[i * 3 * C + s * C + j] + sum;
                }
        }
    }
}

template <class T>
void lora_backward(std::vector<T>& d_values, const model::Transformer<T>& model, const LoraDelta<T>& delta) {
    const std::size_t C = delta.width, r = delta.rank;
    d_values.assign(delta.values.size(), T(0));
    for (std::size_t l = 0; l < delta.layers; ++l) {
        const T* G = model.grads.data() + model.layout().find(block(l) + "attn.w_qkv").offset;  // dL/dW (C, 3C)
        for (std::size_t s = 0; s < 3; ++s) {
            const T *A = delta.a(l, s), *B = delta.b(l, s);
            T* dA = d_values.data() + (delta.a(l, s) - delta.values.data());
            T* dB = dA + C * r;
            for (std::size_t i = 0; i < C; ++i)  // dA_ik = Σ_j dW_ij B_kj
                for (std::size_t k = 0; k < r; ++k) {
                    T sum = T(0);
                    for (std::size_t j = 0; j < C; ++j) sum += G[i * 3 * C + s * C + j] * B[k * C + j];
                    dA[i * r + k] = sum;
                }
            for (std::size_t k = 0; k < r; ++k)  // dB_kj = Σ_i A_ik dW_ij
                for (std::size_t j = 0; j < C; ++j) {
                    T sum = T(0);
                    for (std::size_t i = 0; i < C; ++i) sum += A[i * r + k] * G[i * 3 * C + s * C + j];
                    dB[k * C + j] = sum;
                }
        }
    }
}

template <class T>
std::vector<std::int32_t> sample_teacher_continuations(const model::Transformer<T>& model, const std::int32_t* prompt,
                                                       std::size_t prompt_length, std::size_t samples, std::size_t length,
                                                       double temperature, Rng& rng) {
    ICLAB_INPUT_CHECK(temperature > 0.0, "a sampling temperature of " << temperature);
    ICLAB_INPUT_CHECK(prompt_length + length <= model.spec().max_seq_len,
                      "prompt " << prompt_length << " + continuation " << length << " tokens exceed the model's context " << model.spec().max_seq_len);
    const std::size_t V = model.spec().vocab;
    std::vector<std::int32_t> tokens(samples * length);
    std::vector<double> weights(V);
    model::TransformerDecoder<T> decoder(model);
    for (std::size_t s = 0; s < samples; ++s) {
        decoder.reset();
        decoder.append(prompt, prompt_length);
        for (std::size_t t = 0; t < length; ++t) {
            const T* z = decoder.last_logits();  // x_t ~ softmax(z / τ), by inversion of one uniform draw
            double top = static_cast<double>(z[0]);
            for (std::size_t v = 1; v < V; ++v) top = std::max(top, static_cast<double>(z[v]));
            double total = 0.0;
            for (std::size_t v = 0; v < V; ++v) total += (weights[v] = std::exp((static_cast<double>(z[v]) - top) / temperature));
            double u = rng.uniform() * total;
            std::size_t pick = V - 1;
            for (std::size_t v = 0; v < V; ++v) {
                if (u < weights[v]) {
                    pick = v;
                    break;
                }
                u -= weights[v];
            }
            tokens[s * length + t] = static_cast<std::int32_t>(pick);
            if (t + 1 < length) decoder.append(&tokens[s * length + t], 1);
        }
    }
    return tokens;
}

namespace {

// softmax of one row of logits into p (double accumulation, max shift)
template <class T>
void softmax_row(double* p, const T* z, std::size_t V) {
    double top = static_cast<double>(z[0]);
    for (std::size_t v = 1; v < V; ++v) top = std::max(top, static_cast<double>(z[v]));
    double total = 0.0;
    for (std::size_t v = 0; v < V; ++v) total += (p[v] = std::exp(static_cast<double>(z[v]) - top));
    for (std::size_t v = 0; v < V; ++v) p[v] /= total;
}

}  // namespace

template <class T>
BakingData<T> make_baking_data(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length,
                               std::vector<std::int32_t> continuations, std::size_t samples, std::size_t length, std::size_t chunk) {
    ICLAB_CHECK(continuations.size() == samples * length && chunk > 0, "continuations of the wrong size");
    const std::size_t M = prompt_length, N = length, V = model.spec().vocab;
    BakingData<T> data;
    data.samples = samples;
    data.length = N;
    data.vocab = V;
    data.tokens = std::move(continuations);
    data.teacher_probs.resize(samples * N * V);
    std::vector<std::int32_t> joint;
    std::vector<double> p(V);
    for (std::size_t first = 0; first < samples; first += chunk) {
        const std::size_t B = std::min(chunk, samples - first);
        joint.clear();
        for (std::size_t b = 0; b < B; ++b) {
            joint.insert(joint.end(), prompt, prompt + M);
            joint.insert(joint.end(), data.tokens.begin() + (first + b) * N, data.tokens.begin() + (first + b + 1) * N);
        }
        model.forward(joint.data(), B, M + N);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < N; ++t) {
                softmax_row(p.data(), model.logits() + (b * (M + N) + M + t) * V, V);
                std::copy(p.begin(), p.end(), data.teacher_probs.begin() + ((first + b) * N + t) * V);
            }
    }
    return data;
}

template <class T>
double baking_loss(model::Transformer<T>& student, const BakingData<T>& data, std::size_t first, std::size_t count, bool backward) {
    ICLAB_CHECK(first + count <= data.samples && count > 0, "continuations [" << first << ", " << first + count << ") of " << data.samples);
    const std::size_t N = data.length, V = data.vocab, rows = count * N;
    student.forward(data.tokens.data() + first * N, count, N);
    std::vector<double> p(V);
    std::vector<T> d_logits(backward ? rows * V : 0);
    double kl = 0.0;
    for (std::size_t n = 0; n < rows; ++n) {
        softmax_row(p.data(), student.logits() + n * V, V);
        const T* q = data.teacher_probs.data() + (first * N + n) * V;  // teacher
        for (std::size_t v = 0; v < V; ++v) {
            const double teacher = static_cast<double>(q[v]);
            if (teacher > 0.0) kl += teacher * (std::log(teacher) - std::log(p[v]));
            if (backward) d_logits[n * V + v] = static_cast<T>((p[v] - teacher) / static_cast<double>(rows));
        }
    }
    if (backward) {
        student.zero_grad();
        student.backward_outputs(d_logits.data());
    }
    return kl / static_cast<double>(rows);
}

namespace {

// The biases target as one flat trainable buffer: per layer b_KV (H, F, D) then b_D (H, F).
template <class T>
model::ParameterLayout bias_layout(const model::Transformer<T>& model, bool d_nonnegative) {
    model::ParameterLayout layout;
    for (std::size_t l = 0; l < model.spec().layers; ++l) {
        const auto& kv = model.layout().find(block(l) + "attn.b_kv");
        const auto& d = model.layout().find(block(l) + "attn.b_d");
        layout.add(kv.name, kv.shape, true, false, kv.layout);
        layout.add(d.name, d.shape, true, false, d.layout, d_nonnegative);
    }
    return layout;
}

// Copies between the flat delta buffer and the model's own parameters (or gradients) of the same names.
template <class T>
void copy_named(const model::ParameterLayout& from_layout, const T* from, const model::ParameterLayout& to_layout, T* to) {
    for (const auto& entry : from_layout.entries())
        std::copy(from + entry.offset, from + entry.offset + entry.size, to + to_layout.find(entry.name).offset);
}
template <class T>
void gather_named(const model::ParameterLayout& layout, T* out, const model::ParameterLayout& model_layout, const T* from) {
    for (const auto& entry : layout.entries()) {
        const auto& source = model_layout.find(entry.name);
        std::copy(from + source.offset, from + source.offset + source.size, out + entry.offset);
    }
}

}  // namespace

template <class T>
BakeResult<T> bake_prompt(model::Transformer<T>& model, const BakingData<T>& data, const BakingSettings& settings, Rng& rng,
                          const AttentionBiases<T>* initial) {
    check_baking_assumptions(model.spec(), settings.target);
    ICLAB_CHECK(model.mode() == model::Transformer<T>::Mode::training, "baking needs a training-mode model (gradients)");
    ICLAB_INPUT_CHECK(settings.batch >= 1 && data.samples >= 1, "baking needs continuations and a batch of at least one");
    ICLAB_INPUT_CHECK(settings.optimizer.kind != train::OptimizerKind::adamw || settings.optimizer.weight_decay == 0.0,
                      "baking does not decay its delta (optimizer weight decay 0)");
    const std::vector<T> base = model.params;
    BakeResult<T> result;
    model::ParameterLayout layout;
    std::vector<T> values, d_values;
    const bool lora = settings.target == BakeTarget::lora;
    if (lora) {
        const std::size_t rank = settings.rank ? settings.rank : lora_rank_for_equal_bytes(model.spec());
        ICLAB_INPUT_CHECK(rank >= 1, "no LoRA rank fits in the bytes of the bias adapter (" << bias_value_count(model.spec())
                                                                                            << " values, rank 1 needs " << lora_value_count(model.spec(), 1) << ")");
        result.lora = make_lora<T>(model.spec(), rank);
        for (std::size_t l = 0; l < result.lora.layers; ++l)  // A ~ N(0, s²), B = 0: δ = 0 at the start
            for (std::size_t s = 0; s < 3; ++s)
                for (std::size_t i = 0; i < result.lora.width * rank; ++i)
                    result.lora.a(l, s)[i] = static_cast<T>(settings.lora_init_std * rng.normal());
        layout = result.lora.layout;
        values = result.lora.values;
    } else {
        layout = bias_layout(model, settings.bias_d_nonnegative);
        if (initial) write_biases(model, *initial);
        values.resize(layout.total());
        gather_named(layout, values.data(), model.layout(), model.params.data());
    }
    const auto install = [&] {  // δ into the model
        if (lora) {
            result.lora.values = values;
            apply_lora(model, base, result.lora);
        } else {
            copy_named(layout, values.data(), model.layout(), model.params.data());
        }
    };
    const auto full_kl = [&] {
        double total = 0.0;
        for (std::size_t first = 0; first < data.samples; first += settings.batch) {
            const std::size_t count = std::min(settings.batch, data.samples - first);
            total += baking_loss(model, data, first, count, false) * static_cast<double>(count);
        }
        return total / static_cast<double>(data.samples);
    };
    install();
    result.initial_kl = full_kl();
    train::Optimizer<T> optimizer(settings.optimizer, layout);
    for (std::size_t step = 0; step < settings.steps; ++step) {
        const std::size_t first = (step * settings.batch) % data.samples;
        const std::size_t count = std::min(settings.batch, data.samples - first);
        result.loss.push_back(baking_loss(model, data, first, count, true));
        if (lora) {
            lora_backward(d_values, model, result.lora);
        } else {
            d_values.resize(layout.total());
            gather_named(layout, d_values.data(), model.layout(), model.grads.data());
        }
        optimizer.step(values, d_values, settings.lr);
        install();
    }
    result.final_kl = full_kl();
    if (!lora) result.biases = read_biases(model);
    model.params = base;
    return result;
}

#define ICLAB_INSTANTIATE(T)                                                                                                            \
    template LoraDelta<T> make_lora<T>(const model::ModelSpec&, std::size_t);                                                           \
    template void apply_lora(model::Transformer<T>&, const std::vector<T>&, const LoraDelta<T>&);                                       \
    template void lora_backward(std::vector<T>&, const model::Transformer<T>&, const LoraDelta<T>&);                                    \
    template std::vector<std::int32_t> sample_teacher_continuations(const model::Transformer<T>&, const std::int32_t*, std::size_t,     \
                                                                    std::size_t, std::size_t, double, Rng&);                            \
    template BakingData<T> make_baking_data(model::Transformer<T>&, const std::int32_t*, std::size_t, std::vector<std::int32_t>,        \
                                            std::size_t, std::size_t, std::size_t);                                                     \
    template double baking_loss(model::Transformer<T>&, const BakingData<T>&, std::size_t, std::size_t, bool);                          \
    template BakeResult<T> bake_prompt(model::Transformer<T>&, const BakingData<T>&, const BakingSettings&, Rng&,                       \
                                       const AttentionBiases<T>*);
ICLAB_INSTANTIATE(float)
ICLAB_INSTANTIATE(double)
#undef ICLAB_INSTANTIATE

}  // namespace iclab::icl
