#include "experiments/cli/predict.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "experiments/cli/command_line.hpp"
#include "experiments/cli/finite_check.hpp"
#include "experiments/registry.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/io/output_path.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/finished_run.hpp"

namespace iclab::cli {

void apply_induction_adapters(InductionAdapters& out, model::Transformer<double>& model,
                              const std::vector<std::filesystem::path>& files, std::size_t tokens, const std::string& who) {
    // ICLCA adapters replace b_KV, b_D in order; without them the model keeps the checkpoint's own biases. An ICLAA
    // adapter (softmax models) adds its kernel terms to every attention layer instead, and stands alone.
    std::size_t iclaa_files = 0;
    for (const auto& file : files) iclaa_files += icl::is_iclaa_adapter_file(file);
    ICLAB_INPUT_CHECK(iclaa_files == 0 || files.size() == 1,
                      who << ": an ICLAA adapter is applied alone (to stand for several prompts, convert them on top of "
                             "each other: iclab convert --adapter BASE.h5 reconverts the prompts together)");
    if (iclaa_files == 1) {
        out.iclaa = icl::read_iclaa_adapter(files[0]);
        icl::check_iclaa_adapter(model, out.iclaa, files[0].string());
        out.has_iclaa = true;
        model.set_softmax_prompt(&out.iclaa.terms);
        model.set_learned_position_start(out.iclaa.input_position_start());  // learned positions: the input sits behind the prompt
        ICLAB_INPUT_CHECK(out.iclaa.input_position_start() + tokens <= model.spec().max_seq_len,
                          who << ": " << tokens << " input tokens behind the adapter's " << out.iclaa.input_position_start()
                              << "-token prompt do not fit the model's context of " << model.spec().max_seq_len << " learned positions");
        out.applied.context = out.iclaa.prompt;
        out.applied.chain.push_back({out.iclaa.model_fingerprint, out.iclaa.prompt.size(), out.iclaa.prompt_text, files[0].string()});
    } else {
        out.applied = icl::apply_adapter_files(model, files);
    }
}

void predict(const PredictOptions& options) {
    // Refuse what would be refused after the work: an existing --out, a folder that is missing or takes no file.
    if (!options.out.empty()) {
        std::vector<std::filesystem::path> inputs{options.run_dir};  // the output policy: never an input, nor inside one
        inputs.insert(inputs.end(), options.adapters.begin(), options.adapters.end());
        io::check_output_file(options.out, options.overwrite, "iclab predict --out", inputs);
    }
    if (run::load_finished_run_config(options.run_dir, experiments::catalog(), "iclab predict").has("task.vocab_size")) {
        predict_lm(options);
        return;
    }
    ICLAB_INPUT_CHECK(options.dtype.empty() || options.dtype == "float64",
                      "iclab predict: an induction-head run predicts in float64; --dtype " << options.dtype << " is for language-model (lm) runs");
    ICLAB_INPUT_CHECK(options.token_ids.empty(), "iclab predict: --tokens is for language-model (lm) runs; "
                                                     << options.run_dir.string() << " reads letters (--text)");
    const std::string letters = options.text_from_file ? drop_whitespace(options.text) : options.text;
    const std::vector<int> tokens = tasks::encode_letters(letters);
    ICLAB_INPUT_CHECK(!tokens.empty(), "--text is empty");
    run::InductionRun loaded = run::load_induction_run(options.run_dir, experiments::catalog(), tokens.size(), "iclab predict");
    model::Transformer<double>& model = *loaded.model;
    const tasks::InductionHeadSpec& task = loaded.task;
    if (tokens.size() > static_cast<std::size_t>(task.seq_len))
        std::fprintf(stderr, "iclab predict: warning: the text has %zu tokens, the model was trained on sequences of %d "
                             "(task.seq_len): predictions past position %d use RoPE offsets it never saw\n",
                     tokens.size(), task.seq_len, task.seq_len - 1);
    InductionAdapters adapters;
    apply_induction_adapters(adapters, model, options.adapters, tokens.size(), "iclab predict");
    const icl::AppliedAdapters& applied = adapters.applied;
    if (adapters.has_iclaa)
        std::printf("ICLAA adapter (approximate, %s features, F %zu): the model reads every input as if it followed the prompt, "
                    "up to the kernel's error\n",
                    adapters.iclaa.feature_map.c_str(), adapters.iclaa.features);
    const std::vector<int> context(applied.context.begin(), applied.context.end());
    for (std::size_t i = 0; i < applied.chain.size(); ++i)
        std::printf("adapter %zu: %s (fingerprint %s, prompt length %zu)\n", i + 1, applied.chain[i].file.c_str(),
                    applied.chain[i].fingerprint.c_str(), applied.chain[i].prompt_length);
    if (!context.empty())
        std::printf("the model now reads every input as if it followed the %zu-token prompt %s\n", context.size(),
                    tasks::decode_tokens(context).c_str());

    const std::size_t TT = tokens.size(), V = tasks::kInductionVocab;
    std::vector<std::int32_t> input(tokens.begin(), tokens.end());
    model.trace_non_finite(true);  // NaN or infinite logits are refused, never printed (finite_check.hpp)
    model.forward(input.data(), 1, TT);
    if (model.first_non_finite().found())
        refuse_non_finite(model, input.data(), TT, "iclab predict", "the text", "the model's parameters are too large for this input");
    std::vector<double> zero(TT, 0.0);
    model.loss(input.data(), zero.data());  // fills probabilities (targets unused with zero weights)
    // Kinds as in [context; text]: a trigger seen in an adapter's prompt makes its repetition an icl position.
    std::vector<int> with_context = context;
    with_context.insert(with_context.end(), tokens.begin(), tokens.end());
    const auto all_kinds = tasks::classify_positions(with_context, task.triggers);
    const std::vector<tasks::PositionKind> kinds(all_kinds.begin() + static_cast<std::ptrdiff_t>(context.size()), all_kinds.end());
    const std::size_t top = std::min<std::size_t>(options.top, V);

    std::printf("%4s  %-5s %-13s  top-%zu next-token predictions (probability)\n", "pos", "token", "kind", top);
    std::vector<std::size_t> order(V);
    for (std::size_t t = 0; t < TT; ++t) {
        const double* p = model.probs() + t * V;
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](std::size_t a, std::size_t b) { return p[a] > p[b]; });
        std::printf("%4zu  %-5c %-13s ", t, tasks::token_to_letter(tokens[t]), tasks::position_kind_name(kinds[t]));
        for (std::size_t k = 0; k < top; ++k) std::printf(" %c %.3f", tasks::token_to_letter(static_cast<int>(order[k])), p[order[k]]);
        if (t + 1 < TT) std::printf("   (next: %c)", tasks::token_to_letter(tokens[t + 1]));
        std::printf("\n");
    }

    if (!options.out.empty()) {
        io::ResultsWriter writer(options.out, options.overwrite);
        // float64, as computed: ICLCA's identity holds to rounding in double (tests compare at 1e-10)
        writer.write_tensor("/logits", model.logits(), {TT, V}, {{"layout", "(T, V): logits of the next token after position t"}});
        writer.write_tensor("/tokens", input.data(), {TT}, {{"layout", "(T): token ids, a-z = 0-25, A-Z = 26-51"}});
        std::vector<std::int32_t> kind_ids(TT);
        for (std::size_t t = 0; t < TT; ++t) kind_ids[t] = static_cast<std::int32_t>(kinds[t]);
        writer.write_tensor("/position_kinds", kind_ids.data(), {TT}, {{"layout", "(T): 0 non_trigger, 1 first_trigger, 2 icl"}});
        writer.set_attr("run_dir", std::filesystem::absolute(options.run_dir).string());
        writer.set_attr("text", letters);
        std::string adapter_files, adapter_fingerprints;
        for (const auto& link : applied.chain) {
            adapter_files += (adapter_files.empty() ? "" : "\n") + link.file;
            adapter_fingerprints += (adapter_fingerprints.empty() ? "" : ",") + link.fingerprint;
        }
        writer.set_attr("adapters", adapter_files);  // one file per line, in the order applied; "" without adapters
        writer.set_attr("adapter_fingerprints", adapter_fingerprints);
        writer.set_attr("context_length", context.size());
        writer.set_attr("context_text", tasks::decode_tokens(context));
        writer.set_attr("created", io::now_iso8601());
        io::write_provenance(writer);
        writer.commit();
        std::printf("wrote %s\n", options.out.string().c_str());
    }
}

}  // namespace iclab::cli
