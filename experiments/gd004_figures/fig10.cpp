// gd004_figures, part §8 (paper 004 Fig. 10, §4.1 Eq. 13-15; specs/gd_duals.md §8): the regularized attention
// ĥ^α = ĥ − α a_{N+1} v_{N+1} (Eq. 14) against GD-CL on the regularized contrastive loss (Eq. 13) taken as batch-1
// SGD over N_CL epochs. The paper: with N_CL = 10, α = 0.01 "there is a slight deviation between the final output and
// the model's inference result"; with N_CL = 1 and all demonstrations in one batch the two are strictly equivalent.
// The GD side is icl::dual_004 (Linear over the layer's own φ, contrastive_dot + frobenius_l2 losses, SGD) with the
// regularizer split per sample (α/(2ηN) each step, default, A16) or per step (α/(2η) each step).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "experiments/gd004_figures/figures.hpp"
#include "framework/core/measure.hpp"
#include "framework/run/gd004_layer.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab::experiments::gd004 {

namespace {
constexpr std::size_t kFig10Width = 12;
constexpr double kExactBar = 1e-11;    // closed form and full batch (§0.2: sequential steps ≤ 1e-11)
constexpr double kSlightBar = 0.05;    // "slight": median relative deviation ≤ 5 % (ours; spec §8 measured 1e-3, 1.5e-2)
}  // namespace

