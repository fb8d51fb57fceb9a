#include "framework/model/transformer_decode.hpp"

#include <algorithm>
#include <string>

#include "framework/model/transformer_detail.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/layers.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"

namespace iclab::model {

using detail::kAbsent;
using detail::offset_or_absent;

template <class T>
TransformerDecoder<T>::TransformerDecoder(const Transformer<T>& model, const SoftmaxPrompt* prompt, std::size_t learned_position_start)
    : model_(model), spec_(model.spec()), prompt_(prompt != nullptr && !prompt->empty() ? prompt : nullptr) {
    ICLAB_CHECK(spec_.input == ModelSpec::Input::tokens, "incremental decoding needs a token model");
    ICLAB_CHECK(spec_.mask == nn::MaskKind::causal && !spec_.isolate_queries,
                "incremental decoding needs the causal mask (this model uses " << nn::mask_kind_name(spec_.mask)
                                                                               << (spec_.isolate_queries ? " with isolated queries" : "")
                                                                               << ")");
    ICLAB_CHECK(prompt_ == nullptr || (spec_.attention == ModelSpec::Attention::softmax && prompt_->size() == spec_.layers),
                "a softmax prompt needs a softmax model and one entry per layer");
    if (prompt_ != nullptr)
        for (const auto& layer : *prompt_)
            ICLAB_CHECK(layer.size() == spec_.heads, "a decoding prompt needs one term per head, got " << layer.size());
    const ParameterLayout& layout = model.layout();
    const T* P = model.params.data();
    const auto at = [&](const std::string& name) {
        const std::size_t offset = offset_or_absent(layout, name);
        return offset == kAbsent ? nullptr : P + offset;
    };
    embedding_ = at("embedding.wte");
    positions_ = at("position_embedding");
    position_start_ = positions_ != nullptr ? learned_position_start : 0;
    ICLAB_INPUT_CHECK(position_start_ < spec_.max_seq_len, "a decoder starting at learned position " << position_start_
                                                                  << " leaves no room in the model's context of " << spec_.max_seq_len);
    final_gamma_ = at("final_norm.gamma");
    final_beta_ = at("final_norm.beta");
    unembedding_ = at("unembedding.w");  // absent: tied to the embedding (GPT-2)
    for (std::size_t l = 0; l < spec_.layers; ++l) {
        const std::string p = "blocks." + std::to_string(spec_.shared_layers ? 0 : l) + ".";
        layers_.push_back({at(p + "ln1.gamma"), at(p + "ln1.beta"), at(p + "attn.w_qkv"), at(p + "attn.b_qkv"), at(p + "attn.w_o"),
                           at(p + "attn.b_o"), at(p + "attn.b_kv"), at(p + "attn.b_d"), at(p + "attn.random_features"),
                           at(p + "ln2.gamma"), at(p + "ln2.beta"), at(p + "mlp.w_fc"), at(p + "mlp.b_fc"), at(p + "mlp.w_proj"),
                           at(p + "mlp.b_proj")});
    }
    reset();
}

template <class T>
void TransformerDecoder<T>::reset() {
    length_ = 0;
    count_ = 0;
    const std::size_t L = spec_.layers, H = spec_.heads, D = spec_.head_dim(), F = spec_.feature_dim();
    if (spec_.attention == ModelSpec::Attention::softmax) {
        keys_.assign(L, std::vector<T>(H * spec_.max_seq_len * D, T(0)));
        values_.assign(L, std::vector<T>(H * spec_.max_seq_len * D, T(0)));
    } else {
        state_.resize(L);
        key_sum_.resize(L);
        // S_{-1} = b_KV, z_{-1} = b_D (Eq. 19 with §7's initial state; with decay, the state the first step decays by γ)
        for (std::size_t l = 0; l < L; ++l) {
            state_[l].assign(layers_[l].b_kv, layers_[l].b_kv + H * F * D);
            key_sum_[l].assign(layers_[l].b_d, layers_[l].b_d + H * F);
        }
    }
}

template <class T>
void TransformerDecoder<T>::append(const std::int32_t* tokens, std::size_t count) {
    ICLAB_CHECK(count > 0, "append needs at least one token");
    ICLAB_INPUT_CHECK(position_start_ + length_ + count <= spec_.max_seq_len,
                      "the sequence would reach " << position_start_ + length_ + count << " tokens"
                                                  << (position_start_ ? " (counting the adapter's prompt)" : "")
                                                  << ", past the model's context of " << spec_.max_seq_len
                                                  << " tokens (model.max_seq_len)");
    for (std::size_t n = 0; n < count; ++n)
        ICLAB_INPUT_CHECK(tokens[n] >= 0 && static_cast<std::size_t>(tokens[n]) < spec_.vocab,
                          "token " << tokens[n] << " outside the vocabulary of " << spec_.vocab);
    const std::size_t N = count, C = spec_.width, V = spec_.vocab, hidden = spec_.mlp_ratio * C;
    const std::size_t H = spec_.heads, D = spec_.head_dim();
    x_.resize(N * C);
    normed_.resize(N * C);
    mean_.resize(N);
    rstd_.resize(N);
    qkv_.resize(N * 3 * C);
    att_.resize(N * C);
    mid_.resize(N * C);
    fc_.resize(N * hidden);
    fc_gelu_.resize(N * hidden);
    logits_.resize(N * V);

    // x_0 = wte[token] [+ E_pos[t]] at the absolute positions t = length_ + n, as Transformer::forward
    nn::embedding_forward(x_.data(), tokens, embedding_, N, C, V);
    if (positions_ != nullptr)
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t c = 0; c < C; ++c) x_[n * C + c] += positions_[(position_start_ + length_ + n) * C + c];

