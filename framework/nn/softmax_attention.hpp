#pragma once
// Exact multi-head softmax attention (Vaswani et al. 2017; paper 000 Eq. 1-2, paper 004 Eq. 1) with
// optional RoPE on q and k and the masks of attention_mask.hpp. Per head, positions 0-based:
//   s_ij = (R_i q_i)ᵀ (R_j k_j) · scale          scale = 1/√D
//   p_ij = exp(s_ij − max_j s_ij) / Σ_{j∈V(i)} exp(s_ij − max_j s_ij)   for j ∈ V(i), 0 otherwise
//   out_i = Σ_j p_ij v_j
// Same qkv (B, T, 3C) and out (B, T, C) layouts as linear attention. No b_KV, b_D: softmax attention does not
// separate (paper 000 Assumption 4.4).
//
// A prompt X' of M tokens can stand beside the input (ICLAA, paper 000 §5 Eq. 17, corrected: spec iclaa.md (A2),
// (A4)), per head, as two optional terms added to the un-normalized numerator and denominator of every query i:
//   exact cache : Σ_p e^{s'_ip} v'_p and Σ_p e^{s'_ip},  s'_ip = (R_i q_i)ᵀ k̂_p · scale, k̂_p = R_{p−M} k'_p stored
//   kernel      : φ(q̃_i)ᵀ b_KV and φ(q̃_i)ᵀ b_D,  q̃_i = D^{-1/4} R_i q_i (kernel_features.hpp)
//   O_i = [Σ_{j≤i} e^{s_ij} v_j + cache + kernel numerator] / [Σ_{j≤i} e^{s_ij} + cache + kernel denominator]
// Everything is combined under one max shift in the log domain (b_D, b_KV stored as e^{log scale} × a vector of
// max-abs 1), so no term overflows or underflows against another.
//
// Backward with a kernel prompt term (prompt baking into the kernel biases, framework/icl/prompt_baking.hpp): per row
// i, with m_i the row's shift and Z_i its denominator in units of e^{m_i} (the forward's `highest`, 1/`inverse`),
//   (K1) O_i = Σ_j p_ij v_j + u_i,   u_i = c^kv_i b̂_kvᵀ φ̂_i,   c^kv_i = e^{A_i + log_b_kv − m_i}/Z_i,
//        c^d_i = e^{A_i + log_b_d − m_i}/Z_i   (φ(q̃_i) = e^{A_i} φ̂_i; b̂ the stored unit-scale vectors)
// and with g_i = ∂L/∂O_i, δ_i = g_iᵀO_i:
//   (K2) ∂L/∂b̂_kv = Σ_i c^kv_i φ̂_i g_iᵀ                (K3) ∂L/∂b̂_d = −Σ_i c^d_i δ_i φ̂_i
//   (K4) ∂L/∂s_ij = p_ij (g_iᵀv_j − δ_i)                 (the window's softmax backward; δ_i includes g_iᵀu_i)
//   (K5) ∂L/∂log φ_r(q̃_i) = φ̂_ir (c^kv_i (b̂_kv g_i)_r − c^d_i δ_i b̂_d,r), then through the map to q (K6, .cpp).
// The log scales are held fixed: the gradients are those of the stored vectors b_kv, b_d, added (+=) into the
// head's d_b_kv, d_b_d when set. The forward stores u_i, φ̂_i, c^kv_i, c^d_i (SoftmaxAttentionCache::prompt_*); the
// backward reads them and recomputes nothing. Where φ(q̃_i)ᵀb_D = 0 exactly (a zero start) the kernel adds nothing
// and (K2)-(K5) give the limit from φᵀb_D > 0; where it is < 0 (free b_D) the term is off and its gradient 0. The
// exact prompt cache has no backward (refused).
#include <cstddef>
#include <vector>

#include "framework/nn/attention_mask.hpp"
#include "framework/nn/kernel_features.hpp"
#include "framework/nn/linear_attention.hpp"
#include "framework/nn/rope.hpp"
#include "framework/nn/small_gemm.hpp"