PartOutcome run_fig10(const run::RunContext& context, const run::RegressionTraining& training, run::RunFolder& run) {
    const config::Config& cfg = context.config;
    const std::size_t N = training.task.examples, T = N + 1, C = kFig10Width;
    const std::size_t sequences = static_cast<std::size_t>(cfg.get_int("figures.fig10_sequences"));
    const auto epochs_list = cfg.get_int_list("figures.fig10_epochs");
    const auto alphas = cfg.get_float_list("figures.fig10_alphas");
    const auto weights = run::trained_004_layer<double>(training);
    const auto started = std::chrono::steady_clock::now();
    tasks::RegressionBatch<double> data;
    Rng rng = context.stream(kFig10Stream);
    tasks::sample_regression_batch(data, sequences, training.task, rng);

    icl::Thm1004Setting base;
    base.feature_map = nn::FeatureMap::performer;
    base.features = training.spec.random_features;
    base.demos = N;
    base.variant = "reg";

    std::vector<double> c_alpha, c_y14, c_y15, c_ycl, c_delta, c_rel, c_closed, c_full, c_ytrue;
    std::vector<std::int64_t> c_ncl, c_seq;
    std::vector<std::string> c_split;
    // Summary per (alpha, n_cl, split).
    std::vector<double> s_alpha, s_median_rel, s_max_rel, s_median_abs, s_closed, s_full, s_median_eq15;
    std::vector<std::int64_t> s_ncl;
    std::vector<std::string> s_split;
    std::vector<double> traj_sample, traj_step, traj_plain;
    bool pass = true;
    std::string summary;
    char line[320];
    for (const double alpha : alphas)
        for (const auto n_cl : epochs_list)
            for (const std::string split : {"per_sample", "per_step"}) {
                icl::Thm1004Setting setting = base;
                setting.alpha = alpha;
                setting.epochs = static_cast<std::size_t>(n_cl);
                setting.reg_split = split;
                std::vector<double> rel, absolute, closed, full, eq15_gap;
                for (std::size_t b = 0; b < sequences; ++b) {
                    const double* tokens = data.inputs.data() + b * T * C;
                    const std::vector<double> h(tokens, tokens + T * C);
                    const bool record = b == 0 && alpha == 0.01 && n_cl == 10;
                    std::vector<double> trajectory;
                    const auto r = icl::dual_004(h, weights, setting, record ? &trajectory : nullptr);
                    if (record) (split == "per_sample" ? traj_sample : traj_step) = trajectory;
                    const double delta = r.y_cl - r.y_tf;
                    c_alpha.push_back(alpha), c_ncl.push_back(n_cl), c_split.push_back(split), c_seq.push_back(static_cast<std::int64_t>(b));
                    c_ytrue.push_back(data.targets.data()[b * T + N]);
                    c_y14.push_back(r.y_tf), c_y15.push_back(r.y_tf_eq15), c_ycl.push_back(r.y_cl), c_delta.push_back(delta);
                    c_rel.push_back(r.err), c_closed.push_back(r.err_closed_form), c_full.push_back(r.err_full_batch);
                    rel.push_back(r.err), absolute.push_back(std::abs(delta)), closed.push_back(r.err_closed_form);
                    full.push_back(r.err_full_batch), eq15_gap.push_back(std::abs(r.y_tf_eq15 - r.y_tf));
                }
                s_alpha.push_back(alpha), s_ncl.push_back(n_cl), s_split.push_back(split);
                s_median_rel.push_back(median_of(rel));
                s_max_rel.push_back(max_of(rel));
                s_median_abs.push_back(median_of(absolute));
                s_closed.push_back(max_of(closed));
                s_full.push_back(max_of(full));
                s_median_eq15.push_back(median_of(eq15_gap));
                pass = pass && s_closed.back() <= kExactBar && s_full.back() <= kExactBar;
            }
    {  // the unregularized GD-CL trajectory of the same sequence (α = 0, N_CL = 10), for the plot
        icl::Thm1004Setting plain = base;
        plain.variant = "none";
        plain.epochs = 10;
        const double* tokens = data.inputs.data();
        icl::dual_004(std::vector<double>(tokens, tokens + T * C), weights, plain, &traj_plain);
    }
    io::ResultsWriter& w = run.results();
    w.write_columns("/tables/004_fig10", {{"alpha", c_alpha}, {"n_cl", c_ncl}, {"reg_split", c_split}, {"seq", c_seq},
                                          {"y_true", c_ytrue}, {"y_tf_eq14", c_y14}, {"y_tf_eq15", c_y15}, {"y_cl", c_ycl},
                                          {"delta", c_delta}, {"rel_deviation", c_rel}, {"err_closed_form", c_closed},
                                          {"err_fullbatch", c_full}},
                    {{"rel_deviation", "err(Eq. 14 output, W^(S) phi(q)) over the whole vector (spec §0.2), not an identity"}});
    // Verdicts: the paper's two statements at its setting (α = 0.01, N_CL = 10, default per-sample split).
    // In the claims' vocabulary (issue 45); the claims below judge the same rule over the training seeds.
    std::vector<std::string> verdict(s_alpha.size(), "");
    double paper_rel = std::nan(""), worst_full = 0.0;
    std::vector<io::ClaimResult> claims;
    const std::int64_t seed = cfg.get_int("seed");
    for (std::size_t i = 0; i < s_alpha.size(); ++i) {
        worst_full = max_or_nan(worst_full, s_full[i]);
        const bool paper_cell = std::abs(s_alpha[i] - 0.01) < 1e-12 && s_ncl[i] == 10;
        if (paper_cell) {
            const bool slight = s_median_rel[i] > kExactBar && s_median_rel[i] <= kSlightBar;
            verdict[i] = std::isnan(s_median_rel[i]) ? "inconclusive" : slight ? "reproduced" : "not reproduced";
            if (s_split[i] != "per_sample") continue;  // the claim is on the spec's reading (A16); per_step is reported
            paper_rel = s_median_rel[i];
            claims.push_back(figure_claim(
                "004-F10 slight deviation at alpha 0.01, N_CL 10", "Figure 10 (§8 of the spec)",
                io::ClaimKind::qualitative,
                "with alpha = 0.01 and N_CL = 10 the regularized GD-CL output deviates slightly from Eq. 14's attention output "
                "(the paper: 'a slight deviation'; ours: median relative deviation in (1e-11, 0.05]; the regularizer split per sample, "
                "the spec's reading A16; the per-step split is in /tables/004_fig10_summary)",
                "median over the Fig. 10 sequences of the relative deviation err(Eq. 14, W^(S) phi(q))",
                io::ClaimRule::interval_within(kExactBar, kSlightBar), seed, s_median_rel[i]));
        }
    }
    claims.push_back(figure_claim("004-F10 N_CL 1 full batch = Eq. 14", "Figure 10 (§8 of the spec), Eq. 13-14", io::ClaimKind::own_check,
                                  "one full-batch step on the regularized contrastive loss equals Eq. 14's output (the paper: "
                                  "'strictly equivalent'; bar 1e-11), every alpha, N_CL, split and sequence",
                                  "max over the Fig. 10 cells of the full-batch error", io::ClaimRule::count_at_most(kExactBar), seed,
                                  worst_full, /*deterministic=*/true));
    claims.push_back(figure_claim("004-F10 batch-1 loop = closed form", "spec gd_duals §8 (ours)", io::ClaimKind::own_check,
                                  "the batch-1 regularized GD-CL loop equals its closed form W^(S) (bar 1e-11), every cell",
                                  "max over the Fig. 10 cells of the closed-form error", io::ClaimRule::count_at_most(kExactBar), seed,
                                  max_of(s_closed), /*deterministic=*/true));
    w.write_columns("/tables/004_fig10_summary",
                    {{"alpha", s_alpha}, {"n_cl", s_ncl}, {"reg_split", s_split}, {"median_rel_deviation", s_median_rel},
                     {"max_rel_deviation", s_max_rel}, {"median_abs_delta", s_median_abs}, {"max_err_closed_form", s_closed},
                     {"max_err_fullbatch", s_full}, {"median_abs_eq15_minus_eq14", s_median_eq15}, {"verdict", verdict}},
                    {{"paper", "Fig. 10 (alpha 0.01, N_CL 10): 'a slight deviation'; N_CL 1 full batch: strictly equivalent"},
                     {"slight_bar", "median relative deviation in (1e-11, 0.05]"}});
    std::vector<std::int64_t> steps;
    for (std::size_t i = 0; i < traj_sample.size(); ++i) steps.push_back(static_cast<std::int64_t>(i));
    if (traj_step.size() == traj_sample.size() && traj_plain.size() == traj_sample.size() && !steps.empty())
        w.write_columns("/tables/004_fig10_traj", {{"step", steps}, {"y_cl_per_sample", traj_sample}, {"y_cl_per_step", traj_step},
                                                   {"y_cl_alpha0", traj_plain}},
                        {{"sequence", "seq 0 of /tables/004_fig10, alpha 0.01, N_CL 10"}});
    const bool paper_ok = std::isnan(paper_rel) || (paper_rel > kExactBar && paper_rel <= kSlightBar);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::snprintf(line, sizeof line,
                  "§8 Fig. 10 (T = %zu, %zu sequences, %.1f s): alpha 0.01, N_CL 10, per-sample split: median relative deviation %.3g "
                  "(%s); full batch N_CL 1 vs Eq. 14 max err %.2e; closed form max err %.2e\n",
                  T, sequences, seconds, paper_rel, paper_ok ? "slight: reproduced" : "not reproduced", worst_full,
                  max_of(s_closed));
    summary += line;
    return {pass && paper_ok, summary, claims};
}

}  // namespace iclab::experiments::gd004
