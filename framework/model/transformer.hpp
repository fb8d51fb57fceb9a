#pragma once
// Decoder-style transformer with linearized (paper 000 Eq. 12-13) or softmax attention, pre-norm blocks:
//   x_0     = embedding[tokens]                 (tokens)   or   x W_in + b_in / x itself   (vectors: read-in)
//             [+ E_pos[t]]                      (learned absolute positions, paper 003 B0 / [C] PositionEmbeddings)
//   x_{l+½} = [x_l +] Attn(LN1(x_l)) [W_o + b_o]                 (multi-head attention, RoPE, mask)
//   x_{l+1} = [x_{l+½} +] GELU(LN2(x_{l+½}) W_fc + b_fc) W_proj + b_proj      (when mlp is on)
//   out     = [LN_f](x_L) W_out  [W_out = wteᵀ when tied] (logits)   or   LN_f(x_L) W_ro + b_ro / last d_out channels of x_L
// [..] parts are switchable: residual connections, the attention output projection, LayerNorms (all three),
// so that the same code builds GPT-style models, paper 003's LSA (no norm, no MLP, P = W_o, identity
// features, no normalizer) and paper 004's single attention layer (no residual, no W_o, read-out of the
// y-channels of the last token). shared_layers uses block 0's weights at every depth (paper 003 "SL").
// Row-vector convention throughout: y = x W + b with W stored (in, out). docs/checkpoint_format.md
// documents every tensor so the model can be re-implemented elsewhere.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/model/parameters.hpp"
#include "framework/nn/linear_attention.hpp"
#include "framework/nn/softmax_attention.hpp"

namespace iclab::model {

// Everything the layers need. Built by an experiment from its config; layers never read configs.
struct ModelSpec {
    // ---- input and output
    enum class Input { tokens, vectors };
    Input input = Input::tokens;
    std::size_t vocab = 52;        // V (tokens): embedding rows and logits
    std::size_t input_dim = 0;     // d_in (vectors)
    std::size_t output_dim = 0;    // d_out (vectors)
    enum class ReadIn { linear, identity };     // vectors: x W_in + b_in, or x itself (needs d_in = C)
    ReadIn read_in = ReadIn::linear;
    enum class ReadOut { linear, slice };       // vectors: x W_ro + b_ro, or the last d_out channels of x
    ReadOut read_out = ReadOut::linear;

    // ---- trunk
    std::size_t width = 64;        // C
    std::size_t heads = 2;         // H, head width D = C / H
    std::size_t layers = 2;        // L
    std::size_t max_seq_len = 256; // RoPE table length
    bool mlp = true;
    std::size_t mlp_ratio = 4;
    bool layernorm = true;         // LN1, LN2 and the final LN; off: identity
    bool residual = true;          // residual connections around both sublayers
    bool output_projection = true; // W_o, b_o after attention; off: the heads' outputs are the sublayer output
    bool qkv_bias = true;          // b_qkv
    bool shared_layers = false;    // one block's weights at every depth (paper 003 SL) vs unshared (UL)
    bool final_layernorm = true;   // with layernorm: LN_f before the read-out (paper 003 Q9's pre-LN: none)
    enum class Positions { none, learned };
    Positions positions = Positions::none;  // learned: x_0[t] += E_pos[t], E_pos (max_seq_len, C) (paper 003 Q10)
    // Token models: the output matrix is the input embedding, logits = LN_f(x) wteᵀ (GPT-2); no unembedding.w, and
    // the gradient of both uses accumulates into embedding.wte.
    bool tie_embeddings = false;

