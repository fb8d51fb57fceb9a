// gd004_fig5: per-run metrics, the paper's Fig. 5 claims (§5.3-5.5) and their verdicts by the paired seed-sign rule
// of specs/gd_duals.md §9, and the results tables.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "experiments/gd004_fig5/fig5.hpp"
#include "framework/core/measure.hpp"

namespace iclab::experiments::fig5 {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kComparable = 1.5;  // "comparable" final loss: within this factor of the baseline's (ours)
// "Comparable" asks both arms to have learned (ours, issue 45): a final train loss at most this fraction of the zero
// predictor's (mean y² of the training set). Without it two untrained models, equal by not moving, passed the band.
constexpr double kLearned = 0.5;
// A paired difference counts as "poorer / better / faster / slower" only beyond what a 1 % change of the loss gives
// (ours, declared in each claim's rule): final loss (variant − baseline) / baseline beyond ±0.01, and an AUC of
// log10(loss) over k trapezoid intervals beyond ±k·log10(1.01) (a loss 1 % lower at every epoch). Without it a
// final-loss difference of +5.7e-6 (0.002 %) counted as "poorer".
// Why 1 %: the training runs in float32 (unit roundoff 6e-8) for 50 epochs, and the quick profile's rounding twin
// (train.perturb_init_ulps) moved no 004-F5 verdict with it; 1 % is 500x the 0.002 % that counted as poorer, and a
// difference within it is read as "no difference" (a tie), which counts against the claim.
constexpr double kLossTolerance = 0.01;

// The reading of record (issue 45: one statement, one claim). Paper 004 §5.3 on Figure 5 left: "We vary different
// values of α to investigate the impact on pre-training performance for the same setting, as shown in the left part of
// Figure 5. It can be observed that when α > 0, under the pre-training setting, the regularized-model converges to a
// poorer result while when α < 0, the model converges faster and achieves results comparable to the model without
// regularization (α = 0). [...] we can find from Eq (15) that when α < 0, a residual connection multiplied by a
// coefficient with respect to α is introduced". The setting is §5.1's single task, and the layer trained is Eq. 15:
// the table "reg" (fig5.reg_form eq15, task.w_mode fixed, the paper config) is the reading of record, its rows the
// claims. The two other readings of the same sentences, Eq. 14 ("reg_eq14") and a fresh task per sequence
// ("reg_per_sequence"), are the caveat's controls (specs/gd_duals.md §9): reported rows of their summary tables, with
// the verdict the same rule gives, and no claim. "aug" (§5.4) and "neg" (§5.5) have one reading each.
bool reading_of_record(const std::string& table) { return table == "reg" || table == "aug" || table == "neg"; }

// The part of a claim's statement that says which reading it is (reg) and what counts (the tolerance above, the band).
std::string counts_text(const std::string& table, const std::string& metric) {
    const std::string reading = table == "reg" ? "; reading of record: Eq. 15, one task per seed (§5.1)" : "";
    if (metric == "final_ratio") return reading;  // the claim's text states the band
    if (metric == "final_loss")
        return reading + "; poorer / better: a final loss beyond 1 % of the paired baseline's (within it: a tie, counted "
                         "against)";
    return reading + "; faster / slower: an AUC of log10(loss) beyond k log10(1.01) over k epoch intervals, a loss 1 % "
                     "lower at every epoch (within it: a tie, counted against)";
}

// A claim of the paper about one variant against its paired baseline. sign +1: the variant's metric is larger
// (poorer / slower), −1: smaller (better / faster), 0: final loss within kComparable of the baseline's and both arms
// learned (final_ratio, see paired()).
struct Claim {
    std::string text, metric;
    int sign = 0;
};

std::vector<Claim> claims_of(const RunSpec& s) {
    const std::string part = s.table.substr(0, 3);
    if (s.baseline) return {};
    if (part == "reg" && s.alpha > 0) return {{"alpha > 0 converges to a poorer result (§5.3)", "final_loss", +1}};
    if (part == "reg" && s.alpha < 0)
        return {{"alpha < 0 converges faster (§5.3)", "auc", -1},
                {"alpha < 0 ends comparable to alpha = 0 (§5.3; ours: final within 1.5x, both arms below 0.5x the zero "
                 "predictor's loss)",
                 "final_ratio", 0}};
    if (part == "aug" && (s.aug == "g1" || s.aug == "g1+g2")) return {{s.aug + " converges to a poorer solution (§5.4)", "final_loss", +1}};
    if (part == "aug" && s.aug == "g2") return {{"g2 alone converges slightly faster (§5.4)", "auc", -1}};
    if (part == "aug" && s.aug == "g2+")
        return {{"g2+ is slower early (§5.4; early AUC, first E/10 epochs)", "early_auc", +1},
                {"g2+ ends with a better solution (§5.4)", "final_loss", -1}};
    if (part == "neg" && s.k == 3 && s.beta == 0.1) return {{"k = 3, beta = 0.1 converges faster (§5.5)", "auc", -1}};
    return {};
}

double trapezoid_log10(const std::vector<double>& loss, std::size_t epochs) {
    if (epochs == 1) return std::log10(loss[0]);
    double area = 0.0;
    for (std::size_t e = 1; e < epochs; ++e) area += 0.5 * (std::log10(loss[e - 1]) + std::log10(loss[e]));
    return area;
}

// The paired difference of `metric`: final_loss (variant − baseline) / baseline, auc and early_auc variant −
// baseline. final_ratio: one score that is <= 1 exactly when the ratio variant / baseline lies in
// [1/kComparable, kComparable] and each arm's final loss is <= kLearned × the zero predictor's (both learned):
// max(|ln(variant / baseline)| / ln kComparable, variant / (kLearned·zero), baseline / (kLearned·zero)).
// A NaN loss gives a NaN score (inconclusive); +inf (diverged) an infinite one: never a pass.
double paired(const RunMetrics& v, const RunMetrics& b, const std::string& metric) {
    if (metric == "final_loss") return (v.final_loss - b.final_loss) / b.final_loss;
    if (metric == "early_auc") return v.early_auc - b.early_auc;
    if (metric == "final_ratio") {
        const double learned = kLearned * b.zero_loss;  // the arms share the seed's training set: one zero loss
        const double band = std::abs(std::log(v.final_loss / b.final_loss)) / std::log(kComparable);
        const double scores[] = {band, v.final_loss / learned, b.final_loss / learned};
        double worst = scores[0];
        for (const double x : scores) worst = std::isnan(x) || std::isnan(worst) ? kNaN : std::max(worst, x);
        return worst;
    }
    return v.auc - b.auc;
}

// The tolerance of a difference of `metric` (kLossTolerance) for E epochs: trapezoid_log10 over e epochs sums
// max(1, e − 1) log10 terms (one epoch: the log10 itself).
double tolerance(const std::string& metric, std::size_t epochs) {
    if (metric == "final_loss") return kLossTolerance;
    const std::size_t e = metric == "early_auc" ? std::max<std::size_t>(1, epochs / 10) : epochs;
    return static_cast<double>(std::max<std::size_t>(1, e - 1)) * std::log10(1.0 + kLossTolerance);
}

// The rule of a claim with expected sign `sign` (+1 larger, −1 smaller, 0 comparable: the final_ratio score <= 1)
// on the paired differences: beyond the tolerance in >= share of the seeds.
io::ClaimRule rule_of(int sign, const std::string& metric, std::size_t epochs, io::Fraction share) {
    if (sign > 0) return io::ClaimRule::count_above(tolerance(metric, epochs), share);
    if (sign < 0) return io::ClaimRule::count_below(-tolerance(metric, epochs), share);
    return io::ClaimRule::count_at_most(1.0, share);
}

// Provenance (issue 45): the bars chosen after the first runs, each with its date and reason.
std::string provenance_of(const std::string& table, const std::string& metric, io::Fraction share) {
    std::string text;
    const auto add = [&](const std::string& part) { text += (text.empty() ? "chosen after the first runs (2026-11-29): " : "; ") + part; };
    if (share.needed == 0)
        add("every seed on the claimed side (the spec's >= 4 of 5 passes a fair coin 19 % of the time), set (issue 45) "
            "when the quick run went from 2 to 5 seeds");
    if (metric == "final_ratio")
        add("'comparable' also needs both arms learned (final loss <= 0.5x the zero predictor's), added (issue 45) after "
            "the audit found that the ratio band alone passes two untrained models");
    else
        add("a difference counts beyond a 1 % loss tolerance, added (issue 45) after a final-loss difference of +5.7e-6 "
            "counted as poorer");
    if (table == "reg")
        add("the table reg (Eq. 15, one task) named the reading of record (issue 45) after all three readings had run; "
            "the Eq. 14 and per-sequence controls' rows, claims until then, are reported rows");
    return text;
}

std::string metric_text(const std::string& metric) {
    if (metric == "final_ratio")
        return "per seed, max(|ln(final loss variant / paired baseline)| / ln 1.5, each arm's final loss / (0.5 x the zero "
               "predictor's training loss)): <= 1 when the ratio is in [1/1.5, 1.5] and both arms learned";
    if (metric == "final_loss") return "final loss, (variant - paired baseline) / paired baseline, per seed";
    return metric + ", variant - paired baseline, per seed";
}

std::string format(const char* pattern, double value) {
    char text[64];
    std::snprintf(text, sizeof text, pattern, value);
    return text;
}

}  // namespace

