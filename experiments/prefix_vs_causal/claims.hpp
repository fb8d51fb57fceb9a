#pragma once
// The declared claims of paper 003 Part B (spec shared/specs/paper003.md §5, Part B items 1-5) for one
// prefix_vs_causal run. Most claims are paired (framework/io/claims.hpp ClaimPair): on model.mask (prefix vs causal;
// Tables 1, 3-7, Figure 3) or on train.permute_examples (Table 7: the run trained with permuted ICEs vs the unpermuted
// run of the same mask); the run of each arm declares the claim with its own value, and `iclab claims` pairs the runs
// of one seed and setting. Tables 4-6's "errors grow as k shrinks" is one value per run (its rank statistic over k).
// Figure 6 (figure6_claims): runs over training pool sizes declare a ranked claim on task.pool_sequences (ClaimPair
// rank_falls: Kendall's test over the pools of one seed), the largest pool pairs the masks, the smallest compares the
// train-pool error with the test error.
// The paper's printed numbers go into the statement only (both masks' values; no paper printed a ratio), so the
// claims are qualitative: the direction prefix < causal, per cell, by the 95 % t-interval of the seed mean of
// ln(causal / prefix) (MC: points); Kendall's tau (a bounded statistic) by a sign test in every seed. Issue 45's second
// audit replaced the spec's "sign in >= 2/3 of seeds" (4 of 5 seeds: a fair coin passes 19 %); claims.cpp says why.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"

namespace iclab::experiments::part_b {

// What one run is: its task, setting and mask, and the errors it measured (query MSE, or error in % for MC).
struct Cell {
    std::string task;      // "linear", "sigmoid", "classification" (task.kind)
    bool shared = true;    // model.shared_layers (SL / UL)
    bool l2 = true;        // train.context_output_l2 > 0
    std::string permute_examples = "none";  // train.permute_examples: none, per_step (Table 7, [C]'s form), per_sequence
    std::string mask;      // "prefix" or "causal"
    std::int64_t x_dim = 8;
    std::int64_t examples = 0;                         // task.examples: the ICEs of the full test set
    double test_error = 0.0;                           // the full test set
    // What no learning scores on the full test set: the zero predictor's query MSE (regression), or the error of a
    // uniform guess among the classes, 100 (1 - 1/classes) % (classification). NaN: unknown (no learned gate).
    double chance_error = std::numeric_limits<double>::quiet_NaN();
    std::vector<std::int64_t> fewer_examples;          // k of the fewer-ICE tests (Tables 4-6)
    std::vector<double> fewer_errors;
    std::vector<double> probe_errors;                  // Figure 3: the probe error per depth 0..L (empty: no probes)
    std::int64_t pool = 0;                             // task.pool_sequences (Figure 6)
    double train_pool_error = 0.0;                     // the error on the pool's first sequences (Figure 6)
    bool permuted() const { return permute_examples != "none"; }
};

// "SL-L2", "UL-no-L2", ...; "LR", "N-LR", "MC".
std::string setting_name(const Cell& cell);
std::string task_name(const std::string& kind);

// The slope of log10(error) per depth from depth L - max(1, floor(L / 3)) to L (the last third of the layers), L =
// errors.size() - 1 >= 1: negative while the error falls (Figure 3's "flatter" compares these).
double last_third_log_slope(const std::vector<double>& errors);

// The claims this run declares, evaluated on its own values (one arm each: inconclusive until paired).
std::vector<io::ClaimResult> claims(const Cell& cell, std::int64_t seed);

// Figure 6's claims (spec §5 item 6) for a run at pool cell.pool, one of `pools` (prefix_vs_causal.figure6_pools,
// >= 4 distinct sizes): "<mask>LM test error falls with the pool" (ranked on task.pool_sequences: per seed the exact
// one-sided p of Kendall's tau between pool size and test error <= 0.5, i.e. tau < 0, in every seed), at the largest pool
// "prefix <= causal" (paired on model.mask), at the smallest "train pool < test" (ln(test / train pool), MC: points).
std::vector<io::ClaimResult> figure6_claims(const Cell& cell, std::int64_t seed, const std::vector<std::int64_t>& pools);

// The Table 1 claims again, "... (with triggered fallback)", with this run's value at the fallback lr when its own
// detector triggered (fallback_test_error) and at the declared lr otherwise (cell.test_error): per-run semantics,
// each arm falls back on its own trigger (experiments/prefix_vs_causal/README.md "Fallback"). Empty for cells that are
// not Table 1 rows (Table 3's other settings, Table 7's permuted runs).
std::vector<io::ClaimResult> fallback_claims(const Cell& cell, std::int64_t seed, bool triggered, double fallback_test_error);

}  // namespace iclab::experiments::part_b