    // ---- attention
    enum class Attention { linear, softmax };
    Attention attention = Attention::linear;
    nn::FeatureMap feature_map = nn::FeatureMap::elu1;
    std::size_t random_features = 0;    // R of performer features (per head F = R)
    bool orthogonal_features = false;   // performer: orthogonal blocks of D directions with chi(D) norms
    double performer_input_scale = 1.0; // s in φ(x) = exp(Wᵀ(s x) − ‖s x‖²/2)/√R
    bool normalize = true;              // kernel attention (φ(q)ᵀΣφ(k) normalizer) vs linear attention
    double normalizer_eps = 1e-6;
    double unnormalized_scale = 0.0;    // fixed output scale when normalize = false (0: 1/D)
    bool rope = true;
    double rope_base = 10000.0;
    nn::MaskKind mask = nn::MaskKind::causal;
    bool isolate_queries = false;       // positions >= prefix see only the prefix (paper 003 E.1)
    bool query_self = true;             // ... and their own key
    bool attention_bias_trainable = false;  // b_KV, b_D of Eq. 13: always present (linear), trained only if set
    // Trained b_D kept >= 0 (projected after each optimizer step): the values a real prompt gives b'_D = b_D + Σφ(K')
    // with non-negative features, and what keeps den > 0. Off (paper Eq. 13 as written): b_D is free, and the
    // normalizer can cross zero during training (experiments/bias_training/README.md).
    bool attention_bias_d_nonnegative = false;
    // Which form of causal linear attention computes Eq. 13: the masked quadratic form (O(T²·D) per head, GEMMs)
    // or the recurrent-state form of Eq. 19 (O(T·D²)). They agree to rounding (tests); automatic picks the
    // faster for the sequence length: recurrent from T >= recurrent_min_time (crossover measured at
    // D = 32: even at T = 64, recurrent 1.2x faster at T = 128 and 2.4x at T = 512). Other masks: quadratic.
    enum class AttentionForm { automatic, quadratic, recurrent };
    AttentionForm attention_form = AttentionForm::automatic;
    std::size_t recurrent_min_time = 128;
    // Kernel of the attention's per-(batch, head) products (model.small_gemm, nn/small_gemm.hpp).
    nn::SmallGemm small_gemm = nn::SmallGemm::blocked;
    // Kernel of the products over the whole batch: the linear layers, read-in, read-out (model.large_gemm, nn/gemm.hpp).
    nn::SmallGemm large_gemm = nn::SmallGemm::blocked;
    // Decayed linear attention (model.decay; RetNet / GLA style, docs/decay.md): none (γ = 1, the attention of paper 000),
    // fixed per-head γ_h ∈ (0, 1] (decay_gamma, H values), or learned per-head γ_h = sigmoid(θ_h), θ the parameter
    // blocks.<l>.attn.decay_logit (H), initialized at γ_h = 1 − 2^{−5−h} (RetNet's). Linear attention, causal mask only.
    enum class Decay { none, fixed, learned };
    Decay decay = Decay::none;
    std::vector<double> decay_gamma;
    bool decayed() const {  // a decay other than γ = 1 in every head
        if (decay == Decay::learned) return true;
        if (decay == Decay::none) return false;
        for (double gamma : decay_gamma)
            if (gamma != 1.0) return true;
        return false;
    }

    double init_std = 0.02;
    double layernorm_eps = 1e-5;

    std::size_t head_dim() const { return width / heads; }
    bool final_norm() const { return layernorm && final_layernorm; }
    std::size_t feature_dim() const {  // F
        return feature_map == nn::FeatureMap::performer ? random_features : head_dim();
    }
    std::size_t output_size() const { return input == Input::tokens ? vocab : output_dim; }
    void validate() const;  // throws iclab::Error on inconsistent dimensions
};

ParameterLayout build_parameter_layout(const ModelSpec& spec);

template <class T>
class Transformer {
public:
    // training: gradients and every block's activations are kept for backward.
    // inference: forward only, no gradient buffer, one block's activations reused across depth (memory
    // ≈ parameters + a few (B·T, 4C) buffers: a 1.98B-parameter model runs in fp32 within 24 GB).
    enum class Mode { training, inference };
    explicit Transformer(const ModelSpec& spec, Mode mode = Mode::training);

    const ModelSpec& spec() const { return spec_; }
    const ParameterLayout& layout() const { return layout_; }
    std::size_t parameter_count() const { return layout_.total(); }
    Mode mode() const { return mode_; }

    std::vector<T> params;  // flat, layout_.total()
    std::vector<T> grads;   // flat, same layout (empty in inference mode)

    T* param(const std::string& name) { return params.data() + layout_.find(name).offset; }
    const T* param(const std::string& name) const { return params.data() + layout_.find(name).offset; }
    T* grad(const std::string& name) { return grads.data() + layout_.find(name).offset; }

    // GPT-2 style initialization: N(0, init_std) matrices, residual projections / sqrt(2L), zero biases,
    // unit LayerNorm gains, b_KV = 0 and b_D = 0; performer matrices N(0, 1) (or orthogonal), fixed.
    void init(Rng& rng);
    void zero_grad();

