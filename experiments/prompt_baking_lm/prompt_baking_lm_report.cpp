// Experiment `prompt_baking_lm`: the tables of the results file and the summary on stdout.
#include <cmath>
#include <cstdio>

#include "experiments/prompt_baking_lm/prompt_baking_lm_rows.hpp"
#include "framework/core/measure.hpp"

namespace iclab::experiments::prompt_baking_lm_detail {

void write_results(const config::Config& cfg, const std::vector<Row>& rows, const std::vector<std::vector<WindowScore>>& scores,
                   const std::vector<std::size_t>& window_starts, const std::vector<io::ClaimResult>& claims, run::RunFolder& run,
                   bool quiet) {
    io::ResultsWriter& w = run.results();
    std::vector<std::string> label, kind;
    std::vector<double> bytes, error, centered, error_max, gap, kl, kl_gap, top1, generated, accuracy, perplexity, seconds, heap, rss,
        map_seconds, bake_kl0, bake_kl1;
    const auto mean = [](const std::vector<WindowScore>& s, double WindowScore::*field) {
        std::vector<double> v;
        for (const auto& x : s) v.push_back(x.*field);
        return mean_of(v);
    };
    const std::vector<WindowScore>& before = scores.front();
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto& s = scores[r];
        label.push_back(rows[r].label);
        kind.push_back(kind_name(rows[r].kind));
        bytes.push_back(rows[r].bytes);
        error.push_back(mean(s, &WindowScore::relative_error));
        centered.push_back(mean(s, &WindowScore::centered_error));
        double worst = 0.0, nll = 0.0;
        std::vector<double> gaps, kl_gaps;
        std::int64_t predicted = 0, correct = 0;
        for (std::size_t i = 0; i < s.size(); ++i) {
            worst = max_or_nan(worst, s[i].relative_error);
            gaps.push_back(1.0 - s[i].relative_error / before[i].relative_error);
            kl_gaps.push_back(1.0 - s[i].kl / before[i].kl);
            nll += s[i].nll_sum;
            predicted += s[i].predicted;
            correct += s[i].correct;
        }
        error_max.push_back(worst);
        gap.push_back(mean_of(gaps));
        kl.push_back(mean(s, &WindowScore::kl));
        kl_gap.push_back(mean_of(kl_gaps));
        top1.push_back(mean(s, &WindowScore::top1));
        generated.push_back(mean(s, &WindowScore::generated_agreement));
        accuracy.push_back(predicted ? static_cast<double>(correct) / static_cast<double>(predicted) : std::nan(""));
        perplexity.push_back(predicted ? std::exp(nll / static_cast<double>(predicted)) : std::nan(""));
        seconds.push_back(mean(s, &WindowScore::convert_seconds));
        heap.push_back(mean(s, &WindowScore::convert_heap_mib));
        rss.push_back(mean(s, &WindowScore::convert_peak_rss_mib));
        map_seconds.push_back(rows[r].map_seconds);
        bake_kl0.push_back(mean(s, &WindowScore::bake_initial_kl));
        bake_kl1.push_back(mean(s, &WindowScore::bake_final_kl));
    }
    std::vector<double> heap_gib;
    for (const double mib : heap) heap_gib.push_back(mib / 1024.0);
    w.write_columns("/tables/methods", {{"method", label},
                                        {"kind", kind},
                                        {"bytes_fp32", bytes},
                                        {"relative_logit_error", error},
                                        {"relative_logit_error_max", error_max},
                                        {"centered_logit_error", centered},
                                        {"gap_closed", gap},
                                        {"kl", kl},
                                        {"kl_gap_closed", kl_gap},
                                        {"top1_agreement", top1},
                                        {"generated_agreement", generated},
                                        {"next_token_accuracy", accuracy},
                                        {"perplexity", perplexity},
                                        {"convert_seconds", seconds},
                                        {"convert_heap_gib", heap_gib},
                                        {"convert_peak_rss_mib", rss},
                                        {"map_seconds", map_seconds},
                                        {"bake_initial_kl", bake_kl0},
                                        {"bake_final_kl", bake_kl1}},
                    {{"relative_logit_error", "mean over windows of ||L - L_ref||_F / ||L_ref||_F on X, L_ref = M_old on [X'; X]"},
                     {"centered_logit_error", "the same with each position's logits centred (blind to a per-position shift)"},
                     {"gap_closed", "mean over windows of G = 1 - err / err(no prompt)"},
                     {"kl_gap_closed", "mean over windows of K = 1 - KL / KL(no prompt)"},
                     {"next_token_accuracy", "argmax = X_{t+1} at X's positions t < N-1, pooled over the windows"},
                     {"perplexity", "exp of the mean -log p(X_{t+1}) at X's positions t < N-1, pooled over the windows"},
                     {"convert_heap_gib", "heap in use by the conversion's objects while alive (glibc mallinfo2), GiB (a size of the "
                                          "moment: not fingerprinted)"},
                     {"convert_peak_rss_mib", "rise of the peak RSS during the conversion (0 when freed heap is reused)"},
                     {"map_seconds", "ICLAA: building (learned: fitting) the feature map, once per model, not per prompt"},
                     {"bake_initial_kl", "baking rows: the objective on its continuations before the first step (mean over windows)"}});
    std::vector<std::string> window_method;
    std::vector<std::int64_t> window_index, offset, predicted, correct;
    std::vector<double> w_error, w_centered, w_kl, w_top1, w_generated, w_nll, w_seconds, w_heap, w_kl0, w_kl1;
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (std::size_t i = 0; i < scores[r].size(); ++i) {
            const WindowScore& s = scores[r][i];
            window_method.push_back(rows[r].label);
            window_index.push_back(static_cast<std::int64_t>(i));
            offset.push_back(static_cast<std::int64_t>(window_starts[i]));
            predicted.push_back(s.predicted);
            correct.push_back(s.correct);
            w_error.push_back(s.relative_error);
            w_centered.push_back(s.centered_error);
            w_kl.push_back(s.kl);
            w_top1.push_back(s.top1);
            w_generated.push_back(s.generated_agreement);
            w_nll.push_back(s.nll_sum);
            w_seconds.push_back(s.convert_seconds);
            w_heap.push_back(s.convert_heap_mib / 1024.0);
            w_kl0.push_back(s.bake_initial_kl);
            w_kl1.push_back(s.bake_final_kl);
        }
    w.write_columns("/tables/windows", {{"method", window_method},        {"window", window_index},           {"heldout_offset", offset},
                                        {"relative_logit_error", w_error}, {"centered_logit_error", w_centered}, {"kl", w_kl},
                                        {"top1_agreement", w_top1},        {"generated_agreement", w_generated}, {"nll_sum", w_nll},
                                        {"predicted", predicted},          {"correct", correct},                {"convert_seconds", w_seconds},
                                        {"convert_heap_gib", w_heap},      {"bake_initial_kl", w_kl0},          {"bake_final_kl", w_kl1}});
    io::write_claims(w, claims);
    w.set_attr("windows", static_cast<std::int64_t>(before.size()));
    w.set_attr("evaluation_precision", "float64");
    w.set_attr("baking_precision", cfg.get_string("prompt_baking_lm.precision"));
    if (quiet) return;
    std::printf("\nprompt baking on %zu held-out windows (prompt %lld, input %lld, %lld generated tokens); means over windows\n", before.size(),
                static_cast<long long>(cfg.get_int("prompt_baking_lm.prompt_length")), static_cast<long long>(cfg.get_int("prompt_baking_lm.input_length")),
                static_cast<long long>(cfg.get_int("prompt_baking_lm.generate")));
    std::printf("  %-30s %8s %10s %7s %10s %7s %6s %6s %6s %8s %9s %8s\n", "method", "bytes", "rel. err", "G", "KL", "K", "top1", "gen.", "acc",
                "ppl", "convert s", "heap MiB");
    for (std::size_t r = 0; r < rows.size(); ++r)
        std::printf("  %-30s %8.0f %10.3e %7.3f %10.3e %7.3f %6.3f %6.3f %6.3f %8.2f %9.4f %8.2f\n", label[r].c_str(), bytes[r], error[r], gap[r],
                    kl[r], kl_gap[r], top1[r], generated[r], accuracy[r], perplexity[r], seconds[r], heap[r]);
    for (const auto& c : claims) std::printf("  claim %-28s %-15s %s\n", c.claim.id.c_str(), io::verdict_name(c.verdict), c.note.c_str());
}

}  // namespace iclab::experiments::prompt_baking_lm_detail
