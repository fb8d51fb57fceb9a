#include "experiments/iclaa/iclaa_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/iclaa_claims.hpp"

namespace iclab::experiments::iclaa_detail {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::size_t claim_features(const config::Config& cfg) {
    const auto F = cfg.get_int("iclaa.claim_features");
    if (F != 0) return static_cast<std::size_t>(F);
    const auto random = cfg.get_int_list("iclaa.random_features");
    return static_cast<std::size_t>(*std::max_element(random.begin(), random.end()));
}

// One line of /tables/iclaa: a method at one size, over its feature seeds.
struct Summary {
    const Row* row = nullptr;
    std::size_t seeds = 0;
    double rel = 0.0, rel_sd = kNaN, median = kNaN, ci_low = kNaN, ci_high = kNaN, kl = 0.0, top1 = 0.0;
    double accuracy = 0.0, repeat_accuracy = 0.0, conversion_ms = 0.0;
    double gap = kNaN, gap_sd = kNaN;
    std::vector<double> pair_error;  // per pair: the relative error averaged over the feature seeds (the claims' unit)
};

Summary summarize(const std::vector<const Row*>& rows, const std::vector<const RowScores*>& scores, std::size_t N, Rng& bootstrap,
                  std::size_t resamples) {
    Summary s;
    s.row = rows.front();
    s.seeds = rows.size();
    std::vector<double> seed_means;
    s.pair_error.assign(scores.front()->pairs.size(), 0.0);
    for (std::size_t k = 0; k < rows.size(); ++k) {
        ICLAB_CHECK(scores[k]->pairs.size() == s.pair_error.size(), "row " << s.row->label << ": seeds scored on different pairs");
        for (std::size_t p = 0; p < s.pair_error.size(); ++p)
            s.pair_error[p] += scores[k]->pairs[p].relative_error / static_cast<double>(rows.size());
        std::vector<double> rel;
        std::int64_t top1 = 0, scored = 0, correct = 0, repeats = 0, repeat_correct = 0;
        double kl = 0.0;
        for (const PairScore& p : scores[k]->pairs) {
            rel.push_back(p.relative_error);
            kl += p.kl;
            top1 += p.top1;
            scored += p.scored;
            correct += p.correct;
            repeats += p.repeats;
            repeat_correct += p.repeat_correct;
        }
        const double pairs = static_cast<double>(rel.size()), share = 1.0 / static_cast<double>(rows.size());
        seed_means.push_back(mean_of(rel));
        s.kl += share * kl / pairs;
        s.top1 += share * static_cast<double>(top1) / (pairs * static_cast<double>(N));
        s.accuracy += share * (scored ? static_cast<double>(correct) / static_cast<double>(scored) : kNaN);
        s.repeat_accuracy += share * (repeats ? static_cast<double>(repeat_correct) / static_cast<double>(repeats) : kNaN);
        s.conversion_ms += share * 1e3 * scores[k]->conversion_seconds / pairs;
        if (k == 0) {
            s.median = median_of(rel);
            const Interval ci = bootstrap_mean_interval(rel, 0.95, resamples, bootstrap);
            s.ci_low = ci.low;
            s.ci_high = ci.high;
        }
    }
    const Spread spread = spread_of(seed_means);
    s.rel = spread.mean;
    s.rel_sd = rows.size() > 1 ? spread.std : kNaN;
    return s;
}

}  // namespace

std::vector<io::Claim> declare_claims(const config::Config& cfg) {
    std::vector<io::Claim> claims;
    const std::size_t F = claim_features(cfg);
    const auto maps = cfg.get_string_list("iclaa.feature_maps");
    const std::string readme = "experiments/iclaa/README.md";
    for (const std::string map : {"prf", "orf"}) {
        if (std::find(maps.begin(), maps.end(), map) == maps.end()) continue;
        for (io::Claim& c : icl::gap_closed_claims("iclaa", map, F, "test prompt pair", readme, io::ClaimPooling::seed_means))
            claims.push_back(std::move(c));
    }
    if (std::find(maps.begin(), maps.end(), "learned") != maps.end()) {
        const std::string validation = std::to_string(cfg.get_int("iclaa.validation_pairs")) + " validation pairs";
        for (io::Claim& c : icl::learned_gap_closed_claims("iclaa", cfg.get_int_list("iclaa.learned.features"), validation,
                                                           "test prompt pair", readme, io::ClaimPooling::seed_means))
            claims.push_back(std::move(c));
    }
    return claims;
}

