#pragma once
// The declared claims of paper 003 Part B (spec shared/specs/paper003.md §5, Part B items 1-4) for one
// prefix_vs_causal run. Every claim is paired (framework/io/claims.hpp ClaimPair on model.mask): the run of each mask
// declares it with its own error, and `iclab claims` pairs the prefixLM and causalLM runs of one seed and setting.
// The paper's printed numbers go into the statement only (both masks' values; no paper printed a ratio), so the
// claims are qualitative: the direction prefix < causal, per cell, in >= 2 of 3 seeds (spec §5: "With 3 seeds, the
// sign must hold in >= 2/3 of seeds for each cell").
#include <cstdint>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"

namespace iclab::experiments::part_b {

// What one run is: its task, setting and mask, and the errors it measured (query MSE, or error in % for MC).
struct Cell {
    std::string task;      // "linear", "sigmoid", "classification" (task.kind)
    bool shared = true;    // model.shared_layers (SL / UL)
    bool l2 = true;        // train.context_output_l2 > 0
    bool permuted = false; // train.permute_examples != none (Table 7)
    std::string mask;      // "prefix" or "causal"
    std::int64_t x_dim = 8;
    double test_error = 0.0;                           // the full test set
    std::vector<std::int64_t> fewer_examples;          // k of the fewer-ICE tests (Tables 4-6)
    std::vector<double> fewer_errors;
};

// "SL-L2", "UL-no-L2", ...; "LR", "N-LR", "MC".
std::string setting_name(const Cell& cell);
std::string task_name(const std::string& kind);

// The claims this run declares, evaluated on its own values (one arm each: inconclusive until paired).
std::vector<io::ClaimResult> claims(const Cell& cell, std::int64_t seed);

// The Table 1 claims again, "... (with triggered fallback)", with this run's value at the fallback lr when its own
// detector triggered (fallback_test_error) and at the declared lr otherwise (cell.test_error): per-run semantics,
// each arm falls back on its own trigger (experiments/prefix_vs_causal/README.md "Fallback"). Empty for cells that are
// not Table 1 rows (Table 3's other settings, Table 7's permuted runs).
std::vector<io::ClaimResult> fallback_claims(const Cell& cell, std::int64_t seed, bool triggered, double fallback_test_error);

}  // namespace iclab::experiments::part_b
