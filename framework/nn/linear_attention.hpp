#pragma once
// Multi-head causal linearized attention with RoPE and the bias terms b_KV, b_D of paper 000 Eq. 13.
//
// Per head, with φ the feature map, R_i the rotary matrix (Definition B.1) and positions i, j 0-based:
//   num_i = (R_i φ(q_i))ᵀ [ Σ_{j∈V(i)} R_j φ(k_j) v_jᵀ + b_KV ]                       (Eq. 13, numerator)
//   den_i = φ(q_i)ᵀ [ Σ_{j∈V(i)} φ(k_j) + b_D ] + eps   when normalize (kernel attention, D1 = φ(q), D2 = Σφ(k))
//   den_i = 1 / unnormalized_scale                      otherwise (linear attention, D1ᵀD2 constant)
//   out_i = num_i / den_i
// RoPE rotates the features in the numerator only; the normalizer uses unrotated features, as in
// Eq. 12-13 and Algorithm 1 step (d). eps is a fixed model constant: it stays exact under ICLCA.
// V(i) is the set of keys position i sees (attention_mask.hpp): j ≤ i for the causal mask of Eq. 13;
// prefix and full masks (paper 003) and isolated queries use the same formula with their V(i).
// With a decay γ per head (options.decay, causal mask only; docs/decay.md Eq. D3) key j enters query i's sums with
// γ^{i-j} and b_KV, b_D with γ^{i+1}, in the numerator and the normalizer alike (attention_decay.hpp).
//
// Shapes: B batch, T time, H heads, D head width, C = H·D, F feature width (= D for elementwise φ, R for
// performer features; random_features (D, R) is the layer's performer matrix, nullptr otherwise).
//   qkv (B, T, 3C): per token [q (C) | k (C) | v (C)], head h owns columns h·D .. h·D+D-1 of each.
//   out (B, T, C);  b_kv (H, F, D);  b_d (H, F).
// This is the masked quadratic form, O(T²·(F + D)) per head: per (batch, head) two GEMMs forward
// (S = tril(R φ(Q) (R φ(K))ᵀ), num = S V + R φ(Q) b_KV) and five backward; threads share the (batch, head) pairs.
#include <cstddef>
#include <vector>

#include "framework/nn/attention_mask.hpp"
#include "framework/nn/feature_map.hpp"
#include "framework/nn/rope.hpp"
#include "framework/nn/small_gemm.hpp"

namespace iclab::nn {

struct AttentionShape {
    std::size_t batch = 0, time = 0, heads = 0, head_dim = 0;
    std::size_t feature_dim = 0;  // F; 0 means F = D
    std::size_t width() const { return heads * head_dim; }
    std::size_t features() const { return feature_dim != 0 ? feature_dim : head_dim; }
};

struct LinearAttentionOptions {
    FeatureMap feature_map = FeatureMap::elu1;
    double performer_input_scale = 1.0;  // s of performer features (feature_map.hpp)
    bool normalize = true;
    double eps = 1e-6;
    double unnormalized_scale = 1.0;
    const RopeTable* rope = nullptr;  // RoPE on when set
    AttentionMask mask;               // causal by default (Eq. 13)
    // Skip the quadratic form's products with b_KV where a head's b_KV is all zeros (bit-identical: kernels::
    // bias_kv_is_zero). false runs them anyway (tests compare the two).
    bool skip_zero_bias_kv = true;
    // The per-(batch, head) products' kernel (model.small_gemm): the register-blocked small_gemm.hpp (default; the
    // same bits on every CPU) or OpenBLAS (the numbers published before 2026-11-27; rounds differently).
    SmallGemm small_gemm = SmallGemm::blocked;
    // With the blocked kernel and the plain causal mask: S and dS only on and below the diagonal, and the products that
    // read them without their zero terms (bit-identical to the full blocked products: small_gemm.hpp, Triangle). false
    // runs the full products (tests compare the two). The OpenBLAS kernel and the other masks always run them.
    bool causal_triangle = true;
    // Per-head decay γ_h ∈ (0, 1] (model.decay; RetNet / GLA style, docs/decay.md): query i sees key j ≤ i with weight
    // γ^{i-j} and the biases b_KV, b_D (the initial state S_{-1}, z_{-1}) with γ^{i+1}, in the numerator and the
    // normalizer alike (attention_decay.hpp). Empty: no decay, the code of before (γ = 1) bit for bit. Causal mask only.
    std::vector<double> decay;
};

template <class T>
FeatureMapParams<T> feature_map_params(const AttentionShape& shape, const LinearAttentionOptions& options,
                                       const T* random_features) {
    FeatureMapParams<T> p;
    p.map = options.feature_map;
    p.random = random_features;
    p.random_features = options.feature_map == FeatureMap::performer ? shape.features() : 0;
    p.input_scale = options.performer_input_scale;
    p.kernel = options.small_gemm;
    return p;
}

// What backward needs from forward (CONVENTIONS.md: forward saves exactly that).
template <class T>
struct LinearAttentionCache {
    std::vector<T> phi_q, phi_k;  // (B, H, T, F)  φ(q), φ(k)
    std::vector<T> rot_q, rot_k;  // (B, H, T, F)  R_i φ(q_i), R_j φ(k_j)  (copies of φ when RoPE is off)
    std::vector<T> den;           // (B, H, T)     den_i
    // The masked scores S = mask ⊙ (R φ(Q) (R φ(K))ᵀ) (B, H, T, T), kept when keep_scores is set (training: backward
    // reuses them instead of recomputing one T×T×F GEMM and the mask per (batch, head); the same values bit for bit).
    // With LinearAttentionOptions::causal_triangle in effect, the tiles wholly above the diagonal are never written.
    bool keep_scores = false;
    std::vector<T> scores;

