#pragma once
// `iclab run -m CONFIG key=a,b ...`, `iclab sweep SWEEP.yaml [MORE.yaml ...]` and `iclab sweep-job SWEEP_DIR INDEX` (a Slurm array
// task): plan the sweep (framework/workflow/sweep.hpp), then run it on a local pool or submit it to Slurm
// (framework/workflow/launch.hpp).
#include <cstddef>
#include <string>
#include <vector>

#include "framework/workflow/sweep.hpp"

namespace iclab::cli {

struct LaunchOptions {
    int jobs = 1;                  // local pool: processes at a time
    int threads = 0;               // compute threads per job; 0: cores / jobs (at least 1)
    std::string launcher = "local";  // local | slurm
    std::string partition, time;   // slurm
    int cpus = 1;                  // slurm --cpus-per-task
    bool dry_run = false;          // plan (and with slurm write the script) without running anything
    bool quiet = false;
};

// Plans, prints the plan's size, runs it. Returns the exit status: 0 when every job finished, 1 when one failed.
int launch_sweep(const run::SweepSpec& spec, const LaunchOptions& options);

// One sweep file of `iclab sweep A.yaml B.yaml ...`, with the compute threads of its jobs (0: cores / jobs).
struct SweepPart {
    run::SweepSpec spec;
    int threads = 0;
};
// Every part planned and validated before any work; the local launcher runs all their jobs in one queue, longest
// estimated first (run::run_local_pool), and prints each part's folder on stdout (in the parts' order) at the end.
// --dry-run lists each part's jobs followed by its folder. Slurm: one part only.
int launch_sweeps(const std::vector<SweepPart>& parts, const LaunchOptions& options);

// Runs job INDEX of the sweep in SWEEP_DIR (skipping it when finished); returns its exit status.
int sweep_job(const std::string& sweep_dir, std::size_t index, int threads);

}  // namespace iclab::cli
