#pragma once
// Sweeps (multirun): a grid of overrides over one or more configs, each job a complete `iclab run` in its own
// folder of one sweep folder. Planning resolves and validates every job's config before anything runs, names
// every job from its canonical overrides (sorted keys, values as the resolved config writes them: 3e-3 and
// 0.003 are one job), and finds what is already done, so the same sweep run again skips finished jobs and
// resumes interrupted ones from their checkpoints. Launchers (framework/workflow/launch.hpp) run the plan.
//
//   iclab run -m CONFIG train.lr=1e-3,3e-3 seed=0:3 [--jobs N] [--threads T]
//   iclab sweep SWEEP.yaml [--jobs N] [--launcher local|slurm]
//
// Sweep folder <output.dir>/sweeps/<name>/:
//   sweep.yaml      the plan: every job's config file, canonical overrides and folder name
//   manifest.csv    one row per job: index, name, status, exit_status, seconds, run_dir, log, overrides
//   status/<name>   the last outcome of each job ("done 0 12.5", "failed 1 3.0"), written by the job's launcher
//   logs/<name>.log each job's stdout and stderr
//   locks/<name>.lock  flock'd by whoever runs the job (a local pool, a Slurm task), and inherited by the job's
//                   process: a second launcher never trains a job that is running
//
// Limits (refused with exit 2 before anything is written): at most kMaxSweepJobs jobs; sweep and job names are
// one folder name of at most kMaxNameLength characters; a key is set once (fixed, grid or zip).
//   <name>/         each job's run folder (config.yaml, log.txt, checkpoint.h5, results.h5)
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/run/experiment.hpp"

namespace iclab::run {

constexpr std::size_t kMaxSweepJobs = 4096;
constexpr std::size_t kMaxNameLength = 120;

// A user-given sweep name: one folder name (letters, digits, . - _ + ,), not starting with '.', at most
// kMaxNameLength characters. InputError prefixed by `where` otherwise.
void check_sweep_name(const std::string& name, const std::string& where);

// One axis of a sweep: a key and the values it takes, as YAML texts.
struct SweepAxis {
    std::string key;
    std::vector<std::string> values;
};

struct SweepSpec {
    std::vector<std::string> configs;    // config files; every combination runs for each
    std::vector<std::string> overrides;  // key=value applied to every job
    std::vector<SweepAxis> grid;         // every combination, the first axis varying slowest
    std::vector<SweepAxis> zip;          // varied together (equal lengths), crossed with the grid
    std::string name;                    // the sweep folder's name; "" derives one from the config and fixed overrides
    std::string source;                  // "command line" or the sweep file, for messages
};

// "key=a,b,c" (commas outside brackets and quotes) or "key=i:j" (integers i, i+1, ..., j-1) is an axis;
// anything else a fixed override. Returns true and fills `axis` for an axis.
bool parse_sweep_override(const std::string& text, SweepAxis& axis);

// `iclab run -m CONFIG overrides...`: every override that is an axis goes to the grid, in order.
SweepSpec sweep_from_command_line(const std::string& config, const std::vector<std::string>& overrides);

// A sweep file (YAML): name, config or configs, overrides, grid (key: [values] or "i:j"), zip, jobs, threads.
// InputError naming the file, line and key for anything else. `jobs` and `threads` are returned when set (0: not set).
struct SweepFile {
    SweepSpec spec;
    int jobs = 0, threads = 0;
};
SweepFile load_sweep_file(const std::string& path);

struct SweepJob {
    std::size_t index = 0;
    std::string config_path;
    std::vector<std::string> overrides;  // canonical: key=value as resolved, fixed then swept, each sorted by key
    std::string name;                    // the run folder's name, from the swept keys' canonical values
    std::string experiment;
    std::string config_text;             // the resolved config as the run writes it (output.dir, output.name set)
    // The config.yaml of a run already in the job's folder when it differs from config_text only by keys the schema
    // gained since that run, at their defaults (resolve_again equals config_text): that run is this job too.
    std::string earlier_config_text;
    double estimated_flops = 0.0;        // the experiment's estimate of its work (0: unknown, e.g. a plan read back)
    double estimated_memory_gib = 0.0;   // and of its memory (0: unknown); both printed by `iclab sweep --dry-run`
};

struct Sweep {
    std::filesystem::path dir;
    std::vector<SweepJob> jobs;
};

// Resolves and validates every job (InputError listing each bad one, before anything is written); jobs whose
// canonical overrides coincide are one job.
Sweep plan_sweep(const SweepSpec& spec, const Catalog& catalog);

enum class JobState { finished, interrupted, stale, pending };
const char* job_state_name(JobState state);
// From the job's folder: results.h5 (finished), checkpoint.h5 (interrupted: resume), a folder without either
// (stale: a start that died before its first checkpoint), none (pending). InputError when the folder holds
// another config than the job's (it was made by another sweep or edited).
JobState job_state(const Sweep& sweep, const SweepJob& job);

// A finished run's config.yaml resolved again with today's schema (Catalog::load_config on the file, no overrides):
// every key the run wrote keeps its value and a key added to the schema since takes its default, which by the
// project's rule reproduces the behaviour from before the key existed. "" when it no longer resolves (a key was
// removed or renamed, a value left its range): then the run is not today's job.
std::string resolve_again(const std::filesystem::path& config_file, const Catalog& catalog);

// The arguments of the `iclab` command that runs the job from its state (run CONFIG ... or run --resume DIR).
std::vector<std::string> job_arguments(const Sweep& sweep, const SweepJob& job, int threads);
std::filesystem::path job_log_path(const Sweep& sweep, const SweepJob& job);

// locks/<name>.lock, and whether a process holds it now (the job is running, launched from anywhere).
std::filesystem::path job_lock_path(const Sweep& sweep, const SweepJob& job);
bool job_running(const Sweep& sweep, const SweepJob& job);

// sweep.yaml: written when a sweep is planned, read by `iclab sweep-job` (Slurm array tasks). Reading takes the
// folder it is given as the sweep's folder; a plan recording another folder (moved, edited) is an InputError.
void write_sweep_plan(const Sweep& sweep);
Sweep read_sweep_plan(const std::filesystem::path& sweep_dir);

// The last outcome of a job, kept in status/<name> (each job's launcher writes its own file, so concurrent
// array tasks never write one file), and manifest.csv made from them and the folders' states.
struct JobOutcome {
    std::string status;  // "done", "failed", "skipped"
    int exit_status = 0;
    double seconds = 0.0;       // wall time of this attempt
    double peak_rss_gib = 0.0;  // peak resident memory of the job's process (0: not measured)
};
// status/<job>: "<status> <exit> <seconds> <peak GiB>"; the peak kept is the largest over the job's attempts (a
// resumed job's later attempt may not reach the first one's). Files of older launchers have no peak.
void write_job_outcome(const Sweep& sweep, const SweepJob& job, const JobOutcome& outcome);
void write_manifest(const Sweep& sweep);

}  // namespace iclab::run
