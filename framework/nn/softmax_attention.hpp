#pragma once
// Exact multi-head softmax attention (Vaswani et al. 2017; paper 000 Eq. 1-2, paper 004 Eq. 1) with
// optional RoPE on q and k and the masks of attention_mask.hpp. Per head, positions 0-based:
//   s_ij = (R_i q_i)ᵀ (R_j k_j) · scale          scale = 1/√D
//   p_ij = exp(s_ij − max_j s_ij) / Σ_{j∈V(i)} exp(s_ij − max_j s_ij)   for j ∈ V(i), 0 otherwise
//   out_i = Σ_j p_ij v_j
// Same qkv (B, T, 3C) and out (B, T, C) layouts as linear attention. No b_KV, b_D: softmax attention does not
// separate (paper 000 Assumption 4.4); the kernel approximation of ICLAA works with performer features instead.
#include <cstddef>
#include <vector>

#include "framework/nn/attention_mask.hpp"
#include "framework/nn/linear_attention.hpp"
#include "framework/nn/rope.hpp"

namespace iclab::nn {

struct SoftmaxAttentionOptions {
    const RopeTable* rope = nullptr;
    AttentionMask mask;
    double scale = 0.0;  // 0: 1/√D
};

template <class T>
struct SoftmaxAttentionCache {
    std::vector<T> rot_q, rot_k;  // (B, H, T, D)  R_i q_i, R_j k_j
    std::vector<T> probs;         // (B, H, T, T)  p_ij
    void resize(const AttentionShape& shape) {
        const std::size_t rows = shape.batch * shape.heads * shape.time;
        rot_q.resize(rows * shape.head_dim);
        rot_k.resize(rows * shape.head_dim);
        probs.resize(rows * shape.time);
    }
};

template <class T>
void softmax_attention_forward(T* out, SoftmaxAttentionCache<T>& cache, const T* qkv, const AttentionShape& shape,
                               const SoftmaxAttentionOptions& options);

// d_qkv (B, T, 3C) += ∂/∂qkv of Σ d_out ⊙ out.
template <class T>
void softmax_attention_backward(T* d_qkv, const T* d_out, const T* qkv, const SoftmaxAttentionCache<T>& cache,
                                const AttentionShape& shape, const SoftmaxAttentionOptions& options);

}  // namespace iclab::nn
