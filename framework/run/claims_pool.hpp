#pragma once
// Pooling the declared claims (framework/io/claims.hpp) of finished runs: runs of one experiment whose resolved configs
// differ only in `seed`, `output` and the arm keys (io::ClaimPair::key of any paired or ranked claim a run of that
// experiment declares; a run's declared arm must be its config's value there) are one setting, and each claim of a setting is evaluated once over the seeds of all its runs
// (io::pool_claims: the same rule, the values of every seed; a seed_means claim: one value per run, the mean of its
// instances, with the run's `seed` as its unit). `iclab claims` prints and writes the result; the
// reproduction report (scripts/report/make_report.py) reads that file and recomputes nothing.
#include <filesystem>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/run/collect.hpp"

namespace iclab::run {

class Catalog;

struct PooledClaims {
    std::string setting;     // the config source of the setting's first run (and its overrides other than seed)
    std::string experiment;  // the experiment's name
    std::vector<std::filesystem::path> runs;
    std::vector<io::ClaimResult> claims;
};

// The settings of the runs (in order of first appearance) that declare claims; runs without /claims are skipped.
// With a catalog, each run's config is compared as resolve_again gives it (framework/run/sweep.hpp), so a run made
// before the schema gained a key (at its default) and one made after are one setting; without, as stored.
std::vector<PooledClaims> pool_run_claims(const std::vector<std::filesystem::path>& run_dirs, const Catalog* catalog = nullptr);

// One row per claim of every setting: setting, experiment, runs, and the columns of /claims (the statement followed
// by "[picked on validation data: <selection>]" when the runs picked something on validation data), then the rule's
// test (io::rule_test_name) and, for claims over seeds, the values in unit order ("0.412, 1.2, -2.4": 3 significant
// digits; empty for claims over instances).
WideTable claims_table(const std::vector<PooledClaims>& pooled);

}  // namespace iclab::run
