#include "framework/model/transformer.hpp"

#include <algorithm>
#include <cmath>

#include "framework/nn/layers.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"

namespace iclab::model {

void ModelSpec::validate() const {
    ICLAB_CHECK(vocab > 0 && width > 0 && heads > 0 && layers > 0 && max_seq_len > 0,
                "model dimensions must be positive");
    ICLAB_CHECK(width % heads == 0, "model width " << width << " is not divisible by heads " << heads);
    ICLAB_CHECK(!rope || head_dim() % 2 == 0, "RoPE needs an even head width, got " << head_dim());
    ICLAB_CHECK(normalize || unnormalized_scale >= 0.0, "unnormalized_scale must be >= 0");
}

ParameterLayout build_parameter_layout(const ModelSpec& spec) {
    spec.validate();
    const std::size_t C = spec.width, V = spec.vocab, H = spec.heads, D = spec.head_dim(), F = D;
    const std::size_t hidden = spec.mlp_ratio * C;
    ParameterLayout layout;
    layout.add("embedding.wte", {V, C}, true, true, "(V, C): row v is the embedding of token v");
    for (std::size_t l = 0; l < spec.layers; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        layout.add(p + "ln1.gamma", {C}, true, false, "(C): LayerNorm gain, y = (x - mean)/sqrt(var + eps) * gamma + beta");
        layout.add(p + "ln1.beta", {C}, true, false, "(C): LayerNorm shift");
        layout.add(p + "attn.w_qkv", {C, 3 * C}, true, true,
                   "(C, 3C): [q | k | v] = x W + b; columns [0,C) W_Q, [C,2C) W_K, [2C,3C) W_V; head h owns columns h*D..h*D+D-1 of each");
        layout.add(p + "attn.b_qkv", {3 * C}, true, false, "(3C): bias of the q, k, v projections");
        layout.add(p + "attn.w_o", {C, C}, true, true, "(C, C): output projection y = concat_h(out_h) W_o + b_o");
        layout.add(p + "attn.b_o", {C}, true, false, "(C): output projection bias");
        layout.add(p + "attn.b_kv", {H, F, D}, spec.attention_bias_trainable, false,
                   "(H, F, D): b_KV of paper 000 Eq. 13 per head, added to sum_j R_j phi(k_j) v_j^T (F x D)");
        layout.add(p + "attn.b_d", {H, F}, spec.attention_bias_trainable, false,
                   "(H, F): b_D of paper 000 Eq. 13 per head, added to sum_j phi(k_j) in the normalizer");
        if (spec.mlp) {
            layout.add(p + "ln2.gamma", {C}, true, false, "(C): LayerNorm gain");
            layout.add(p + "ln2.beta", {C}, true, false, "(C): LayerNorm shift");
            layout.add(p + "mlp.w_fc", {C, hidden}, true, true, "(C, 4C): h = gelu_tanh(x W_fc + b_fc)");
            layout.add(p + "mlp.b_fc", {hidden}, true, false, "(4C)");
            layout.add(p + "mlp.w_proj", {hidden, C}, true, true, "(4C, C): y = h W_proj + b_proj");
            layout.add(p + "mlp.b_proj", {C}, true, false, "(C)");
        }
    }
    layout.add("final_norm.gamma", {C}, true, false, "(C): final LayerNorm gain");
    layout.add("final_norm.beta", {C}, true, false, "(C): final LayerNorm shift");
    layout.add("unembedding.w", {C, V}, true, true, "(C, V): logits = LN_f(x) W (no bias)");
    return layout;
}

template <class T>
Transformer<T>::Transformer(const ModelSpec& spec) : spec_(spec), layout_(build_parameter_layout(spec)) {
    params.assign(layout_.total(), T(0));
    grads.assign(layout_.total(), T(0));
    if (spec_.rope) rope_.build(spec_.max_seq_len, spec_.head_dim(), spec_.rope_base);
    embedding_offset_ = layout_.find("embedding.wte").offset;
    for (std::size_t l = 0; l < spec_.layers; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        BlockOffsets o{};
        o.ln1_gamma = layout_.find(p + "ln1.gamma").offset;
        o.ln1_beta = layout_.find(p + "ln1.beta").offset;
        o.w_qkv = layout_.find(p + "attn.w_qkv").offset;
        o.b_qkv = layout_.find(p + "attn.b_qkv").offset;
        o.w_o = layout_.find(p + "attn.w_o").offset;
        o.b_o = layout_.find(p + "attn.b_o").offset;
        o.b_kv = layout_.find(p + "attn.b_kv").offset;
        o.b_d = layout_.find(p + "attn.b_d").offset;
        if (spec_.mlp) {
            o.ln2_gamma = layout_.find(p + "ln2.gamma").offset;
            o.ln2_beta = layout_.find(p + "ln2.beta").offset;
            o.w_fc = layout_.find(p + "mlp.w_fc").offset;
            o.b_fc = layout_.find(p + "mlp.b_fc").offset;
            o.w_proj = layout_.find(p + "mlp.w_proj").offset;
            o.b_proj = layout_.find(p + "mlp.b_proj").offset;
        }
        block_offsets_.push_back(o);
    }
    final_gamma_offset_ = layout_.find("final_norm.gamma").offset;
    final_beta_offset_ = layout_.find("final_norm.beta").offset;
    unembedding_offset_ = layout_.find("unembedding.w").offset;
    blocks_.resize(spec_.layers);
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
        if (ends_with(".gamma")) {
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
    std::fill(grads.begin(), grads.end(), T(0));
}

template <class T>
nn::LinearAttentionOptions Transformer<T>::attention_options() const {
    nn::LinearAttentionOptions options;
    options.feature_map = spec_.feature_map;
    options.normalize = spec_.normalize;
    options.eps = spec_.normalizer_eps;
    options.unnormalized_scale =
        spec_.unnormalized_scale > 0.0 ? spec_.unnormalized_scale : 1.0 / static_cast<double>(spec_.head_dim());
    options.rope = spec_.rope ? &rope_ : nullptr;
    return options;
}

template <class T>
bool Transformer<T>::use_recurrent_form() const {
    switch (spec_.attention_form) {
        case ModelSpec::AttentionForm::quadratic: return false;
        case ModelSpec::AttentionForm::recurrent: return true;
        case ModelSpec::AttentionForm::automatic: break;
    }
    return time_ >= spec_.recurrent_min_time;
}

template <class T>
void Transformer<T>::allocate(std::size_t batch, std::size_t time) {
    ICLAB_CHECK(time <= spec_.max_seq_len,
                "sequence of " << time << " tokens is longer than the model's max_seq_len " << spec_.max_seq_len);
    batch_ = batch;
    time_ = time;
    const std::size_t N = batch * time, C = spec_.width, V = spec_.vocab, hidden = spec_.mlp_ratio * C;
    for (auto& a : blocks_) {
        a.input.resize(N * C);
        a.ln1.resize(N * C);
        a.ln1_mean.resize(N);
        a.ln1_rstd.resize(N);
        a.qkv.resize(N * 3 * C);
        a.att.resize(N * C);
        a.mid.resize(N * C);
        if (spec_.mlp) {
            a.ln2.resize(N * C);
            a.ln2_mean.resize(N);
            a.ln2_rstd.resize(N);
            a.fc.resize(N * hidden);
            a.fc_gelu.resize(N * hidden);
        }
    }
    final_input_.resize(N * C);
    final_norm_.resize(N * C);
    final_mean_.resize(N);
    final_rstd_.resize(N);
    logits_.resize(N * V);
    probs_.resize(N * V);
    losses_.resize(N);
}

template <class T>
void Transformer<T>::forward(const std::int32_t* tokens, std::size_t batch, std::size_t time) {
    allocate(batch, time);
    const std::size_t N = batch * time, C = spec_.width, V = spec_.vocab, hidden = spec_.mlp_ratio * C;
    tokens_.assign(tokens, tokens + N);
    const T* P = params.data();
    const nn::AttentionShape shape{batch, time, spec_.heads, spec_.head_dim()};
    const nn::LinearAttentionOptions options = attention_options();

    nn::embedding_forward(blocks_.empty() ? final_input_.data() : blocks_[0].input.data(), tokens,
                          P + embedding_offset_, N, C, V);
    for (std::size_t l = 0; l < spec_.layers; ++l) {
        BlockActivations& a = blocks_[l];
        const BlockOffsets& o = block_offsets_[l];
        T* output = (l + 1 < spec_.layers) ? blocks_[l + 1].input.data() : final_input_.data();
        nn::layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), a.input.data(), P + o.ln1_gamma,
                              P + o.ln1_beta, N, C, spec_.layernorm_eps);
        nn::linear_forward(a.qkv.data(), a.ln1.data(), P + o.w_qkv, P + o.b_qkv, N, C, 3 * C);
        if (use_recurrent_form())
            nn::linear_attention_recurrent_forward(a.att.data(), a.attention, a.qkv.data(), P + o.b_kv, P + o.b_d, shape,
                                                   options);
        else
            nn::linear_attention_forward(a.att.data(), a.attention, a.qkv.data(), P + o.b_kv, P + o.b_d, shape, options);
        // mid = input + att W_o + b_o
        nn::linear_forward(a.mid.data(), a.att.data(), P + o.w_o, P + o.b_o, N, C, C);
        for (std::size_t i = 0; i < N * C; ++i) a.mid[i] += a.input[i];
        if (spec_.mlp) {
            nn::layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.mid.data(), P + o.ln2_gamma,
                                  P + o.ln2_beta, N, C, spec_.layernorm_eps);
            nn::linear_forward(a.fc.data(), a.ln2.data(), P + o.w_fc, P + o.b_fc, N, C, hidden);
            nn::gelu_forward(a.fc_gelu.data(), a.fc.data(), N * hidden);
            nn::linear_forward(output, a.fc_gelu.data(), P + o.w_proj, P + o.b_proj, N, hidden, C);
            for (std::size_t i = 0; i < N * C; ++i) output[i] += a.mid[i];
        } else {
            std::copy(a.mid.begin(), a.mid.end(), output);
        }
    }
    nn::layernorm_forward(final_norm_.data(), final_mean_.data(), final_rstd_.data(), final_input_.data(),
                          P + final_gamma_offset_, P + final_beta_offset_, N, C, spec_.layernorm_eps);
    nn::linear_forward<T>(logits_.data(), final_norm_.data(), P + unembedding_offset_, nullptr, N, C, V);
}

