// The claims of the decay_attention experiment (claims.hpp).
#include "experiments/decay_attention/claims.hpp"

#include <cmath>

#include "framework/core/check.hpp"

namespace iclab::experiments::decay_claims {

namespace {
const char* const kReadme = "experiments/decay_attention/README.md#claims";
}  // namespace

double fade_indicator(double ratio) {
    if (std::isnan(ratio)) return ratio;
    return ratio < kFadeBar ? 1.0 : 0.0;
}

double accuracy(std::int64_t correct, std::int64_t positions, std::int64_t undefined) {
    return positions && !undefined ? static_cast<double>(correct) / static_cast<double>(positions) : std::nan("");
}

std::vector<io::ClaimResult> gamma_claims(const GammaMeasured& m) {
    const std::string& g = m.gamma_text;
    ICLAB_CHECK(m.pair_fades.size() == m.pair_errors.size(), "decay claims: " << m.pair_fades.size() << " fade values for "
                                                                             << m.pair_errors.size() << " pairs");
    std::vector<std::int64_t> pair_units;
    for (std::size_t p = 0; p < m.pair_errors.size(); ++p) pair_units.push_back(static_cast<std::int64_t>(p));
    std::vector<io::ClaimResult> claims;
    io::Claim exact;
    exact.id = "decay-D1 gamma=" + g;
    exact.paper = "issue 43";
    exact.source = "docs/decay.md Theorem D.1";
    exact.kind = io::ClaimKind::own_check;
    exact.statement = "with decay gamma = " + g + ", the adapter of the decayed ICLCA (Algorithm 1') makes the model "
                      "without the prompt give the logits of the model with it";
    exact.metric = "relative logit error ||M_new(X) - M_old([X'; X])|| / ||M_old([X'; X])|| of one (X', X) pair";
    exact.unit = "instance";
    exact.rule = io::ClaimRule::count_at_most(kExactBar);
    exact.deterministic = true;  // Theorem D.1 on every pair: one value decides
    exact.readme = kReadme;
    claims.push_back(io::evaluate_claim(exact, pair_units, m.pair_errors));
    if (m.gamma <= 0.9) {
        io::Claim fade;
        fade.id = "decay-fade gamma=" + g;
        fade.paper = "issue 43";
        fade.source = "docs/decay.md Eq. D3";
        fade.kind = io::ClaimKind::own_check;  // our hypothesis (issue 43), no paper's claim
        fade.statement = "with decay gamma = " + g + ", the prompt's influence on the logits fades along X: at X's last "
                         "position below half of what it is at X's first, on at least 9/10 of the (X', X) pairs; judged over "
                         "the trained models: one value per training seed, its share of such pairs (a model whose pairs fade "
                         "at random, share 1/2, fails; models that each pass or fail by a coin pass only when every seed "
                         "passes, 1 in 32 over 5 seeds)";
        fade.metric = "1 when the influence at X's last position is below half of that at its first, else 0 (NaN when the "
                      "ratio is), influence = ||M_new(X)_t - M_old(X)_t|| / ||M_old(X)_t||, one (X', X) pair";
        fade.unit = "instance";
        fade.pooling = io::ClaimPooling::seed_means;
        fade.rule = io::ClaimRule::interval_above(kFadeShare);
        fade.provenance = "chosen after the first runs (2026-11-29): second audit of issue 45, the pairs of every trained "
                          "model were pooled as values (instances standing for seeds); now one value per trained model, its "
                          "share of fading pairs; one seed-0 run at 843145e had been seen (gamma = 0.9: 43 of 64 pairs)";
        fade.readme = kReadme;
        claims.push_back(io::evaluate_claim(fade, pair_units, m.pair_fades));
    }
    if (m.gamma <= 0.5) {
        io::Claim reach;
        reach.id = "decay-reach gamma=" + g;
        reach.paper = "issue 43";
        reach.source = "docs/decay.md Eq. D3";
        reach.kind = io::ClaimKind::own_check;  // our hypothesis (issue 43), no paper's claim
        reach.statement = "with decay gamma = " + g + " the induction head cannot read far back: ICL accuracy below 0.5 where "
                          "the trigger's previous occurrence is 12 or more positions back, on every trained model (one value "
                          "per training seed)";
        reach.metric = "ICL accuracy at distances >= 12 on the held-out sequences of one trained model";
        // One instance per run (the model's held-out accuracy), pooled by seed means: one value per training seed, as
        // before. Declared so because an own check counted over every value and pooled by values is a deterministic
        // check (framework/io/claims_floor.hpp: it would decide on one seed); this one is about trained models and keeps
        // the floor of 5 seeds (a fair coin passes 5 of 5 with 3.1 %).
        reach.unit = "instance";
        reach.pooling = io::ClaimPooling::seed_means;
        reach.rule = io::ClaimRule::count_below(kReachBar);
        reach.readme = kReadme;
        claims.push_back(io::evaluate_claim(reach, {0}, {m.reach_accuracy}));
    }
    return claims;
}

}  // namespace iclab::experiments::decay_claims