    // Positions [0, P) form the prefix / context of the prefix mask and of isolated queries (set per batch).
    void set_prefix_length(std::size_t prefix) { prefix_length_ = prefix; }
    // Learned absolute positions only: later forwards add E_pos[start + t] at time t (default 0), so that an input
    // whose prompt was converted into an adapter of M tokens can sit where it sat behind the prompt (start = M).
    // RoPE and position-free models ignore it (their prompt terms are relative). start + T <= max_seq_len.
    void set_learned_position_start(std::size_t start) { learned_position_start_ = start; }
    std::size_t learned_position_start() const { return learned_position_start_; }

    // tokens (B, T) -> logits (B, T, V), caching what backward needs.
    void forward(const std::int32_t* tokens, std::size_t batch, std::size_t time);
    // vectors (B, T, d_in) -> outputs (B, T, d_out).
    void forward(const T* vectors, std::size_t batch, std::size_t time);

    // After forward on tokens: softmax probabilities and per-position cross-entropy. Returns Σ_n weight_n · loss_n
    // (pass weights that sum to one for a mean).
    double loss(const std::int32_t* targets, const T* weights);
    // After loss: grads += d(Σ_n weight_n · loss_n) / d(params).
    void backward(const std::int32_t* targets, const T* weights);
    // After forward: grads += (d outputs / d params)ᵀ d_outputs, for any loss computed outside (d_outputs (B, T, out)).
    void backward_outputs(const T* d_outputs);

    // With capture on, every forward pass also keeps each linear-attention layer's final recurrent state
    // (nn::linear_attention_final_state): per layer, state (B, H, F, D) and key_sum (B, H, F). ICLCA reads them.
    void capture_attention_states(bool on) { capture_states_ = on; }
    const std::vector<T>& final_state(std::size_t layer) const { return final_states_.at(layer); }
    const std::vector<T>& final_key_sum(std::size_t layer) const { return final_key_sums_.at(layer); }
    const nn::RopeTable* rope() const { return spec_.rope ? &rope_ : nullptr; }
    // The per-head decay γ_h (H values) of layer `layer`'s attention from the spec or the learned θ (transformer_decay.cpp);
    // empty without decay, and for a fixed decay of γ = 1 in every head (then the code of no decay runs, bit for bit).
    std::vector<double> attention_decay(std::size_t layer) const;

    // Softmax attention only (ICLAA, framework/icl/iclaa.hpp): the prompt terms of every layer that later forwards
    // add to each query's attention (nn::SoftmaxPromptHead; per layer H or B·H heads); null or empty: none. The
    // model does not own them: they must outlive the forwards. Backward carries the gradient through their kernel
    // terms (into the heads' d_b_kv, d_b_d when set: prompt baking); an exact prompt cache has no backward.
    void set_softmax_prompt(const std::vector<std::vector<nn::SoftmaxPromptHead<T>>>* prompt) { softmax_prompt_ = prompt; }
    // With capture on, every forward pass also keeps each layer's q, k, v projections (B, T, 3C), pre-RoPE.
    void capture_qkv(bool on) { capture_qkv_ = on; }
    const std::vector<T>& captured_qkv(std::size_t layer) const { return captured_qkv_.at(layer); }

    // Per layer, the smallest kernel-normalizer value den_i = φ(q_i)ᵀ[Σφ(k_j) + b_D] + eps (Eq. 13) over batch,
    // heads and positions of the last forward; NaN for softmax or unnormalized attention. With trainable b_D
    // this can approach 0 or go negative (outputs num/den blow up): a diagnostic the experiments log.
    const std::vector<double>& min_attention_denominator() const { return min_denominator_; }

    // Where a forward first produced a NaN or an infinity (float32 overflows near 3.4e38, in a product or an exp). With
    // tracing on, each operation's output is scanned after it ran (one pass over memory per operation; off by default)
    // and the first operation, in the order computed, holding a non-finite value is kept with its first such row.
    struct NonFiniteSite {
        static constexpr std::size_t kNoLayer = static_cast<std::size_t>(-1);
        const char* op = nullptr;          // null: every value of the last traced forward was finite
        std::size_t layer = kNoLayer;      // block (from 0); kNoLayer: the input embedding or the read-out
        std::size_t batch = 0, time = 0;   // the row
        bool found() const { return op != nullptr; }
        std::string describe() const;      // "layer 2 (from 0), MLP fc (x W_fc + b_fc), at position 5"
    };
    void trace_non_finite(bool on) { trace_non_finite_ = on; }
    const NonFiniteSite& first_non_finite() const { return first_non_finite_; }

