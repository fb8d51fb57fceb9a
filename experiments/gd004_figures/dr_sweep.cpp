// gd004_figures, part §6 (paper 004 Fig. 3 centre/right, Figs. 4, 6, 7, 9; specs/gd_duals.md §6): the error of the
// Performer attention against exact softmax attention (Eq. 1) as the feature count R (d_r) grows, PRF and Haar-ORF,
// on the trained layer's W_Q, W_K, W_V and on random calibration weights. Each repeat r draws a fresh ω and a fresh
// test sequence of the trained task; both feature kinds and all R of repeat r see the same sequence (paired).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "experiments/gd004_figures/figures.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/performer_error.hpp"
#include "framework/io/rank_test.hpp"
#include "framework/run/gd004_layer.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab::experiments::gd004 {

namespace {

constexpr std::size_t kWidth = 12;
constexpr double kBarLow = -1.3, kBarHigh = -0.7;          // §6 calibration bar on the PRF / ORF MSE_A slope
constexpr double kFitLow = 120.0, kFitHigh = 12000.0;      // the fitted range of R
const char* const kMetrics[] = {"mse_attn", "mae_attn", "mse_out", "mae_out"};

double metric_of(const icl::ApproximationError& e, std::size_t m) {
    return m == 0 ? e.mse_attn : m == 1 ? e.mae_attn : m == 2 ? e.mse_out : e.mae_out;
}

}  // namespace

double falls_p(const std::vector<double>& R, const std::vector<double>& curve) {
    // below 5 values of R the smallest p, 1/n!, is not below kFallsP (4 values: 1/24): the rule could not pass
    if (R.size() < 5 || R.size() != curve.size() || R.size() > 18) return std::nan("");
    for (const double y : curve)
        if (!std::isfinite(y)) return std::nan("");
    std::vector<double> sorted = curve;
    std::sort(sorted.begin(), sorted.end());
    const bool ties = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
    if (ties && curve.size() > 9) return std::nan("");
    return io::kendall_falls(R, curve).p;
}

