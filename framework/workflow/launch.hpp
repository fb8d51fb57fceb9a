#pragma once
// Launchers of a planned sweep (framework/workflow/sweep.hpp): a local pool of child processes, and Slurm job arrays.
// Both run each job as `iclab run ...` (or `iclab run --resume ...`) from its state, so a finished job is skipped
// and an interrupted one continues from its checkpoint, however often the sweep is launched again.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/workflow/sweep.hpp"

namespace iclab::run {

// The running iclab binary (/proc/self/exe), which launchers start for each job.
std::filesystem::path self_binary();

// Runs one job as a child process (stdout and stderr to its log) under the job's lock and waits for it; records its
// outcome. A job another launcher is running is left alone (status "running elsewhere"); SIGINT/SIGTERM/SIGHUP are
// forwarded to the job, which stops at a checkpoint (status "interrupted").
JobOutcome run_job_process(const Sweep& sweep, const SweepJob& job, int threads, const std::filesystem::path& binary);

struct LocalPoolOptions {
    int jobs = 1;     // child processes at a time
    int threads = 1;  // compute threads of each
    bool quiet = false;
    std::filesystem::path binary;
};
// Runs every unfinished job, longest estimated first, `jobs` at a time, each under its lock (a job another launcher is running is waited for
// at the end, then skipped if it finished); SIGINT/SIGTERM/SIGHUP stop launching, are forwarded once to the running
// jobs, which stop at a checkpoint, and are recorded as `interrupted` in the manifest; one line per finished job on stderr with the sweep's ETA; at the
// end, every failed job with its exit status and log. Writes manifest.csv after each job. Returns the number of
// jobs that failed.
std::size_t run_local_pool(const Sweep& sweep, const LocalPoolOptions& options);
// One sweep of a pool, and the compute threads of each of its jobs.
struct PoolSweep {
    const Sweep* sweep = nullptr;
    int threads = 1;
};
// The unfinished jobs of several sweeps in one queue (`iclab sweep A.yaml B.yaml ...`, scripts/reproduce.sh's
// profile parts), longest estimated job first, `options.jobs` at a time; progress and ETA over the whole queue.
// The one-sweep form above is this with one part (options.threads each). Returns the number of jobs that failed.
std::size_t run_local_pool(const std::vector<PoolSweep>& sweeps, const LocalPoolOptions& options);

// The sweep's ETA in seconds. With every job's estimated work known (> 0): the measured seconds per estimated FLOP of
// the finished jobs, times the work left (the queued jobs, and the part of each running job its elapsed time has not
// covered), divided by the jobs at a time. Jobs of one sweep differ by 100x in work (quick iclca_exactness vs
// gd_duals), so a mean job time misjudges the rest by the mix of what finished first. Without estimates: the mean
// job time so far times ceil(jobs left / jobs at a time).
struct EtaInput {
    std::vector<double> done_seconds, done_flops;         // finished jobs
    std::vector<double> running_elapsed, running_flops;   // running jobs
    std::vector<double> queued_flops;                     // not started
    int jobs = 1;
};
double sweep_eta_seconds(const EtaInput& input);

struct SlurmOptions {
    std::string partition;  // "" : the cluster's default
    std::string time;       // "" : the partition's default, else sbatch --time (e.g. 01:00:00)
    int cpus = 1;           // --cpus-per-task, also each job's --threads
    std::filesystem::path binary;
};
// --partition, --time and --cpus by format (they go into #SBATCH lines): InputError otherwise.
void check_slurm_options(const SlurmOptions& options);
// slurm/array.sbatch in the sweep folder: one array task per job, each `iclab sweep-job SWEEP_DIR $SLURM_ARRAY_TASK_ID`
// (finished jobs exit at once, so re-submitting after failures is safe).
std::filesystem::path write_slurm_script(const Sweep& sweep, const SlurmOptions& options);
// Submits the script with sbatch; returns sbatch's output (the job id line). Error when sbatch fails.
std::string submit_slurm_script(const std::filesystem::path& script);

}  // namespace iclab::run
