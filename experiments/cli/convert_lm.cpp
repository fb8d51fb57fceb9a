// `iclab convert` on a language-model (lm) run: ICLCA (paper 000 Algorithm 1) of a prompt given as text (BPE with the
// run's tokenizer) or token ids into an adapter file that predict and generate apply. Linear-attention runs only:
// ICLAA on lm runs needs feature maps fitted to text, which this version does not build (say so, exit 2).
#include <cstdio>

#include "experiments/cli/convert.hpp"
#include "experiments/cli/lm_input.hpp"
#include "experiments/registry.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/run/lm_run.hpp"

namespace iclab::cli {

void convert_lm(const ConvertOptions& options) {
    const std::string who = "iclab convert";
    run::LmRun<double> run = run::load_lm_run<double>(options.run_dir, experiments::catalog(), who);
    model::Transformer<double>& model = *run.model;
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
