#include "experiments/cli/sweep.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "experiments/registry.hpp"
#include "framework/core/check.hpp"
#include "framework/core/interrupt.hpp"
#include "framework/core/process.hpp"
#include "framework/workflow/launch.hpp"
#include "framework/run/memory_estimate.hpp"

namespace iclab::cli {

int launch_sweep(const run::SweepSpec& spec, const LaunchOptions& options) {
    return launch_sweeps({SweepPart{spec, options.threads}}, options);
}

namespace {

// `iclab sweep --dry-run`: each job's state and estimate; the pending work's total on stderr (scripts/reproduce.sh --plan).
void list_jobs(const run::Sweep& sweep) {
    run::RunEstimate pending;
    std::size_t unknown = 0, waiting = 0;
    for (const auto& job : sweep.jobs) {
        const bool running = run::job_running(sweep, job);
        const run::JobState state = run::job_state(sweep, job);
        std::string estimate = "estimate unknown";
        if (job.estimated_flops > 0.0) {
            run::RunEstimate e;
            e.flops = job.estimated_flops;
            e.memory_gib = job.estimated_memory_gib;
            estimate = run::describe_estimate(e);
        }
        std::printf("%-11s %s  (%s)\n", running ? "running" : run::job_state_name(state), job.name.c_str(), estimate.c_str());
        if (running || state == run::JobState::finished) continue;
        ++waiting;
        if (job.estimated_flops <= 0.0) ++unknown;
        pending.flops += job.estimated_flops;
        pending.memory_gib = std::max(pending.memory_gib, job.estimated_memory_gib);
    }
    std::fprintf(stderr, "iclab: sweep %s: %zu of %zu jobs to run, estimated %s in all (memory: the largest job)%s\n",
                 sweep.dir.c_str(), waiting, sweep.jobs.size(), run::describe_estimate(pending).c_str(),
                 unknown ? (", " + std::to_string(unknown) + " without an estimate").c_str() : "");
}

}  // namespace

int launch_sweeps(const std::vector<SweepPart>& parts, const LaunchOptions& options) {
    ICLAB_INPUT_CHECK(!parts.empty(), "iclab sweep: give at least one SWEEP.yaml");
    ICLAB_INPUT_CHECK(options.launcher == "local" || options.launcher == "slurm",
                      "--launcher must be local or slurm, got '" << options.launcher << "'");
    ICLAB_INPUT_CHECK(options.launcher == "local" || parts.size() == 1,
                      "--launcher slurm takes one SWEEP.yaml (one job array each), got " << parts.size());
    ICLAB_INPUT_CHECK(options.jobs >= 1 && options.jobs <= 1024, "--jobs must be from 1 to 1024, got " << options.jobs);
    ICLAB_INPUT_CHECK(options.threads >= 0 && options.threads <= 1024, "--threads must be from 0 to 1024, got " << options.threads);
    ICLAB_INPUT_CHECK(options.cpus >= 1 && options.cpus <= 1024, "--cpus must be from 1 to 1024, got " << options.cpus);
    run::SlurmOptions slurm;
    slurm.partition = options.partition;
    slurm.time = options.time;
    slurm.cpus = options.cpus;
    if (options.launcher == "slurm") run::check_slurm_options(slurm);
    // Every job of every part validated before any work (exit 2), and no two parts in one folder.
    std::vector<run::Sweep> sweeps;
    sweeps.reserve(parts.size());
    for (const SweepPart& part : parts) {
        sweeps.push_back(run::plan_sweep(part.spec, experiments::catalog()));
        const run::Sweep& sweep = sweeps.back();
        ICLAB_INPUT_CHECK(!has_control_characters(sweep.dir.string()),
                          "the sweep folder (output.dir) holds a control character (newline, tab, ...): refused");
        for (std::size_t i = 0; i + 1 < sweeps.size(); ++i)
            ICLAB_INPUT_CHECK(sweeps[i].dir != sweep.dir, part.spec.source << " and " << parts[i].spec.source
                                                                            << " plan the same sweep folder " << sweep.dir.string());
    }
    for (const run::Sweep& sweep : sweeps) {
        run::write_sweep_plan(sweep);
        run::write_manifest(sweep);
    }
    if (options.launcher == "slurm") {
        const run::Sweep& sweep = sweeps.front();
        std::size_t finished = 0;
        for (const auto& job : sweep.jobs) finished += run::job_state(sweep, job) == run::JobState::finished;
        slurm.binary = run::self_binary();
        const auto script = run::write_slurm_script(sweep, slurm);
        std::fprintf(stderr, "iclab: sweep %s: %zu jobs (%zu finished), Slurm script %s\n", sweep.dir.c_str(), sweep.jobs.size(),
                     finished, script.c_str());
        if (!options.dry_run) std::fprintf(stderr, "iclab: submitted array job %s\n", run::submit_slurm_script(script).c_str());
        std::cout << sweep.dir.string() << std::endl;
        return 0;
    }
    if (options.dry_run) {
        for (const run::Sweep& sweep : sweeps) {
            list_jobs(sweep);
            std::cout << sweep.dir.string() << std::endl;  // after its jobs: a part's listing ends with its folder
        }
        return 0;
    }
    run::LocalPoolOptions pool;
    pool.jobs = options.jobs;
    pool.quiet = options.quiet;
    pool.binary = run::self_binary();
    const int default_threads = std::max(1, omp_get_num_procs() / options.jobs);
    std::vector<run::PoolSweep> pool_sweeps;
    for (std::size_t i = 0; i < sweeps.size(); ++i)
        pool_sweeps.push_back({&sweeps[i], parts[i].threads > 0 ? parts[i].threads : default_threads});
    pool.threads = pool_sweeps.front().threads;
    const std::size_t failed = run::run_local_pool(pool_sweeps, pool);
    for (const run::Sweep& sweep : sweeps) std::cout << sweep.dir.string() << std::endl;  // stdout: the sweep folders, for scripts
    if (interrupt_requested()) return 128 + interrupt_signal();
    return failed == 0 ? 0 : 1;
}

int sweep_job(const std::string& sweep_dir, std::size_t index, int threads) {
    const run::Sweep sweep = run::read_sweep_plan(sweep_dir);
    ICLAB_INPUT_CHECK(index < sweep.jobs.size(), sweep_dir << " has " << sweep.jobs.size() << " jobs; there is no job " << index);
    const run::SweepJob& job = sweep.jobs[index];
    const run::JobOutcome outcome = run::run_job_process(sweep, job, std::max(1, threads), run::self_binary());
    run::write_manifest(sweep);
    std::fprintf(stderr, "iclab: sweep job %zu (%s): %s\n", index, job.name.c_str(), outcome.status.c_str());
    if (interrupt_requested()) return 128 + interrupt_signal();
    return outcome.exit_status;
}

}  // namespace iclab::cli