PartOutcome run_dr_sweep(const run::RunContext& context, const run::RegressionTraining& training, run::RunFolder& run) {
    const config::Config& cfg = context.config;
    const std::size_t N = training.task.examples, T = N + 1, C = kWidth;
    const std::size_t repeats = static_cast<std::size_t>(cfg.get_int("figures.repeats"));
    std::vector<std::size_t> features;
    for (auto R : cfg.get_int_list("figures.features")) features.push_back(static_cast<std::size_t>(R));
    std::sort(features.begin(), features.end());
    const double s = std::pow(static_cast<double>(C), -0.25);  // §0.3
    const auto trained = run::trained_004_layer<double>(training).w_qkv;
    const double bound = cfg.get_float("figures.calibration_scale") / std::sqrt(static_cast<double>(C));
    const auto started = std::chrono::steady_clock::now();

    // Per repeat: the test sequence and the calibration weights (seeded streams, index r).
    std::vector<std::vector<double>> sequences(repeats), random_weights(repeats);
    for (std::size_t r = 0; r < repeats; ++r) {
        tasks::RegressionBatch<double> data;
        Rng rng = context.stream(kRepeatStream).derive(r);
        tasks::sample_regression_batch(data, 1, training.task, rng);
        sequences[r].assign(data.inputs.data(), data.inputs.data() + T * C);
        Rng wrng = context.stream(kCalibrationStream).derive(r);
        random_weights[r].resize(C * 3 * C);
        for (double& w : random_weights[r]) w = wrng.uniform(-bound, bound);
    }

    std::vector<std::string> col_weights, col_feature;
    std::vector<std::int64_t> col_T, col_R, col_repeat;
    std::vector<double> cols[4];
    // mean and std per (weights, feature, R): key weights + "/" + feature
    std::map<std::string, std::vector<icl::ApproximationError>> by_cell;
    io::ResultsWriter& w = run.results();
    for (const std::string weights : {"trained", "random"}) {
        for (std::size_t r = 0; r < repeats; ++r) {
            const auto& w_qkv = weights == "trained" ? trained : random_weights[r];
            const auto exact = icl::exact_softmax_attention(sequences[r], T, C, w_qkv);
            for (std::size_t f = 0; f < features.size(); ++f)
                for (const bool orthogonal : {false, true}) {
                    const std::size_t R = features[f];
                    // a fresh ω for (r, R, kind): stream "features", index r (and the cell within it)
                    Rng frng = context.stream(kFeatureStream).derive(r).derive(2 * f + (orthogonal ? 1 : 0));
                    const auto map = nn::random_kernel_features<double>(C, R, orthogonal, s, frng);
                    const auto approx = icl::performer_attention(sequences[r], T, C, w_qkv, map);
                    const auto e = icl::approximation_error(exact, approx);
                    const std::string feature = orthogonal ? "orf" : "prf";
                    col_weights.push_back(weights);
                    col_feature.push_back(feature);
                    col_T.push_back(static_cast<std::int64_t>(T));
                    col_R.push_back(static_cast<std::int64_t>(R));
                    col_repeat.push_back(static_cast<std::int64_t>(r));
                    for (std::size_t m = 0; m < 4; ++m) cols[m].push_back(metric_of(e, m));
                    by_cell[weights + "/" + feature + "/" + std::to_string(R)].push_back(e);
                    // Figs. 4, 6, 7, 9: one sequence's matrices on the trained weights (PRF, repeat 0)
                    const bool shown = R == 3 || R == 12 || R == 120 || R == 1200 || R == 12000;
                    if (weights == "trained" && r == 0 && !orthogonal && shown) {
                        w.write_tensor("/004_heatmaps/A_R" + std::to_string(R), approx.attn.data(), {T, T});
                        w.write_tensor("/004_heatmaps/O_R" + std::to_string(R), approx.out.data(), {C, T});
                    }
                }
            if (weights == "trained" && r == 0) {
                w.write_tensor("/004_heatmaps/A_exact", exact.attn.data(), {T, T});
                w.write_tensor("/004_heatmaps/O_exact", exact.out.data(), {C, T});
            }
        }
    }
    w.write_columns("/tables/004_dr_sweep", {{"weights", col_weights}, {"T", col_T}, {"feature", col_feature}, {"R", col_R},
                                             {"repeat", col_repeat}, {"mse_attn", cols[0]}, {"mae_attn", cols[1]},
                                             {"mse_out", cols[2]}, {"mae_out", cols[3]}});

    // Means and std over the repeats; slopes of the means in log-log.
    std::vector<std::string> m_weights, m_feature;
    std::vector<std::int64_t> m_T, m_R;
    std::vector<double> m_mean[4], m_std[4];
    std::map<std::string, std::vector<double>> mean_curve;  // weights/feature/metric -> mean per R
    for (const std::string weights : {"trained", "random"})
        for (const std::string feature : {"prf", "orf"})
            for (std::size_t R : features) {
                const auto& cell = by_cell[weights + "/" + feature + "/" + std::to_string(R)];
                m_weights.push_back(weights);
                m_feature.push_back(feature);
                m_T.push_back(static_cast<std::int64_t>(T));
                m_R.push_back(static_cast<std::int64_t>(R));
                for (std::size_t m = 0; m < 4; ++m) {
                    std::vector<double> v;
                    for (const auto& e : cell) v.push_back(metric_of(e, m));
                    const Spread sp = spread_of(v);
                    m_mean[m].push_back(sp.mean);
                    m_std[m].push_back(sp.std);
                    mean_curve[weights + "/" + feature + "/" + kMetrics[m]].push_back(sp.mean);
                }
            }
    std::vector<io::Column> mean_cols = {{"weights", m_weights}, {"T", m_T}, {"feature", m_feature}, {"R", m_R}};
    for (std::size_t m = 0; m < 4; ++m) {
        mean_cols.push_back({std::string(kMetrics[m]) + "_mean", m_mean[m]});
        mean_cols.push_back({std::string(kMetrics[m]) + "_std", m_std[m]});
    }
    w.write_columns("/tables/004_dr_sweep_mean", mean_cols);

    std::vector<double> x_all, x_fit;
    std::vector<std::size_t> fit_index;
    for (std::size_t i = 0; i < features.size(); ++i) {
        x_all.push_back(static_cast<double>(features[i]));
        if (features[i] >= kFitLow && features[i] <= kFitHigh) x_fit.push_back(x_all.back()), fit_index.push_back(i);
    }
    auto fit_slope = [&](const std::vector<double>& curve) {
        std::vector<double> y;
        for (std::size_t i : fit_index) y.push_back(curve[i]);
        return y.size() >= 2 ? icl::loglog_slope(x_fit, y) : std::nan("");
    };
    // Verdicts: the paper's claim (error falls with d_r) per metric on the trained weights; our calibration bars.
    std::vector<std::string> v_claim, v_weights, v_feature, v_metric, v_verdict;
    std::vector<double> v_value, v_low, v_high;
    bool pass = true;
    std::string summary;
    char line[320];
    std::vector<io::ClaimResult> claims;
    const std::int64_t seed = context.config.get_int("seed");
    for (const std::string weights : {"trained", "random"})
        for (const std::string feature : {"prf", "orf"})
            for (std::size_t m = 0; m < 4; ++m) {
                const auto& curve = mean_curve[weights + "/" + feature + "/" + kMetrics[m]];
                const double slope_all = icl::loglog_slope(x_all, curve), slope_fit = fit_slope(curve);
                // Paper Fig. 3 centre/right: "the estimation error decreases as d_r grows" (qualitative). The verdict
                // column holds a claim's verdict only, by the claim's rule (third audit of issue 45: the rows kept the
                // retired slope rule, and the random-weight rows, no claims, had verdicts too).
                v_weights.push_back(weights), v_feature.push_back(feature), v_metric.push_back(kMetrics[m]);
                if (weights == "random") {
                    v_claim.push_back("error falls as R grows, random weights (reported, no claim); value: log-log slope over all R");
                    v_value.push_back(slope_all), v_low.push_back(NAN), v_high.push_back(NAN);
                    v_verdict.push_back("");
                }
                if (weights == "trained") {
                    // The claim over the training seeds (issue 45): per seed, the mean error's Kendall test against R
                    // over the whole grid, p < kFallsP on every seed (a NaN: inconclusive). The raw table above keeps
                    // the log-log slope; as a claim, a slope below 0 passed any curve that fell at small R only.
                    io::ClaimResult falls_claim = figure_claim(
                        "004-F3 " + feature + " " + kMetrics[m] + ": error falls as R grows", "Figure 3 centre/right (§5.2)",
                        io::ClaimKind::qualitative,
                        "the " + std::string(kMetrics[m]) + " of the Performer (" + feature + ") attention against exact softmax "
                            "attention on the trained layer falls as the number of random features R grows (the paper plots "
                            "it, prints no number: 'the estimation error decreases as d_r grows'); tested: over the whole R "
                            "grid the mean error ranks lower at larger R, Kendall's exact one-sided p < 0.01 on every seed",
                        "exact one-sided p-value of Kendall's tau between R and the mean error over the repeats (every R of "
                            "figures.features): small when the error falls as R grows",
                        io::ClaimRule::count_below(kFallsP), seed, falls_p(x_all, curve));
                    falls_claim.claim.provenance += "; chosen after the first runs (2026-11-29): issue 45, the 95 % t-interval "
                                                    "of the log-log slope below 0 (which a curve falling at small R only passes) "
                                                    "replaced by Kendall's test over every R, p < 0.01 on every seed";
                    v_claim.push_back("error falls as R grows (Fig. 3 c/r), the claim of this run's seed; value: Kendall's "
                                      "one-sided p over every R, below bar_high on every seed");
                    v_value.push_back(falls_claim.values.front()), v_low.push_back(0.0), v_high.push_back(kFallsP);
                    v_verdict.push_back(io::verdict_name(falls_claim.verdict));
                    pass = pass && falls_claim.verdict == io::Verdict::reproduced;
                    claims.push_back(std::move(falls_claim));
                }
                if (weights == "random" && m == 0) {  // §6 calibration bar (ours): slope over [120, 12000]
                    const bool in_bar = slope_fit >= kBarLow && slope_fit <= kBarHigh;
                    v_claim.push_back("calibration: MSE_A slope over R in [120, 12000] (ours)");
                    v_weights.push_back(weights), v_feature.push_back(feature), v_metric.push_back(kMetrics[m]);
                    v_value.push_back(slope_fit), v_low.push_back(kBarLow), v_high.push_back(kBarHigh);
                    v_verdict.push_back(std::isnan(slope_fit) ? "inconclusive" : in_bar ? "reproduced" : "not reproduced");
                    pass = pass && in_bar;
                    claims.push_back(figure_claim("004-F3 calibration " + feature + ": MSE_A slope near -1", "spec gd_duals §6 (ours)",
                                                  io::ClaimKind::own_check,
                                                  "on random calibration weights the Performer (" + feature + ") attention's MSE "
                                                      "falls like 1/R: log-log slope over R in [120, 12000] within [-1.3, -0.7]",
                                                  "log-log slope of the mean MSE_A against R over [120, 12000]",
                                                  io::ClaimRule::interval_within(kBarLow, kBarHigh), seed, slope_fit));
                }
                std::snprintf(line, sizeof line, "  %-7s %s %-8s slope all R %+.3f, R in [120, 12000] %+.3f; mean at R = %zu: %.3g, R = %zu: %.3g\n",
                              weights.c_str(), feature.c_str(), kMetrics[m], slope_all, slope_fit, features.front(), curve.front(),
                              features.back(), curve.back());
                summary += line;
            }
    // Haar-ORF ≤ PRF on the calibration weights: geometric mean over the fitted R of mean ORF / mean PRF MSE_A.
    {
        const auto& prf = mean_curve["random/prf/mse_attn"];
        const auto& orf = mean_curve["random/orf/mse_attn"];
        double log_ratio = 0.0;
        for (std::size_t i : fit_index) log_ratio += std::log(orf[i] / prf[i]);
        const double ratio = fit_index.empty() ? std::nan("") : std::exp(log_ratio / static_cast<double>(fit_index.size()));
        v_claim.push_back("calibration: Haar-ORF <= PRF, geometric-mean ratio of MSE_A over R in [120, 12000] (ours)");
        v_weights.push_back("random"), v_feature.push_back("orf/prf"), v_metric.push_back("mse_attn");
        v_value.push_back(ratio), v_low.push_back(0.0), v_high.push_back(1.0);
        v_verdict.push_back(std::isnan(ratio) ? "inconclusive" : ratio <= 1.0 ? "reproduced" : "not reproduced");
        pass = pass && ratio <= 1.0;
        claims.push_back(figure_claim("004-F3 calibration: Haar-ORF <= PRF", "spec gd_duals §6 (ours)", io::ClaimKind::own_check,
                                      "on random calibration weights, Haar orthogonal features approximate the attention no "
                                      "worse than i.i.d. ones (MSE_A, geometric mean over R in [120, 12000])",
                                      "geometric-mean ratio of the ORF to the PRF mean MSE_A over R in [120, 12000]",
                                      io::ClaimRule::interval_below(1.0), seed, ratio));
        std::snprintf(line, sizeof line, "  calibration ORF/PRF MSE_A ratio (geometric mean over R in [120, 12000]): %.3f\n", ratio);
        summary += line;
    }
    w.write_columns("/tables/004_dr_sweep_verdicts",
                    {{"claim", v_claim}, {"weights", v_weights}, {"feature", v_feature}, {"metric", v_metric}, {"value", v_value},
                     {"bar_low", v_low}, {"bar_high", v_high}, {"verdict", v_verdict}},
                    {{"paper", "Fig. 3 centre/right: MSE and MAE of attention and output matrices fall as d_r grows (50 repeats, "
                               "qualitative); no numbers"}});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::snprintf(line, sizeof line, "§6 d_r sweep (T = %zu, %zu repeats, %zu values of R, %.1f s):\n", T, repeats, features.size(), seconds);
    return {pass, std::string(line) + summary, claims};
}

}  // namespace iclab::experiments::gd004
