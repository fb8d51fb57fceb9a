#pragma once
// ICLAA adapters as files: a prompt's kernel biases (b_KV, b_D per layer and head, log-scaled) and the feature maps
// they were made with, for a softmax model (iclaa.hpp; spec iclaa.md §1.5). `iclab convert --method iclaa` writes
// one, `iclab predict --adapter` applies it. The root attribute exact = "false": an ICLAA adapter approximates the
// model with the prompt, it never claims to equal it (only a hybrid keeping all M tokens, below, is "true").
//
// Composition: converting X'_2 "on top of" X'_1's ICLAA adapter cannot be done from the adapter (X'_2's hidden
// states would need X'_1 in context, and a kernel term cannot be shifted by R_{−M₂} in feature space: spec §1.5).
// So an adapter stores its prompt tokens, and converting on top of one reconverts [X'_1; X'_2] from the tokens:
// the result is one adapter for the concatenated prompt. Removing an adapter is exact (the model has no terms).
//
// Hybrid (keep_tokens = K > 0, `iclab convert --method hybrid` on lm runs): the last K prompt tokens are kept as an
// exact recent-K cache (their keys and values, as cache_adapter.hpp stores them) and the kernel biases sum only the
// first M − K tokens: experiment iclaa_lm's hybrid rows (LoLCATs' sliding window + linear attention). K = M is the
// exact prompt cache (the kernel part is empty). With learned absolute positions (GPT-2) the input starts at position
// M, where it sat behind the prompt (iclaa_lm.input_positions = after_prompt).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/icl/iclaa.hpp"

namespace iclab::icl {

struct IclaaAdapter {
    std::string feature_map;   // prf | orf | elu1 | learned
    std::size_t features = 0;  // F
    std::uint64_t seed = 0;    // of the random draw or the fit
    std::size_t fit_steps = 0; // learned maps: Adam steps of the fit (0 for the others); composition refits with it
    RopeConvention convention = RopeConvention::rotate_then_map;
    std::size_t keep_tokens = 0;     // K: hybrid, the last K prompt tokens held exactly; 0: the kernel holds all M
    bool learned_positions = false;  // the model adds E_pos: inputs start at position M = prompt.size()
    LayerHeadMaps maps;        // [l][h]
    PromptTerms terms;         // [l][h]: kernel terms and (hybrid) the recent-K cache (features point into maps after read/make)
    std::vector<std::int32_t> prompt;
    std::string prompt_text;
    std::string model_fingerprint;
    std::size_t layers = 0, heads = 0, head_dim = 0;

    // fp32 bytes: of the biases (F·(D+1) per layer-head), of the maps, and of the exact prompt cache they stand for.
    double bias_bytes() const { return kernel_bytes(features, head_dim) * layers * heads; }
    double map_bytes() const;
    double exact_cache_bytes() const { return cache_bytes(prompt.size(), head_dim) * layers * heads; }
    double kept_cache_bytes() const { return cache_bytes(keep_tokens, head_dim) * layers * heads; }  // hybrid: the recent-K cache
    std::size_t input_position_start() const { return learned_positions ? prompt.size() : 0; }
    void point_terms_at_maps();  // after copying or moving an adapter
};

// ICLAA of `prompt` on `model` (softmax, fp64) with `maps` (built for the model, e.g. icl::build_feature_maps); with
// keep_recent = K > 0 the hybrid: the last K tokens exactly, the kernel for the rest (InputError unless K <= M).
IclaaAdapter iclaa_convert(model::Transformer<double>& model, const std::vector<std::int32_t>& prompt, std::string prompt_text,
                           LayerHeadMaps maps, const std::string& feature_map, std::uint64_t seed, RopeConvention convention,
                           std::size_t keep_recent = 0);

// Whether a file is an ICLAA adapter (root attribute format); false for ICLCA adapters and other files.
bool is_iclaa_adapter_file(const std::filesystem::path& path);
void write_iclaa_adapter(const std::filesystem::path& path, const IclaaAdapter& adapter, bool overwrite);
IclaaAdapter read_iclaa_adapter(const std::filesystem::path& path);

// Refuses (InputError naming why) an adapter made for another model (fingerprint, shapes, learned positions,
// vocabulary), a prompt that fills a learned-position model's context, or a model ICLAA does not apply to.
void check_iclaa_adapter(const model::Transformer<double>& model, const IclaaAdapter& adapter, const std::string& name);

}  // namespace iclab::icl
