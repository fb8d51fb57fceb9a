#include "framework/model/transformer.hpp"
#include "framework/model/transformer_detail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/nn/gemm.hpp"
#include "framework/core/profile.hpp"
#include "framework/nn/kernel_features.hpp"
#include "framework/nn/layers.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"

namespace iclab::model {

void ModelSpec::validate() const {
    ICLAB_CHECK(width > 0 && heads > 0 && layers > 0 && max_seq_len > 0, "model dimensions must be positive");
    ICLAB_CHECK(width % heads == 0, "model width " << width << " is not divisible by heads " << heads);
    ICLAB_CHECK(!mlp || mlp_ratio > 0, "mlp_ratio must be positive");
    if (input == Input::tokens) {
        ICLAB_CHECK(vocab > 0, "a token model needs a vocabulary");
    } else {
        ICLAB_CHECK(!tie_embeddings, "tied embeddings need a token model (a vector model has no embedding table)");
        ICLAB_CHECK(input_dim > 0 && output_dim > 0, "a vector model needs input_dim and output_dim > 0");
        ICLAB_CHECK(read_in != ReadIn::identity || input_dim == width,
                    "identity read-in needs input_dim (" << input_dim << ") = width (" << width << ")");
        ICLAB_CHECK(read_out != ReadOut::slice || output_dim <= width,
                    "slice read-out needs output_dim (" << output_dim << ") <= width (" << width << ")");
    }
    if (attention == Attention::linear) {
        ICLAB_CHECK(feature_map != nn::FeatureMap::performer || random_features > 0,
                    "performer features need random_features > 0");
        ICLAB_CHECK(!rope || feature_dim() % 2 == 0, "RoPE needs an even feature width, got " << feature_dim());
        ICLAB_CHECK(normalize || unnormalized_scale >= 0.0, "unnormalized_scale must be >= 0");
        detail::validate_decay(*this);  // transformer_decay.cpp
    } else {
        ICLAB_CHECK(decay == Decay::none, "attention decay needs linearized attention");
        ICLAB_CHECK(!rope || head_dim() % 2 == 0, "RoPE needs an even head width, got " << head_dim());
    }
}

ParameterLayout build_parameter_layout(const ModelSpec& spec) {
    spec.validate();
    const std::size_t C = spec.width, H = spec.heads, D = spec.head_dim(), F = spec.feature_dim();
    const std::size_t hidden = spec.mlp_ratio * C;
    const bool linear = spec.attention == ModelSpec::Attention::linear;
    ParameterLayout layout;
    if (spec.input == ModelSpec::Input::tokens) {
        layout.add("embedding.wte", {spec.vocab, C}, true, true,
                   spec.tie_embeddings ? "(V, C): row v is the embedding of token v; tied: also the output, logits = LN_f(x) wte^T"
                                       : "(V, C): row v is the embedding of token v");
    } else if (spec.read_in == ModelSpec::ReadIn::linear) {
        layout.add("read_in.w", {spec.input_dim, C}, true, true, "(d_in, C): x_0 = input W + b");
        layout.add("read_in.b", {C}, true, false, "(C): read-in bias");
    }
    if (spec.positions == ModelSpec::Positions::learned)
        layout.add("position_embedding", {spec.max_seq_len, C}, true, true, "(T_max, C): row t is added to x_0 at position t");
    const std::size_t stored_blocks = spec.shared_layers ? 1 : spec.layers;
    for (std::size_t l = 0; l < stored_blocks; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        if (spec.layernorm) {
            layout.add(p + "ln1.gamma", {C}, true, false, "(C): LayerNorm gain, y = (x - mean)/sqrt(var + eps) * gamma + beta");
            layout.add(p + "ln1.beta", {C}, true, false, "(C): LayerNorm shift");
        }
        layout.add(p + "attn.w_qkv", {C, 3 * C}, true, true,
                   "(C, 3C): [q | k | v] = x W + b; columns [0,C) W_Q, [C,2C) W_K, [2C,3C) W_V; head h owns columns h*D..h*D+D-1 of each");
        if (spec.qkv_bias) layout.add(p + "attn.b_qkv", {3 * C}, true, false, "(3C): bias of the q, k, v projections");
        if (spec.output_projection) {
            layout.add(p + "attn.w_o", {C, C}, true, true, "(C, C): output projection y = concat_h(out_h) W_o + b_o");
            layout.add(p + "attn.b_o", {C}, true, false, "(C): output projection bias");
        }
        if (linear) {
            layout.add(p + "attn.b_kv", {H, F, D}, spec.attention_bias_trainable, false,
                       "(H, F, D): b_KV of paper 000 Eq. 13 per head, added to sum_j R_j phi(k_j) v_j^T (F x D)");
            layout.add(p + "attn.b_d", {H, F}, spec.attention_bias_trainable, false,
                       "(H, F): b_D of paper 000 Eq. 13 per head, added to sum_j phi(k_j) in the normalizer",
                       spec.attention_bias_d_nonnegative);
            if (spec.decay == ModelSpec::Decay::learned)
                layout.add(p + "attn.decay_logit", {H}, true, false,
                           "(H): learned decay gamma_h = sigmoid(theta_h) per head (docs/decay.md): S_i = gamma S_{i-1} + ...");
            if (spec.feature_map == nn::FeatureMap::performer)
                layout.add(p + "attn.random_features", {D, F}, false, false,
                           "(D, R): performer directions, column r is W_r; phi(x) = exp(W^T (s x) - |s x|^2/2)/sqrt(R); fixed, never trained");
        }
        if (spec.mlp) {
            if (spec.layernorm) {
                layout.add(p + "ln2.gamma", {C}, true, false, "(C): LayerNorm gain");
                layout.add(p + "ln2.beta", {C}, true, false, "(C): LayerNorm shift");
            }
            layout.add(p + "mlp.w_fc", {C, hidden}, true, true, "(C, F_mlp), F_mlp = mlp_ratio C: h = gelu_tanh(x W_fc + b_fc)");
            layout.add(p + "mlp.b_fc", {hidden}, true, false, "(F_mlp)");
            layout.add(p + "mlp.w_proj", {hidden, C}, true, true, "(F_mlp, C): y = h W_proj + b_proj");
            layout.add(p + "mlp.b_proj", {C}, true, false, "(C)");
        }
    }
    if (spec.final_norm()) {
        layout.add("final_norm.gamma", {C}, true, false, "(C): final LayerNorm gain");
        layout.add("final_norm.beta", {C}, true, false, "(C): final LayerNorm shift");
    }
    if (spec.input == ModelSpec::Input::tokens) {
        if (!spec.tie_embeddings) layout.add("unembedding.w", {C, spec.vocab}, true, true, "(C, V): logits = LN_f(x) W (no bias)");
    } else if (spec.read_out == ModelSpec::ReadOut::linear) {
        layout.add("read_out.w", {C, spec.output_dim}, true, true, "(C, d_out): output = LN_f(x) W + b");
        layout.add("read_out.b", {spec.output_dim}, true, false, "(d_out): read-out bias");
    }
    return layout;
}

using detail::kAbsent;
using detail::offset_or_absent;

template <class T>
Transformer<T>::Transformer(const ModelSpec& spec, Mode mode) : spec_(spec), mode_(mode), layout_(build_parameter_layout(spec)) {
    params.assign(layout_.total(), T(0));
    if (mode_ == Mode::training) grads.assign(layout_.total(), T(0));
    if (spec_.rope) {
        const bool linear = spec_.attention == ModelSpec::Attention::linear;
        // one position more than the longest sequence: ICLCA rotates by R_{-M} with M up to max_seq_len
        rope_.build(spec_.max_seq_len + 1, linear ? spec_.feature_dim() : spec_.head_dim(), spec_.rope_base);
    }
    const auto find = [&](const std::string& name) { return offset_or_absent(layout_, name); };
    input_offset_ = spec_.input == ModelSpec::Input::tokens ? find("embedding.wte") : find("read_in.w");
    input_bias_offset_ = find("read_in.b");
    position_offset_ = find("position_embedding");
    for (std::size_t l = 0; l < spec_.layers; ++l) {
        const std::string p = "blocks." + std::to_string(spec_.shared_layers ? 0 : l) + ".";
        BlockOffsets o{};
        o.ln1_gamma = find(p + "ln1.gamma");
        o.ln1_beta = find(p + "ln1.beta");
        o.w_qkv = find(p + "attn.w_qkv");
        o.b_qkv = find(p + "attn.b_qkv");
        o.w_o = find(p + "attn.w_o");
        o.b_o = find(p + "attn.b_o");
        o.b_kv = find(p + "attn.b_kv");
        o.b_d = find(p + "attn.b_d");
        o.random = find(p + "attn.random_features");
        o.decay_logit = find(p + "attn.decay_logit");
        o.ln2_gamma = find(p + "ln2.gamma");
        o.ln2_beta = find(p + "ln2.beta");
        o.w_fc = find(p + "mlp.w_fc");
        o.b_fc = find(p + "mlp.b_fc");
        o.w_proj = find(p + "mlp.w_proj");
        o.b_proj = find(p + "mlp.b_proj");
        block_offsets_.push_back(o);
    }
    final_gamma_offset_ = find("final_norm.gamma");
    final_beta_offset_ = find("final_norm.beta");
    output_offset_ = spec_.input == ModelSpec::Input::tokens ? (spec_.tie_embeddings ? input_offset_ : find("unembedding.w"))
                                                             : find("read_out.w");
    output_bias_offset_ = find("read_out.b");
    blocks_.resize(mode_ == Mode::training ? spec_.layers : 1);
}

template <class T>
void Transformer<T>::init(Rng& rng) {
    const double residual_std = spec_.init_std / std::sqrt(2.0 * static_cast<double>(spec_.layers));
    for (const auto& entry : layout_.entries()) {
        T* p = params.data() + entry.offset;
        const std::string& name = entry.name;
        const auto ends_with = [&](const char* suffix) {
            const std::string s(suffix);
            return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
        };
        if (ends_with("attn.random_features")) {
            // (D, R), column r = W_r ~ N(0, I_D); orthogonal: blocks of D columns orthonormalized (Gram-Schmidt)
            // and rescaled by independent chi(D) norms (Yu et al. 2016, Choromanski et al. 2020).
            const std::size_t D = entry.shape[0], R = entry.shape[1];
            const std::vector<double> w = nn::draw_feature_directions(D, R, spec_.orthogonal_features, rng);
            for (std::size_t i = 0; i < D * R; ++i) p[i] = static_cast<T>(w[i]);
        } else if (ends_with("attn.decay_logit")) {
            detail::init_decay_logits(p, entry.size);  // gamma_h = 1 - 2^(-5-h) (transformer_decay.cpp)
        } else if (ends_with(".gamma")) {
            std::fill(p, p + entry.size, T(1));
        } else if (entry.weight_decay) {  // matrices
            const double std_dev = (ends_with("attn.w_o") || ends_with("mlp.w_proj")) ? residual_std : spec_.init_std;
            for (std::size_t i = 0; i < entry.size; ++i) p[i] = static_cast<T>(rng.normal(0.0, std_dev));
        } else {
            std::fill(p, p + entry.size, T(0));  // biases, LayerNorm shifts, b_KV, b_D
        }
    }
}

template <class T>
void Transformer<T>::zero_grad() {
    ICLAB_CHECK(mode_ == Mode::training, "an inference-mode model has no gradients");
    const profile::Scope scope(profile::Kind::allocation);
    std::fill(grads.begin(), grads.end(), T(0));
}

template <class T>
nn::LinearAttentionOptions Transformer<T>::attention_options() const {
    nn::LinearAttentionOptions options;
    options.feature_map = spec_.feature_map;
    options.performer_input_scale = spec_.performer_input_scale;
    options.normalize = spec_.normalize;
    options.eps = spec_.normalizer_eps;
    options.unnormalized_scale =
        spec_.unnormalized_scale > 0.0 ? spec_.unnormalized_scale : 1.0 / static_cast<double>(spec_.head_dim());
    options.rope = spec_.rope ? &rope_ : nullptr;
    options.mask.kind = spec_.mask;
    options.mask.prefix_length = prefix_length_;
    options.mask.isolate_queries = spec_.isolate_queries;
    options.mask.query_self = spec_.query_self;
    options.small_gemm = spec_.small_gemm;
    return options;
}

template <class T>
nn::SoftmaxAttentionOptions<T> Transformer<T>::softmax_options() const {
    nn::SoftmaxAttentionOptions<T> options;
    options.rope = spec_.rope ? &rope_ : nullptr;
    const nn::LinearAttentionOptions linear = attention_options();
    options.mask = linear.mask;
    options.small_gemm = spec_.small_gemm;
    return options;
}

template <class T>
bool Transformer<T>::use_recurrent_form() const {
    if (spec_.attention != ModelSpec::Attention::linear || spec_.mask != nn::MaskKind::causal || spec_.isolate_queries)
        return false;
    switch (spec_.attention_form) {
        case ModelSpec::AttentionForm::quadratic: return false;
        case ModelSpec::AttentionForm::recurrent: return true;
        case ModelSpec::AttentionForm::automatic: break;
    }
    return time_ >= spec_.recurrent_min_time;
}

template <class T>
const T* Transformer<T>::residual_stream(std::size_t depth) const {
    ICLAB_CHECK(mode_ == Mode::training, "residual_stream needs a training-mode model (inference reuses its buffers)");
    ICLAB_CHECK(depth <= spec_.layers, "residual_stream: depth " << depth << " > layers " << spec_.layers);
    return depth == spec_.layers ? final_input_.data() : blocks_[depth].input.data();
}

template <class T>
T* Transformer<T>::block_input(std::size_t l) {
    if (mode_ == Mode::training) return blocks_[l].input.data();
    return stream_[l % 2].data();
}

template <class T>
T* Transformer<T>::block_output(std::size_t l) {
    if (l + 1 == spec_.layers) return final_input_.data();
    if (mode_ == Mode::training) return blocks_[l + 1].input.data();
    return stream_[(l + 1) % 2].data();
}

template <class T>
void Transformer<T>::allocate(std::size_t batch, std::size_t time) {
    const profile::Scope scope(profile::Kind::allocation);
    ICLAB_CHECK(time <= spec_.max_seq_len,
                "sequence of " << time << " tokens is longer than the model's max_seq_len " << spec_.max_seq_len);
    batch_ = batch;
    time_ = time;
    const std::size_t N = batch * time, C = spec_.width, hidden = spec_.mlp_ratio * C;
    for (auto& a : blocks_) {
        if (mode_ == Mode::training) a.input.resize(N * C);
        if (spec_.layernorm) {
            a.ln1.resize(N * C);
            a.ln1_mean.resize(N);
            a.ln1_rstd.resize(N);
        }
        a.qkv.resize(N * 3 * C);
        a.att.resize(N * C);
        a.mid.resize(N * C);
        if (spec_.mlp) {
            if (spec_.layernorm) {
                a.ln2.resize(N * C);
                a.ln2_mean.resize(N);
                a.ln2_rstd.resize(N);
            }
            a.fc.resize(N * hidden);
            a.fc_gelu.resize(N * hidden);
        }
    }
    if (mode_ == Mode::inference)
        for (auto& s : stream_) s.resize(N * C);
    final_input_.resize(N * C);
    if (spec_.final_norm()) {
        final_norm_.resize(N * C);
        final_mean_.resize(N);
        final_rstd_.resize(N);
    }
    outputs_.resize(N * spec_.output_size());
}

template <class T>
void Transformer<T>::forward(const std::int32_t* tokens, std::size_t batch, std::size_t time) {
    ICLAB_CHECK(spec_.input == ModelSpec::Input::tokens, "this model reads vectors, not tokens");
    allocate(batch, time);
    const std::size_t N = batch * time;
    tokens_.assign(tokens, tokens + N);
    for (std::size_t n = 0; n < N; ++n)
        ICLAB_CHECK(tokens[n] >= 0 && static_cast<std::size_t>(tokens[n]) < spec_.vocab,
                    "token " << tokens[n] << " outside the vocabulary of " << spec_.vocab);
    nn::embedding_forward(block_input(0), tokens, params.data() + input_offset_, N, spec_.width, spec_.vocab);
    forward_trunk();
}

template <class T>
void Transformer<T>::forward(const T* vectors, std::size_t batch, std::size_t time) {
    ICLAB_CHECK(spec_.input == ModelSpec::Input::vectors, "this model reads tokens, not vectors");
    allocate(batch, time);
    const std::size_t N = batch * time, C = spec_.width;
    vectors_.assign(vectors, vectors + N * spec_.input_dim);
    if (spec_.read_in == ModelSpec::ReadIn::linear)
        nn::linear_forward(block_input(0), vectors, params.data() + input_offset_, params.data() + input_bias_offset_, N,
                           spec_.input_dim, C, static_cast<const T*>(nullptr), spec_.large_gemm);
    else
        std::copy(vectors, vectors + N * C, block_input(0));
    forward_trunk();
}

template <class T>
void Transformer<T>::forward_trunk() {
    const std::size_t N = batch_ * time_, C = spec_.width, hidden = spec_.mlp_ratio * C;
    const T* P = params.data();
    first_non_finite_ = NonFiniteSite{};
    if (position_offset_ != kAbsent) {  // x_0[b, t] += E_pos[start + t]
        const profile::Scope scope(profile::Kind::input);
        ICLAB_INPUT_CHECK(learned_position_start_ + time_ <= spec_.max_seq_len,
                          "positions " << learned_position_start_ << ".." << learned_position_start_ + time_ - 1
                                       << " lie past the model's " << spec_.max_seq_len << " learned positions");
        for (std::size_t n = 0; n < N; ++n) {
            const T* e = P + position_offset_ + (learned_position_start_ + n % time_) * C;
            T* x = block_input(0) + n * C;
            for (std::size_t c = 0; c < C; ++c) x[c] += e[c];
        }
    }
    const std::size_t outside = NonFiniteSite::kNoLayer;
    note_non_finite(block_input(0), C, outside, "input embedding (and positions)");
    const auto at = [&](std::size_t offset) { return offset == kAbsent ? nullptr : P + offset; };
    nn::AttentionShape shape{batch_, time_, spec_.heads, spec_.head_dim()};
    shape.feature_dim = spec_.feature_dim();
    const nn::LinearAttentionOptions options = attention_options();
    nn::LinearAttentionOptions decayed = options;  // per layer with its decay (model.decay), when on
    nn::SoftmaxAttentionOptions<T> soft = softmax_options();
    const bool recurrent = use_recurrent_form();
    if (softmax_prompt_ != nullptr && !softmax_prompt_->empty())
        ICLAB_CHECK(spec_.attention == ModelSpec::Attention::softmax && softmax_prompt_->size() == spec_.layers,
                    "a softmax prompt needs a softmax model and one entry per layer");
    if (capture_qkv_) captured_qkv_.resize(spec_.layers);

    for (std::size_t l = 0; l < spec_.layers; ++l) {
        BlockActivations& a = blocks_[mode_ == Mode::training ? l : 0];
        const BlockOffsets& o = block_offsets_[l];
        const T* input = block_input(l);
        T* output = block_output(l);
        const T* normed = input;
        if (spec_.layernorm) {
            nn::layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), input, P + o.ln1_gamma, P + o.ln1_beta,
                                  N, C, spec_.layernorm_eps);
            normed = a.ln1.data();
            note_non_finite(normed, C, l, "LayerNorm ln_1");
        }
        nn::linear_forward<T>(a.qkv.data(), normed, P + o.w_qkv, at(o.b_qkv), N, C, 3 * C, nullptr, spec_.large_gemm);
        note_non_finite(a.qkv.data(), 3 * C, l, "q, k, v projection (x W_qkv + b_qkv)");
        if (capture_qkv_) captured_qkv_[l].assign(a.qkv.begin(), a.qkv.end());
        soft.prompt = softmax_prompt_ != nullptr && !softmax_prompt_->empty() ? &(*softmax_prompt_)[l] : nullptr;
        if (spec_.decay != ModelSpec::Decay::none) decayed.decay = attention_decay(l);
        const nn::LinearAttentionOptions& attention = spec_.decay != ModelSpec::Decay::none ? decayed : options;
        if (spec_.attention == ModelSpec::Attention::softmax)
            nn::softmax_attention_forward(a.att.data(), a.softmax, a.qkv.data(), shape, soft);
        else if (recurrent)
            nn::linear_attention_recurrent_forward(a.att.data(), a.attention, a.qkv.data(), P + o.b_kv, P + o.b_d, at(o.random),
                                                   shape, attention);
        else {
            a.attention.keep_scores = mode_ == Mode::training;  // backward reuses them (memory_estimate counts H T per token)
            nn::linear_attention_forward(a.att.data(), a.attention, a.qkv.data(), P + o.b_kv, P + o.b_d, at(o.random), shape,
                                         attention);
        }
        note_non_finite(a.att.data(), C, l, spec_.attention == ModelSpec::Attention::softmax ? "softmax attention" : "linear attention");
        min_denominator_.resize(spec_.layers);
        min_denominator_[l] = std::numeric_limits<double>::quiet_NaN();
        if (spec_.attention == ModelSpec::Attention::linear && spec_.normalize && !a.attention.den.empty())
            min_denominator_[l] = static_cast<double>(*std::min_element(a.attention.den.begin(), a.attention.den.end()));
        if (capture_states_) {
            ICLAB_CHECK(spec_.attention == ModelSpec::Attention::linear, "only linear attention has a recurrent state");
            final_states_.resize(spec_.layers);
            final_key_sums_.resize(spec_.layers);
            final_states_[l].resize(batch_ * spec_.heads * shape.features() * spec_.head_dim());
            final_key_sums_[l].resize(batch_ * spec_.heads * shape.features());
            nn::linear_attention_final_state(final_states_[l].data(), final_key_sums_[l].data(), a.attention, a.qkv.data(),
                                             P + o.b_kv, P + o.b_d, shape, attention.decay);
        }
        // mid = [input +] att [W_o + b_o]; without an MLP, mid is the block's output (written there directly), and
        // with a pre-LN MLP the residual add runs inside LN2's pass (nn::residual_layernorm_forward, bit-identical)
        // (the residual add: in the projection's parallel region, or a pass of its own without a projection)
        T* mid = spec_.mlp ? a.mid.data() : output;
        const bool fused_residual = spec_.residual && spec_.mlp && spec_.layernorm;
        const bool residual_here = spec_.residual && !fused_residual;
        if (spec_.output_projection) {
            nn::linear_forward(mid, a.att.data(), P + o.w_o, P + o.b_o, N, C, C, residual_here ? input : nullptr,
                               spec_.large_gemm);
        } else {
            std::copy(a.att.begin(), a.att.end(), mid);
            if (residual_here)
                for (std::size_t i = 0; i < N * C; ++i) mid[i] += input[i];
        }
        note_non_finite(mid, C, l, residual_here ? "attention output (W_o, plus the residual)" : "attention output projection W_o");
        if (spec_.mlp) {
            const T* normed_mid = a.mid.data();
            if (fused_residual)
                nn::residual_layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.mid.data(), input,
                                               P + o.ln2_gamma, P + o.ln2_beta, N, C, spec_.layernorm_eps);
            else if (spec_.layernorm)
                nn::layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.mid.data(), P + o.ln2_gamma,
                                      P + o.ln2_beta, N, C, spec_.layernorm_eps);
            if (fused_residual) note_non_finite(a.mid.data(), C, l, "residual stream after attention");
            if (spec_.layernorm) normed_mid = a.ln2.data();
            if (spec_.layernorm) note_non_finite(normed_mid, C, l, "LayerNorm ln_2");
            // fc = x W_fc + b_fc, fc_gelu = gelu(fc): the bias add and GELU in the product's parallel region
            nn::linear_gelu_forward(a.fc_gelu.data(), a.fc.data(), normed_mid, P + o.w_fc, P + o.b_fc, N, C, hidden,
                                    spec_.large_gemm);
            nn::linear_forward(output, a.fc_gelu.data(), P + o.w_proj, P + o.b_proj, N, hidden, C,
                               spec_.residual ? a.mid.data() : nullptr, spec_.large_gemm);  // h W_proj + b_proj [+ mid]
            note_non_finite(a.fc.data(), hidden, l, "MLP fc (x W_fc + b_fc)");
            note_non_finite(a.fc_gelu.data(), hidden, l, "GELU");
            note_non_finite(output, C, l, spec_.residual ? "MLP projection (h W_proj + b_proj, plus the residual)" : "MLP projection");
        }
    }
    const T* final_stream = final_input_.data();
    if (spec_.final_norm()) {
        nn::layernorm_forward(final_norm_.data(), final_mean_.data(), final_rstd_.data(), final_input_.data(),
                              P + final_gamma_offset_, P + final_beta_offset_, N, C, spec_.layernorm_eps);
        final_stream = final_norm_.data();
        note_non_finite(final_stream, C, outside, "final LayerNorm ln_f");
    }
    const std::size_t out = spec_.output_size();
    if (spec_.tie_embeddings) {  // logits (N, V) = LN_f(x) (N, C) · wteᵀ, wte (V, C)
        nn::gemm<T>(nn::matrix(outputs_.data(), N, out), nn::matrix(final_stream, N, C), nn::matrix(P + output_offset_, out, C),
                    false, true, T(1), T(0), spec_.large_gemm);
    } else if (spec_.input == ModelSpec::Input::tokens || spec_.read_out == ModelSpec::ReadOut::linear) {
        nn::linear_forward<T>(outputs_.data(), final_stream, P + output_offset_, at(output_bias_offset_), N, C, out, nullptr,
                              spec_.large_gemm);
    } else {  // slice: the last d_out channels
        for (std::size_t n = 0; n < N; ++n)
            std::copy(final_stream + n * C + (C - out), final_stream + (n + 1) * C, outputs_.data() + n * out);
    }
    note_non_finite(outputs_.data(), out, outside, spec_.input == ModelSpec::Input::tokens ? "logits (read-out)" : "outputs (read-out)");
}

template <class T>
void Transformer<T>::note_non_finite(const T* data, std::size_t width, std::size_t layer, const char* op) {
    if (!trace_non_finite_ || first_non_finite_.found()) return;
    const std::size_t count = batch_ * time_ * width;
    for (std::size_t i = 0; i < count; ++i)
        if (!std::isfinite(data[i])) {
            const std::size_t row = i / width;
            first_non_finite_ = NonFiniteSite{op, layer, row / time_, row % time_};
            return;
        }
}

template <class T>
std::string Transformer<T>::NonFiniteSite::describe() const {
    if (!found()) return "nowhere (every value finite)";
    const std::string where = layer == kNoLayer ? std::string(op) : "layer " + std::to_string(layer) + " (from 0), " + op;
    return where + ", at position " + std::to_string(time) + (batch > 0 ? " of sequence " + std::to_string(batch) : "");
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace iclab::model
