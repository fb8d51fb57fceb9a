#include "experiments/cli/convert.hpp"

#include <algorithm>
#include <cstdio>

#include "experiments/registry.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/run/finished_run.hpp"

namespace iclab::cli {

void convert(const ConvertOptions& options) {
    // Everything that can be refused is refused before the model is loaded.
    ICLAB_INPUT_CHECK(!options.out.empty(), "iclab convert: --out ADAPTER.h5 is required");
    ICLAB_INPUT_CHECK(options.overwrite || !std::filesystem::exists(options.out),
                      options.out.string() << " already exists: an adapter file is not replaced without --overwrite");
    const auto out_folder = options.out.parent_path();
    ICLAB_INPUT_CHECK(out_folder.empty() || std::filesystem::is_directory(out_folder),
                      "iclab convert: the folder of --out " << options.out.string() << " does not exist");
    const std::vector<int> letters = tasks::encode_letters(options.prompt);
    ICLAB_INPUT_CHECK(!letters.empty(), "iclab convert: the prompt is empty");
    const std::vector<std::int32_t> prompt(letters.begin(), letters.end());

    // ICLCA rotates b_KV by R_{-M} (Eq. 14): the RoPE table needs position M.
    run::InductionRun loaded = run::load_induction_run(options.run_dir, experiments::catalog(), prompt.size() + 1, "iclab convert");
    model::Transformer<double>& model = *loaded.model;
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
