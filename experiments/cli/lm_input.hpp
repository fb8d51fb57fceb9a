#pragma once
// What predict, convert and generate share on language-model (lm) runs: the input as BPE text through the run's own
// tokenizer (RUN_DIR/tokenizer, text::Bpe) or as token ids, and adapters applied to the model as `predict` applies
// them (ICLCA files set b_KV, b_D; one ICLAA, hybrid or prompt-cache file gives softmax prompt terms, fp64 only).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/icl/adapter_file.hpp"
#include "framework/icl/cache_adapter.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/model/transformer.hpp"
#include "framework/text/bpe.hpp"

namespace iclab::cli {

// The run's tokenizer; InputError naming the run folder when it has none (`who`: "iclab generate").
text::Bpe load_run_tokenizer(const std::filesystem::path& run_dir, const std::string& who);

// Token ids of the input: `text` (when given) encoded with the run's tokenizer, else `ids`. Refused with InputError:
// an empty input, an id outside [0, vocab), and (context > 0) more than `context` tokens (saying the limit).
std::vector<std::int32_t> lm_input_tokens(const std::filesystem::path& run_dir, const std::string* text,
                                          const std::vector<int>& ids, std::size_t vocab, std::size_t context,
                                          const std::string& who, const std::string& flag);

struct LmAdapters {
    icl::AppliedAdapters applied;  // ICLCA files, in order (empty chain: none)
    bool has_iclaa = false;
    icl::IclaaAdapter iclaa;       // one ICLAA file: its terms stand for the prompt in softmax attention
    bool has_cache = false;
    icl::CacheAdapter cache;       // one prompt-cache file (exact, recent, heavy): its keys and values stand for the prompt
    // The softmax prompt terms to add (null: none) and where the input starts among learned positions (cache, ICLAA and
    // hybrid adapters of learned-position models: after the prompt; 0 otherwise).
    const icl::PromptTerms* softmax_terms() const { return has_iclaa ? &iclaa.terms : has_cache ? &cache.terms : nullptr; }
    std::size_t input_position_start() const {
        return has_cache ? cache.input_position_start() : has_iclaa ? iclaa.input_position_start() : 0;
    }
    const char* kind() const;  // "ICLAA: approximate", "hybrid: recent-K cache + ICLAA", "exact prompt cache", ... ("" for ICLCA)
};
// Applies `files` to `model` into `out` (not returned by value: the ICLAA terms point into out.iclaa's maps). A float
// model takes ICLCA chains only (their fp64 biases rounded to float); an ICLAA, hybrid or prompt-cache file is an
// InputError naming --dtype there (their prompt terms are fp64).
template <class T>
void apply_lm_adapters(LmAdapters& out, model::Transformer<T>& model, const std::vector<std::filesystem::path>& files,
                       const std::string& who);

}  // namespace iclab::cli
