#pragma once
// Opt-in measurement of what `iclab run` did, for comparing a run with its estimate (Experiment::estimate,
// framework/run/memory_estimate.hpp; scripts/estimates/check_estimates.py, ctest estimates; docs/testing.md,
// Estimates). With ICLAB_COUNT_WORK=1 in the environment the run counts the arithmetic of every GEMM (nn::gemm_counter,
// framework/nn/gemm.hpp: 2·m·n·k per product, the per-(batch, head) attention products included) and, when it ends,
// prints one line on stderr (peak_rss_gib: VmHWM, the process's peak resident set):
//   iclab work: gemm_flops=... gemm_calls=... estimate_gemm_flops=... estimate_flops=... estimate_gib=... peak_rss_gib=...
//               cpu_seconds=...
// ICLAB_COUNT_WORK=shapes adds one line per product shape ("iclab work shape: m=... n=... k=... calls=... flops=...").
// Counted GEMM work does not depend on the machine's load, unlike wall time. Nothing is written to the run folder and
// no result changes: without the variable nothing is counted (one predictable branch per product).
#include <iosfwd>

#include "framework/run/memory_estimate.hpp"

namespace iclab::cli {

// ICLAB_COUNT_WORK is set to 1 or shapes.
bool work_count_requested();

// Clears and starts the GEMM counter.
void work_count_start();

// Stops the counter and writes the line above (the counted work, the run's estimate, the process's peak resident set
// and its user + system CPU time from getrusage).
void work_count_report(const run::RunEstimate& estimate, std::ostream& out);

}  // namespace iclab::cli
