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

// One instance of one check: the identity's error and its negative control's (NaN: the control does not apply).
struct InstanceRow {
    std::string check, cell, dtype;
    std::int64_t instance = 0;
    double err = 0.0, control = kNaN;
    double conditioning = kNaN;  // 002 checks: κ of Theorem 1's step (framework/icl/gd_dual.hpp)
};

// One summary row: the worst error against the bar, the weakest control against its floor.
struct SummaryRow {
    std::string check, dtype, description;
    std::int64_t instances = 0;
    double max_error = 0.0, bar = 0.0, control_error = kNaN, control_floor = 1e-4, seconds = 0.0;
    bool pass() const;
};

struct Results {
    std::vector<InstanceRow> instances;
    std::vector<SummaryRow> summary;
    // Adds an instance row and folds it into the summary row (check, dtype), created with bar/floor/description.
    void add(const std::string& check, const std::string& dtype, const std::string& cell, std::int64_t instance, double err,
             double control, double bar, double control_floor, const std::string& description, double conditioning = kNaN);
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