    // The attention options the model's forward uses (Transformer::attention_options / softmax_options).
    nn::AttentionShape shape{1, 1, H, D};
    shape.feature_dim = spec_.feature_dim();
    nn::LinearAttentionOptions linear;
    linear.feature_map = spec_.feature_map;
    linear.performer_input_scale = spec_.performer_input_scale;
    linear.normalize = spec_.normalize;
    linear.eps = spec_.normalizer_eps;
    linear.unnormalized_scale = spec_.unnormalized_scale > 0.0 ? spec_.unnormalized_scale : 1.0 / static_cast<double>(D);
    linear.rope = model_.rope();
    nn::SoftmaxAttentionOptions<T> soft;
    soft.rope = model_.rope();

    for (std::size_t l = 0; l < spec_.layers; ++l) {
        const LayerOffsets& o = layers_[l];
        const T* normed = x_.data();
        if (spec_.layernorm) {
            nn::layernorm_forward(normed_.data(), mean_.data(), rstd_.data(), x_.data(), o.ln1_gamma, o.ln1_beta, N, C,
                                  spec_.layernorm_eps);
            normed = normed_.data();
        }
        nn::linear_forward(qkv_.data(), normed, o.w_qkv, o.b_qkv, N, C, 3 * C);
        soft.prompt = prompt_ != nullptr ? &(*prompt_)[l] : nullptr;
        if (spec_.decay != ModelSpec::Decay::none) linear.decay = model_.attention_decay(l);  // γ_h (docs/decay.md)
        for (std::size_t n = 0; n < N; ++n) {  // token by token: each sees the caches up to and including itself
            const std::size_t position = length_ + n;
            if (spec_.attention == ModelSpec::Attention::softmax)
                nn::softmax_attention_step(att_.data() + n * C, keys_[l].data(), values_[l].data(), spec_.max_seq_len,
                                           qkv_.data() + n * 3 * C, position, shape, soft);
            else
                nn::linear_attention_step(att_.data() + n * C, state_[l].data(), key_sum_[l].data(), qkv_.data() + n * 3 * C,
                                          position, o.random, shape, linear);
        }
        // mid = [x +] att [W_o + b_o]
        if (spec_.output_projection)
            nn::linear_forward(mid_.data(), att_.data(), o.w_o, o.b_o, N, C, C);
        else
            std::copy(att_.begin(), att_.end(), mid_.begin());
        if (spec_.residual)
            for (std::size_t i = 0; i < N * C; ++i) mid_[i] += x_[i];
        if (spec_.mlp) {
            const T* normed_mid = mid_.data();
            if (spec_.layernorm) {
                nn::layernorm_forward(normed_.data(), mean_.data(), rstd_.data(), mid_.data(), o.ln2_gamma, o.ln2_beta, N, C,
                                      spec_.layernorm_eps);
                normed_mid = normed_.data();
            }
            nn::linear_gelu_forward(fc_gelu_.data(), fc_.data(), normed_mid, o.w_fc, o.b_fc, N, C, hidden);
            nn::linear_forward(x_.data(), fc_gelu_.data(), o.w_proj, o.b_proj, N, hidden, C);
            if (spec_.residual)
                for (std::size_t i = 0; i < N * C; ++i) x_[i] += mid_[i];
        } else {
            std::copy(mid_.begin(), mid_.end(), x_.begin());
        }
    }
    const T* final_stream = x_.data();
    if (spec_.final_norm()) {
        nn::layernorm_forward(normed_.data(), mean_.data(), rstd_.data(), x_.data(), final_gamma_, final_beta_, N, C,
                              spec_.layernorm_eps);
        final_stream = normed_.data();
    }
    if (unembedding_ != nullptr)
        nn::linear_forward<T>(logits_.data(), final_stream, unembedding_, nullptr, N, C, V);
    else  // tied: logits (N, V) = x (N, C) · wteᵀ, wte (V, C)
        nn::gemm<T>(nn::matrix(logits_.data(), N, V), nn::matrix(final_stream, N, C), nn::matrix(embedding_, V, C), false, true);
    length_ += count;
    count_ = count;
}

template class TransformerDecoder<float>;
template class TransformerDecoder<double>;

}  // namespace iclab::model
