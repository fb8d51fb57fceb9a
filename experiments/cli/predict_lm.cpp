// `iclab predict` on a language-model (lm) run: token ids in, next-token predictions and logits out.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <type_traits>

#include "experiments/cli/finite_check.hpp"
#include "experiments/cli/lm_estimates.hpp"
#include "experiments/cli/lm_input.hpp"
#include "experiments/cli/predict.hpp"
#include "experiments/registry.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/core/progress.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/lm_run.hpp"

namespace iclab::cli {

namespace {

template <class T>
void predict_lm_typed(const PredictOptions& options, const std::vector<std::int32_t>& input) {
    Progress progress("iclab predict", false, nullptr, Progress::lazy);  // a stage that lasts > 3 s says so (issue 44)
    progress.stage("loading the parameters of " + options.run_dir.string());
    run::LmRun<T> run = run::load_lm_run<T>(options.run_dir, experiments::catalog(), "iclab predict");
    model::Transformer<T>& model = *run.model;
    const std::size_t TT = input.size(), V = model.spec().vocab;
    LmAdapters adapters;  // with adapters the model runs in float64 (predict_lm)
    if constexpr (std::is_same_v<T, double>) {
        apply_lm_adapters(adapters, model, options.adapters, "iclab predict");
        model.set_softmax_prompt(adapters.softmax_terms());
        model.set_learned_position_start(adapters.input_position_start());
        ICLAB_INPUT_CHECK(adapters.input_position_start() + TT <= model.spec().max_seq_len,
                          "iclab predict: " << TT << " input tokens behind the adapter's " << adapters.input_position_start()
                                            << "-token prompt do not fit the model's context of " << model.spec().max_seq_len
                                            << " learned positions; give at most " << model.spec().max_seq_len - adapters.input_position_start());
        for (std::size_t i = 0; i < adapters.applied.chain.size(); ++i)
            std::printf("adapter %zu: %s (fingerprint %s, prompt length %zu)\n", i + 1, adapters.applied.chain[i].file.c_str(),
                        adapters.applied.chain[i].fingerprint.c_str(), adapters.applied.chain[i].prompt_length);
    }
    model.trace_non_finite(true);  // NaN or infinite logits are refused, never printed (finite_check.hpp)
    progress.stage("a forward over " + std::to_string(TT) + " tokens");
    model.forward(input.data(), 1, TT);
    progress.stage("writing the predictions");
    if (model.first_non_finite().found())
        refuse_non_finite(model, input.data(), TT, "iclab predict", std::to_string(TT) + " input tokens", "run predict with --dtype float64");
    const std::size_t top = std::min<std::size_t>(options.top, V);
    if (top > 0) {
        std::printf("%5s  %7s  top-%zu next-token ids (probability)\n", "pos", "token", top);
        std::vector<std::size_t> order(V);
        for (std::size_t t = 0; t < TT; ++t) {
            const T* logits = model.logits() + t * V;
            // softmax of this row in double: p_v = exp(z_v - max) / sum
            const double max = static_cast<double>(*std::max_element(logits, logits + V));
            double sum = 0.0;
            for (std::size_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(logits[v]) - max);
            std::iota(order.begin(), order.end(), 0);
            std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](std::size_t a, std::size_t b) { return logits[a] > logits[b]; });
            std::printf("%5zu  %7d ", t, input[t]);
            for (std::size_t k = 0; k < top; ++k)
                std::printf(" %6zu %.3f", order[k], std::exp(static_cast<double>(logits[order[k]]) - max) / sum);
            std::printf("\n");
        }
    }
    if (!options.out.empty()) {
        io::ResultsWriter writer(options.out, options.overwrite);
        writer.write_tensor("/logits", model.logits(), {TT, V},
                            {{"layout", "(T, V): logits of the next token after position t, in the run's model.dtype"}});
        writer.write_tensor("/tokens", input.data(), {TT}, {{"layout", "(T): token ids"}});
        writer.set_attr("run_dir", std::filesystem::absolute(options.run_dir).string());
        writer.set_attr("dtype", run::dtype_name<T>());
        writer.set_attr("created", io::now_iso8601());
        io::write_provenance(writer);
        writer.commit();
        std::printf("wrote %s\n", options.out.string().c_str());
    }
}

}  // namespace

void predict_lm(const PredictOptions& options) {
    const config::Config cfg = run::load_finished_run_config(options.run_dir, experiments::catalog(), "iclab predict");
    // --out: checked by predict() before it calls this (framework/io/output_path.hpp).
    // --text through the run's BPE tokenizer, or --tokens; refused before loading the weights (the context limit named)
    const model::ModelSpec spec = run::lm_model_spec(cfg);
    const bool text = !options.text.empty();
    const std::vector<std::int32_t> input = lm_input_tokens(options.run_dir, text ? &options.text : nullptr, options.token_ids, spec.vocab,
                                                            0, "iclab predict", !text ? "--tokens" : options.text_from_file ? "--text-file" : "--text");
    run::check_fits_context(input.size(), spec, "iclab predict");
    ICLAB_INPUT_CHECK(options.adapters.empty() || options.dtype != "float32",
                      "iclab predict: with --adapter the model runs in float64 (the adapters' biases are float64): drop --dtype float32");
    // memory and work before the weights are read (issue 41: 25,000 ids died of std::bad_alloc)
    const bool in_float64 = !options.adapters.empty() || options.dtype == "float64" ||
                            (options.dtype.empty() && cfg.get_string("model.dtype") == "float64");
    check_predict_lm_estimate(options, spec, in_float64 ? 8.0 : 4.0, input.size());
    if (!options.adapters.empty() || options.dtype == "float64") {  // adapters hold float64 biases (ICLCA's identity holds to rounding in double)
        predict_lm_typed<double>(options, input);
        return;
    }
    if (options.dtype == "float32") {
        predict_lm_typed<float>(options, input);
        return;
    }
    run::with_model_dtype(cfg, [&](auto zero) { predict_lm_typed<decltype(zero)>(options, input); });
}

}  // namespace iclab::cli
