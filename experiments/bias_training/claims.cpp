// bias_training's claims (claims.hpp): paper 000 Figure 1, "adding these bias terms makes training slightly faster".
#include "experiments/bias_training/claims.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace iclab::experiments::bias_claims {

namespace {

// The variant of paper 000 (§6.3: trainable b_KV, b_D); any other variant with biases is ours.
const char* const kPaperVariant = "trainable_bias";

}  // namespace

std::vector<io::ClaimResult> claims_of(const std::vector<BiasRun>& runs, double threshold) {
    std::map<std::int64_t, const BiasRun*> baseline;
    std::vector<std::string> variants;
    for (const BiasRun& r : runs) {
        if (r.variant == "no_bias") baseline[r.seed] = &r;
        else if (std::find(variants.begin(), variants.end(), r.variant) == variants.end()) variants.push_back(r.variant);
    }
    std::vector<io::ClaimResult> out;
    if (baseline.empty()) return out;
    char percent[16];
    std::snprintf(percent, sizeof percent, "%g", 100.0 * threshold);
    const std::string p = percent;
    const std::string declared = "declared after the first runs (2026-11-29): issue 45 (every result judged); the README's "
                                 "earlier runs (steps within one standard deviation) had been seen";
    for (const std::string& variant : variants) {
        std::vector<std::int64_t> seeds;
        std::vector<double> faster, lower;
        for (const BiasRun& r : runs) {
            const auto base = baseline.find(r.seed);
            if (r.variant != variant || base == baseline.end()) continue;
            seeds.push_back(r.seed);
            faster.push_back(std::log(base->second->steps_to / r.steps_to));  // NaN when either never reached p %
            lower.push_back(std::log(base->second->final_loss / r.final_loss));
        }
        // The paper's variant is judged as the paper's claim; another (trainable_bias_nonnegative: b_D projected onto
        // >= 0 after every step) is our variant, absent from paper 000: the same comparison is then our own check. Its id
        // keeps "000-F1" so that it sits beside the paper's variant it is compared with; its kind and source say it is ours.
        const bool ours = variant != kPaperVariant;
        io::Claim c;
        c.paper = "000";
        c.source = ours ? "Figure 1 (§6.3), our variant " + variant + " (not in paper 000): the paper's comparison on it"
                        : "Figure 1 (§6.3)";
        c.kind = ours ? io::ClaimKind::own_check : io::ClaimKind::qualitative;
        c.readme = "experiments/bias_training/README.md#claims";
        // Faster: a sign count over the seeds (issue 45). The steps come from evaluations every eval.every steps, so two
        // runs often reach p % at the same evaluation: x = 0 exactly (quick profile: 0.0392, 0, 0, 0, 0), where a t-interval
        // over tied values decides nothing. Strictly faster (x > 0) on every seed; a tie counts against. A fair coin per
        // seed passes 5 of 5 with 3.1 % (the page's false-pass rate); with ties possible, a variant with no effect is
        // strictly faster with probability (1 - P(tie)) / 2 < 1/2 per seed, so 3.1 % is an upper bound. 4 of 5 (19 %)
        // was refused everywhere else (prefix_vs_causal, gd004_example, gd004_fig5) and here too since 2026-11-30.
        c.rule = io::ClaimRule::count_above(0.0);
        c.provenance = declared + "; chosen after the first runs (2026-11-29): issue 45, the 95 % t-interval of the mean "
                                  "over per-seed values that tie at the evaluation grid (0.0392, 0, 0, 0, 0) replaced by "
                                  "strictly faster on >= 4/5 of the seeds, ties counting against; 2026-11-30 (second audit "
                                  "of issue 45): on every seed, as a fair coin passes 4 of 5 with 19 %";
        c.id = "000-F1 " + variant + ": faster to " + p + " % ICL accuracy";
        c.statement = "with trainable b_KV, b_D (" + variant + ") the model reaches " + p + " % held-out ICL accuracy in fewer "
                      "steps than no_bias of the same seed, strictly (a tie at the same evaluation counts against), on "
                      "every seed (the paper: 'adding these bias terms makes training slightly faster')";
        if (ours) c.statement += "; " + variant + " is our variant, not the paper's";
        c.metric = "ln(steps to " + p + " % ICL accuracy of no_bias / of " + variant + "), one seed's pair of runs (0: the "
                   "same evaluation, a tie)";
        out.push_back(io::evaluate_claim(c, seeds, faster));
        c.rule = io::ClaimRule::interval_above(0.0);
        c.provenance = declared;
        c.id = "000-F1 " + variant + ": lower final training loss";
        c.statement = "with trainable b_KV, b_D (" + variant + ") the final training loss is below no_bias's of the same seed (the "
                      "paper: the new architecture 'accomplishes the induction head task better by itself')";
        if (ours) c.statement += "; " + variant + " is our variant, not the paper's";
        c.metric = "ln(final training loss of no_bias / of " + variant + "), one seed's pair of runs";
        out.push_back(io::evaluate_claim(c, seeds, lower));
    }
    return out;
}

}  // namespace iclab::experiments::bias_claims
