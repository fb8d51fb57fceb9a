#pragma once
// Prompt-cache adapters: the baselines of ICLAA as files a user can apply (`iclab convert --method exact|recent|heavy`,
// docs/adapter_format.md). A softmax model's prompt X' (M tokens) is stored as K of its keys and values per layer and
// head (iclaa.hpp add_cache_terms: keys rotated to their offset p − M under RoPE):
//   exact   all M tokens: `predict` / `generate` with the adapter reproduce the model with the prompt (spec iclaa.md (A2))
//   recent  the K most recent tokens (a sliding window)
//   heavy   the K tokens with the largest attention column mass in the prompt's own causal attention (H2O-like)
// With learned absolute positions (GPT-2) the input must sit where it sat behind the prompt: the adapter records the
// prompt length and predict / generate start the input at position M (Transformer::set_learned_position_start).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/icl/iclaa.hpp"

namespace iclab::icl {

struct CacheAdapter {
    std::string selection = "exact";  // exact | recent | heavy
    std::size_t keep = 0;             // K tokens stored per layer and head (M for exact)
    std::vector<std::int32_t> prompt;
    std::string prompt_text;
    std::string model_fingerprint;
    std::size_t layers = 0, heads = 0, head_dim = 0;
    bool learned_positions = false;   // the model adds E_pos: inputs start at position M = prompt.size()
    PromptTerms terms;                // [l][h]: cache_keys, cache_values (K, D)

    std::size_t input_position_start() const { return learned_positions ? prompt.size() : 0; }
    double bytes() const { return cache_bytes(keep, head_dim) * static_cast<double>(layers * heads); }  // fp32
};

// The cache of `prompt` on `model` (softmax, fp64); keep is ignored for exact. InputError for another selection,
// keep outside [1, M), or a model ICLAA's assumptions exclude.
CacheAdapter cache_convert(model::Transformer<double>& model, const std::vector<std::int32_t>& prompt, std::string prompt_text,
                           const std::string& selection, std::size_t keep);

bool is_cache_adapter_file(const std::filesystem::path& path);  // root attribute format; false for other files
void write_cache_adapter(const std::filesystem::path& path, const CacheAdapter& adapter, bool overwrite);
// Reads and checks everything (format, version, selection, counts, shapes, finite values, content checksum):
// InputError naming the file and field.
CacheAdapter read_cache_adapter(const std::filesystem::path& path);
// InputError unless the adapter was made for this model (fingerprint, shapes, vocabulary, learned positions).
void check_cache_adapter(const model::Transformer<double>& model, const CacheAdapter& adapter, const std::string& name);

}  // namespace iclab::icl
