#pragma once
// Theorem 4.1 of paper 000 (Eq. 9-11), directly on one linear attention layer without mask, normalizer and
// RoPE: LinAttn([X'; X] W, b) at X's rows equals LinAttn(X W, b') with b' = b + W_Kᵀ X'ᵀ X' W_V.
// ICLCA (iclca.hpp) generalizes it to causal, normalized, RoPE models; this is the identity as stated.
#include <cstddef>
#include <vector>

namespace iclab::icl {

// Eq. 9 per head, LinAttn(Q, K, V, b) = Q (KᵀV + b), over `time` rows of x (time, C): every row sees every row
// (no mask), identity features, no normalizer and no output scale, no RoPE. w_qkv (C, 3C) = [W_Q | W_K | W_V],
// b_kv (H, D, D). out (time, C).
template <class T>
void eq9_attention(std::vector<T>& out, const T* x, std::size_t time, const std::vector<T>& w_qkv, const std::vector<T>& b_kv,
                   std::size_t C, std::size_t H);

// Eq. 11 per head h: b'_h = b_h + (X' W_K,h)ᵀ (X' W_V,h) for the prompt rows x_prompt (M, C) — the same matrix as
// W_Kᵀ X'ᵀ X' W_V by associativity, computed from the weights, without ICLCA and without any attention state.
template <class T>
std::vector<T> eq11_converted_bias(const T* x_prompt, std::size_t M, const std::vector<T>& w_qkv, const std::vector<T>& b_kv,
                                   std::size_t C, std::size_t H);

}  // namespace iclab::icl
