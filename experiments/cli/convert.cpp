#include "experiments/cli/convert.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "experiments/cli/command_line.hpp"
#include "experiments/registry.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/io/output_path.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/memory_estimate.hpp"

namespace iclab::cli {

// The size of an ICLAA adapter and of its conversion, before any map is drawn (issue 20: --random-features 1048576
// wrote a multi-GB adapter after minutes of work). The file stores per layer, in doubles, b_KV (H, F, D) and b_D (H, F),
// and for random and learned maps w (H, D, F) and c (H, F); the conversion holds the maps and the terms (one file's worth)
// and the writer's in-memory image (another). FLOPs: the prompt's M features and b_KV sums, 4 M F D per layer and head
// (a learned map's fit is not counted). Refused when the memory or the disk cannot hold it, or beyond kMaxRunFlops.
void check_iclaa_conversion_size(const model::ModelSpec& spec, const std::string& feature_map, std::size_t features, std::size_t tokens,
                                 const std::filesystem::path& out, double model_gib) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    const double L = static_cast<double>(spec.layers), H = static_cast<double>(spec.heads), D = static_cast<double>(spec.head_dim());
    const double F = static_cast<double>(features), M = static_cast<double>(tokens);
    const double per_head = F * D + F + (feature_map == "elu1" ? 0.0 : F * D + F);
    const double file_gib = 8.0 * L * H * per_head / kGiB, memory_gib = model_gib + 2.0 * file_gib + 8.0 * M * F / kGiB;
    const double flops = 4.0 * L * H * M * F * D;
    char estimate[200];
    std::snprintf(estimate, sizeof estimate, "an adapter of about %.3g GiB (F %.0f, %.0f layers x %.0f heads, D %.0f), about %.3g GiB of memory, %.2g FLOP",
                  file_gib, F, L, H, D, memory_gib, flops);
    const double available = available_memory_gib();
    ICLAB_INPUT_CHECK(!(memory_gib > available), "iclab convert: " << estimate << "; this machine has " << describe_available_memory()
                                                                   << ": lower --random-features"
                                                                   << (model_gib > 0.0 ? " or shorten the prompt" : ""));
    std::error_code error;
    const std::filesystem::space_info disk = std::filesystem::space(out.has_parent_path() ? out.parent_path() : ".", error);
    ICLAB_INPUT_CHECK(error || file_gib * kGiB <= static_cast<double>(disk.available),
                      "iclab convert: " << estimate << "; " << (out.has_parent_path() ? out.parent_path().string() : ".") << " has "
                                        << static_cast<double>(disk.available) / kGiB << " GiB free: lower --random-features");
    ICLAB_INPUT_CHECK(flops <= run::kMaxRunFlops, "iclab convert: " << estimate << "; iclab refuses more than " << run::kMaxRunFlops
                                                                     << " FLOP: lower --random-features or shorten the prompt");
    if (file_gib >= 0.25 || flops >= run::kPrintEstimateFlops) std::printf("estimated             %s\n", estimate);
}