    void resize(const AttentionShape& shape) {
        const std::size_t per_feature = shape.batch * shape.heads * shape.time * shape.features();
        phi_q.resize(per_feature);
        phi_k.resize(per_feature);
        rot_q.resize(per_feature);
        rot_k.resize(per_feature);
        den.resize(shape.batch * shape.heads * shape.time);
        scores.resize(keep_scores ? shape.batch * shape.heads * shape.time * shape.time : 0);
    }
};

template <class T>
void linear_attention_forward(T* out, LinearAttentionCache<T>& cache, const T* qkv, const T* b_kv, const T* b_d,
                              const T* random_features, const AttentionShape& shape, const LinearAttentionOptions& options);

// d_qkv (B, T, 3C) =, d_b_kv (H, F, D) +=, d_b_d (H, F) += ; out is forward's output. d_qkv is overwritten (every
// element, in place per head: no gather into per-head buffers), with the values the accumulating form left in a zeroed
// d_qkv, bit for bit (0 + g). With options.decay and d_decay set: d_decay (H) += ∂L/∂γ_h (a learned decay).
template <class T>
void linear_attention_backward(T* d_qkv, T* d_b_kv, T* d_b_d, const T* d_out, const T* qkv, const T* b_kv,
                               const T* b_d, const T* random_features, const T* out, const LinearAttentionCache<T>& cache,
                               const AttentionShape& shape, const LinearAttentionOptions& options, T* d_decay = nullptr);

// The recurrent state after the last position (paper 000 Eq. 19 with S_{-1} = b_KV, z_{-1} = b_D), from a
// forward pass's cache: per (b, h)
//   state (B, H, F, D) = b_KV + Σ_j R_j φ(k_j) v_jᵀ,   key_sum (B, H, F) = b_D + Σ_j φ(k_j)
// over all positions j of the sequence (the causal mask's view of the last position). ICLCA builds on it.
// With a per-head decay (H values, LinearAttentionOptions::decay; empty: none) the decayed state of docs/decay.md
// Eq. D2: S_{T-1} = γ^T b_KV + Σ_j γ^{T-1-j} R_j φ(k_j) v_jᵀ, z likewise.
template <class T>
void linear_attention_final_state(T* state, T* key_sum, const LinearAttentionCache<T>& cache, const T* qkv, const T* b_kv,
                                  const T* b_d, const AttentionShape& shape, const std::vector<double>& decay = {});

}  // namespace iclab::nn
