#pragma once
// The claims of bias_training (paper 000 §6.3, Figure 1), declared from the config before the sub-runs train: the
// paper plots the curves and says "adding these bias terms makes training slightly faster, which means that our new
// architecture [...] accomplishes the induction head task better by itself" (no number). Per trained variant with
// biases, two claims on one seed's pair of runs (the same initialization and batches as no_bias):
//   "000-F1 <variant>: faster to <p> % ICL accuracy"  x = ln(steps of no_bias / steps of the variant); strictly faster
//                                                     (x > 0) on >= 4/5 of the seeds, a tie (x = 0: the same
//                                                     evaluation) counting against (a fair coin: 19 %, an upper bound)
//   "000-F1 <variant>: lower final training loss"     x = ln(final loss of no_bias / final loss of the variant), the
//                                                     95 % t-interval of the mean over the seeds > 0
// A NaN (a seed that never reached <p> %): inconclusive. The paper's variant (trainable_bias) gives qualitative claims;
// any other (trainable_bias_nonnegative, b_D projected onto >= 0: ours, not in paper 000) gives own checks, its source
// naming it our variant.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"

namespace iclab::experiments::bias_claims {

struct BiasRun {
    std::string variant;
    std::int64_t seed = 0;
    double steps_to = 0.0;    // steps to the first threshold's ICL accuracy (NaN: never reached)
    double final_loss = 0.0;  // final training loss
};

// `runs`: every sub-run; `threshold`: the ICL accuracy of steps_to (0.9). Variants without a no_bias run of the same
// seed give no value for that seed. No no_bias variant at all: no claim.
std::vector<io::ClaimResult> claims_of(const std::vector<BiasRun>& runs, double threshold);

}  // namespace iclab::experiments::bias_claims
