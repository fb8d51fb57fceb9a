#pragma once
// Internal to the iclca_induction experiment: the scores of one (prompt, input) pair and the claims of paper 000
// Table 2 on them (table2.cpp), apart from the run so that tests can inject a NaN into each (issue 45).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::experiments::iclca_table2 {

// Table 2 of paper 000, in the order of its rows.
enum ModelRow { kOldIcl = 0, kOldNoIcl = 1, kNewNoIcl = 2, kRows = 3 };
inline constexpr const char* kRowNames[kRows] = {"M_old, ICL", "M_old, no ICL", "M_new, no ICL"};
inline constexpr const char* kRowInputs[kRows] = {"[X'; X]", "X", "X"};
inline constexpr double kPaperAccuracy[kRows] = {0.9995, 0.0223, 0.9995};

// Scores of one (prompt, input) pair. A position whose logits hold a NaN has no prediction (argmax_of): it is never
// correct, never agrees, and counts in `undefined`; an accuracy over a model with one is NaN (accuracy()).
struct PairScores {
    std::int64_t scored = 0;              // X's first occurrences of a trigger (answer only in X')
    std::int64_t repeats = 0;             // X's repeated triggers (answer in X itself)
    std::int64_t correct[kRows] = {};     // argmax = target at scored positions, per model
    std::int64_t repeat_correct[kRows] = {};
    std::int64_t undefined[kRows] = {};   // positions of X (any kind) whose logits hold a NaN, per model
    std::int64_t argmax_agreement = 0;    // positions of X where M_new and M_old,ICL have the same (defined) argmax
    double relative_logit_error = 0.0;    // ‖M_new(X) − M_old([X'; X])‖ / ‖M_old([X'; X])‖ over X's logits
};

// logits (N, V) of each model at X's positions -> the pair's scores. Error (iclab::Error, from relative_error) when
// M_new's or M_old,ICL's logits are not finite: the run stops, nothing is judged.
PairScores score_pair(const tasks::PromptPair& pair, const double* const logits[kRows], std::size_t N, std::size_t V);

// correct / positions; NaN without positions and when the model had a NaN logit anywhere in X (undefined > 0), so
// that a NaN model scores neither ~0 (passing "no ICL") nor anything else.
double accuracy(std::int64_t correct, std::int64_t positions, std::int64_t undefined);

// The claims of Table 2, one per distinct measurement (issue 45), in the order of its rows: M_old with ICL against the
// printed 99.95 % (accuracy[kOldIcl]); M_old without ICL below a bar that a model with ICL fails
// (accuracy[kOldNoIcl]); M_new without ICL as ICLCA's exactness, the relative logit error of every pair against the
// fp64 bar (framework/icl/exactness_bars.hpp), not a second copy of M_old,ICL's accuracy. `seed` is the unit of the
// accuracy claims.
std::vector<io::ClaimResult> claims(const std::vector<double>& accuracy, const std::vector<PairScores>& scores, std::int64_t seed);

}  // namespace iclab::experiments::iclca_table2
