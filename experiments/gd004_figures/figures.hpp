#pragma once
// Experiment-internal: the two figure parts of `gd004_figures` (paper 004 Fig. 3 centre/right and Fig. 10), each
// on the layer trained by run::train_regression_model (specs/gd_duals.md §4).
#include <cstdint>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/regression_training.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::experiments::gd004 {

// Streams of the run seed (the trainer's own streams differ).
constexpr std::uint64_t kRepeatStream = 111;       // §6: the test sequence of repeat r (derive(r))
constexpr std::uint64_t kFeatureStream = 112;      // §6: ω of repeat r (derive per R, feature, r)
constexpr std::uint64_t kCalibrationStream = 113;  // §6: random weights U(±scale/√C) of repeat r
constexpr std::uint64_t kFig10Stream = 114;        // §8: the test sequences

// What a part reports for the summary line and all_pass, and its claims (issue 45: every result judged), one value
// per run with the run's seed as unit: `iclab claims` pools the seeds of the reproduce profile.
struct PartOutcome {
    bool pass = true;
    std::string summary;
    std::vector<io::ClaimResult> claims;
};

// One claim on this run's value (unit: the run seed), for the parts' declarations; deterministic: io::Claim's (an
// identity on every cell, one value decides).
io::ClaimResult figure_claim(const std::string& id, const std::string& source, io::ClaimKind kind, const std::string& statement,
                             const std::string& metric, const io::ClaimRule& rule, std::int64_t seed, double value,
                             bool deterministic = false);

// 004-F3's rule (issue 45): per seed, Kendall's exact one-sided test (framework/io/rank_test.hpp) that the mean error
// over the repeats falls as R grows, over the whole R grid; the seed passes with p < kFallsP, and the claim asks every
// seed. Under no trend (the errors' order independent of R) p < 0.01 has probability <= 1 % per seed (an exact test;
// <= 1e-10 on 5 independent seeds); the page states the fair coin's 3.1 % for 5 of 5, an upper bound. A curve that falls
// at small R and is flat or rising beyond fails: on 12 values of R, p < 0.01 needs tau <= -0.55 (S <= -36 of 66 pairs).
constexpr double kFallsP = 0.01;
// The exact one-sided p of Kendall's test that `curve` falls as R grows; NaN (the claim inconclusive) for a non-finite
// value, fewer than 5 values of R (the smallest p, 1/n!, would not be below kFallsP), more than 18, or ties with more
// than 9 (the exact computation's range).
double falls_p(const std::vector<double>& R, const std::vector<double>& curve);

// §6 (Fig. 3 centre/right, Figs. 4, 6, 7, 9): tables 004_dr_sweep, _mean, _slopes, _verdicts; group 004_heatmaps.
PartOutcome run_dr_sweep(const run::RunContext& context, const run::RegressionTraining& training, run::RunFolder& run);
// §8 (Fig. 10): tables 004_fig10, 004_fig10_summary, 004_fig10_traj.
PartOutcome run_fig10(const run::RunContext& context, const run::RegressionTraining& training, run::RunFolder& run);

}  // namespace iclab::experiments::gd004
