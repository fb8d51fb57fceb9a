#pragma once
// The declared lr fallback of paper 003 Part B (spec shared/specs/paper003.md §4: "fall back to 3e-4 if the loss
// spikes"; issue 21: "a fallback is triggered by code — a spike/plateau detector whose rule is in the config — and
// recorded in the results"). The run trains and measures at its declared setting as always; then the detector
// (framework/train/loss_detector.hpp) reads the recorded per-step loss, and if its rule fires, the same run —
// same seed, so the same initialization, pool, batches and test sets, only train.lr = prefix_vs_causal.fallback.lr
// — is trained again as a nested run in <run folder>/fallback/ and measured the same way.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/train/loss_detector.hpp"

namespace iclab::experiments::part_b {

// prefix_vs_causal.fallback.* keys and their cross-key rules.
void declare_fallback_keys(config::Schema& schema);
train::LossRule loss_rule_from_config(const config::Config& cfg);

// The fallback run's /tables/prefix_vs_causal (set, examples, query_mse, error_pct, ...), read back.
struct FallbackRun {
    train::LossDetection detection;
    double lr = 0.0;                      // the fallback lr (whether or not it was used)
    bool completed = true;                // false: the fallback run stopped (signal, --stop-after) at its step steps_done
    std::size_t steps_done = 0;
    std::vector<std::string> set;         // empty when not triggered
    std::vector<std::int64_t> examples, sequences;
    std::vector<double> query_mse, zero_mse, relative, error_pct;
};

// Runs the detector on the declared run's loss history and, when it fires, the fallback run (read back when a
// resumed parent finds it finished, continued from its checkpoint when interrupted). A fallback run stopped by a signal
// returns completed = false: the parent then stops too, and `iclab run --resume <parent>` continues the fallback.
FallbackRun run_fallback(const run::RunContext& context, run::RunFolder& parent, const std::vector<double>& step_losses,
                         std::size_t warmup_steps);

// /fallback/detector (one row: the rule and its parameters, triggered, step, numbers; attribute reason) and, when
// triggered, /tables/prefix_vs_causal_fallback (the fallback run's rows, column lr); root attributes
// fallback_triggered ("true"/"false"), fallback_step, fallback_rule.
void write_fallback(io::ResultsWriter& writer, const config::Config& cfg, const FallbackRun& fallback);

}  // namespace iclab::experiments::part_b
