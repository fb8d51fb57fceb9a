#pragma once
// Paper 000 §6.4's ICLAA numbers, in one place, and the claims both ICLAA experiments declare about them (iclaa: a
// synthetic induction-head model; iclaa_lm: a language model). The paper prints two relative logit errors on GPT-2
// with Performer features and unnamed prompts: 16.56 % without the prompt and 9.17 % after ICLAA. The gap closed
// G = 1 − 9.17/16.56 = 0.4463 is derived from them, never printed; so no claim on G is "matches a printed number":
// "G > 0" reproduces the paper's qualitative claim, "G ≥ 0.446" is an own check (our models and prompts differ).
// Both are judged on one G per instance (a prompt pair, a held-out window), each instance's error first averaged over
// the feature (or fit) seeds, by the 95 % t-interval of the mean (framework/io/claims.hpp). With seed_means pooling
// (iclaa), `iclab claims` judges them over the training seeds instead: one value per model seed, its mean G.
#include <cstddef>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"

namespace iclab::icl {

constexpr double kPaperRelErrorBefore = 0.1656;  // paper 000 §6.4: relative logit error without the prompt, "16.56%"
constexpr double kPaperRelErrorAfter = 0.0917;   // paper 000 §6.4: after ICLAA, "9.17%"

// The gap closed, G = 1 − after / before: the share of the no-prompt error that a compression of the prompt removes.
inline double gap_closed(double before, double after) { return 1.0 - after / before; }
// The paper's G, derived from its two printed errors: 0.4463.
inline double paper_gap_closed() { return gap_closed(kPaperRelErrorBefore, kPaperRelErrorAfter); }

// Per instance i: G_i = gap_closed(before_i, after_i). Throws Error when the lengths differ.
std::vector<double> gap_closed_per_instance(const std::vector<double>& before, const std::vector<double>& after);

// The label of the row a gap claim judges, as both experiments name their Performer rows: "prf F=256".
std::string gap_claim_row_label(const std::string& map, std::size_t features);

// The two claims on G of the Performer map `map` ("prf" or "orf") at `features` F, declared by `experiment` ("iclaa",
// "iclaa_lm") with one value per `instance` ("prompt pair", "held-out window"), explained in `readme`:
//   "000-6.4 <experiment> G>0 <map> F=<F>"       qualitative: 95 % t-interval of the mean G > 0
//   "000-6.4 <experiment> G>=paper <map> F=<F>"  own check:   95 % t-interval of the mean G > 0.4463
// Both pass io::check_claim.
std::vector<io::Claim> gap_closed_claims(const std::string& experiment, const std::string& map, std::size_t features,
                                         const std::string& instance, const std::string& readme,
                                         io::ClaimPooling pooling = io::ClaimPooling::seed_means);

// The row a learned-map claim judges: the learned map at the F its run picked on validation instances.
inline const std::string kLearnedValidationRow = "learned (F picked on validation)";

// The same two claims on the learned feature map (ICLAA's own map, spec §4.1) at the F among `candidates` with the
// lowest mean relative logit error on `validation` held-out instances ("200 validation pairs", disjoint from the
// instances the claim is judged on); each instance's error is averaged over the fit seeds. Ids
// "000-6.4 <experiment> G>0 learned (F picked on validation)" and "... G>=paper ...": the id does not name F (each
// model seed picks its own); the run's pick goes into io::ClaimResult::selection (learned_selection_text).
std::vector<io::Claim> learned_gap_closed_claims(const std::string& experiment, const std::vector<std::int64_t>& candidates,
                                                 const std::string& validation, const std::string& instance, const std::string& readme,
                                                 io::ClaimPooling pooling);

// "F=32 (mean relative logit error on the validation pairs: F=16 0.3312, F=32 0.1905, ...)".
std::string learned_selection_text(std::size_t picked, const std::vector<std::int64_t>& candidates, const std::vector<double>& validation_error);

// The row label a claim of gap_closed_claims judges ("prf F=256", kLearnedValidationRow); empty for any other claim.
std::string gap_claim_row(const io::Claim& claim);

}  // namespace iclab::icl