LearnedSelection select_learned(const std::vector<Row>& rows, const std::vector<RowScores>& scores) {
    ICLAB_CHECK(rows.size() == scores.size() && rows.size() > 1 && rows.front().method == Method::before,
                "learned selection: the no-prompt row and the learned rows");
    LearnedSelection out;
    out.pairs = scores.front().pairs.size();
    const auto mean_error = [](const RowScores& score) {
        double sum = 0.0;
        for (const PairScore& p : score.pairs) sum += p.relative_error;
        return sum / static_cast<double>(score.pairs.size());
    };
    out.validation_before = mean_error(scores.front());
    std::vector<std::size_t> fits;  // per F: its fit seeds
    for (std::size_t r = 1; r < rows.size(); ++r) {
        ICLAB_CHECK(rows[r].method == Method::learned && scores[r].pairs.size() == out.pairs, "learned selection: row " << rows[r].label);
        const auto F = static_cast<std::int64_t>(rows[r].size);
        if (out.features.empty() || out.features.back() != F) {
            out.features.push_back(F), out.validation_error.push_back(0.0), fits.push_back(0);
        }
        // the mean over pairs of the error averaged over fit seeds = the mean over fit seeds of the mean over pairs
        out.validation_error.back() += mean_error(scores[r]);
        ++fits.back();
    }
    for (std::size_t i = 0; i < out.features.size(); ++i) {
        out.validation_error[i] /= static_cast<double>(fits[i]);
        out.validation_gap.push_back(icl::gap_closed(out.validation_before, out.validation_error[i]));
        if (out.validation_error[i] < out.validation_error[out.picked]) out.picked = i;
    }
    return out;
}

void accumulate_diagnostics(Diagnostics& diagnostics, const model::Transformer<double>& net, std::size_t B, std::size_t M,
                            std::size_t N) {
    const model::ModelSpec& spec = net.spec();
    const std::size_t H = spec.heads, D = spec.head_dim(), C = spec.width, T = M + N;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D)), s2 = scale;  // ‖D^{-1/4}(a + b)‖² = ‖a + b‖²/√D
    std::vector<double> rq(D), rk(T * D), w(T);
    for (std::size_t l = 0; l < spec.layers; ++l) {
        const std::vector<double>& qkv = net.captured_qkv(l);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h) {
                for (std::size_t j = 0; j < T; ++j) {
                    const double* k = qkv.data() + (b * T + j) * 3 * C + C + h * D;
                    if (net.rope()) net.rope()->rotate(rk.data() + j * D, k, j, false);
                    else std::copy(k, k + D, rk.data() + j * D);
                }
                for (std::size_t i = M; i < T; ++i) {
                    const double* q = qkv.data() + (b * T + i) * 3 * C + h * D;
                    if (net.rope()) net.rope()->rotate(rq.data(), q, i, false);
                    else std::copy(q, q + D, rq.data());
                    double top = -std::numeric_limits<double>::infinity();
                    for (std::size_t j = 0; j <= i; ++j) {
                        double dot = 0.0;
                        for (std::size_t d = 0; d < D; ++d) dot += rq[d] * rk[j * D + d];
                        top = std::max(top, w[j] = dot * scale);
                    }
                    double total = 0.0, prompt = 0.0, weighted = 0.0;
                    for (std::size_t j = 0; j <= i; ++j) total += (w[j] = std::exp(w[j] - top));
                    for (std::size_t j = 0; j < M; ++j) {
                        double norm = 0.0;
                        for (std::size_t d = 0; d < D; ++d) norm += (rq[d] + rk[j * D + d]) * (rq[d] + rk[j * D + d]);
                        prompt += w[j];
                        weighted += w[j] * norm * s2;
                    }
                    diagnostics.share[l * H + h].push_back(prompt / total);
                    diagnostics.norm[l * H + h].push_back(prompt > 0 ? weighted / prompt : kNaN);
                }
            }
    }
}

