#pragma once
// ICLAA: approximate conversion of an ICL prompt into kernel biases for a softmax-attention RoPE model (paper 000 §5,
// Eq. 17-18, Algorithm 2, §6.4), in the corrected form of ../shared/specs/iclaa.md §1.2-1.3:
//   (1) run the unchanged model on X' alone (causal: exactly the prompt's hidden states inside [X'; X]) and keep
//       every layer's pre-RoPE k'_p, v'_p per head;
//   (2) per layer l and head h:  k̃'_p = D^{-1/4} R_{p−M} k'_p,  b_KV = Σ_p φ(k̃'_p) v'_pᵀ (F, D),  b_D = Σ_p φ(k̃'_p) (F)
//       — RoPE before φ ("rotate then map", relative to the split), sums in fp64 under one max shift;
//   (3) the converted model runs X at positions 0..N−1 and adds φ(q̃_i)ᵀb_KV, φ(q̃_i)ᵀb_D (q̃_i = D^{-1/4} R_i q_i) to
//       the un-normalized softmax numerator and denominator of every query (nn::SoftmaxPromptHead, spec (A4)).
// The same machinery holds the exact prompt KV cache (spec (A2): reproduces the model with the prompt to rounding)
// and truncated caches (recent-k, heavy-k), the baselines ICLAA is measured against at equal bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/model/transformer.hpp"
#include "framework/nn/kernel_features.hpp"

namespace iclab::icl {

// Refuses (InputError naming why) a model ICLAA does not apply to: linear attention (use ICLCA: exact), a prefix or
// full mask or isolated queries (the prompt's states would depend on the input), shared layers are fine.
void check_iclaa_assumptions(const model::ModelSpec& spec);

// Pre-RoPE keys and values of B prompts of M tokens, per layer (B, H, M, D), and each prompt key's column mass
// Σ_{i ≥ p} softmax_ip of the prompt's own causal attention (B, H, M): the "heavy" keys of a truncated cache.
struct PromptKeysValues {
    std::size_t batch = 0, length = 0, heads = 0, dim = 0;
    std::vector<std::vector<double>> keys, values, column_mass;  // per layer
    const double* key(std::size_t l, std::size_t b, std::size_t h, std::size_t p) const {
        return keys[l].data() + ((b * heads + h) * length + p) * dim;
    }
    const double* value(std::size_t l, std::size_t b, std::size_t h, std::size_t p) const {
        return values[l].data() + ((b * heads + h) * length + p) * dim;
    }
};
PromptKeysValues capture_prompt_keys_values(model::Transformer<double>& model, const std::int32_t* prompts, std::size_t batch,
                                            std::size_t length);

// Where the kernel's RoPE rotations go. rotate_then_map is the spec's (and the only unbiased) form; the others
// are ablations: prompt keys rotated by their absolute position p in X' (forgetting the split offset −M), or no
// rotation inside φ at all (what Eq. 17-18 reduce to for a model without RoPE, e.g. GPT-2).
enum class RopeConvention { rotate_then_map, absolute_prompt_positions, unrotated };
RopeConvention parse_rope_convention(const std::string& name);  // InputError otherwise
const char* rope_convention_name(RopeConvention convention);

// Feature maps of every layer and head: maps[l][h].
using LayerHeadMaps = std::vector<std::vector<nn::KernelFeatures<double>>>;

// One prompt's terms for every layer: [l][h] (H heads), or for many prompts at once [l][b·H + h].
using PromptTerms = std::vector<std::vector<nn::SoftmaxPromptHead<double>>>;
PromptTerms empty_prompt_terms(std::size_t layers, std::size_t heads_times_batch);

// Step (2): the kernel biases of prompt b of `kv`, written into terms[l][slot·H + h] for every l, h. With
// skip_recent = k, the last k prompt tokens are left out of the kernel sums (a hybrid row keeps them in an exact
// recent-k cache: LoLCATs' sliding window + linear attention, with the prompt as the linear part).
void add_kernel_terms(PromptTerms& terms, std::size_t slot, const PromptKeysValues& kv, std::size_t b, const LayerHeadMaps& maps,
                      const nn::RopeTable* rope, RopeConvention convention, std::size_t skip_recent = 0);

// Exact cache of prompt b: all M keys, the `keep` most recent, or the `keep` with the largest column mass (per
// layer and head). Keys are stored rotated to offset p − M.
enum class CacheSelection { all, recent, heavy };
void add_cache_terms(PromptTerms& terms, std::size_t slot, const PromptKeysValues& kv, std::size_t b, CacheSelection selection,
                     std::size_t keep, const nn::RopeTable* rope);

// Logits (B, N, V) as double of the model on B inputs of N tokens with `terms` added ([l][b·H + h] or [l][h]).
std::vector<double> logits_with_terms(model::Transformer<double>& model, const PromptTerms& terms, const std::int32_t* inputs,
                                      std::size_t batch, std::size_t length);

// fp32 bytes per layer-head of each stored form (spec §3): exact or truncated cache 2·K·D·4; kernel biases F·(D+1)·4.
inline double cache_bytes(std::size_t tokens, std::size_t D) { return 2.0 * tokens * D * 4.0; }
inline double kernel_bytes(std::size_t F, std::size_t D) { return F * (D + 1.0) * 4.0; }

}  // namespace iclab::icl
