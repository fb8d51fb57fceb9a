#pragma once
// `iclab convert RUN_DIR --prompt LETTERS --out ADAPTER.h5`: ICLCA (paper 000 Algorithm 1) on a trained
// induction-head run: the prompt becomes the b_KV, b_D of every layer, written as an adapter file
// (framework/icl/adapter_file.hpp, docs/adapter_format.md) that `iclab predict --adapter` applies.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace iclab::model {
struct ModelSpec;
}

namespace iclab::cli {

struct ConvertOptions {
    std::filesystem::path run_dir;
    std::string prompt;                          // letters a-z, A-Z (tasks::encode_letters); lm runs: text (BPE)
    bool prompt_is_tokens = false;               // lm runs: the prompt is prompt_tokens (--prompt-tokens)
    bool prompt_from_file = false;               // --prompt-file: induction runs read its letters (whitespace dropped)
    std::vector<int> prompt_tokens;
    std::filesystem::path out;                   // the adapter file to write
    std::vector<std::filesystem::path> adapters; // applied in this order before converting (composition)
    bool overwrite = false;                      // replace an existing adapter file
    // ICLAA (softmax models, framework/icl/iclaa_adapter.hpp): method "auto" picks ICLCA for linear attention and ICLAA
    // for softmax attention. The base adapters of an ICLAA conversion are ICLAA adapters whose prompts are prepended.
    std::string method = "auto";                 // auto | iclca | iclaa; softmax lm runs also exact | recent | heavy
    std::size_t keep_tokens = 16;                // recent | heavy: K prompt tokens kept (icl::CacheAdapter)
    std::string feature_map = "prf";             // prf | orf | elu1 | learned
    std::size_t features = 256;                  // F (Performer's default nb_features)
    std::uint64_t seed = 0;                      // of the random features or of the learned map's fit
    std::string rope_convention = "rotate_then_map";
    std::size_t fit_steps = 600;                 // learned maps: Adam steps of the fit
    // Which of the four were given on the command line: converting on top of an ICLAA adapter inherits the others from
    // it, and refuses a given one that differs from it (a composed adapter has one feature map, F, seed and convention).
    // (and, for learned maps, fit_steps)
    bool feature_map_given = false, features_given = false, seed_given = false, rope_convention_given = false, fit_steps_given = false;
};

// Prints the prompt length M, the adapter's and the model's parameter counts, the percentage and, as the
// last line of stdout, the adapter file. InputError (exit 2) for a model ICLCA does not support (naming the
// assumption), a letter outside the vocabulary, an existing --out without overwrite, or base adapters that
// do not fit the model or each other.
void convert(const ConvertOptions& options);
// convert on an lm run (experiments/cli/convert_lm.cpp); convert() calls it for lm runs.
void convert_lm(const ConvertOptions& options);
// InputError when an ICLAA adapter of F features for `tokens` prompt tokens would not fit the memory, the disk of
// `out` or iclab's FLOP limit (convert.cpp); prints the estimate when it is large. `model_gib`: the memory the model
// holds besides (lm runs: its parameters and the prompt's forward, lm_estimates.hpp), counted with the adapter's.
void check_iclaa_conversion_size(const model::ModelSpec& spec, const std::string& feature_map, std::size_t features, std::size_t tokens,
                                 const std::filesystem::path& out, double model_gib = 0.0);

}  // namespace iclab::cli
