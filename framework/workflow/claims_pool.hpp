#pragma once
// Pooling the declared claims (framework/io/claims.hpp) of finished runs: runs of one experiment whose resolved configs
// differ only in `seed`, `output` and the arm keys (io::ClaimPair::key of any paired or ranked claim a run of that
// experiment declares; a run's declared arm must be its config's value there) are one setting, and each claim of a setting is evaluated once over the seeds of all its runs
// (io::pool_claims: the same rule, the values of every seed; a seed_means claim: one value per run, the mean of its
// instances, with the run's `seed` as its unit). `iclab claims` prints and writes the result; the
// reproduction report (scripts/report/make_report.py) reads that file and recomputes nothing.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/workflow/collect.hpp"

namespace iclab::run {

class Catalog;

// A run left out of its setting's claims: its run-level precondition (framework/io/precondition.hpp) was not met.
struct ExcludedRun {
    std::filesystem::path dir;
    std::int64_t seed = 0;
    std::string reason;  // io::precondition_text: "<measure> 0.412 < 0.9 (<key>)"
};

struct PooledClaims {
    std::string setting;     // the config source of the setting's first run (and its overrides other than seed)
    std::string experiment;  // the experiment's name
    std::vector<std::filesystem::path> runs;  // the runs pooled (not those excluded)
    std::vector<ExcludedRun> excluded;        // in order of the runs given; a folded rounding twin's too
    std::vector<io::ClaimResult> claims;
    std::vector<std::filesystem::path> rounding_runs;  // the runs of its rounding twin (below), folded into this setting
};

// Rounding twins (issue 45, "Robustness shown"): runs whose settings differ only in train.perturb_init_ulps (not 0:
// every trained parameter moved by that many ulps after initialization, framework/train/perturb.hpp) are the
// rounding twin of the unperturbed setting. The twin is pooled like any setting but gives no rows of its own: each
// claim of the base setting gets ClaimResult::rounding from the twin's claim of the same id (rounding_text). A twin
// whose base setting is absent stays a setting of its own (its `setting` shows the override).
// rounding_text: "" without twins; "holds under rounding" when every twin's verdict equals `base`; otherwise
// "depends on rounding: <twin verdict> at +1 ulp" (several differing twins joined by "; ", "+2 ulps").
std::string rounding_text(io::Verdict base, const std::vector<std::pair<std::string, io::Verdict>>& twins);

// Preconditions (issue 46): a run whose recorded precondition is not met (io::read_precondition) is left out of its
// setting's claims and listed in PooledClaims::excluded and in each claim's ClaimResult::excluded. When fewer values
// are left than the rule needs (2 for an interval, the count rule's own `needed`), the claim is inconclusive with the
// note "<n> of <m> seeds learned the task" (m: the setting's seeds, n: those with no run excluded), also when no run is left.
// The settings of the runs (in order of first appearance) that declare claims; runs without /claims are skipped.
// With a catalog, each run's config is compared as resolve_again gives it (framework/workflow/sweep.hpp), so a run made
// before the schema gained a key (at its default) and one made after are one setting; without, as stored.
std::vector<PooledClaims> pool_run_claims(const std::vector<std::filesystem::path>& run_dirs, const Catalog* catalog = nullptr);

// One row per claim of every setting: setting, experiment, runs, and the columns of /claims (the statement followed
// by "[picked on validation data: <selection>]" when the runs picked something on validation data), then the rule's
// test (io::rule_test_name) and, for claims over seeds, the values in unit order ("0.412, 1.2, -2.4": 3 significant
// digits; empty for claims over instances), then the robustness columns (issue 45):
//   leave_one_out  io::leave_one_out_text: "holds", "fragile: without seed k → <verdict>[; without seed j → ...]",
//                  or empty (a claim over instances, or fewer than 3 seeds)
//   rounding       rounding_text against the setting's rounding twin: "holds under rounding",
//                  "depends on rounding: <twin verdict> at +1 ulp", or empty (no twin ran the claim)
//   excluded       ClaimResult::excluded: the runs left out by their precondition, with the reason, or empty
WideTable claims_table(const std::vector<PooledClaims>& pooled);

}  // namespace iclab::run
