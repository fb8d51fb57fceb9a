#include "experiments/predict.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "experiments/induction_head.hpp"
#include "experiments/registry.hpp"
#include "framework/io/provenance.hpp"

namespace iclab::experiments {

void predict(const PredictOptions& options) {
    const auto config_path = options.run_dir / "config.yaml";
    const auto results_path = options.run_dir / "results.h5";
    ICLAB_INPUT_CHECK(std::filesystem::exists(config_path), options.run_dir.string() << " is not a run folder (no config.yaml)");
    ICLAB_INPUT_CHECK(std::filesystem::exists(results_path),
                      options.run_dir.string() << " has no completed results.h5 (did the run finish?)");
    const config::Config cfg = load_experiment_config(config_path.string(), {});
    ICLAB_INPUT_CHECK(cfg.get_string("experiment") == "induction_head",
                      "predict works on induction_head runs; " << options.run_dir.string() << " is a "
                                                               << cfg.get_string("experiment") << " run");
    const tasks::InductionHeadSpec task = induction_spec_from_config(cfg);
    const std::vector<int> tokens = tasks::encode_letters(options.text);
    ICLAB_INPUT_CHECK(!tokens.empty(), "--text is empty");
    // RoPE positions are relative, so the table may be longer than the training length.
    const std::size_t max_len = std::max<std::size_t>(tokens.size(), static_cast<std::size_t>(task.seq_len));
    model::Transformer<double> model(model_spec_from_config(cfg, tasks::kInductionVocab, max_len));
    io::ResultsReader reader(results_path);
    ICLAB_INPUT_CHECK(reader.has("/checkpoint"), results_path.string() << " holds no checkpoint (output.checkpoint was false)");
    read_checkpoint(reader, model);

    const std::size_t TT = tokens.size(), V = tasks::kInductionVocab;
    std::vector<std::int32_t> input(tokens.begin(), tokens.end());
    model.forward(input.data(), 1, TT);
    std::vector<double> zero(TT, 0.0);
    model.loss(input.data(), zero.data());  // fills probabilities (targets unused with zero weights)
    const auto kinds = tasks::classify_positions(tokens, task.triggers);
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
        std::vector<float> logits(TT * V);
        for (std::size_t i = 0; i < TT * V; ++i) logits[i] = static_cast<float>(model.logits()[i]);
        writer.write_tensor("/logits", logits.data(), {TT, V}, {{"layout", "(T, V): logits of the next token after position t"}});
        writer.write_tensor("/tokens", input.data(), {TT}, {{"layout", "(T): token ids, a-z = 0-25, A-Z = 26-51"}});
        std::vector<std::int32_t> kind_ids(TT);
        for (std::size_t t = 0; t < TT; ++t) kind_ids[t] = static_cast<std::int32_t>(kinds[t]);
        writer.write_tensor("/position_kinds", kind_ids.data(), {TT}, {{"layout", "(T): 0 non_trigger, 1 first_trigger, 2 icl"}});
        writer.set_attr("run_dir", std::filesystem::absolute(options.run_dir).string());
        writer.set_attr("text", options.text);
        writer.set_attr("created", io::now_iso8601());
        io::write_provenance(writer);
        writer.commit();
        std::printf("wrote %s\n", options.out.string().c_str());
    }
}

}  // namespace iclab::experiments
