#pragma once
// Decoder-only transformer with linearized attention (paper 000 Eq. 12-13), pre-norm blocks:
//   x_0 = embedding[tokens]
//   x_{l+½} = x_l + Attn(LN1(x_l)) W_o + b_o           (multi-head causal linearized attention, RoPE)
//   x_{l+1} = x_{l+½} + GELU(LN2(x_{l+½}) W_fc + b_fc) W_proj + b_proj     (when mlp is on)
//   logits  = LN_f(x_L) W_out
// Row-vector convention throughout: y = x W + b with W stored (in, out). docs/checkpoint_format.md
// documents every tensor so the model can be re-implemented elsewhere.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/model/parameters.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::model {

// Everything the layers need. Built by an experiment from its config; layers never read configs.
struct ModelSpec {
    std::size_t vocab = 52;
    std::size_t width = 64;        // C
    std::size_t heads = 2;         // H, head width D = C / H
    std::size_t layers = 2;        // L
    std::size_t max_seq_len = 256; // RoPE table length
    bool mlp = true;
    std::size_t mlp_ratio = 4;
    nn::FeatureMap feature_map = nn::FeatureMap::elu1;
    bool normalize = true;              // kernel attention (φ(q)ᵀΣφ(k) normalizer) vs linear attention
    double normalizer_eps = 1e-6;
    double unnormalized_scale = 0.0;    // fixed output scale when normalize = false (0: 1/D)
    bool rope = true;
    double rope_base = 10000.0;
    bool attention_bias_trainable = false;  // b_KV, b_D of Eq. 13: always present, trained only if set
    // Which form of causal attention computes Eq. 13: the masked quadratic form (O(T²·D) per head, GEMMs)
    // or the recurrent-state form of Eq. 19 (O(T·D²)). They agree to rounding (tests); automatic picks the
    // faster for the sequence length: recurrent from T >= recurrent_min_time (crossover measured at
    // D = 32: even at T = 64, recurrent 1.2x faster at T = 128 and 2.4x at T = 512).
    enum class AttentionForm { automatic, quadratic, recurrent };
    AttentionForm attention_form = AttentionForm::automatic;
    std::size_t recurrent_min_time = 128;
    double init_std = 0.02;
    double layernorm_eps = 1e-5;

    std::size_t head_dim() const { return width / heads; }
    void validate() const;  // throws iclab::Error on inconsistent dimensions
};

ParameterLayout build_parameter_layout(const ModelSpec& spec);

template <class T>
class Transformer {
public:
    explicit Transformer(const ModelSpec& spec);

    const ModelSpec& spec() const { return spec_; }
    const ParameterLayout& layout() const { return layout_; }
    std::size_t parameter_count() const { return layout_.total(); }

    std::vector<T> params;  // flat, layout_.total()
    std::vector<T> grads;   // flat, same layout

    T* param(const std::string& name) { return params.data() + layout_.find(name).offset; }
    const T* param(const std::string& name) const { return params.data() + layout_.find(name).offset; }
    T* grad(const std::string& name) { return grads.data() + layout_.find(name).offset; }

    // GPT-2 style initialization: N(0, init_std) matrices, residual projections / sqrt(2L), zero biases,
    // unit LayerNorm gains, b_KV = 0 and b_D = 0.
    void init(Rng& rng);
    void zero_grad();

    // tokens (B, T) -> logits (B, T, V), caching what backward needs.
    void forward(const std::int32_t* tokens, std::size_t batch, std::size_t time);
    // After forward: softmax probabilities and per-position cross-entropy. Returns Σ_n weight_n · loss_n
    // (pass weights that sum to one for a mean).
    double loss(const std::int32_t* targets, const T* weights);
    // After loss: grads += d(Σ_n weight_n · loss_n) / d(params).
    void backward(const std::int32_t* targets, const T* weights);

    const T* logits() const { return logits_.data(); }         // (B, T, V)
    const T* probs() const { return probs_.data(); }           // (B, T, V)
    const T* position_losses() const { return losses_.data(); } // (B, T)
    std::size_t batch() const { return batch_; }
    std::size_t time() const { return time_; }

private:
    struct BlockOffsets {
        std::size_t ln1_gamma, ln1_beta, w_qkv, b_qkv, w_o, b_o, b_kv, b_d;
        std::size_t ln2_gamma, ln2_beta, w_fc, b_fc, w_proj, b_proj;
    };
    struct BlockActivations {
        std::vector<T> input;                 // (N, C) residual stream entering the block
        std::vector<T> ln1, ln1_mean, ln1_rstd;  // (N, C), (N), (N)
        std::vector<T> qkv;                   // (N, 3C)
        std::vector<T> att;                   // (N, C) attention output before W_o
        nn::LinearAttentionCache<T> attention;
        std::vector<T> mid;                   // (N, C) residual after attention
        std::vector<T> ln2, ln2_mean, ln2_rstd;  // (N, C), (N), (N)
        std::vector<T> fc, fc_gelu;           // (N, 4C)
    };

    void allocate(std::size_t batch, std::size_t time);
    nn::LinearAttentionOptions attention_options() const;
    bool use_recurrent_form() const;

    ModelSpec spec_;
    ParameterLayout layout_;
    nn::RopeTable rope_;
    std::vector<BlockOffsets> block_offsets_;
    std::size_t embedding_offset_ = 0, final_gamma_offset_ = 0, final_beta_offset_ = 0, unembedding_offset_ = 0;

    std::size_t batch_ = 0, time_ = 0;
    std::vector<std::int32_t> tokens_;
    std::vector<BlockActivations> blocks_;
    std::vector<T> final_input_, final_norm_, final_mean_, final_rstd_;  // (N, C), (N, C), (N), (N)
    std::vector<T> logits_, probs_, losses_;                             // (N, V), (N, V), (N)
    // backward scratch
    std::vector<T> d_residual_, d_norm_, d_att_, d_qkv_, d_hidden_, d_hidden_pre_, d_logits_;
};

extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace iclab::model
