#pragma once
// ICLCA: exact conversion of an in-context-learning prompt into the attention biases b_KV, b_D of every
// layer (paper 000 §4.4-4.5, Theorem 4.5, Algorithm 1; Theorem 4.1 without mask and RoPE).
//
// For a model M with biases (b_KV, b_D) and a prompt X' of M tokens, one forward pass over X' gives per
// layer and head (0-based prompt positions p = 0..M-1, RoPE rotation R_p of angle p·θ):
//   b'_KV = R_{-M} b_KV + Σ_p R_{p-M} φ(k'_p) v'_pᵀ = R_{-M} S_{M-1}           (Eq. 14)
//   b'_D  = b_D + Σ_p φ(k'_p) = z_{M-1}                                        (Eq. 15)
// where S_{M-1}, z_{M-1} are the recurrent state of Eq. 19 after the prompt (S_{-1} = b_KV, z_{-1} = b_D).
// Position convention: the converted model runs the input X at positions 0..N-1, as any input. Then the
// score of query i of X and prompt key p is φ(q_i)ᵀ R_{p-M-i} φ(k'_p), the same relative offset as in
// [X'; X], where X's token i sits at M + i; and the b_KV term (R_i φ(q))ᵀ R_{-M} b_KV = (R_{M+i} φ(q))ᵀ b_KV.
// With the 0-based prompt positions p = 0..M-1 used throughout, prompt key p is rotated by R_{p-M}: the
// prompt's last token (p = M-1) by R_{-1}, its first (p = 0) by R_{-M}. Every layer sees the same hidden states at X's
// positions as in [X'; X] (causal mask: the prompt's states do not depend on X), so the identity holds
// layer by layer (Eq. 16): logits(M_new, X) = logits(M_old, [X'; X]) at every position of X.
//
// Converting on top of an adapter uses the adapter's biases as b_KV, b_D: converting X'_2 on top of X'_1's
// adapter is converting [X'_1; X'_2] (tests check it).
//
// Decayed attention (model.decay, docs/decay.md): the same two lines with the decayed state S_{M-1} = γ^M b_KV +
// Σ_p γ^{M-1-p} R_p φ(k'_p) v'_pᵀ (z likewise); the model applies γ^{i+1} to its biases at position i of X (they are
// its initial state S_{-1}), exactly the decay the prompt's state has at X's position M + i (Theorem D.1 there).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/model/transformer.hpp"

namespace iclab::icl {

// Refuses (iclab::InputError naming the assumption) a model ICLCA cannot convert exactly:
// softmax attention (Assumption 4.4: its normalizer does not separate), a prefix or full mask or isolated
// queries (Assumption 4.2: autoregressive), shared layers (each depth needs its own b_KV, b_D), and an
// unnormalized model is fine (D₁ᵀD₂ constant separates trivially).
void check_iclca_assumptions(const model::ModelSpec& spec);

// The attention biases of every layer: b_kv[l] (H, F, D), b_d[l] (H, F).
template <class T>
struct AttentionBiases {
    std::vector<std::vector<T>> b_kv, b_d;
    std::size_t parameter_count() const;
};

template <class T>
AttentionBiases<T> read_biases(const model::Transformer<T>& model);
template <class T>
void write_biases(model::Transformer<T>& model, const AttentionBiases<T>& biases);

// Algorithm 1: the biases that make `model` without the prompt behave as `model` with it. The model's own
// current biases are the b_KV, b_D converted from (so adapters compose). The model's parameters are unchanged.
template <class T>
AttentionBiases<T> iclca_convert(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length);

// The two sides of ICLCA's identity (Eq. 16) for one (X', X) pair, as double (N, V) logits at X's positions:
// M_old on [X'; X], and M_new = M_old with the biases Algorithm 1 converts X' into, on X alone (the model's
// biases are `original` again afterwards). relative_error(converted, with_prompt) is Table 1's measure.
template <class T>
std::vector<double> logits_with_prompt(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length,
                                       const std::int32_t* input, std::size_t input_length);
template <class T>
std::vector<double> converted_logits(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length,
                                     const std::int32_t* input, std::size_t input_length, const AttentionBiases<T>& original);

// A fingerprint of everything in the model except b_KV and b_D (spec and parameter values): an adapter
// made for one model is refused by another.
template <class T>
std::string model_fingerprint(const model::Transformer<T>& model);

}  // namespace iclab::icl