RunMetrics run_metrics(const RunCurves& run, const RunCurves& baseline) {
    const std::size_t E = run.train_loss.size();
    RunMetrics m;
    m.final_loss = run.train_loss.back();
    m.zero_loss = run.zero_loss;
    m.final_test = run.test_mse.back();
    m.auc = trapezoid_log10(run.train_loss, E);
    m.early_auc = trapezoid_log10(run.train_loss, std::max<std::size_t>(1, E / 10));
    m.epochs_to_target = kInf;
    const double target = 1.1 * baseline.train_loss.back();
    for (std::size_t e = 0; e < E; ++e)
        if (run.train_loss[e] <= target) {
            m.epochs_to_target = static_cast<double>(e + 1);
            break;
        }
    return m;
}

std::string write_table(io::ResultsWriter& writer, const std::string& table, const std::vector<RunSpec>& specs,
                        const std::vector<RunCurves>& curves, const std::vector<std::int64_t>& seeds, double verdict_fraction,
                        std::vector<io::ClaimResult>& claims_out) {
    const std::string part = table.substr(0, 3);
    std::vector<std::size_t> runs;
    std::map<std::size_t, std::size_t> baseline_of_seed;
    std::vector<std::string> labels;  // variants in config order
    for (std::size_t i = 0; i < specs.size(); ++i) {
        if (specs[i].table != table) continue;
        runs.push_back(i);
        if (specs[i].baseline) baseline_of_seed[specs[i].seed_index] = i;
        if (std::find(labels.begin(), labels.end(), specs[i].label) == labels.end()) labels.push_back(specs[i].label);
    }
    // Curves: one row per (variant, seed, epoch).
    std::vector<std::string> c_label, c_aug;
    std::vector<double> c_alpha, c_beta, c_loss, c_test;
    std::vector<std::int64_t> c_k, c_seed, c_epoch;
    for (const std::size_t i : runs)
        for (std::size_t e = 0; e < curves[i].train_loss.size(); ++e) {
            c_label.push_back(specs[i].label), c_aug.push_back(specs[i].aug), c_alpha.push_back(specs[i].alpha);
            c_k.push_back(specs[i].k), c_beta.push_back(specs[i].beta), c_seed.push_back(seeds[specs[i].seed_index]);
            c_epoch.push_back(static_cast<std::int64_t>(e + 1));
            c_loss.push_back(curves[i].train_loss[e]), c_test.push_back(curves[i].test_mse[e]);
        }
    std::vector<io::Column> columns{{"variant", c_label}};
    if (part == "reg") columns.push_back({"alpha", c_alpha});
    if (part == "neg") columns.push_back({"k", c_k}), columns.push_back({"beta", c_beta});
    columns.insert(columns.end(), {{"seed", c_seed}, {"epoch", c_epoch}, {"train_loss", c_loss}, {"test_mse", c_test}});
    writer.write_columns("/tables/004_fig5_" + table, columns);

    // Summary: one row per (variant, claim); variants without a claim get one row.
    std::vector<std::string> s_label, s_claim, s_metric, s_expected, s_verdict, s_role, s_diffs;
    std::vector<double> s_final_mean, s_final_std, s_test_mean, s_test_std, s_auc_mean, s_auc_std, s_epochs, s_zeroed;
    std::vector<std::int64_t> s_seeds, s_match, s_needed;
    std::string text;
    const io::Fraction share = io::Fraction::of(verdict_fraction);
    for (const std::string& label : labels) {
        std::vector<std::size_t> members;
        for (const std::size_t i : runs)
            if (specs[i].label == label) members.push_back(i);
        std::vector<RunMetrics> metrics, bases;
        std::vector<double> finals, tests, aucs, epochs, zeroed;
        for (const std::size_t i : members) {
            const auto base = baseline_of_seed.at(specs[i].seed_index);
            metrics.push_back(run_metrics(curves[i], curves[base]));
            bases.push_back(run_metrics(curves[base], curves[base]));
            finals.push_back(metrics.back().final_loss), tests.push_back(metrics.back().final_test);
            aucs.push_back(metrics.back().auc), epochs.push_back(metrics.back().epochs_to_target);
            zeroed.push_back(curves[i].test_mse_ctx_zeroed);
        }
        auto claims = claims_of(specs[members.front()]);
        const bool has_claim = !claims.empty();
        if (!has_claim) claims.push_back({specs[members.front()].baseline ? "(paired baseline)" : "(no claim; AUC sign shown)", "auc", -1});
        const std::size_t epoch_count = curves[members.front()].train_loss.size();
        for (const Claim& claim : claims) {
            std::size_t matching = 0;
            std::string diffs;
            std::vector<double> values;
            std::vector<std::int64_t> units;
            const io::ClaimRule rule = rule_of(claim.sign, claim.metric, epoch_count, share);
            for (std::size_t s = 0; s < metrics.size(); ++s) {
                const double d = paired(metrics[s], bases[s], claim.metric);
                matching += rule.on_claimed_side(d) ? 1 : 0;
                diffs += (s ? " " : "") + format("%.4g", d);
                values.push_back(d), units.push_back(seeds[specs[members[s]].seed_index]);
            }
            const std::size_t needed = rule.needed_of(metrics.size());
            // The verdict column holds a claim's verdict only (one vocabulary, third audit of issue 45); what a row is
            // stands in its own column: a claim, a control reading's rule (the same rule on another reading, no claim:
            // its verdict stays empty), the paired baseline, or a variant without a claim.
            std::string verdict, role = specs[members.front()].baseline ? "baseline" : "no claim";
            if (has_claim && !specs[members.front()].baseline) {
                io::Claim c;
                c.id = "004-F5 " + table + " " + label + ": " + claim.metric;
                c.paper = "004";
                c.source = "Figure 5 (§5.3-5.5)";
                c.kind = io::ClaimKind::qualitative;
                c.statement = claim.text + counts_text(table, claim.metric);
                c.metric = metric_text(claim.metric);
                c.rule = rule;
                c.readme = "experiments/gd004_fig5/README.md";
                c.provenance = provenance_of(table, claim.metric, share);
                io::ClaimResult judged = io::evaluate_claim(c, units, values);
                if (reading_of_record(table)) {
                    role = "claim", verdict = io::verdict_name(judged.verdict);
                    claims_out.push_back(std::move(judged));
                } else {
                    const io::Verdict v = judged.verdict;
                    role = std::string("control reading, no claim: the claim's rule is ") +
                           (v == io::Verdict::reproduced ? "met" : v == io::Verdict::not_reproduced ? "not met" : "undecided");
                }
            }
            const Spread f = spread_of(finals), t = spread_of(tests), a = spread_of(aucs);
            s_label.push_back(label), s_claim.push_back(claim.text), s_metric.push_back(claim.metric);
            s_expected.push_back(claim.sign > 0 ? "+" : claim.sign < 0 ? "-" : "comparable");
            s_seeds.push_back(static_cast<std::int64_t>(metrics.size()));
            s_match.push_back(static_cast<std::int64_t>(matching)), s_needed.push_back(static_cast<std::int64_t>(needed));
            s_verdict.push_back(verdict), s_role.push_back(role), s_diffs.push_back(diffs);
            s_final_mean.push_back(f.mean), s_final_std.push_back(f.std), s_test_mean.push_back(t.mean), s_test_std.push_back(t.std);
            s_auc_mean.push_back(a.mean), s_auc_std.push_back(a.std), s_epochs.push_back(median_of(epochs));
            s_zeroed.push_back(mean_of(zeroed));
            char line[512];
            std::snprintf(line, sizeof line, "  %-16s %-14s final %.4g ± %.2g, AUC %.3f, ctx-zeroed test %.4g | %s: %zu/%zu %s [%s: %s]\n",
                          table.c_str(), label.c_str(), f.mean, f.std, a.mean, mean_of(zeroed), claim.text.c_str(), matching,
                          metrics.size(), verdict.c_str(), claim.metric.c_str(), diffs.c_str());
            text += line;
        }
    }
    writer.write_columns("/tables/004_fig5_" + table + "_summary",
                         {{"variant", s_label}, {"seeds", s_seeds}, {"final_loss_mean", s_final_mean}, {"final_loss_std", s_final_std},
                          {"test_mse_mean", s_test_mean}, {"test_mse_std", s_test_std}, {"auc_mean", s_auc_mean},
                          {"auc_std", s_auc_std}, {"epochs_to_target_median", s_epochs}, {"test_mse_ctx_zeroed_mean", s_zeroed},
                          {"claim", s_claim}, {"metric", s_metric}, {"expected", s_expected}, {"seeds_matching", s_match},
                          {"seeds_needed", s_needed}, {"verdict", s_verdict}, {"role", s_role}, {"paired_differences", s_diffs}},
                         {{"paired_differences", "per seed, variant - baseline of the metric (final_loss: (variant - baseline) / "
                                                 "baseline; final_ratio: the comparable score, <= 1 within 1.5x with both arms learned)"},
                          {"seeds_matching", "seeds whose difference lies beyond the tolerance on the claimed side (the claim's rule: "
                                             "1 % of the final loss, k log10(1.01) of an AUC over k intervals)"},
                          {"auc", "trapezoid area of log10(epoch train loss) over epochs 1..E"},
                          {"epochs_to_target_median", "first epoch with train loss <= 1.1x the paired baseline's final (inf: never)"}});
    return text;
}

