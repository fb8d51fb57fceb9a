#pragma once
// Causal linearized attention of paper 000 Eq. 13 in its recurrent-state (RNN) form, Eq. 19
// (Katharopoulos et al. 2020), with the bias terms as the initial state (paper 000 §7):
//   S_{-1} = b_KV (F, D),   S_i = S_{i-1} + R_i φ(k_i) v_iᵀ
//   z_{-1} = b_D  (F),      z_i = z_{i-1} + φ(k_i)
//   num_i = (R_i φ(q_i))ᵀ S_i
//   den_i = φ(q_i)ᵀ z_i + eps   when normalize,   1 / unnormalized_scale otherwise
//   out_i = num_i / den_i
// With a per-head decay γ (LinearAttentionOptions::decay, docs/decay.md): S_i = γ S_{i-1} + ..., z_i = γ z_{i-1} + ...
// Positions are 0-based as in rope.hpp. Same math, options, shapes and buffer layouts as the masked
// quadratic form linear_attention_forward/backward (linear_attention.hpp), which stays the reference:
// tests/test_attention_recurrent.cpp checks the two agree. Cost per (batch, head): O(T·F·D) instead of
// O(T²·(F + D)), and no T×T buffer. Causal mask only (the state runs forward in time).
//
// Shapes: qkv (B, T, 3C) per token [q (C) | k (C) | v (C)], head h owning columns h·D .. h·D+D-1 of each;
// out (B, T, C); b_kv (H, F, D); b_d (H, F).
#include <cstddef>
#include <vector>

#include "framework/nn/linear_attention.hpp"

namespace iclab::nn {

// What backward needs from forward: O(T·F) per head. Neither the per-position states S_i (T·F·D) nor
// any T×T scores are kept; backward recomputes S_i in one forward sweep.
// What backward needs: the same buffers as the quadratic form's cache, so a model can switch forms.
template <class T>
using LinearAttentionStateCache = LinearAttentionCache<T>;

// out (B, T, C) = Eq. 13 by the recurrence of Eq. 19.
template <class T>
void linear_attention_recurrent_forward(T* out, LinearAttentionStateCache<T>& cache, const T* qkv, const T* b_kv,
                                        const T* b_d, const T* random_features, const AttentionShape& shape,
                                        const LinearAttentionOptions& options);

// d_qkv (B, T, 3C) +=, d_b_kv (H, F, D) +=, d_b_d (H, F) += ; out is forward's output, d_out (B, T, C).
// With options.decay and d_decay set: d_decay (H) += ∂L/∂γ_h (a learned decay).
// Bias gradients are reduced over the batch in a fixed order: results do not depend on the thread count.
template <class T>
void linear_attention_recurrent_backward(T* d_qkv, T* d_b_kv, T* d_b_d, const T* d_out, const T* qkv, const T* b_kv,
                                         const T* b_d, const T* random_features, const T* out,
                                         const LinearAttentionStateCache<T>& cache,
                                         const AttentionShape& shape, const LinearAttentionOptions& options,
                                         T* d_decay = nullptr);

// One step of Eq. 19 for a single token at position `position` (incremental decoding): per head h,
//   S_h = [γ_h] S_h + R_i φ(k_i) v_iᵀ,  z_h = [γ_h] z_h + φ(k_i),  out_h = (R_i φ(q_i))ᵀ S_h / den_i
// with den_i as above. state (H, F, D) and key_sum (H, F) carry S_{i-1}, z_{i-1} in and S_i, z_i out; they start
// as b_KV, b_D. qkv (3C), out (C). Same per-head arithmetic as linear_attention_recurrent_forward.
template <class T>
void linear_attention_step(T* out, T* state, T* key_sum, const T* qkv, std::size_t position, const T* random_features,
                           const AttentionShape& shape, const LinearAttentionOptions& options);

}  // namespace iclab::nn
