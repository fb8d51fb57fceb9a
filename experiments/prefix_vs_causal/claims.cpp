// Paper 003 Part B claims (experiments/prefix_vs_causal/claims.hpp). Paper values: Tables 3, 4-6 and 7 of paper 003
// App. E.2-E.5 as copied into shared/specs/paper003.md B1, B4, B5; the rules: the spec's §5, Part B items 1-6.
#include "experiments/prefix_vs_causal/claims.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "framework/core/check.hpp"
#include "framework/io/rank_test.hpp"

namespace iclab::experiments::part_b {

namespace {

// The rules of Part B (issue 45, second audit: rules a fair coin cannot pass, with the grids' 5 seeds). A continuous
// per-seed value (a log-ratio, a gap in points, a slope difference) is judged by the two-sided 95 % t-interval of its
// seed mean lying wholly on the claimed side (a one-sided false pass of 2.5 % when the true mean sits on the bar); a
// bounded per-seed statistic (Kendall's tau, its p-value) by a sign test needing every seed (5 of 5: 3.1 % for a fair
// coin), never by an interval or a mean. The rules were >= 2 of 3 seeds, then >= 2/3 of them (4 of 5: a coin passes
// 19 %); every claim carries that history in its provenance.
const char* const kHistory =
    "history: declared 2026-11-26 as '>= 2 of 3 seeds' (an absolute count of 2); ceb3f5a (2026-11-29, after the 3-seed "
    "results) made it the share 2/3 and the quick grids 5 seeds, unmarked; this rule supersedes both";
std::string after_audit(const std::string& rule) {
    return "chosen after the first runs (2026-11-29): second audit of issue 45, a 4-of-5 count passes a fair coin 19 % of "
           "the time; now " + rule + "; " + kHistory;
}
const std::string kByInterval = "the one-sided 95 % t-interval of the seed mean (false pass 2.5 %)";
const std::string kEverySeed = "a sign test needing 5 of 5 seeds (false pass 3.1 %; fewer seeds decide nothing)";
// The sign tests' share: at least 5 values, and >= 5/6 of them: the grids' 5 seeds must all agree (a coin: 1/32), and
// fewer seeds are inconclusive (3 of 3 would pass a coin 12.5 %, one seed 50 %), where Fraction::all() would decide.
constexpr io::Fraction kFiveSeeds{5, 6};
const char* const kOnMean = ", on the mean over seeds (95 % t-interval)";
const char* const kInEverySeed = " in 5 of 5 seeds";
// Table 7's prefix equivalence counts an arm only when it learned: its error at most this share of what no learning
// scores (Cell::chance_error; gd004_fig5's "comparable" asks the same of both arms).
constexpr double kLearnedShare = 0.5;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
using Triple = std::array<double, 3>;  // LR, N-LR, MC (%)

// Table 3 (Table 1 = the SL-L2 and UL-no-L2 rows): {(setting, mask): (LR, N-LR, MC)}.
const std::map<std::pair<std::string, std::string>, Triple>& table3() {
    static const std::map<std::pair<std::string, std::string>, Triple> t = {
        {{"SL-L2", "prefix"}, {8.6e-3, 1.5e-4, 24.1}},    {{"SL-L2", "causal"}, {1.9e-1, 2.7e-3, 27.0}},
        {{"SL-no-L2", "prefix"}, {6.7e-3, 1.5e-4, 24.5}}, {{"SL-no-L2", "causal"}, {5.0e-2, 1.9e-3, 30.5}},
        {{"UL-L2", "prefix"}, {7.6e-3, 1.7e-4, 26.7}},    {{"UL-L2", "causal"}, {4.4e-2, 2.5e-3, 30.4}},
        {{"UL-no-L2", "prefix"}, {2.5e-3, 9.0e-5, 27.6}}, {{"UL-no-L2", "causal"}, {1.6e-2, 2.9e-3, 32.1}}};
    return t;
}
// Table 7 (permuted ICEs in training; SL = SL-L2, UL = UL-no-L2).
const std::map<std::pair<std::string, std::string>, Triple>& table7() {
    static const std::map<std::pair<std::string, std::string>, Triple> t = {
        {{"SL-L2", "prefix"}, {9.0e-3, 1.5e-4, 24.1}}, {{"SL-L2", "causal"}, {1.9e-1, 2.5e-3, 26.9}},
        {{"UL-no-L2", "prefix"}, {2.6e-3, 9.5e-5, 26.1}}, {{"UL-no-L2", "causal"}, {1.1e-2, 1.8e-3, 26.2}}};
    return t;
}
// Tables 4-6 (k of 40 ICEs at test: 16, 24, 32): {(k, setting, mask): (LR, N-LR, MC)}.
const std::map<std::tuple<int, std::string, std::string>, Triple>& fewer() {
    static const std::map<std::tuple<int, std::string, std::string>, Triple> t = {
        {{16, "SL-L2", "prefix"}, {1.01, 2.1e-2, 42.8}},    {{16, "SL-L2", "causal"}, {1.76, 2.7e-2, 43.3}},
        {{16, "UL-no-L2", "prefix"}, {0.97, 1.9e-2, 42.9}}, {{16, "UL-no-L2", "causal"}, {1.12, 3.2e-2, 46.6}},
        {{24, "SL-L2", "prefix"}, {1.4e-1, 2.0e-3, 33.4}},  {{24, "SL-L2", "causal"}, {7.0e-1, 1.0e-2, 35.9}},
        {{24, "UL-no-L2", "prefix"}, {1.0e-1, 1.7e-3, 37.1}}, {{24, "UL-no-L2", "causal"}, {1.3e-1, 1.0e-2, 41.2}},
        {{32, "SL-L2", "prefix"}, {2.4e-2, 4.7e-4, 32.4}},  {{32, "SL-L2", "causal"}, {3.1e-1, 5.0e-3, 34.6}},
        {{32, "UL-no-L2", "prefix"}, {9.5e-3, 3.4e-4, 36.2}}, {{32, "UL-no-L2", "causal"}, {4.0e-2, 5.7e-3, 37.3}}};
    return t;
}

std::string number(double x, bool mc) {
    char text[32];
    std::snprintf(text, sizeof text, mc ? "%.1f %%" : "%.2g", x);
    return text;
}

int column(const std::string& kind) { return kind == "linear" ? 0 : kind == "sigmoid" ? 1 : 2; }

}  // namespace

std::string task_name(const std::string& kind) {
    ICLAB_CHECK(kind == "linear" || kind == "sigmoid" || kind == "classification", "paper 003 Part B has no task " << kind);
    return kind == "linear" ? "LR" : kind == "sigmoid" ? "N-LR" : "MC";
}

double last_third_log_slope(const std::vector<double>& errors) {
    ICLAB_CHECK(errors.size() >= 2, "a log-slope needs two depths, got " << errors.size());
    const std::size_t L = errors.size() - 1, first = L - std::max<std::size_t>(1, L / 3);
    return (std::log10(errors[L]) - std::log10(errors[first])) / static_cast<double>(L - first);
}

std::string setting_name(const Cell& cell) { return std::string(cell.shared ? "SL" : "UL") + (cell.l2 ? "-L2" : "-no-L2"); }

std::vector<io::ClaimResult> claims(const Cell& cell, std::int64_t seed) {
    ICLAB_CHECK(cell.mask == "prefix" || cell.mask == "causal", "paper 003 Part B compares prefix and causal, not " << cell.mask);
    ICLAB_CHECK(cell.fewer_examples.size() == cell.fewer_errors.size(), "one error per fewer-ICE test");
    const bool mc = cell.task == "classification";
    const std::string task = task_name(cell.task), setting = setting_name(cell);
    const bool table1 = setting == "SL-L2" || setting == "UL-no-L2";
    const std::string what = mc ? "classification error (%)" : "query MSE";
    const std::string readme = "experiments/prefix_vs_causal/README.md#claims-over-seeds";
    const io::ClaimPair::Combine combine = mc ? io::ClaimPair::Combine::difference : io::ClaimPair::Combine::log_ratio;

    // One arm of a claim paired on `key` (x_i combines the two arms' values of one seed), or an unpaired claim (key "").
    auto declare = [&](const std::string& id, const std::string& source, const std::string& statement, const std::string& metric,
                       const io::ClaimRule& rule, double value, const std::string& key, const std::string& first,
                       const std::string& second, const std::string& arm, io::ClaimPair::Combine how) {
        io::Claim c;
        c.id = id, c.paper = "003", c.source = source, c.kind = io::ClaimKind::qualitative, c.statement = statement;
        c.metric = metric, c.rule = rule, c.readme = readme, c.provenance = after_audit(rule.counts() ? kEverySeed : kByInterval);
        if (!key.empty()) c.pair.key = key, c.pair.first = first, c.pair.second = second, c.pair.arm = arm, c.pair.combine = how;
        return io::evaluate_claim(c, {seed}, {value});
    };
    // x_i = ln(causal / prefix) (regression) or causal - prefix in points (MC), one per seed.
    auto paired = [&](const std::string& id, const std::string& source, const std::string& statement, const std::string& metric,
                      const io::ClaimRule& rule, double value) {
        return declare(id, source, statement, metric, rule, value, "model.mask", "prefix", "causal", cell.mask, combine);
    };
    const std::string sign_metric = mc ? "causal - prefix test error (points), one seed's paired runs"
                                       : "ln(causal / prefix test query MSE), one seed's paired runs";
    const io::ClaimRule above = io::ClaimRule::interval_above(0.0);  // prefix < causal: the seed mean's interval above 0
    auto quoted = [&](const Triple& p, const Triple& c) {
        return number(p[column(cell.task)], mc) + " vs " + number(c[column(cell.task)], mc);
    };

    // Table 7, permuted vs unpermuted runs of one mask (spec §5.4), paired on train.permute_examples: per_step ([C]'s
    // form, the Table 7 grids) against none; x_i = ln(unpermuted / permuted) (regression) or unpermuted - permuted
    // (points). per_sequence runs declare none of these (another training scheme than the paper's).
    auto permuted_vs_unpermuted = [&](std::vector<io::ClaimResult>& out) {
        if (!table1 || (cell.permute_examples != "none" && cell.permute_examples != "per_step")) return;
        const double paper_permuted = table7().at({setting, cell.mask})[column(cell.task)];
        const double paper_plain = table3().at({setting, cell.mask})[column(cell.task)];
        const std::string paper = number(paper_permuted, mc) + " permuted vs " + number(paper_plain, mc) + " unpermuted";
        const std::string metric = mc ? "unpermuted - permuted " + cell.mask + "LM test error (points), one seed's paired runs"
                                      : "ln(unpermuted / permuted " + cell.mask + "LM test query MSE), one seed's paired runs";
        if (cell.mask == "causal")
            out.push_back(declare("003-T7 " + task + " " + setting + " causal: permuted <= unpermuted", "Table 7",
                                  "causalLM " + what + " trained with permuted ICEs <= trained unpermuted (" + task + ", " + setting +
                                      "; paper: " + paper + ")" + kOnMean,
                                  metric, above, cell.test_error, "train.permute_examples",
                                  "per_step", "none", cell.permute_examples, combine));
        else {
            // An equivalence band passes two models that learned nothing (both at chance: x = 0). Each arm's value is its
            // error only when it learned, at most kLearnedShare of chance (cell.chance_error), else NaN: the seed's
            // paired value is then NaN and the claim inconclusive, never reproduced (issue 45, third read). A NaN chance
            // error (a NaN target) cannot show that the arm learned, so it does not count either (fourth audit: it did).
            const bool learned = cell.test_error <= kLearnedShare * cell.chance_error;
            char gate[160];
            std::snprintf(gate, sizeof gate, "; an arm counts only when it learned: error <= %.2g of %s", kLearnedShare,
                          mc ? "a uniform guess's" : "the zero predictor's");
            out.push_back(declare("003-T7 " + task + " " + setting + " prefix: permuted within " + (mc ? "1.5 points" : "x1.5") +
                                      " of unpermuted",
                                  "Table 7",
                                  "prefixLM " + what + " trained with permuted ICEs within " + (mc ? "+-1.5 points" : "a factor 1.5") +
                                      " of trained unpermuted (" + task + ", " + setting + "; paper: " + paper + ")" + kOnMean + gate,
                                  metric + " (NaN for an arm that did not learn)",
                                  mc ? io::ClaimRule::interval_within(-1.5, 1.5) : io::ClaimRule::interval_within(-std::log(1.5), std::log(1.5)),
                                  learned ? cell.test_error : kNaN, "train.permute_examples", "per_step", "none", cell.permute_examples, combine));
            out.back().claim.provenance += "; chosen after the first runs (2026-11-30): third read of issue 45, the band alone "
                                           "passes two models at chance, so an arm that did not learn now makes its seed NaN";
        }
    };

    std::vector<io::ClaimResult> out;
    if (cell.permuted()) {  // Table 7: "prefixLM still outperforms causalLM in general" (spec §5.4: prefix <= causal)
        if (!table1) return out;
        const std::string paper = quoted(table7().at({setting, "prefix"}), table7().at({setting, "causal"}));
        out.push_back(paired("003-T7 " + task + " " + setting + " permuted: prefix <= causal", "Table 7",
                             "trained with permuted ICEs, prefixLM " + what + " <= causalLM (" + task + ", " + setting +
                                 "; paper: " + paper + ")" + kOnMean,
                             sign_metric, above, cell.test_error));
        permuted_vs_unpermuted(out);
        return out;
    }
    const std::string paper = quoted(table3().at({setting, "prefix"}), table3().at({setting, "causal"}));
    if (!table1) {  // Table 3's other settings: prefix < causal
        out.push_back(paired("003-T3 " + task + " " + setting + ": prefix < causal", "Table 3",
                             "prefixLM " + what + " < causalLM (" + task + ", " + setting + "; paper: " + paper + ")" + kOnMean,
                             sign_metric, above, cell.test_error));
        return out;  // Tables 4-6, 7 and Figure 3: the Table 1 rows (Q16)
    }
    // Table 1's rows are Table 3's SL-L2 and UL-no-L2 rows: the same runs, the same claim, so one row (issue 45, second
    // audit: it was also declared as '003-T3 ...: prefix < causal' on the same values). Its bar is spec §5.1's: prefix
    // < causal with causal/prefix >= 1.5 (paper's smallest 5.8), MC a gap >= 1 point (2.9); Table 3's gate reads it too.
    out.push_back(paired("003-T1 " + task + " " + setting + (mc ? ": gap >= 1 point" : ": ratio >= 1.5"), "Tables 1 and 3",
                         "prefixLM " + what + " < causalLM " + (mc ? "by >= 1 point" : "by a factor >= 1.5") + " (" + task + ", " +
                             setting + ": Table 1, and Table 3's row; paper: " + paper + ")" + kOnMean,
                         sign_metric, io::ClaimRule::interval_above(mc ? 1.0 : std::log(1.5)), cell.test_error));
    out.back().claim.provenance += "; one claim for Table 1 and Table 3's row, was two on the same values ('003-T3 " + task + " " +
                                   setting + ": prefix < causal', x > 0, and this one)";
    for (std::size_t i = 0; i < cell.fewer_examples.size(); ++i) {  // Tables 4-6: k = d, 1.5d, 2d <-> 16, 24, 32 of 40
        const std::int64_t k = cell.fewer_examples[i];
        const int paper_k = (16 * k) % cell.x_dim == 0 ? static_cast<int>(16 * k / cell.x_dim) : 0;
        const auto p = fewer().find({paper_k, setting, "prefix"}), c = fewer().find({paper_k, setting, "causal"});
        const bool printed = p != fewer().end() && c != fewer().end();
        const std::string source = printed ? (paper_k == 16 ? "Table 4" : paper_k == 24 ? "Table 5" : "Table 6") : "Tables 4-6";
        out.push_back(paired("003-T4-6 " + task + " " + setting + " k=" + std::to_string(k) + ": prefix < causal", source,
                             "with " + std::to_string(k) + " ICEs at test, prefixLM " + what + " < causalLM (" + task + ", " +
                                 setting + (printed ? "; paper, k = " + std::to_string(paper_k) + ": " + quoted(p->second, c->second) : "") +
                                 ")" + kOnMean,
                             sign_metric, above, cell.fewer_errors[i]));
    }
    // Tables 4-6 with Table 1 (spec §5.3: "Errors must grow as k shrinks, for both masks"): one value per run, Kendall's
    // tau between k and the error over the fewer-ICE sets and the full test set (k = task.examples); -1 = every pair
    // ordered. Not paired: each mask has its own claim. tau is bounded (-1 is its end), so a sign test on the per-seed bar
    // declared 2026-11-26, tau = -1 (the error grows at every step of k), now needed in every seed: the bar per seed is
    // kept (loosening it to tau < 0 after seeing the runs would have turned 7 cells reproduced), only the count changes.
    std::vector<double> ks(cell.fewer_examples.begin(), cell.fewer_examples.end()), errors = cell.fewer_errors;
    ks.push_back(static_cast<double>(cell.examples)), errors.push_back(cell.test_error);
    // A run whose tau is undefined (a NaN error, or every error tied) declares it NaN: its seed makes the claim
    // inconclusive with the reason shown, where leaving the claim out said only "4 values, needs 5" (issue 45).
    if (!cell.fewer_examples.empty()) {
        std::string list;
        for (double k : ks) list += (list.empty() ? "" : ", ") + std::to_string(static_cast<std::int64_t>(k));
        out.push_back(declare("003-T4-6 " + task + " " + setting + " " + cell.mask + ": errors grow as k shrinks", "Tables 4-6",
                              cell.mask + "LM " + what + " grows as the ICEs at test shrink over k = " + list + " (" + task +
                                  ", " + setting + "): Kendall's tau = -1 (it grows at every step)" + kInEverySeed,
                              "Kendall's tau between k and the " + cell.mask + "LM test error over k = " + list +
                                  " (-1: strictly decreasing in k; < 0: more pairs falling than rising), one run",
                              io::ClaimRule::count_at_most(-1.0, kFiveSeeds), io::kendall_tau(ks, errors), "", "", "", "", combine));
        out.back().claim.provenance += "; the per-seed bar tau = -1 (strictly monotone, declared 2026-11-26) is kept: tau < 0 was "
                                       "considered and refused, as a bar loosened after seeing the runs (on e35d6c8's quick runs "
                                       "it would have reproduced 11 of the 12 cells)";
    }
    // Figure 3 (spec §5.5, B2: the SL models; here the Table 1 row SL-L2), runs with probes: the last depth's probe
    // error, and for LR the log-slope over the last third of the layers (causal flatter: its slope, negative while the
    // error falls, is above prefix's).
    if (cell.shared && cell.probe_errors.size() >= 2) {
        const std::string probe_what = mc ? "probe classification error (%)" : "probe query MSE";
        out.push_back(paired("003-F3 " + task + " " + setting + ": prefix final-layer probe < causal", "Figure 3",
                             "the per-layer least-squares probe's " + probe_what + " at the last layer is lower for prefixLM than causalLM (" +
                                 task + ", " + setting + ")" + kOnMean,
                             mc ? "causal - prefix last-layer probe error (points), one seed's paired runs"
                                : "ln(causal / prefix last-layer probe query MSE), one seed's paired runs",
                             above, cell.probe_errors.back()));
        if (cell.task == "linear") {
            const std::size_t L = cell.probe_errors.size() - 1, first = L - std::max<std::size_t>(1, L / 3);
            out.push_back(declare("003-F3 LR " + setting + ": causal probe curve flatter over the last third", "Figure 3",
                                  "over the last third of the layers (depths " + std::to_string(first) + ".." + std::to_string(L) +
                                      "), the causalLM probe query MSE falls more slowly in log scale than prefixLM's (LR, " + setting +
                                      ")" + kOnMean,
                                  "causal - prefix slope of log10(probe query MSE) per layer over depths " + std::to_string(first) + ".." +
                                      std::to_string(L) + ", one seed's paired runs",
                                  above, last_third_log_slope(cell.probe_errors), "model.mask", "prefix", "causal", cell.mask,
                                  io::ClaimPair::Combine::difference));
        }
    }
    permuted_vs_unpermuted(out);
    return out;
}

std::vector<io::ClaimResult> figure6_claims(const Cell& cell, std::int64_t seed, const std::vector<std::int64_t>& pools) {
    ICLAB_CHECK(cell.mask == "prefix" || cell.mask == "causal", "Figure 6 compares prefix and causal, not " << cell.mask);
    std::vector<std::int64_t> sorted = pools;
    std::sort(sorted.begin(), sorted.end());
    ICLAB_CHECK(sorted.size() >= 4 && std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end() &&
                    std::binary_search(sorted.begin(), sorted.end(), cell.pool),
                "Figure 6: pool " << cell.pool << " among >= 4 distinct pools");
    const bool mc = cell.task == "classification";
    const std::string task = task_name(cell.task), setting = setting_name(cell);
    const std::string what = mc ? "classification error (%)" : "query MSE";
    std::vector<std::string> arms;
    for (std::int64_t p : sorted) arms.push_back(std::to_string(p));
    std::string list;
    for (const std::string& a : arms) list += (list.empty() ? "" : ", ") + a;
    const std::string readme = "experiments/prefix_vs_causal/README.md#claims-over-seeds";
    auto declare = [&](const std::string& id, const std::string& statement, const std::string& metric, const io::ClaimRule& rule,
                       double value, const io::ClaimPair& pair) {
        io::Claim c;
        c.id = id, c.paper = "003", c.source = "Figure 6", c.kind = io::ClaimKind::qualitative, c.statement = statement;
        c.metric = metric, c.rule = rule, c.readme = readme, c.pair = pair;
        c.provenance = after_audit(rule.counts() ? kEverySeed : kByInterval);
        return io::evaluate_claim(c, {seed}, {value});
    };
    std::vector<io::ClaimResult> out;
    // Errors fall with the pool, by Kendall's tau over every pool (not the end points). Per seed x is the exact one-sided
    // p of "falls" (rank_falls). The per-seed bar p <= 0.05 (chosen 2026-11-26 on the seed-0 cpu2 runs, before any run of
    // the Figure 6 grids) is kept, now needed in every seed (a sign test: 5 of 5, 3.1 % for a coin); p <= 0.5 (tau < 0)
    // was considered and refused as a bar loosened after seeing the runs.
    io::ClaimPair ranked;
    ranked.key = "task.pool_sequences", ranked.arms = arms, ranked.arm = std::to_string(cell.pool);
    ranked.combine = io::ClaimPair::Combine::rank_falls;
    out.push_back(declare("003-F6 " + task + " " + setting + " " + cell.mask + ": test error falls with the pool",
                          cell.mask + "LM test " + what + " falls as the training pool grows over task.pool_sequences = " + list +
                              " (" + task + ", " + setting + "): Kendall's rank test of pool against error over every pool, p <= 0.05" +
                              kInEverySeed,
                          "exact one-sided p-value under independence of Kendall's tau between task.pool_sequences and the " +
                              cell.mask + "LM test " + what + ", one seed's runs over the pools",
                          io::ClaimRule::count_at_most(0.05, kFiveSeeds), cell.test_error, ranked));
    out.back().claim.provenance += "; the per-seed bar p <= 0.05 (chosen 2026-11-26 after the seed-0 cpu2 runs, where it fails 4 "
                                   "of 6 curves, before any run of the Figure 6 grids) is kept: p <= 0.5 (tau < 0) was "
                                   "considered and refused, as a bar loosened after seeing the runs (on e35d6c8's quick runs it "
                                   "would have turned prefix's verdict to reproduced)";
    if (cell.pool == sorted.back()) {  // the largest pool: prefix <= causal
        io::ClaimPair masks;
        masks.key = "model.mask", masks.first = "prefix", masks.second = "causal", masks.arm = cell.mask;
        masks.combine = mc ? io::ClaimPair::Combine::difference : io::ClaimPair::Combine::log_ratio;
        out.push_back(declare("003-F6 " + task + " " + setting + " largest pool: prefix <= causal",
                              "at the largest training pool (" + arms.back() + " sequences), prefixLM test " + what + " <= causalLM (" +
                                  task + ", " + setting + ")" + kOnMean,
                              (mc ? "causal - prefix test error (points)" : "ln(causal / prefix test query MSE)") +
                                  std::string(" at the largest pool, one seed's paired runs"),
                              io::ClaimRule::interval_above(0.0), cell.test_error, masks));
    }
    if (cell.pool == sorted.front())  // the smallest pool: memorisation, the train-pool error below the test error
        out.push_back(declare("003-F6 " + task + " " + setting + " " + cell.mask + " smallest pool: train pool < test",
                              "at the smallest training pool (" + arms.front() + " sequences), the " + cell.mask + "LM " + what +
                                  " on its training pool is below its test " + what + " (" + task + ", " + setting + ")" + kOnMean,
                              mc ? "test - train-pool error (points), one run" : "ln(test / train-pool query MSE), one run",
                              io::ClaimRule::interval_above(0.0),
                              mc ? cell.test_error - cell.train_pool_error : std::log(cell.test_error / cell.train_pool_error), {}));
    return out;
}

std::vector<io::ClaimResult> fallback_claims(const Cell& cell, std::int64_t seed, bool triggered, double fallback_test_error) {
    Cell used = cell;
    used.fewer_examples.clear(), used.fewer_errors.clear();  // Tables 4-6 are not Table 1
    if (triggered) used.test_error = fallback_test_error;
    std::vector<io::ClaimResult> out;
    for (const io::ClaimResult& declared : claims(used, seed)) {
        if (declared.claim.id.rfind("003-T1 ", 0) != 0) continue;  // Table 3's other settings; Table 7; Figure 3
        io::Claim c = declared.claim;
        c.id += " (with triggered fallback)";
        c.statement += "; each run at prefix_vs_causal.fallback.lr where its own loss detector triggered, else as declared";
        c.metric += " (a run whose detector triggered: its fallback run's error)";
        c.readme = "experiments/prefix_vs_causal/README.md#fallback";
        c.provenance += "; also chosen after the first runs (2026-11-26): the lr-fallback detector's rule (spike_or_plateau "
                        "and its numbers) was fixed after seeing the cpu2 seed-0 losses (a x18 jump, a plateau), before seeds 1-2 ran";
        out.push_back(io::evaluate_claim(c, declared.units, declared.values));
    }
    return out;
}

}  // namespace iclab::experiments::part_b
