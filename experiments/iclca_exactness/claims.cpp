// The reproduction claims of the iclca_exactness experiment (exactness.hpp): paper 000 Table 1 and Theorem 4.1.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "experiments/iclca_exactness/exactness.hpp"
#include "framework/core/check.hpp"
#include "framework/icl/exactness_bars.hpp"

namespace iclab::experiments::exactness {

namespace {

const char* const kReadme = "experiments/iclca_exactness/README.md#claims";

// The band around the paper's printed fp32 errors: their rounding level (a factor 3), not their digits.
constexpr double kPaperFactor = 3.0;

std::string bar_text(double bar) {
    char text[16];
    std::snprintf(text, sizeof text, "%.0e", bar);
    return text;
}

std::size_t pairs_of(const Settings& s, const SizeSpec& size, Case which) {
    return which == Case::table1 ? size.pairs : which == Case::theorem41 ? s.direct_pairs : size.theorem41_model_pairs;
}

}  // namespace

std::vector<DeclaredClaim> declare_claims(const Settings& s, const std::vector<double>& paper) {
    ICLAB_CHECK(paper.size() == s.sizes.size(), "one paper value per size");
    const bool want32 = std::count(s.dtypes.begin(), s.dtypes.end(), "float32") > 0;
    const bool want64 = std::count(s.dtypes.begin(), s.dtypes.end(), "float64") > 0;
    std::vector<DeclaredClaim> out;
    for (Case which : kCases)
        for (std::size_t i = 0; i < s.sizes.size(); ++i) {
            const SizeSpec& size = s.sizes[i];
            if (pairs_of(s, size, which) == 0) continue;
            for (const bool fp64 : {false, true}) {
                if (!(fp64 ? want64 : want32)) continue;
                const std::string dtype = fp64 ? "fp64" : "fp32", bar = bar_text(icl::iclca_exact_bar(fp64));
                DeclaredClaim d;
                d.which = which, d.size = i, d.fp64 = fp64;
                io::Claim& c = d.claim;
                c.paper = "000";
                c.kind = io::ClaimKind::own_check;
                c.unit = "instance";
                c.readme = kReadme;
                c.rule = io::ClaimRule::count_at_most(icl::iclca_exact_bar(fp64));
                c.deterministic = true;  // Table 1 / Theorem 4.1 / ... on every pair: one value decides
                if (which == Case::table1) {
                    c.id = "000-T1 " + size.name + " " + dtype + ": ICLCA exact";
                    c.source = "Table 1, Algorithm 1";
                    c.statement = "the model converted by ICLCA, without the prompt, reproduces the model with the prompt (linear-RoPE "
                                  "model of " + size.name + " parameters, " + dtype + "): relative logit error <= " + bar +
                                  " on every pair (rounding only)";
                    c.metric = "per random (X', X) pair: ||logits(M_new, X) - logits(M_old, [X'; X])|| / ||logits(M_old, [X'; X])||";
                } else if (which == Case::theorem41) {
                    c.id = "000-Thm4.1 layer " + size.name + " " + dtype + ": Eq. 10 holds";
                    c.source = "Theorem 4.1 (Eq. 9-11)";
                    c.statement = "one linear attention layer (width and heads of size " + size.name + ", " + dtype +
                                  ") with the prompt equals the layer with b' = b + W_K^T X'^T X' W_V without it: relative error <= " +
                                  bar + " on every pair";
                    c.metric = "per random (X', X) pair: relative error of LinAttn(X W, b') against LinAttn([X'; X] W, b) at X's rows";
                } else {
                    c.id = "000-Thm4.1 model " + size.name + " " + dtype + ": ICLCA exact";
                    c.source = "Theorem 4.1 (Eq. 11) in every layer, Algorithm 1";
                    c.statement = "the whole model with Theorem 4.1's attention (identity features, no normalizer, no RoPE, causal; " +
                                  size.name + ", " + dtype + ") converted by ICLCA reproduces it with the prompt: relative logit "
                                  "error <= " + bar + " on every pair";
                    c.metric = "per random (X', X) pair: relative logit error of M_new on X against M_old on [X'; X]";
                }
                out.push_back(d);
                if (which != Case::table1 || fp64 || !std::isfinite(paper[i])) continue;
                // The printed number: the paper's fp32-level mean over 100 pairs (it does not state the precision).
                char band[96];
                std::snprintf(band, sizeof band, "%.1e (band [%.3g, %.3g], a factor %.0f)", paper[i], paper[i] / kPaperFactor,
                              paper[i] * kPaperFactor, kPaperFactor);
                io::Claim& p = d.claim;
                p.id = "000-T1 " + size.name + " fp32: mean error as printed";
                p.source = "Table 1";
                p.kind = io::ClaimKind::printed_number;
                p.deterministic = false;  // a mean against a printed number, not an identity
                p.paper_value = paper[i];
                p.statement = "the fp32 mean relative logit error over the pairs at " + size.name + " is the paper's " + band +
                              "; both are fp32 rounding of models whose initialization and prompts differ";
                p.metric = "per random (X', X) pair: relative logit error, fp32 (the rule is on the mean)";
                p.rule = io::ClaimRule::interval_within(paper[i] / kPaperFactor, paper[i] * kPaperFactor);
                p.provenance = "chosen after the first runs (2026-11-23): the factor-3 band was the raw table's paper band "
                               "from dfce7cd (2026-11-23), written when runs of this experiment existed; declared as this "
                               "claim on 2026-11-26 (ab73b5c)";
                out.push_back(d);
            }
        }
    for (const auto& d : out) io::check_claim(d.claim);
    return out;
}

std::vector<io::ClaimResult> evaluate_claims(const std::vector<DeclaredClaim>& claims, const std::vector<std::vector<Row>>& tables) {
    std::vector<io::ClaimResult> out;
    for (const DeclaredClaim& d : claims) {
        const std::size_t c = static_cast<std::size_t>(std::find(std::begin(kCases), std::end(kCases), d.which) - std::begin(kCases));
        ICLAB_CHECK(c < tables.size() && d.size < tables[c].size(), "claim " << d.claim.id << " names no row");
        const Measurement& m = d.fp64 ? tables[c][d.size].fp64 : tables[c][d.size].fp32;
        std::vector<std::int64_t> units;
        for (std::size_t p = 0; p < m.errors.size(); ++p) units.push_back(static_cast<std::int64_t>(p));
        io::ClaimResult r = io::evaluate_claim(d.claim, units, m.ran ? m.errors : std::vector<double>{});
        if (!m.ran && !m.note.empty()) r.note += "; " + m.note;
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace iclab::experiments::exactness
