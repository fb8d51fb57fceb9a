#pragma once
// Incremental decoding of the one Transformer (transformer.hpp): the model's own parameters, read in place, run
// over a growing sequence one block of new tokens at a time, each layer keeping what later tokens need:
//   softmax attention : the key/value cache, rotated keys R_j k_j and values v_j of every past position (H, T_max, D)
//   linear attention  : the recurrent state of paper 000 Eq. 19, S (H, F, D) and z (H, F), started at b_KV, b_D
// so that prefilling a prompt costs one pass and every generated token one step. Token i sees the positions 0..i
// exactly as row i of a full causal forward does (tests/test_transformer_decode.cpp: <= 1e-12 in fp64).
//
// Adapters are honoured as `predict` honours them: an ICLCA adapter sets b_KV, b_D in the model's parameters
// (icl::apply_adapter), which become the initial state here; an ICLAA adapter's prompt terms (softmax models) are
// passed to the constructor and added to every query's attention as Transformer::set_softmax_prompt does.
// Token models with the causal mask only (no prefix mask, no isolated queries).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/model/transformer.hpp"

namespace iclab::model {

template <class T>
class TransformerDecoder {
public:
    using SoftmaxPrompt = std::vector<std::vector<nn::SoftmaxPromptHead<T>>>;
    // `model` and `prompt` (per layer, H heads; null: none) must outlive the decoder; the model's parameters are read
    // at every call, so set adapters before the first append.
    // `learned_position_start` (learned absolute positions only): token i of the sequence reads E_pos[start + i], as
    // Transformer::set_learned_position_start; an adapter standing for a prompt of M tokens sets start = M.
    explicit TransformerDecoder(const Transformer<T>& model, const SoftmaxPrompt* prompt = nullptr,
                                std::size_t learned_position_start = 0);

    // Runs `count` new tokens at positions length() .. length() + count - 1 and keeps their logits (count, V).
    // A position at or past the model's context (max_seq_len) is an InputError naming the limit.
    void append(const std::int32_t* tokens, std::size_t count);
    void reset();  // back to an empty sequence (the state returns to b_KV, b_D)

    std::size_t length() const { return length_; }
    std::size_t context_limit() const { return spec_.max_seq_len - position_start_; }  // tokens this decoder can hold
    const T* logits() const { return logits_.data(); }                           // (count of the last append, V)
    const T* last_logits() const { return logits_.data() + (count_ - 1) * spec_.vocab; }  // (V)

private:
    struct LayerOffsets {
        const T *ln1_gamma, *ln1_beta, *w_qkv, *b_qkv, *w_o, *b_o, *b_kv, *b_d, *random;
        const T *ln2_gamma, *ln2_beta, *w_fc, *b_fc, *w_proj, *b_proj;
    };

    const Transformer<T>& model_;
    const ModelSpec spec_;
    const SoftmaxPrompt* prompt_;
    std::vector<LayerOffsets> layers_;
    const T *embedding_ = nullptr, *positions_ = nullptr, *final_gamma_ = nullptr, *final_beta_ = nullptr;
    const T* unembedding_ = nullptr;  // (C, V); null when tied: logits = x wteᵀ
    std::size_t length_ = 0, count_ = 0, position_start_ = 0;
    // per layer: softmax key and value caches (H, T_max, D); linear state (H, F, D) and key sum (H, F)
    std::vector<std::vector<T>> keys_, values_, state_, key_sum_;
    // scratch, (count, ·)
    std::vector<T> x_, normed_, mean_, rstd_, qkv_, att_, mid_, fc_, fc_gelu_, logits_;
};

extern template class TransformerDecoder<float>;
extern template class TransformerDecoder<double>;

}  // namespace iclab::model