template <class T>
double Transformer<T>::loss(const std::int32_t* targets, const T* weights) {
    const std::size_t N = batch_ * time_;
    nn::cross_entropy_forward(probs_.data(), losses_.data(), logits_.data(), targets, N, spec_.vocab);
    double total = 0.0;
    for (std::size_t n = 0; n < N; ++n) total += static_cast<double>(weights[n]) * losses_[n];
    return total;
}

template <class T>
void Transformer<T>::backward(const std::int32_t* targets, const T* weights) {
    const std::size_t N = batch_ * time_, C = spec_.width, V = spec_.vocab, hidden = spec_.mlp_ratio * C;
    const T* P = params.data();
    T* G = grads.data();
    const nn::AttentionShape shape{batch_, time_, spec_.heads, spec_.head_dim()};
    const nn::LinearAttentionOptions options = attention_options();
    const auto zeroed = [](std::vector<T>& buffer, std::size_t size) { buffer.assign(size, T(0)); };

    zeroed(d_logits_, N * V);
    nn::cross_entropy_backward(d_logits_.data(), probs_.data(), targets, weights, N, V);
    zeroed(d_norm_, N * C);
    nn::linear_backward<T>(d_norm_.data(), G + unembedding_offset_, nullptr, d_logits_.data(), final_norm_.data(),
                           P + unembedding_offset_, N, C, V);
    zeroed(d_residual_, N * C);  // d(loss)/d(residual stream), carried down through the blocks
    nn::layernorm_backward(d_residual_.data(), G + final_gamma_offset_, G + final_beta_offset_, d_norm_.data(),
                           final_input_.data(), P + final_gamma_offset_, final_mean_.data(), final_rstd_.data(), N, C);
    for (std::size_t l = spec_.layers; l-- > 0;) {
        BlockActivations& a = blocks_[l];
        const BlockOffsets& o = block_offsets_[l];
        if (spec_.mlp) {  // output = mid + MLP(LN2(mid)): d_mid = d_output + (MLP∘LN2)ᵀ d_output
            zeroed(d_hidden_, N * hidden);
            nn::linear_backward(d_hidden_.data(), G + o.w_proj, G + o.b_proj, d_residual_.data(), a.fc_gelu.data(),
                                P + o.w_proj, N, hidden, C);
            zeroed(d_hidden_pre_, N * hidden);
            nn::gelu_backward(d_hidden_pre_.data(), d_hidden_.data(), a.fc.data(), N * hidden);
            zeroed(d_norm_, N * C);
            nn::linear_backward(d_norm_.data(), G + o.w_fc, G + o.b_fc, d_hidden_pre_.data(), a.ln2.data(),
                                P + o.w_fc, N, C, hidden);
            nn::layernorm_backward(d_residual_.data(), G + o.ln2_gamma, G + o.ln2_beta, d_norm_.data(), a.mid.data(),
                                   P + o.ln2_gamma, a.ln2_mean.data(), a.ln2_rstd.data(), N, C);
        }
        // mid = input + Attn(LN1(input)) W_o + b_o
        zeroed(d_att_, N * C);
        nn::linear_backward(d_att_.data(), G + o.w_o, G + o.b_o, d_residual_.data(), a.att.data(), P + o.w_o, N, C, C);
        zeroed(d_qkv_, N * 3 * C);
        if (use_recurrent_form())
            nn::linear_attention_recurrent_backward(d_qkv_.data(), G + o.b_kv, G + o.b_d, d_att_.data(), a.qkv.data(),
                                                    P + o.b_kv, P + o.b_d, a.att.data(), a.attention, shape, options);
        else
            nn::linear_attention_backward(d_qkv_.data(), G + o.b_kv, G + o.b_d, d_att_.data(), a.qkv.data(), P + o.b_kv,
                                          P + o.b_d, a.att.data(), a.attention, shape, options);
        zeroed(d_norm_, N * C);
        nn::linear_backward(d_norm_.data(), G + o.w_qkv, G + o.b_qkv, d_qkv_.data(), a.ln1.data(), P + o.w_qkv, N, C,
                            3 * C);
        nn::layernorm_backward(d_residual_.data(), G + o.ln1_gamma, G + o.ln1_beta, d_norm_.data(), a.input.data(),
                               P + o.ln1_gamma, a.ln1_mean.data(), a.ln1_rstd.data(), N, C);
    }
    nn::embedding_backward(G + embedding_offset_, d_residual_.data(), tokens_.data(), N, C);
}

template class Transformer<float>;
template class Transformer<double>;

}  // namespace iclab::model