namespace {

// ICLAA: the base adapters' prompts, then this prompt, converted at once (composition by reconversion, spec §1.5).
void convert_iclaa(const ConvertOptions& options, const std::vector<std::int32_t>& prompt, run::InductionRun& loaded) {
    model::Transformer<double>& model = *loaded.model;
    try {
        icl::check_iclaa_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError("iclab convert --method iclaa: cannot convert a prompt for " + options.run_dir.string() + ": " + error.what());
    }
    // Composition reconverts [X'_1; X'_2] (spec §1.5) with the base's feature map: its kind, F, seed and RoPE convention are
    // inherited, and a flag given with another value is refused (the composed adapter has one map).
    std::string feature_map = options.feature_map, convention = options.rope_convention;
    std::size_t features = options.features;
    std::uint64_t seed = options.seed;
    std::size_t fit_steps = options.fit_steps;
    std::vector<std::int32_t> context;
    std::string context_text;
    for (std::size_t i = 0; i < options.adapters.size(); ++i) {
        const auto& file = options.adapters[i];
        const icl::IclaaAdapter base = icl::read_iclaa_adapter(file);
        icl::check_iclaa_adapter(model, base, file.string());
        ICLAB_INPUT_CHECK(base.keep_tokens == 0, "iclab convert: the base adapter " << file.string() << " is a hybrid (keep_tokens "
                                                     << base.keep_tokens << "); a hybrid is not composed, convert the whole prompt at once");
        const std::string base_convention = icl::rope_convention_name(base.convention);
        const auto agree = [&](bool given_or_later, bool same, const char* flag, const std::string& ours, const std::string& theirs) {
            ICLAB_INPUT_CHECK(!given_or_later || same, "iclab convert: the base adapter " << file.string() << " was converted with " << flag << " "
                                                           << theirs << ", not " << ours << ": a composed adapter keeps its base's "
                                                           << flag << " (leave the flag out to inherit it)");
        };
        const bool later = i > 0;  // the second base must agree with the first
        agree(options.feature_map_given || later, base.feature_map == feature_map, "--feature-map", feature_map, base.feature_map);
        agree(options.features_given || later, base.features == features, "--random-features", std::to_string(features), std::to_string(base.features));
        agree(options.seed_given || later, base.seed == seed, "--seed", std::to_string(seed), std::to_string(base.seed));
        agree(options.rope_convention_given || later, base_convention == convention, "--rope-convention", convention, base_convention);
        if (base.feature_map == "learned")
            agree(options.fit_steps_given || later, base.fit_steps == fit_steps, "--fit-steps", std::to_string(fit_steps), std::to_string(base.fit_steps));
        if (base.feature_map == "learned") fit_steps = base.fit_steps;
        feature_map = base.feature_map;
        features = base.features;
        seed = base.seed;
        convention = base_convention;
        context.insert(context.end(), base.prompt.begin(), base.prompt.end());
        context_text += base.prompt_text;
    }
    context.insert(context.end(), prompt.begin(), prompt.end());
    ICLAB_INPUT_CHECK(context.size() <= model.spec().max_seq_len,
                      "iclab convert: the prompt (with its base adapters' prompts) has " << context.size() << " tokens, the model's RoPE table "
                                                                                        << model.spec().max_seq_len);
    icl::FeatureMapChoice choice;
    choice.map = feature_map;
    choice.features = feature_map == "elu1" ? model.spec().head_dim() : features;
    choice.fit.steps = fit_steps;
    check_iclaa_conversion_size(model.spec(), feature_map, choice.features, context.size(), options.out);
    std::fflush(stdout);
    Rng rng(seed);
    icl::FeatureFitReport report;
    const auto start = std::chrono::steady_clock::now();
    icl::LayerHeadMaps maps = icl::build_feature_maps(model, choice, icl::induction_sequence_sampler(loaded.task),
                                                      static_cast<std::size_t>(loaded.task.seq_len), rng, &report);
    icl::IclaaAdapter adapter = icl::iclaa_convert(model, context, context_text + options.prompt, std::move(maps), feature_map, seed,
                                                         icl::parse_rope_convention(convention));
    const double seconds = seconds_since(start);
    adapter.fit_steps = feature_map == "learned" ? fit_steps : 0;
    icl::write_iclaa_adapter(options.out, adapter, options.overwrite);
    std::printf("method                ICLAA (approximate: kernel biases for softmax attention, paper 000 §5)\n");
    std::printf("prompt length M       %zu%s\n", context.size(), options.adapters.empty() ? "" : " (base adapters' prompts included)");
    std::printf("feature map           %s, F %zu, seed %llu, %s%s\n", feature_map.c_str(), adapter.features,
                static_cast<unsigned long long>(seed), icl::rope_convention_name(adapter.convention),
                options.adapters.empty() ? "" : " (the base adapter's)");
    std::printf("adapter bytes (fp32)  %.0f kernel biases + %.0f feature maps\n", adapter.bias_bytes(), adapter.map_bytes());
    std::printf("exact prompt cache    %.0f bytes (fp32 keys and values of every layer and head)\n", adapter.exact_cache_bytes());
    std::printf("conversion            %.2f s\n", seconds);
    std::printf("%s\n", options.out.string().c_str());  // last line of stdout: the adapter file, for scripts
}

}  // namespace

