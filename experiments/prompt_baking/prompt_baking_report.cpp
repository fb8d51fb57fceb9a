// Experiment `prompt_baking`: the tables of the results file and the summary on stdout.
#include <cmath>
#include <cstdio>

#include "experiments/prompt_baking/prompt_baking_rows.hpp"
#include "framework/core/measure.hpp"

namespace iclab::experiments::prompt_baking_detail {

namespace {

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::before: return "before";
        case Kind::iclca: return "iclca";
        case Kind::cache: return "cache";
        case Kind::kernel: return "iclaa";
        case Kind::hybrid: return "hybrid";
        case Kind::bake_biases: return "bake_biases";
        case Kind::bake_lora: return "bake_lora";
        case Kind::bake_kernel: return "bake_kernel";
    }
    return "?";
}

}  // namespace

void write_results(const config::Config& cfg, const std::vector<Row>& rows, const std::vector<std::vector<PairScore>>& scores,
                   const std::vector<io::ClaimResult>& claims, run::RunFolder& run, bool quiet) {
    io::ResultsWriter& w = run.results();
    // per method: means over the pairs (ICL accuracy: pooled over the scored positions)
    std::vector<std::string> label, kind;
    std::vector<double> bytes, error, centered, error_max, kl, top1, generated, accuracy, seconds, memory, rss, map_seconds, gap, bake_kl0, bake_kl1;
    const auto mean = [](const std::vector<PairScore>& s, double PairScore::*field) {
        std::vector<double> v;
        for (const auto& x : s) v.push_back(x.*field);
        return mean_of(v);
    };
    const std::vector<PairScore>& before = scores.front();
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto& s = scores[r];
        label.push_back(rows[r].label);
        kind.push_back(kind_name(rows[r].kind));
        bytes.push_back(rows[r].bytes);
        error.push_back(mean(s, &PairScore::relative_error));
        centered.push_back(mean(s, &PairScore::centered_error));
        double worst = 0.0;
        std::vector<double> gaps;
        std::int64_t scored = 0, correct = 0;
        for (std::size_t i = 0; i < s.size(); ++i) {
            worst = max_or_nan(worst, s[i].relative_error);
            gaps.push_back(1.0 - s[i].relative_error / before[i].relative_error);
            scored += s[i].scored;
            correct += s[i].correct;
        }
        error_max.push_back(worst);
        gap.push_back(mean_of(gaps));
        kl.push_back(mean(s, &PairScore::kl));
        top1.push_back(mean(s, &PairScore::top1));
        generated.push_back(mean(s, &PairScore::generated_agreement));
        accuracy.push_back(scored ? static_cast<double>(correct) / static_cast<double>(scored) : std::nan(""));
        seconds.push_back(mean(s, &PairScore::convert_seconds));
        memory.push_back(mean(s, &PairScore::convert_heap_mib));
        rss.push_back(mean(s, &PairScore::convert_peak_rss_mib));
        map_seconds.push_back(rows[r].map_seconds);
        bake_kl0.push_back(mean(s, &PairScore::bake_initial_kl));
        bake_kl1.push_back(mean(s, &PairScore::bake_final_kl));
    }
    std::vector<double> memory_gib;
    for (double m : memory) memory_gib.push_back(m / 1024.0);
    w.write_columns("/tables/methods", {{"method", label},
                                        {"kind", kind},
                                        {"bytes_fp32", bytes},
                                        {"relative_logit_error", error},
                                        {"relative_logit_error_max", error_max},
                                        {"centered_logit_error", centered},
                                        {"gap_closed", gap},
                                        {"kl", kl},
                                        {"top1_agreement", top1},
                                        {"generated_agreement", generated},
                                        {"icl_accuracy", accuracy},
                                        {"convert_seconds", seconds},
                                        {"convert_heap_gib", memory_gib},
                                        {"convert_peak_rss_mib", rss},
                                        {"map_seconds", map_seconds},
                                        {"bake_initial_kl", bake_kl0},
                                        {"bake_final_kl", bake_kl1}},
                    {{"relative_logit_error", "mean over pairs of ||L - L_ref||_F / ||L_ref||_F on X, L_ref = M_old on [X'; X]"},
                     {"centered_logit_error", "mean over pairs of the relative error of the logits centred per position (blind to a "
                                              "per-position shift, which changes no probability)"},
                     {"gap_closed", "mean over pairs of 1 - err / err(no prompt)"},
                     {"convert_heap_gib", "heap in use by the conversion's objects while alive (glibc mallinfo2): its working set, GiB"},
                     {"convert_peak_rss_mib", "rise of the peak RSS during the conversion (0 when freed heap is reused)"},
                     {"map_seconds", "ICLAA: building (learned: fitting) the feature map, once per model, not per prompt"},
                     {"bake_initial_kl", "baking rows: the objective on its continuations before the first step (mean over pairs)"}});
    std::vector<std::string> pair_method;
    std::vector<std::int64_t> pair_index, scored, correct;
    std::vector<double> p_error, p_centered, p_kl, p_top1, p_generated, p_seconds, p_memory, p_rss, p_kl0, p_kl1;
    for (std::size_t r = 0; r < rows.size(); ++r)
        for (std::size_t i = 0; i < scores[r].size(); ++i) {
            const PairScore& s = scores[r][i];
            pair_method.push_back(rows[r].label);
            pair_index.push_back(static_cast<std::int64_t>(i));
            scored.push_back(s.scored);
            correct.push_back(s.correct);
            p_error.push_back(s.relative_error);
            p_centered.push_back(s.centered_error);
            p_kl.push_back(s.kl);
            p_top1.push_back(s.top1);
            p_generated.push_back(s.generated_agreement);
            p_seconds.push_back(s.convert_seconds);
            p_memory.push_back(s.convert_heap_mib);
            p_rss.push_back(s.convert_peak_rss_mib);
            p_kl0.push_back(s.bake_initial_kl);
            p_kl1.push_back(s.bake_final_kl);
        }
    std::vector<double> p_memory_gib;
    for (double m : p_memory) p_memory_gib.push_back(m / 1024.0);
    w.write_columns("/tables/pairs", {{"method", pair_method},       {"pair", pair_index},        {"relative_logit_error", p_error},
                                      {"centered_logit_error", p_centered},
                                      {"kl", p_kl},                  {"top1_agreement", p_top1},  {"generated_agreement", p_generated},
                                      {"scored_positions", scored},  {"correct", correct},        {"convert_seconds", p_seconds},
                                      {"convert_heap_gib", p_memory_gib},   {"convert_peak_rss_mib", p_rss}, {"bake_initial_kl", p_kl0}, {"bake_final_kl", p_kl1}});
    io::write_claims(w, claims);
    w.set_attr("pairs", static_cast<std::int64_t>(before.size()));
    w.set_attr("evaluation_precision", "float64");
    w.set_attr("baking_precision", cfg.get_string("prompt_baking.precision"));
    if (quiet) return;
    std::printf("\nprompt baking against %s on %zu (X', X) pairs (prompt %lld, input %lld, %lld generated tokens); means over pairs\n",
                rows.size() > 1 && rows[1].kind == Kind::iclca ? "ICLCA" : "ICLAA", before.size(),
                static_cast<long long>(cfg.get_int("prompt_baking.prompt_length")), static_cast<long long>(cfg.get_int("prompt_baking.input_length")),
                static_cast<long long>(cfg.get_int("prompt_baking.generate")));
    std::printf("  %-34s %9s %10s %10s %7s %10s %6s %6s %6s %9s %8s\n", "method", "bytes", "rel. err", "centred", "G", "KL", "top1", "gen.", "ICL acc",
                "convert s", "heap MiB");
    for (std::size_t r = 0; r < rows.size(); ++r)
        std::printf("  %-34s %9.0f %10.3e %10.3e %7.3f %10.3e %6.3f %6.3f %6.3f %9.4f %8.3f\n", label[r].c_str(), bytes[r], error[r], centered[r],
                    gap[r], kl[r],
                    top1[r], generated[r], accuracy[r], seconds[r], memory[r]);
    for (const auto& c : claims)
        std::printf("  claim %-28s %-15s %s\n", c.claim.id.c_str(), io::verdict_name(c.verdict), c.note.c_str());
}

}  // namespace iclab::experiments::prompt_baking_detail