void write_runs_table(io::ResultsWriter& writer, const std::vector<RunSpec>& specs, const std::vector<RunCurves>& curves,
                      const std::vector<std::int64_t>& seeds) {
    std::vector<std::string> table, label;
    std::vector<std::int64_t> seed, steps;
    std::vector<double> final_loss, auc, early, to_target, test, zeroed, seconds;
    for (std::size_t i = 0; i < specs.size(); ++i) {
        std::size_t base = i;
        for (std::size_t j = 0; j < specs.size(); ++j)
            if (specs[j].baseline && specs[j].table == specs[i].table && specs[j].seed_index == specs[i].seed_index) base = j;
        const RunMetrics m = run_metrics(curves[i], curves[base]);
        table.push_back(specs[i].table), label.push_back(specs[i].label), seed.push_back(seeds[specs[i].seed_index]);
        steps.push_back(static_cast<std::int64_t>(curves[i].steps));
        final_loss.push_back(m.final_loss), auc.push_back(m.auc), early.push_back(m.early_auc), to_target.push_back(m.epochs_to_target);
        test.push_back(m.final_test), zeroed.push_back(curves[i].test_mse_ctx_zeroed), seconds.push_back(curves[i].seconds);
    }
    writer.write_columns("/tables/004_fig5_runs",
                         {{"table", table}, {"variant", label}, {"seed", seed}, {"steps", steps}, {"final_loss", final_loss},
                          {"auc", auc}, {"early_auc", early}, {"epochs_to_target", to_target}, {"test_mse", test},
                          {"test_mse_ctx_zeroed", zeroed}, {"seconds", seconds}});
}

}  // namespace iclab::experiments::fig5
