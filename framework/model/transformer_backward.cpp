// The transformer's loss and backward pass (forward: transformer.cpp). Split out to keep each file readable at once;
// the same class, the same flat parameter/gradient buffers.
#include <algorithm>
#include <cmath>

#include "framework/model/transformer.hpp"
#include "framework/model/transformer_detail.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/core/profile.hpp"
#include "framework/nn/kernel_features.hpp"
#include "framework/nn/layers.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"

namespace iclab::model {

using detail::kAbsent;

template <class T>
double Transformer<T>::loss(const std::int32_t* targets, const T* weights) {
    ICLAB_CHECK(spec_.input == ModelSpec::Input::tokens, "cross-entropy loss needs a token model");
    const std::size_t N = batch_ * time_;
    probs_.resize(N * spec_.vocab);
    losses_.resize(N);
    nn::cross_entropy_forward(probs_.data(), losses_.data(), outputs_.data(), targets, N, spec_.vocab);
    double total = 0.0;
    for (std::size_t n = 0; n < N; ++n) total += static_cast<double>(weights[n]) * losses_[n];
    return total;
}

template <class T>
void Transformer<T>::backward(const std::int32_t* targets, const T* weights) {
    const std::size_t N = batch_ * time_, V = spec_.vocab;
    d_outputs_.resize(N * V);  // cross_entropy_backward writes every element
    nn::cross_entropy_backward(d_outputs_.data(), probs_.data(), targets, weights, N, V);
    backward_outputs(d_outputs_.data());
}

template <class T>
void Transformer<T>::backward_outputs(const T* d_outputs) {
    ICLAB_CHECK(mode_ == Mode::training, "backward needs a training-mode model");
    if (softmax_prompt_ != nullptr && !softmax_prompt_->empty())  // kernel terms only (nn::softmax_attention_backward)
        ICLAB_CHECK(spec_.attention == ModelSpec::Attention::softmax && softmax_prompt_->size() == spec_.layers,
                    "a softmax prompt needs a softmax model and one entry per layer");
    const std::size_t N = batch_ * time_, C = spec_.width, hidden = spec_.mlp_ratio * C, out = spec_.output_size();
    const T* P = params.data();
    T* G = grads.data();
    const auto at = [&](std::size_t offset) { return offset == kAbsent ? nullptr : P + offset; };
    const auto grad_at = [&](std::size_t offset) { return offset == kAbsent ? nullptr : G + offset; };
    nn::AttentionShape shape{batch_, time_, spec_.heads, spec_.head_dim()};
    shape.feature_dim = spec_.feature_dim();
    const nn::LinearAttentionOptions options = attention_options();
    nn::LinearAttentionOptions decayed = options;  // per layer with its decay (model.decay), when on
    std::vector<T> d_gamma;                        // learned decay: dγ (H) of one layer
    nn::SoftmaxAttentionOptions<T> soft = softmax_options();
    const bool recurrent = use_recurrent_form();
    const nn::SmallGemm kernel = spec_.large_gemm;  // the products over the whole batch (model.large_gemm)
    const auto zeroed = [](std::vector<T>& buffer, std::size_t size) {
        const profile::Scope scope(profile::Kind::allocation);
        buffer.assign(size, T(0));
    };

    // Read-out, then the final norm: d_residual = d(loss)/d(residual stream), carried down through the blocks.
    // Buffers a product or a norm writes in full are not zeroed first: written with β = 0 (or accumulate = false) they
    // get the bits of the accumulation into zeros they replace (+0 + x; OpenBLAS's β = 0 zero-fills and then adds).
    const T* final_stream = spec_.final_norm() ? final_norm_.data() : final_input_.data();
    if (spec_.tie_embeddings) {  // logits = s wteᵀ: d s (N, C) = d_out (N, V) · wte (V, C); d wte (V, C) += d_outᵀ · s
        d_norm_.resize(N * C);
        nn::gemm<T>(nn::matrix(d_norm_.data(), N, C), nn::matrix(d_outputs, N, out), nn::matrix(P + output_offset_, out, C),
                    false, false, T(1), T(0), kernel);
        nn::gemm<T>(nn::matrix(G + output_offset_, out, C), nn::matrix(d_outputs, N, out), nn::matrix(final_stream, N, C), true,
                    false, T(1), T(1), kernel);
    } else if (spec_.input == ModelSpec::Input::tokens || spec_.read_out == ModelSpec::ReadOut::linear) {
        d_norm_.resize(N * C);
        nn::linear_backward<T>(d_norm_.data(), G + output_offset_, grad_at(output_bias_offset_), d_outputs,
                               final_stream, P + output_offset_, N, C, out, false, kernel);
    } else {
        zeroed(d_norm_, N * C);
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t c = 0; c < out; ++c) d_norm_[n * C + (C - out) + c] += d_outputs[n * out + c];
    }
    d_residual_.resize(N * C);
    if (spec_.final_norm())
        nn::layernorm_backward(d_residual_.data(), G + final_gamma_offset_, G + final_beta_offset_, d_norm_.data(),
                               final_input_.data(), P + final_gamma_offset_, final_mean_.data(), final_rstd_.data(), N, C,
                               false);
    else
        std::copy(d_norm_.begin(), d_norm_.end(), d_residual_.begin());
    // A sublayer y = [u +] f(norm(u)): the branch reads d_y first; then d_u = [d_y +] normᵀ (d branch input).
    const auto into_stream = [&](const T* normed_input_grad, const T* input, std::size_t gamma, std::size_t beta,
                                 const T* mean, const T* rstd) {
        if (spec_.layernorm) {  // without a residual d_u = normᵀ(...) alone: written (accumulate = false)
            nn::layernorm_backward(d_residual_.data(), G + gamma, G + beta, normed_input_grad, input, P + gamma, mean, rstd, N, C,
                                   spec_.residual);
        } else {
            if (!spec_.residual) std::fill(d_residual_.begin(), d_residual_.end(), T(0));
            for (std::size_t i = 0; i < N * C; ++i) d_residual_[i] += normed_input_grad[i];
        }
    };
    for (std::size_t l = spec_.layers; l-- > 0;) {
        BlockActivations& a = blocks_[l];
        const BlockOffsets& o = block_offsets_[l];
        if (spec_.mlp) {  // output = [mid +] MLP(LN2(mid))
            d_hidden_.resize(N * hidden);  // written in full: d fc = (d_residual W_projᵀ) ⊙ gelu'(fc), in the product's region
            nn::linear_backward(d_hidden_.data(), G + o.w_proj, G + o.b_proj, d_residual_.data(), a.fc_gelu.data(),
                                P + o.w_proj, N, hidden, C, false, kernel, a.fc.data());
            d_norm_.resize(N * C);  // and d b_fc (Σ_n d fc in row order) as the side work of this layer's backward
            nn::linear_backward<T>(d_norm_.data(), G + o.w_fc, G + o.b_fc, d_hidden_.data(),
                                   spec_.layernorm ? a.ln2.data() : a.mid.data(), P + o.w_fc, N, C, hidden, false, kernel);
            into_stream(d_norm_.data(), a.mid.data(), o.ln2_gamma, o.ln2_beta, a.ln2_mean.data(), a.ln2_rstd.data());
        }
        // mid = [input +] Attn(LN1(input)) [W_o + b_o]
        d_att_.resize(N * C);
        if (spec_.output_projection)
            nn::linear_backward(d_att_.data(), G + o.w_o, G + o.b_o, d_residual_.data(), a.att.data(), P + o.w_o, N, C, C, false,
                                kernel);
        else
            std::copy(d_residual_.begin(), d_residual_.end(), d_att_.begin());
        // softmax_attention_backward and linear_attention_backward write every element; the recurrent form accumulates
        const bool writes_all = spec_.attention == ModelSpec::Attention::softmax || !recurrent;
        if (writes_all)
            d_qkv_.resize(N * 3 * C);
        else
            zeroed(d_qkv_, N * 3 * C);
        // with model.decay: the layer's γ_h, and for a learned decay dγ (then dθ, accumulate_decay_gradient)
        const bool decay = spec_.attention == ModelSpec::Attention::linear && spec_.decay != ModelSpec::Decay::none;
        if (decay) decayed.decay = attention_decay(l);
        const nn::LinearAttentionOptions& attention = decay ? decayed : options;
        const bool learned = decay && spec_.decay == ModelSpec::Decay::learned;
        if (learned) d_gamma.assign(spec_.heads, T(0));
        T* d_decay = learned ? d_gamma.data() : nullptr;
        // the prompt's kernel terms as the forward added them; their b_KV, b_D gradients go where the terms point
        soft.prompt = softmax_prompt_ != nullptr && !softmax_prompt_->empty() ? &(*softmax_prompt_)[l] : nullptr;
        if (spec_.attention == ModelSpec::Attention::softmax)
            nn::softmax_attention_backward(d_qkv_.data(), d_att_.data(), a.qkv.data(), a.softmax, shape, soft);
        else if (recurrent)
            nn::linear_attention_recurrent_backward(d_qkv_.data(), G + o.b_kv, G + o.b_d, d_att_.data(), a.qkv.data(),
                                                    P + o.b_kv, P + o.b_d, at(o.random), a.att.data(), a.attention, shape,
                                                    attention, d_decay);
        else
            nn::linear_attention_backward(d_qkv_.data(), G + o.b_kv, G + o.b_d, d_att_.data(), a.qkv.data(), P + o.b_kv,
                                          P + o.b_d, at(o.random), a.att.data(), a.attention, shape, attention, d_decay);
        if (learned) accumulate_decay_gradient(l, d_gamma);
        d_norm_.resize(N * C);
        nn::linear_backward(d_norm_.data(), G + o.w_qkv, grad_at(o.b_qkv), d_qkv_.data(),
                            spec_.layernorm ? a.ln1.data() : a.input.data(), P + o.w_qkv, N, C, 3 * C, false, kernel);
        into_stream(d_norm_.data(), a.input.data(), o.ln1_gamma, o.ln1_beta, a.ln1_mean.data(), a.ln1_rstd.data());
    }
    if (position_offset_ != kAbsent) {  // dE_pos[t] += Σ_b d x_0[b, t]
        const profile::Scope scope(profile::Kind::input);
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t c = 0; c < C; ++c) G[position_offset_ + (n % time_) * C + c] += d_residual_[n * C + c];
    }
    if (spec_.input == ModelSpec::Input::tokens)
        nn::embedding_backward(G + input_offset_, d_residual_.data(), tokens_.data(), N, C);
    else if (spec_.read_in == ModelSpec::ReadIn::linear)
        nn::linear_backward<T>(nullptr, G + input_offset_, G + input_bias_offset_, d_residual_.data(), vectors_.data(),
                               P + input_offset_, N, spec_.input_dim, C, true, kernel);
}

// Explicit instantiations of the members defined here.
#define ICLAB_INSTANTIATE(T) \
    template double Transformer<T>::loss(const std::int32_t*, const T*); \
    template void Transformer<T>::backward(const std::int32_t*, const T*); \
    template void Transformer<T>::backward_outputs(const T*);
ICLAB_INSTANTIATE(float)
ICLAB_INSTANTIATE(double)
#undef ICLAB_INSTANTIATE

}  // namespace iclab::model
