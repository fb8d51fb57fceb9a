#pragma once
// Memory and work of predict, generate and convert on language-model (lm) runs, checked before the work
// (framework/run/lm_estimate.hpp: refused with exit 2, the estimate and the flag to lower, when it exceeds the memory
// this process may use or iclab's work limit; printed to stderr when it is long). Issue 41. The peak of a command is
// the parameters plus the larger of reading them and the command's own work.
#include <cstddef>
#include <filesystem>

#include "experiments/cli/convert.hpp"
#include "experiments/cli/generate.hpp"
#include "experiments/cli/predict.hpp"
#include "framework/model/transformer.hpp"
#include "framework/run/memory_estimate.hpp"

namespace iclab::cli {

// Before RUN_DIR's checkpoint is read in `bytes` per value (4: float, 8: double): its parameters and the reading.
void check_lm_parameters_fit(const std::filesystem::path& run_dir, double bytes, const std::string& who);

// predict on T tokens: the forward's activations and logits (T, V), --out's file of the logits.
run::RunEstimate estimate_predict_lm(const PredictOptions& options, const model::ModelSpec& spec, double bytes, std::size_t tokens);
void check_predict_lm_estimate(const PredictOptions& options, const model::ModelSpec& spec, double bytes, std::size_t tokens);

// generate: the decoder's caches of the whole context, the prompt's prefill (kGeneratePrefillChunk tokens at a time),
// at most min(--max-new-tokens, context - prompt + 1) steps, and with --out the logits of every step (N, V) in double
// and their file.
run::RunEstimate estimate_generate(const GenerateOptions& options, const model::ModelSpec& spec, std::size_t prompt);
void check_generate_estimate(const GenerateOptions& options, const model::ModelSpec& spec, std::size_t prompt);
// Tokens of the prompt prefilled per decoder append: an append keeps the logits of all its tokens (count, V), and
// generation reads the last row only.
constexpr std::size_t kGeneratePrefillChunk = 256;

// convert on an lm run (float64): the parameters, the prompt's forward with its captured q, k, v and the keys and
// values taken from them (L M 3C, 2 L M C), plus `adapter_gib` for the adapter; the ICLAA conversion adds its maps to
// convert_lm_model_memory_gib (check_iclaa_conversion_size).
run::RunEstimate estimate_convert_lm(const ConvertOptions& options, const model::ModelSpec& spec, std::size_t prompt, double adapter_gib);
void check_convert_lm_estimate(const ConvertOptions& options, const model::ModelSpec& spec, std::size_t prompt, double adapter_gib);
double convert_lm_model_memory_gib(const ConvertOptions& options, const model::ModelSpec& spec, std::size_t prompt);
// A prompt-cache adapter keeping `kept` tokens: keys and values (L, H, K, D) in double, held, and twice in its file.
double cache_adapter_memory_gib(const model::ModelSpec& spec, std::size_t kept);

}  // namespace iclab::cli