void write_results(const config::Config& cfg, const model::ModelSpec& spec, const std::vector<Row>& rows,
                   const std::vector<RowScores>& scores, const std::vector<tasks::PromptPair>& pairs, const Diagnostics& diagnostics,
                   const std::vector<FitSummary>& fits, const LearnedSelection& selection, const std::vector<io::Claim>& claims,
                   Rng& bootstrap, double seconds,
                   run::RunFolder& run, bool quiet) {
    const std::size_t N = cfg.get_int("iclaa.input_length"), M = cfg.get_int("iclaa.prompt_length"), D = spec.head_dim();
    const std::size_t resamples = cfg.get_int("iclaa.bootstrap");
    // group the seeds of one label
    std::vector<std::string> order;
    std::map<std::string, std::pair<std::vector<const Row*>, std::vector<const RowScores*>>> groups;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (!groups.count(rows[r].label)) order.push_back(rows[r].label);
        groups[rows[r].label].first.push_back(&rows[r]);
        groups[rows[r].label].second.push_back(&scores[r]);
    }
    std::vector<Summary> summaries;
    for (const auto& label : order) summaries.push_back(summarize(groups[label].first, groups[label].second, N, bootstrap, resamples));
    const double before = summaries.front().rel, exact_bytes = icl::cache_bytes(M, D);
    for (auto& s : summaries) {
        s.gap = icl::gap_closed(before, s.rel);
        s.gap_sd = s.rel_sd / before;
    }
    const auto is_paper_method = [](const Summary& s) {
        return (s.row->method == Method::prf || s.row->method == Method::orf) && s.row->convention == icl::RopeConvention::rotate_then_map;
    };
    // /tables/iclaa
    std::vector<std::string> label, method, convention;
    std::vector<std::int64_t> size, seeds;
    std::vector<double> bytes, map_bytes, ratio, rel, rel_sd, median, lo, hi, gap, gap_sd, kl, top1, acc, rep, conv;
    for (const auto& s : summaries) {
        label.push_back(s.row->label);
        method.push_back(method_name(s.row->method));
        convention.push_back(s.row->maps ? icl::rope_convention_name(s.row->convention) : "-");
        size.push_back(static_cast<std::int64_t>(s.row->size));
        seeds.push_back(static_cast<std::int64_t>(s.seeds));
        bytes.push_back(s.row->bytes);
        map_bytes.push_back(s.row->map_bytes);
        ratio.push_back(s.row->bytes / exact_bytes);
        rel.push_back(s.rel);
        rel_sd.push_back(s.rel_sd);
        median.push_back(s.median);
        lo.push_back(s.ci_low);
        hi.push_back(s.ci_high);
        gap.push_back(s.gap);
        gap_sd.push_back(s.gap_sd);
        kl.push_back(s.kl);
        top1.push_back(s.top1);
        acc.push_back(s.accuracy);
        rep.push_back(s.repeat_accuracy);
        conv.push_back(s.conversion_ms);
    }
    io::ResultsWriter& w = run.results();
    w.write_columns("/tables/iclaa",
                    {{"method", label},          {"kind", method},           {"rope_convention", convention},
                     {"size", size},             {"feature_seeds", seeds},   {"bytes_per_layer_head", bytes},
                     {"map_bytes_per_layer_head", map_bytes}, {"bytes_vs_exact_cache", ratio}, {"rel_error_mean", rel},
                     {"rel_error_seed_sd", rel_sd}, {"rel_error_median", median}, {"rel_error_ci95_low", lo},
                     {"rel_error_ci95_high", hi}, {"gap_closed", gap},      {"gap_closed_seed_sd", gap_sd},
                     {"kl", kl},                 {"top1_agreement", top1},   {"icl_accuracy", acc},
                     {"repeat_accuracy", rep},   {"conversion_ms_per_prompt", conv}});
    // /tables/tradeoff: every method cheaper than the exact cache, by bytes, with the best row at each budget
    std::vector<std::size_t> cheap;
    for (std::size_t i = 0; i < summaries.size(); ++i)
        if (summaries[i].row->bytes > 0 && summaries[i].row->bytes < exact_bytes &&
            summaries[i].row->convention == icl::RopeConvention::rotate_then_map)
            cheap.push_back(i);
    std::stable_sort(cheap.begin(), cheap.end(), [&](std::size_t a, std::size_t b) { return summaries[a].row->bytes < summaries[b].row->bytes; });
    std::vector<std::string> t_label, best_rel, best_acc;
    std::vector<double> t_bytes, t_ratio, t_rel, t_gap, t_kl, t_acc;
    std::vector<std::int64_t> pareto;
    for (const std::size_t i : cheap) {
        const Summary& s = summaries[i];
        t_label.push_back(s.row->label);
        t_bytes.push_back(s.row->bytes);
        t_ratio.push_back(s.row->bytes / exact_bytes);
        t_rel.push_back(s.rel);
        t_gap.push_back(s.gap);
        t_kl.push_back(s.kl);
        t_acc.push_back(s.accuracy);
        std::size_t by_rel = i, by_acc = i;
        bool dominated = false;
        for (const std::size_t j : cheap) {
            const Summary& o = summaries[j];
            if (o.row->bytes > s.row->bytes) continue;
            if (o.rel < summaries[by_rel].rel) by_rel = j;
            if (o.accuracy > summaries[by_acc].accuracy) by_acc = j;
            dominated |= j != i && o.rel <= s.rel && o.accuracy >= s.accuracy && (o.rel < s.rel || o.accuracy > s.accuracy ||
                                                                                   o.row->bytes < s.row->bytes);
        }
        best_rel.push_back(summaries[by_rel].row->label);
        best_acc.push_back(summaries[by_acc].row->label);
        pareto.push_back(!dominated);
    }
    w.write_columns("/tables/tradeoff", {{"method", t_label},
                                         {"bytes_per_layer_head", t_bytes},
                                         {"bytes_vs_exact_cache", t_ratio},
                                         {"rel_error_mean", t_rel},
                                         {"gap_closed", t_gap},
                                         {"kl", t_kl},
                                         {"icl_accuracy", t_acc},
                                         {"pareto", pareto},
                                         {"lowest_error_within_budget", best_rel},
                                         {"best_accuracy_within_budget", best_acc}});
    // /tables/diagnostics
    std::vector<std::int64_t> d_layer, d_head;
    std::vector<double> d_share, d_norm, d_sd256, d_fit;
    for (std::size_t l = 0; l < diagnostics.layers; ++l)
        for (std::size_t h = 0; h < diagnostics.heads; ++h) {
            d_layer.push_back(static_cast<std::int64_t>(l));
            d_head.push_back(static_cast<std::int64_t>(h));
            d_share.push_back(median_of(diagnostics.share[l * diagnostics.heads + h]));
            const double n = median_of(diagnostics.norm[l * diagnostics.heads + h]);
            d_norm.push_back(n);
            d_sd256.push_back(std::sqrt(std::expm1(n) / 256.0));
            d_fit.push_back(fits.empty() ? kNaN : fits.front().report.final_loss[l][h]);
        }
    w.write_columns("/tables/diagnostics", {{"layer", d_layer},
                                            {"head", d_head},
                                            {"prompt_attention_share_median", d_share},
                                            {"weighted_qk_norm2_median", d_norm},
                                            {"prf_relative_sd_at_F256", d_sd256},
                                            {"learned_fit_final_loss_smallest_F", d_fit}});
    // /tables/pairs: the pairs and the error of the before / exact rows
    std::vector<std::string> prompt, input;
    std::vector<double> e_before, e_exact;
    for (std::size_t p = 0; p < pairs.size(); ++p) {
        prompt.push_back(tasks::decode_tokens(std::vector<int>(pairs[p].prompt.begin(), pairs[p].prompt.end())));
        input.push_back(tasks::decode_tokens(std::vector<int>(pairs[p].input.begin(), pairs[p].input.end())));
        e_before.push_back(scores[0].pairs[p].relative_error);
        e_exact.push_back(scores[1].pairs[p].relative_error);
    }
    w.write_columns("/tables/pairs", {{"prompt", prompt}, {"input", input}, {"rel_error_before", e_before}, {"rel_error_exact_cache", e_exact}});
    w.set_attr("rel_error_before", before);
    w.set_attr("rel_error_exact_cache_max", max_of(e_exact));
    w.set_attr("icl_accuracy_with_prompt", summaries[1].accuracy);
    w.set_attr("paper_rel_before", icl::kPaperRelErrorBefore);
    w.set_attr("paper_rel_after", icl::kPaperRelErrorAfter);
    w.set_attr("paper_gap_closed", icl::paper_gap_closed());  // derived from the two printed errors
    w.set_attr("exact_cache_bytes_per_layer_head", exact_bytes);
    w.set_attr("iclaa_seconds", seconds);
    double best_random = -1.0;  // the smallest F whose paper-method row closes the paper's gap (-1: none)
    for (const auto& s : summaries)
        if (is_paper_method(s) && s.gap >= icl::paper_gap_closed() && (best_random < 0 || s.row->size < best_random))
            best_random = static_cast<double>(s.row->size);
    w.set_attr("smallest_random_F_reaching_paper_gap", best_random);
    // /tables/learned_selection: the learned F picked on the validation pairs, with the test numbers beside it
    if (!selection.empty()) {
        std::vector<double> test_error, test_gap;
        std::vector<std::int64_t> picked;
        for (std::size_t i = 0; i < selection.features.size(); ++i) {
            const std::string label = "learned F=" + std::to_string(selection.features[i]);
            const auto it = std::find_if(summaries.begin(), summaries.end(), [&](const Summary& s) { return s.row->label == label; });
            ICLAB_CHECK(it != summaries.end(), "no test row " << label);
            test_error.push_back(it->rel), test_gap.push_back(it->gap), picked.push_back(i == selection.picked);
        }
        w.write_columns("/tables/learned_selection",
                        {{"features", selection.features},
                         {"validation_rel_error_mean", selection.validation_error},
                         {"validation_gap_closed", selection.validation_gap},
                         {"picked", picked},
                         {"test_rel_error_mean", test_error},
                         {"test_gap_closed", test_gap}},
                        {{"rule", "picked: the lowest validation_rel_error_mean (the first of equal ones); each pair's error is "
                                  "averaged over the fit seeds. The test columns are reported, never used to pick"}});
        w.set_attr("learned_selected_features", selection.features[selection.picked]);
        w.set_attr("validation_pairs", static_cast<std::int64_t>(selection.pairs));
        w.set_attr("validation_pairs_redrawn", static_cast<std::int64_t>(selection.redrawn));
        w.set_attr("validation_rel_error_before", selection.validation_before);
    }
    // the claims, on the per-pair G of the rows they name (the no-prompt row is summaries.front(), one draw)
    std::vector<io::ClaimResult> results;
    std::vector<std::int64_t> units(pairs.size());
    for (std::size_t p = 0; p < pairs.size(); ++p) units[p] = static_cast<std::int64_t>(p);
    std::string picked_label, selection_text;
    if (!selection.empty()) {
        picked_label = "learned F=" + std::to_string(selection.features[selection.picked]);
        selection_text = icl::learned_selection_text(static_cast<std::size_t>(selection.features[selection.picked]), selection.features,
                                                     selection.validation_error);
    }
    for (const io::Claim& c : claims) {
        const bool learned = icl::gap_claim_row(c) == icl::kLearnedValidationRow;
        ICLAB_CHECK(!learned || !selection.empty(), "claim " << c.id << ": no learned F was picked");
        const std::string row = learned ? picked_label : icl::gap_claim_row(c);
        const auto it = std::find_if(summaries.begin(), summaries.end(), [&](const Summary& s) { return s.row->label == row; });
        ICLAB_CHECK(it != summaries.end(), "claim " << c.id << " names no row");
        results.push_back(io::evaluate_claim(c, units, icl::gap_closed_per_instance(summaries.front().pair_error, it->pair_error)));
        if (learned) results.back().selection = selection_text;
    }
    io::write_claims(w, results);
    run.log() << "ICLAA: before " << before << ", exact-cache max error " << max_of(e_exact) << ", " << seconds << " s\n" << std::flush;
    if (quiet) return;
    std::printf("\nICLAA on the induction head (paper 000 §6.4): %zu pairs, prompts of %zu tokens, inputs of %zu, float64\n", pairs.size(), M, N);
    std::printf("relative logit error ‖L − L_ref‖/‖L_ref‖ against M_old on [X'; X]; G = 1 − rel/rel_before (paper: %.4f → %.4f, G = %.3f)\n",
                icl::kPaperRelErrorBefore, icl::kPaperRelErrorAfter, icl::paper_gap_closed());
    std::printf("  %-42s %10s %7s %10s %8s %8s %8s %8s\n", "method", "bytes/lh", "xcache", "rel", "±sd", "G", "KL", "ICL acc");
    for (const auto& s : summaries)
        std::printf("  %-42s %10.0f %7.3f %10.3e %8.1e %8.3f %8.4f %8.3f\n", s.row->label.c_str(), s.row->bytes, s.row->bytes / exact_bytes,
                    s.rel, s.rel_sd, s.gap, s.kl, s.accuracy);
    if (!selection.empty()) {
        std::printf("learned map's F, picked on %zu validation pairs (disjoint from the %zu test pairs above): mean rel. error (G)\n",
                    selection.pairs, pairs.size());
        for (std::size_t i = 0; i < selection.features.size(); ++i)
            std::printf("  F=%-6lld %10.4f (%.4f)%s\n", static_cast<long long>(selection.features[i]), selection.validation_error[i],
                        selection.validation_gap[i], i == selection.picked ? "  <- picked" : "");
    }
    for (const auto& r : results)
        std::printf("claim %-50s %s: mean %.4f [%.4f, %.4f] over %zu test pairs%s\n", r.claim.id.c_str(), io::verdict_name(r.verdict),
                    r.interval.mean, r.interval.low, r.interval.high, r.values.size(),
                    r.selection.empty() ? "" : (" at " + r.selection.substr(0, r.selection.find(' '))).c_str());
    std::printf("%.1f s\n", seconds);
}

}  // namespace iclab::experiments::iclaa_detail