void convert(const ConvertOptions& options) {
    // Everything that can be refused is refused before the model is loaded.
    ICLAB_INPUT_CHECK(!options.out.empty(), "iclab convert: --out ADAPTER.h5 is required");
    // The output policy (framework/io/output_path.hpp): never the run read, inside it, or a base adapter.
    std::vector<std::filesystem::path> inputs{options.run_dir};
    inputs.insert(inputs.end(), options.adapters.begin(), options.adapters.end());
    io::check_output_file(options.out, options.overwrite, "iclab convert --out", inputs);
    if (run::load_finished_run_config(options.run_dir, experiments::catalog(), "iclab convert").has("task.vocab_size")) {
        convert_lm(options);
        return;
    }
    ICLAB_INPUT_CHECK(!options.prompt_is_tokens, "iclab convert: --prompt-tokens is for language-model (lm) runs");
    ICLAB_INPUT_CHECK(options.method != "exact" && options.method != "recent" && options.method != "heavy" && options.method != "hybrid",
                      "iclab convert: --method " << options.method << " (a prompt-cache or hybrid adapter) is for language-model (lm) runs");
    if (options.prompt_from_file) {  // an induction run reads the file's letters (an lm run, above, its text as it is)
        ConvertOptions letters_only = options;
        letters_only.prompt = drop_whitespace(options.prompt);
        letters_only.prompt_from_file = false;
        convert(letters_only);
        return;
    }
    const std::vector<int> letters = tasks::encode_letters(options.prompt);
    ICLAB_INPUT_CHECK(!letters.empty(), "iclab convert: the prompt is empty");
    const std::vector<std::int32_t> prompt(letters.begin(), letters.end());

    // ICLCA rotates b_KV by R_{-M} (Eq. 14): the RoPE table needs position M.
    run::InductionRun loaded = run::load_induction_run(options.run_dir, experiments::catalog(), prompt.size() + 1, "iclab convert");
    model::Transformer<double>& model = *loaded.model;
    const bool softmax = model.spec().attention == model::ModelSpec::Attention::softmax;
    ICLAB_INPUT_CHECK(options.method == "auto" || options.method == "iclca" || options.method == "iclaa",
                      "iclab convert: --method must be auto, iclca or iclaa, got '" << options.method << "'");
    if (options.method == "iclaa" || (options.method == "auto" && softmax)) {
        convert_iclaa(options, prompt, loaded);
        return;
    }
    try {
        icl::check_iclca_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError("iclab convert: cannot convert a prompt for " + options.run_dir.string() + ": " + error.what());
    }
    // Converting on top of adapters: their biases are the b_KV, b_D the conversion starts from.
    const icl::AppliedAdapters applied = icl::apply_adapter_files(model, options.adapters);
    const icl::AttentionBiases<double> converted = icl::iclca_convert(model, prompt.data(), prompt.size());
    icl::Adapter adapter = icl::make_adapter(model, converted, prompt, options.prompt, applied.chain);
    adapter.source = std::filesystem::absolute(options.run_dir).lexically_normal().string();
    icl::write_adapter_file(options.out, adapter, options.overwrite);

    const model::ModelSpec& spec = model.spec();
    std::printf("prompt length M       %zu\n", prompt.size());
    if (!applied.chain.empty())
        std::printf("converted on top of   %zu adapter(s), context %zu tokens in all\n", applied.chain.size(),
                    applied.context.size() + prompt.size());
    std::printf("adapter parameters    %zu (b_KV (H, F, D) + b_D (H, F) in %zu layers, H %zu, F %zu, D %zu)\n",
                adapter.parameter_count(), spec.layers, spec.heads, spec.feature_dim(), spec.head_dim());
    std::printf("model parameters      %zu\n", adapter.model_parameter_count);
    std::printf("adapter size          %.2f %% of the model's parameters\n", adapter.size_percent());
    std::printf("model fingerprint     %s\n", adapter.model_fingerprint.c_str());
    std::printf("adapter fingerprint   %s\n", adapter.fingerprint().c_str());
    std::printf("%s\n", options.out.string().c_str());  // last line of stdout: the adapter file, for scripts
}

}  // namespace iclab::cli
