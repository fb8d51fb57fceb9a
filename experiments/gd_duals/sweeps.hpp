#pragma once
// Internal to the gd_duals experiment: the per-check sweeps (specs/gd_duals.md §1, 2, 3, 7, 10) and the rows they
// produce. Every instance's error goes to /tables/gd_duals_instances; the summary rows to /tables/gd_duals.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/core/rng.hpp"
#include "framework/run/memory_estimate.hpp"

namespace iclab::experiments::duals {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The control argument of Results::add when the check has no negative control (any negative value). A NaN control is
// a control that was measured and came out NaN: it fails its floor and makes the control claim inconclusive (issue 45:
// NaN never reads as "not applicable").
constexpr double kNoControl = -1.0;

// One instance of one check: the identity's error and its negative control's (NaN when has_control is false: the
// results tables write NaN there).
struct InstanceRow {
    std::string check, cell, dtype;
    std::int64_t instance = 0;
    double err = 0.0, control = kNaN;
    bool has_control = false;
    double conditioning = kNaN;  // 002 checks: κ of Theorem 1's step (framework/icl/gd_dual.hpp)
    double bar = 0.0;            // this instance's bar: the row's bar, or C·κ·u where that is larger (fp32 002 checks)
};

// One summary row: the worst error against its instance's bar, the weakest control against its floor. Every
// instance is gated: `bar` is the spec's fixed bar (§0.2); fp32 002 instances take max(bar, C·κ·u) instead
// (kappa_bar_instances of them have C·κ·u > bar).
struct SummaryRow {
    std::string check, dtype, description;
    std::int64_t instances = 0, kappa_bar_instances = 0;
    double max_error = 0.0, max_error_over_bar = 0.0, bar = 0.0, control_error = kNaN, control_floor = 1e-4, seconds = 0.0;
    bool has_control = false;  // some instance has a control (control_error NaN then: a control came out NaN)
    bool pass() const;
    // In the claims' vocabulary: inconclusive when an error or a control is NaN (as evaluate_claim reads a non-finite
    // value), else reproduced when pass().
    const char* verdict() const;
};

// fp32 002 checks: the conditioning-aware bar C·κ·u with u = 2^-24 (fp32 unit roundoff) and C = 32: the largest
// err/(κ u) recorded on the paper sweep before this bar existed was 28 (002-A1; 14 for 002-T1, README "Choices").
constexpr double kKappaBarC = 32.0;
constexpr double kUnitRoundoff32 = 5.9604644775390625e-08;  // 2^-24

struct Results {
    std::vector<InstanceRow> instances;
    std::vector<SummaryRow> summary;
    // Adds an instance row and folds it into the summary row (check, dtype), created with bar/floor/description.
    // kappa_bar: C·κ·u for this instance (NaN: the fixed bar alone); the instance's bar is max(bar, kappa_bar).
    // control: the negative control's error, kNoControl (< 0) when the check has none; NaN is a measured NaN.
    void add(const std::string& check, const std::string& dtype, const std::string& cell, std::int64_t instance, double err,
             double control, double bar, double control_floor, const std::string& description, double conditioning = kNaN,
             double kappa_bar = kNaN);
};

// Runs one check's sweep (its config keys, for both dtypes listed) from its own stream; appends to `results`.
void sweep_thm1_002(const config::Config& cfg, const Rng& stream, const std::vector<std::string>& dtypes, Results& results);
void sweep_alg1_002(const config::Config& cfg, const Rng& stream, const std::vector<std::string>& dtypes, Results& results);
void sweep_thm1_004(const config::Config& cfg, const Rng& stream, const std::vector<std::string>& dtypes, Results& results);
void sweep_variants_004(const config::Config& cfg, const Rng& stream, const std::vector<std::string>& dtypes, Results& results);
void sweep_vo_construct(const config::Config& cfg, const Rng& stream, const std::vector<std::string>& dtypes, Results& results);

void declare_sweep_keys(config::Schema& schema);

// The sweeps' memory (the largest instance) and work, from the validated keys.
run::RunEstimate estimate_sweeps(const config::Config& cfg);

}  // namespace iclab::experiments::duals