    // Training mode, after forward: the residual stream (B, T, C) entering block `depth` (depth = layers: the trunk's
    // output, before the final norm). Per-layer probes read it (paper 003 Figure 3).
    const T* residual_stream(std::size_t depth) const;
    const T* outputs() const { return outputs_.data(); }        // (B, T, V or d_out)
    const T* logits() const { return outputs_.data(); }         // (B, T, V)
    const T* probs() const { return probs_.data(); }            // (B, T, V)
    const T* position_losses() const { return losses_.data(); } // (B, T)
    std::size_t batch() const { return batch_; }
    std::size_t time() const { return time_; }

private:
    struct BlockOffsets {
        std::size_t ln1_gamma, ln1_beta, w_qkv, b_qkv, w_o, b_o, b_kv, b_d, random, decay_logit;
        std::size_t ln2_gamma, ln2_beta, w_fc, b_fc, w_proj, b_proj;
    };
    struct BlockActivations {
        std::vector<T> input;                 // (N, C) residual stream entering the block
        std::vector<T> ln1, ln1_mean, ln1_rstd;  // (N, C), (N), (N)
        std::vector<T> qkv;                   // (N, 3C)
        std::vector<T> att;                   // (N, C) attention output before W_o
        nn::LinearAttentionCache<T> attention;
        nn::SoftmaxAttentionCache<T> softmax;
        std::vector<T> mid;                   // (N, C) residual after attention
        std::vector<T> ln2, ln2_mean, ln2_rstd;  // (N, C), (N), (N)
        std::vector<T> fc, fc_gelu;           // (N, 4C)
    };

    void allocate(std::size_t batch, std::size_t time);
    void forward_trunk();  // blocks, final norm and read-out; the stream's first input is filled
    nn::LinearAttentionOptions attention_options() const;
    // Learned decay: grads of θ_h += dγ_h · γ_h (1 − γ_h) (the sigmoid's derivative) for layer `layer`.
    void accumulate_decay_gradient(std::size_t layer, const std::vector<T>& d_gamma);
    nn::SoftmaxAttentionOptions<T> softmax_options() const;
    bool use_recurrent_form() const;
    T* block_input(std::size_t l);        // where block l reads its input
    T* block_output(std::size_t l);       // where block l writes its output (the next block's input)
    // Tracing (trace_non_finite): records (layer, op) and the first row of data (N, width) holding a NaN or an infinity,
    // unless a site is already recorded.
    void note_non_finite(const T* data, std::size_t width, std::size_t layer, const char* op);

    ModelSpec spec_;
    Mode mode_;
    ParameterLayout layout_;
    nn::RopeTable rope_;
    std::vector<BlockOffsets> block_offsets_;
    std::size_t input_offset_ = 0, input_bias_offset_ = 0, position_offset_ = 0, final_gamma_offset_ = 0, final_beta_offset_ = 0;
    std::size_t output_offset_ = 0, output_bias_offset_ = 0;
    std::size_t prefix_length_ = 0;
    std::size_t learned_position_start_ = 0;
    bool capture_states_ = false;
    bool capture_qkv_ = false;
    bool trace_non_finite_ = false;
    NonFiniteSite first_non_finite_;
    std::vector<std::vector<T>> captured_qkv_;                     // per layer, when capturing
    const std::vector<std::vector<nn::SoftmaxPromptHead<T>>>* softmax_prompt_ = nullptr;
    std::vector<std::vector<T>> final_states_, final_key_sums_;  // per layer, when capturing
    std::vector<double> min_denominator_;                          // per layer, last forward

    std::size_t batch_ = 0, time_ = 0;
    std::vector<std::int32_t> tokens_;
    std::vector<T> vectors_;                                             // (N, d_in)
    std::vector<BlockActivations> blocks_;                               // L (training) or 1 (inference)
    std::vector<T> stream_[2];                                           // inference: ping-pong residual stream
    std::vector<T> final_input_, final_norm_, final_mean_, final_rstd_;  // (N, C), (N, C), (N), (N)
    std::vector<T> outputs_, probs_, losses_;                            // (N, out), (N, V), (N)
    // backward scratch
    std::vector<T> d_residual_, d_norm_, d_att_, d_qkv_, d_hidden_, d_outputs_;
};

extern template class Transformer<float>;
extern template class Transformer<double>;

}  // namespace iclab::model