namespace iclab::nn {

// The prompt's terms for one head (either part may be empty).
template <class T>
struct SoftmaxPromptHead {
    std::size_t cache_length = 0;
    std::vector<T> cache_keys;    // (K, D) prompt keys already rotated to their offset p − M: R_{p−M} k'_p
    std::vector<T> cache_values;  // (K, D)
    const KernelFeatures<T>* features = nullptr;  // null: no kernel part
    bool rotate_query = true;     // q̃_i = D^{-1/4} R_i q_i (false: the unrotated q_i, a convention ablation)
    std::vector<T> b_d;           // (F)    b_D  = e^{log_b_d} · b_d
    std::vector<T> b_kv;          // (F, D) b_KV = e^{log_b_kv} · b_kv
    T log_b_d = T(0), log_b_kv = T(0);
    // Set by a caller that learns b_d, b_kv (prompt baking): softmax_attention_backward adds ∂L/∂b_d (F) and
    // ∂L/∂b_kv (F, D) here, (K2)-(K3), summed over the sequences that share this head. Null: not wanted.
    T* d_b_d = nullptr;
    T* d_b_kv = nullptr;
};

template <class T>
struct SoftmaxAttentionOptions {
    const RopeTable* rope = nullptr;
    AttentionMask mask;
    double scale = 0.0;  // 0: 1/√D
    // Per head (H entries, the same prompt for every sequence of the batch) or per sequence and head (B·H, index
    // b·H + h); null: no prompt.
    const std::vector<SoftmaxPromptHead<T>>* prompt = nullptr;
    // The per-(batch, head) products' kernel (model.small_gemm): the register-blocked small_gemm.hpp (default; the
    // same bits on every CPU) or OpenBLAS (the numbers published before 2026-11-27; rounds differently).
    SmallGemm small_gemm = SmallGemm::blocked;
    // With the blocked kernel: keys that no row sees (j ≥ J; J = P for isolated queries that do not see themselves, as
    // in the paper 003 configs) are left out of the products, with the bits of the full blocked products
    // (softmax_attention.cpp, product_keys). false runs the full products (tests compare the two). OpenBLAS always does.
    bool skip_unseen_keys = true;
};

template <class T>
struct SoftmaxAttentionCache {
    // (B, H, T, D)  R_i q_i, R_j k_j with RoPE; empty without (q and k are then read in place in qkv)
    std::vector<T> rot_q, rot_k;
    std::vector<T> probs;  // (B, H, T, T)  p_ij
    void resize(const AttentionShape& shape, bool rotated) {
        const std::size_t rows = shape.batch * shape.heads * shape.time;
        rot_q.resize(rotated ? rows * shape.head_dim : 0);
        rot_k.resize(rotated ? rows * shape.head_dim : 0);
        probs.resize(rows * shape.time);
    }
    // Forward with a prompt kernel term: per (b, h, i) u_i (D), φ̂_i (F = prompt_features, the largest of the heads'),
    // (c^kv_i, c^d_i) of (K1); empty without a prompt. What the backward of the kernel biases reads.
    std::size_t prompt_features = 0;
    std::vector<T> prompt_out, prompt_phi, prompt_coef;
};

template <class T>
void softmax_attention_forward(T* out, SoftmaxAttentionCache<T>& cache, const T* qkv, const AttentionShape& shape,
                               const SoftmaxAttentionOptions<T>& options);

// d_qkv (B, T, 3C) = ∂/∂qkv of Σ d_out ⊙ out (with a kernel prompt term: (K4)-(K6), and (K2)-(K3) into the heads'
// d_b_kv, d_b_d when set; a prompt with an exact cache is refused). d_qkv is overwritten (every element, in place per head: no gather or
// scatter), with the values the accumulating form left in a zeroed d_qkv (0 + g; softmax_attention.cpp says where the
// sign of a zero could differ).
template <class T>
void softmax_attention_backward(T* d_qkv, const T* d_out, const T* qkv, const SoftmaxAttentionCache<T>& cache,
                                const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options);

// Incremental decoding: one new token at position i = `position` appends its rotated key R_i k_i and value v_i to
// the caches (H, capacity, D) at row i, then its query attends over rows 0..i and the prompt terms, exactly as row i
// of softmax_attention_forward under the causal mask. qkv (3C), out (C). options.mask must be plain causal.
template <class T>
void softmax_attention_step(T* out, T* key_cache, T* value_cache, std::size_t capacity, const T* qkv, std::size_t position,
                            const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options);

}  // namespace iclab::nn
