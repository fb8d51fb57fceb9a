// `iclab convert` on a language-model (lm) run: ICLCA (paper 000 Algorithm 1) of a prompt given as text (BPE with the
// run's tokenizer) or token ids into an adapter file that predict and generate apply, for linear-attention runs; and,
// for softmax runs, the prompt's key/value cache (--method exact | recent | heavy, framework/icl/cache_adapter.hpp).
// ICLAA adapters of lm runs are not written here (experiment iclaa_lm builds them in memory; say so, exit 2).
#include <cstdio>

#include "experiments/cli/convert.hpp"
#include "experiments/cli/lm_input.hpp"
#include "experiments/registry.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/cache_adapter.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/run/lm_run.hpp"

namespace iclab::cli {

namespace {

// The prompt's key/value cache (all of it, or keep_tokens recent / heavy ones) as an adapter file (icl::CacheAdapter).
void convert_lm_cache(const ConvertOptions& options, run::LmRun<double>& run) {
    const std::string who = "iclab convert --method " + options.method;
    model::Transformer<double>& model = *run.model;
    try {
        icl::check_iclaa_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError(who + ": a prompt cache stands in for softmax attention, and " + options.run_dir.string() + " has none: " + error.what());
    }
    ICLAB_INPUT_CHECK(options.adapters.empty(), who << ": a prompt-cache adapter is not composed; convert the whole prompt at once");
    const std::vector<std::int32_t> prompt =
        lm_input_tokens(options.run_dir, options.prompt_is_tokens ? nullptr : &options.prompt, options.prompt_tokens,
                        model.spec().vocab, model.spec().max_seq_len - 1, who, options.prompt_is_tokens ? "--prompt-tokens" : "--prompt-text");
    ICLAB_INPUT_CHECK(options.method == "exact" || options.keep_tokens < prompt.size(),
                      who << ": --keep-tokens " << options.keep_tokens << " keeps the whole prompt of " << prompt.size()
                          << " tokens (use --method exact, or a smaller --keep-tokens)");
    const icl::CacheAdapter adapter = icl::cache_convert(model, prompt, options.prompt_is_tokens ? std::string() : options.prompt,
                                                         options.method, options.keep_tokens);
    icl::write_cache_adapter(options.out, adapter, options.overwrite);
    const model::ModelSpec& spec = model.spec();
    std::printf("method                prompt cache, %s (%s)\n", options.method.c_str(),
                options.method == "exact" ? "exact: equals the model with the prompt" : "approximate: a truncated cache");
    std::printf("prompt length M       %zu BPE tokens, %zu kept per layer and head\n", prompt.size(), adapter.keep);
    std::printf("adapter bytes (fp32)  %.0f (keys and values (K, D) in %zu layers x %zu heads, D %zu)\n", adapter.bytes(), spec.layers,
                spec.heads, spec.head_dim());
    if (adapter.learned_positions)
        std::printf("input positions       from %zu (learned positions: the input sits behind the prompt)\n", adapter.input_position_start());
    std::printf("%s\n", options.out.string().c_str());  // last line of stdout: the adapter file, for scripts
}

}  // namespace

void convert_lm(const ConvertOptions& options) {
    const std::string who = "iclab convert";
    run::LmRun<double> run = run::load_lm_run<double>(options.run_dir, experiments::catalog(), who);
    model::Transformer<double>& model = *run.model;
    if (options.method == "exact" || options.method == "recent" || options.method == "heavy") {
        convert_lm_cache(options, run);
        return;
    }
    ICLAB_INPUT_CHECK(options.method != "iclaa" && model.spec().attention == model::ModelSpec::Attention::linear,
                      who << ": " << options.run_dir.string() << " is a softmax language model; ICLAA adapters for lm runs are not "
                          << "implemented in this version (ICLCA converts linear-attention lm runs exactly)");
    try {
        icl::check_iclca_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError(who + ": cannot convert a prompt for " + options.run_dir.string() + ": " + error.what());
    }
    const std::vector<std::int32_t> prompt =
        lm_input_tokens(options.run_dir, options.prompt_is_tokens ? nullptr : &options.prompt, options.prompt_tokens,
                        model.spec().vocab, model.spec().max_seq_len, who, options.prompt_is_tokens ? "--prompt-tokens" : "--prompt-text");
    const icl::AppliedAdapters applied = icl::apply_adapter_files(model, options.adapters);
    const icl::AttentionBiases<double> converted = icl::iclca_convert(model, prompt.data(), prompt.size());
    icl::Adapter adapter = icl::make_adapter(model, converted, prompt, options.prompt_is_tokens ? std::string() : options.prompt,
                                             applied.chain);
    adapter.source = std::filesystem::absolute(options.run_dir).lexically_normal().string();
    icl::write_adapter_file(options.out, adapter, options.overwrite);
    const model::ModelSpec& spec = model.spec();
    std::printf("prompt length M       %zu BPE tokens\n", prompt.size());
    std::printf("adapter parameters    %zu (b_KV (H, F, D) + b_D (H, F) in %zu layers, H %zu, F %zu, D %zu)\n",
                adapter.parameter_count(), spec.layers, spec.heads, spec.feature_dim(), spec.head_dim());
    std::printf("adapter size          %.3f %% of the model's %zu parameters\n", adapter.size_percent(), adapter.model_parameter_count);
    std::printf("adapter fingerprint   %s\n", adapter.fingerprint().c_str());
    std::printf("%s\n", options.out.string().c_str());  // last line of stdout: the adapter file, for scripts
}

}  // namespace iclab::cli
