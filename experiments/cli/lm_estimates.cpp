#include "experiments/cli/lm_estimates.hpp"

#include <algorithm>

#include "experiments/registry.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/lm_estimate.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::cli {

namespace {
constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

std::filesystem::path results_file(const std::filesystem::path& run_dir) { return run_dir / run::kResultsFile; }

// The parameters plus the larger of reading them and `work` (reading ends before the work starts).
run::RunEstimate with_parameters(const std::filesystem::path& run_dir, const model::ModelSpec& spec, double bytes,
                                 const run::RunEstimate& work) {
    const run::RunEstimate parameters = run::estimate_lm_parameters(spec, bytes);
    run::RunEstimate e;
    e.memory_gib = parameters.memory_gib + std::max(run::lm_reading_memory_gib(spec, results_file(run_dir)), work.memory_gib);
    e.flops = parameters.flops + work.flops;
    return e;
}
}  // namespace

void check_lm_parameters_fit(const std::filesystem::path& run_dir, double bytes, const std::string& who) {
    const config::Config cfg = run::load_finished_run_config(run_dir, experiments::catalog(), who);
    // as load_lm_run refuses it (an induction-head run reached lm_model_spec's task.context_length: exit 1, issue 42)
    ICLAB_INPUT_CHECK(cfg.has("task.vocab_size") && cfg.has("task.context_length") && cfg.has("model.attention"),
                      who << ": " << run_dir.string() << " is a " << cfg.get_string("experiment")
                          << " run, not a language model (experiment lm: iclab import gpt2 makes one)");
    const model::ModelSpec spec = run::lm_model_spec(cfg);
    run::check_command_estimate(with_parameters(run_dir, spec, bytes, {}), who,
                                bytes > 4 ? "the model's size (this run's parameters do not fit; --dtype float32 halves them where "
                                            "the command has it)"
                                          : "the model's size (this run's parameters do not fit)",
                                true);
}

run::RunEstimate estimate_predict_lm(const PredictOptions& options, const model::ModelSpec& spec, double bytes, std::size_t tokens) {
    const double T = static_cast<double>(tokens), V = static_cast<double>(spec.vocab);
    run::RunEstimate work = run::estimate_lm_forward(spec, bytes, T);
    work.memory_gib += run::adapter_files_memory_gib(options.adapters);
    if (!options.out.empty()) work.memory_gib += run::results_file_memory_gib(T * V * bytes + 4.0 * T);  // /logits, /tokens
    return with_parameters(options.run_dir, spec, bytes, work);
}

void check_predict_lm_estimate(const PredictOptions& options, const model::ModelSpec& spec, double bytes, std::size_t tokens) {
    run::check_command_estimate(estimate_predict_lm(options, spec, bytes, tokens), "iclab predict",
                                std::string("the number of input tokens (") + (options.text.empty() ? "--tokens" : "--text") +
                                    ": the logits (T, V) and, with softmax attention, (H, T, T) probabilities grow with it)" +
                                    (options.out.empty() ? "" : " or leave out --out (a file of the logits (T, V))"));
}

run::RunEstimate estimate_generate(const GenerateOptions& options, const model::ModelSpec& spec, std::size_t prompt) {
    const double bytes = options.dtype == "float32" ? 4.0 : 8.0, V = static_cast<double>(spec.vocab);
    const double M = static_cast<double>(prompt), context = static_cast<double>(spec.max_seq_len);
    // generation stops at the context: at most context - M + 1 new tokens whatever --max-new-tokens says
    const double steps = std::max(1.0, std::min(static_cast<double>(options.max_new_tokens), context - M + 1.0));
    run::RunEstimate work = run::estimate_lm_decoding(spec, bytes, M, steps, static_cast<double>(kGeneratePrefillChunk));
    work.memory_gib += run::adapter_files_memory_gib(options.adapters) + 4.0 * steps / kGib;  // the generated ids
    // the chosen row widened to double; with --out every step's row (N, V) in double, and the file holding them
    work.memory_gib += options.out.empty() ? 8.0 * V / kGib
                                           : 8.0 * steps * V / kGib + run::results_file_memory_gib(8.0 * steps * V + 8.0 * (M + steps));
    return with_parameters(options.run_dir, spec, bytes, work);
}

void check_generate_estimate(const GenerateOptions& options, const model::ModelSpec& spec, std::size_t prompt) {
    run::check_command_estimate(estimate_generate(options, spec, prompt), "iclab generate",
                                options.out.empty() ? std::string("--max-new-tokens or the prompt")
                                                    : std::string("--max-new-tokens, or leave out --out (it stores the logits of every "
                                                                  "step, (N, V) in double)"));  // on stderr even with --quiet
}

run::RunEstimate estimate_convert_lm(const ConvertOptions& options, const model::ModelSpec& spec, std::size_t prompt, double adapter_gib) {
    const double M = static_cast<double>(prompt), L = static_cast<double>(spec.layers), C = static_cast<double>(spec.width);
    run::RunEstimate work = run::estimate_lm_forward(spec, 8.0, M);
    // captured q, k, v of every layer (L, M, 3C) and the prompt's keys and values taken from them (2 L M C)
    work.memory_gib += 5.0 * L * M * C * 8.0 / kGib + adapter_gib + run::adapter_files_memory_gib(options.adapters);
    return with_parameters(options.run_dir, spec, 8.0, work);
}

void check_convert_lm_estimate(const ConvertOptions& options, const model::ModelSpec& spec, std::size_t prompt, double adapter_gib) {
    run::check_command_estimate(estimate_convert_lm(options, spec, prompt, adapter_gib), "iclab convert",
                                "the prompt's length (--prompt-text / --prompt-tokens)");
}

double convert_lm_model_memory_gib(const ConvertOptions& options, const model::ModelSpec& spec, std::size_t prompt) {
    return estimate_convert_lm(options, spec, prompt, 0.0).memory_gib;
}

double cache_adapter_memory_gib(const model::ModelSpec& spec, std::size_t kept) {
    return 3.0 * 2.0 * static_cast<double>(spec.layers * spec.width) * static_cast<double>(kept) * 8.0 / kGib;
}

}  // namespace iclab::cli
