// `iclab convert` on a language-model (lm) run: ICLCA (paper 000 Algorithm 1) of a prompt given as text (BPE with the
// run's tokenizer) or token ids into an adapter file that predict and generate apply, for linear-attention runs; and,
// for softmax runs, the prompt's key/value cache (--method exact | recent | heavy, framework/icl/cache_adapter.hpp) and
// ICLAA (--method iclaa | auto: kernel biases) and the hybrid (--method hybrid: the last K tokens' cache + ICLAA kernel
// biases for the older ones, iclaa_adapter.hpp): experiment iclaa_lm's rows as files.
#include <cstdio>

#include "experiments/cli/convert.hpp"
#include "experiments/cli/finite_check.hpp"
#include "experiments/cli/lm_estimates.hpp"
#include "experiments/cli/lm_input.hpp"
#include "experiments/registry.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/core/progress.hpp"
#include "framework/core/rng.hpp"
#include "framework/icl/cache_adapter.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/lm_run.hpp"

namespace iclab::cli {

namespace {

// The prompt's text as the adapter records it ("" for token ids): a display copy, NUL bytes shown as U+2400 (an HDF5
// string ends at a NUL); the adapter's /prompt token ids are exact.
std::string prompt_text(const ConvertOptions& options) { return options.prompt_is_tokens ? std::string() : io::nul_as_symbol(options.prompt); }

// NaN or infinity in the conversion's forward over the prompt (traced, convert_lm): refused before anything is written.
void check_prompt_forward(const model::Transformer<double>& model, const std::vector<std::int32_t>& prompt, const std::string& who) {
    if (model.first_non_finite().found()) refuse_non_finite(model, prompt.data(), prompt.size(), who, "the prompt", "");
}

// The flag that gave the prompt, for messages.
const char* prompt_flag(const ConvertOptions& options) {
    return options.prompt_is_tokens ? "--prompt-tokens" : options.prompt_from_file ? "--prompt-file" : "--prompt-text";
}

// The prompt's key/value cache (all of it, or keep_tokens recent / heavy ones) as an adapter file (icl::CacheAdapter).
void convert_lm_cache(const ConvertOptions& options, run::LmRun<double>& run, Progress& progress) {
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
                        model.spec().vocab, model.spec().max_seq_len - 1, who, prompt_flag(options));
    ICLAB_INPUT_CHECK(options.method == "exact" || options.keep_tokens < prompt.size(),
                      who << ": --keep-tokens " << options.keep_tokens << " keeps the whole prompt of " << prompt.size()
                          << " tokens (use --method exact, or a smaller --keep-tokens)");
    check_convert_lm_estimate(options, model.spec(), prompt.size(),  // issue 41: estimated before the work
                              cache_adapter_memory_gib(model.spec(), options.method == "exact" ? prompt.size() : options.keep_tokens));
    progress.stage("the prompt's keys and values: a forward over " + std::to_string(prompt.size()) + " tokens");
    const icl::CacheAdapter adapter = icl::cache_convert(model, prompt, prompt_text(options),
                                                         options.method, options.keep_tokens);
    check_prompt_forward(model, prompt, who);
    progress.stage("writing " + options.out.string());
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

// ICLAA (--method iclaa, or auto on a softmax run: kernel biases with --feature-map for the whole prompt) or the hybrid
// (--method hybrid: the last --keep-tokens prompt tokens' keys and values exactly, the kernel for the older ones) of a
// softmax lm run as an icl::IclaaAdapter file: experiment iclaa_lm's prf / orf and hybrid rows. Random (prf, orf) and
// elu1 maps, drawn from Rng(--seed) as `convert --method iclaa` draws them on induction-head runs.
void convert_lm_iclaa(const ConvertOptions& options, run::LmRun<double>& run, Progress& progress) {
    const std::string who = "iclab convert --method " + options.method;
    model::Transformer<double>& model = *run.model;
    const model::ModelSpec& spec = model.spec();
    try {
        icl::check_iclaa_assumptions(spec);
    } catch (const InputError& error) {
        throw InputError(who + ": ICLAA stands in for softmax attention, and " + options.run_dir.string() + " has none: " + error.what());
    }
    ICLAB_INPUT_CHECK(options.adapters.empty(), who << ": an lm run's ICLAA or hybrid adapter is not composed; convert the whole prompt at once");
    ICLAB_INPUT_CHECK(options.feature_map != "learned",
                      who << ": --feature-map learned is not available for lm runs (its fit needs the run's training text; experiment "
                          << "iclaa_lm fits it): use prf, orf or elu1");
    const std::vector<std::int32_t> prompt =
        lm_input_tokens(options.run_dir, options.prompt_is_tokens ? nullptr : &options.prompt, options.prompt_tokens, spec.vocab,
                        spec.max_seq_len - 1, who, prompt_flag(options));
    const bool hybrid = options.method == "hybrid";
    const std::size_t keep = hybrid ? options.keep_tokens : 0;
    ICLAB_INPUT_CHECK(keep <= prompt.size(), who << ": --keep-tokens " << keep << " must lie in [1, " << prompt.size()
                                                 << "] (the prompt's tokens; " << prompt.size() << " is the exact cache)");
    icl::FeatureMapChoice choice;
    choice.map = options.feature_map;
    choice.features = options.feature_map == "elu1" ? spec.head_dim() : options.features;
    check_iclaa_conversion_size(spec, choice.map, choice.features, prompt.size(), options.out,
                                convert_lm_model_memory_gib(options, spec, prompt.size()));  // the model's part (issue 41)
    std::fflush(stdout);
    const icl::SequenceSampler no_data = [](std::vector<std::int32_t>&, std::size_t, Rng&) {
        ICLAB_CHECK(false, "random and elu1 feature maps draw no sequences");
    };
    Rng rng(options.seed);
    progress.stage("drawing the " + choice.map + " feature maps and converting the prompt of " + std::to_string(prompt.size()) + " tokens");
    icl::LayerHeadMaps maps = icl::build_feature_maps(model, choice, no_data, spec.max_seq_len, rng, nullptr);
    const icl::IclaaAdapter adapter =
        icl::iclaa_convert(model, prompt, prompt_text(options), std::move(maps), choice.map,
                           options.seed, icl::parse_rope_convention(options.rope_convention), keep);
    check_prompt_forward(model, prompt, who);
    progress.stage("writing " + options.out.string());
    icl::write_iclaa_adapter(options.out, adapter, options.overwrite);
    if (hybrid)
        std::printf("method                hybrid: the last %zu prompt tokens' keys and values exactly, ICLAA for the %zu older ones (%s)\n",
                    keep, prompt.size() - keep, keep == prompt.size() ? "all kept: the exact prompt cache" : "approximate");
    else
        std::printf("method                ICLAA (approximate: kernel biases for softmax attention, paper 000 §5)\n");
    std::printf("prompt length M       %zu BPE tokens\n", prompt.size());
    std::printf("feature map           %s, F %zu, seed %llu, %s\n", choice.map.c_str(), adapter.features,
                static_cast<unsigned long long>(options.seed), icl::rope_convention_name(adapter.convention));
    std::printf("adapter bytes (fp32)  %.0f kept cache + %.0f kernel biases + %.0f feature maps (exact cache: %.0f)\n",
                adapter.kept_cache_bytes(), adapter.bias_bytes(), adapter.map_bytes(), adapter.exact_cache_bytes());
    if (adapter.learned_positions)
        std::printf("input positions       from %zu (learned positions: the input sits behind the prompt)\n", adapter.input_position_start());
    std::printf("%s\n", options.out.string().c_str());  // last line of stdout: the adapter file, for scripts
}

}  // namespace

void convert_lm(const ConvertOptions& options) {
    const std::string who = "iclab convert";
    check_lm_parameters_fit(options.run_dir, 8.0, who);  // before they are read (issue 41)
    Progress progress(who, false, nullptr, Progress::lazy);  // a stage that lasts > 3 s says so (issue 44)
    progress.stage("loading the parameters of " + options.run_dir.string());
    run::LmRun<double> run = run::load_lm_run<double>(options.run_dir, experiments::catalog(), who);
    model::Transformer<double>& model = *run.model;
    model.trace_non_finite(true);  // a prompt whose forward is not finite is refused, never converted (finite_check.hpp)
    if (options.method == "exact" || options.method == "recent" || options.method == "heavy") {
        convert_lm_cache(options, run, progress);
        return;
    }
    ICLAB_INPUT_CHECK(options.method == "auto" || options.method == "iclca" || options.method == "iclaa" || options.method == "hybrid",
                      who << ": --method must be auto, iclca, iclaa, exact, recent, heavy or hybrid, got '" << options.method << "'");
    const bool softmax = model.spec().attention == model::ModelSpec::Attention::softmax;
    if (options.method == "hybrid" || options.method == "iclaa" || (options.method == "auto" && softmax)) {
        convert_lm_iclaa(options, run, progress);
        return;
    }
    try {
        icl::check_iclca_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError(who + ": cannot convert a prompt for " + options.run_dir.string() + ": " + error.what());
    }
    const std::vector<std::int32_t> prompt =
        lm_input_tokens(options.run_dir, options.prompt_is_tokens ? nullptr : &options.prompt, options.prompt_tokens,
                        model.spec().vocab, model.spec().max_seq_len, who, prompt_flag(options));
    check_convert_lm_estimate(options, model.spec(), prompt.size(), 0.0);  // issue 41; the biases are small
    const icl::AppliedAdapters applied = icl::apply_adapter_files(model, options.adapters);
    progress.stage("ICLCA of the prompt of " + std::to_string(prompt.size()) + " tokens");
    const icl::AttentionBiases<double> converted = icl::iclca_convert(model, prompt.data(), prompt.size());
    icl::Adapter adapter = icl::make_adapter(model, converted, prompt, prompt_text(options),
                                             applied.chain);
    adapter.source = std::filesystem::absolute(options.run_dir).lexically_normal().string();
    check_prompt_forward(model, prompt, who);
    progress.stage("writing " + options.out.string());
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
