#include "framework/workflow/launch.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/interrupt.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/process.hpp"
#include "framework/workflow/job_lock.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

// Starts `binary args...` with stdout and stderr appended to `log`; returns its pid. The child gets its own process
// group, so a Ctrl-C at the terminal reaches the launcher alone, which forwards one SIGTERM to each job (a job that
// got two signals would stop at once instead of at a checkpoint); it keeps `lock_fd` open across exec, so the job's
// lock outlives the launcher if the launcher dies first.
pid_t spawn(const fs::path& binary, const std::vector<std::string>& args, const fs::path& log, int lock_fd) {
    fs::create_directories(log.parent_path());
    std::vector<std::string> argv_text = {binary.string()};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    {
        std::ofstream header(log, std::ios::app);
        header << "$";
        for (const auto& a : argv_text) header << " " << a;
        header << "\n";
    }
    const pid_t pid = fork();
    ICLAB_CHECK(pid >= 0, "cannot start a job: fork failed");
    if (pid == 0) {
        ::setpgid(0, 0);
        ::signal(SIGINT, SIG_DFL);  // the job installs its own handlers where it can stop cleanly
        ::signal(SIGTERM, SIG_DFL);
        ::signal(SIGHUP, SIG_DFL);
        if (lock_fd >= 0) ::fcntl(lock_fd, F_SETFD, 0);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::close(fd);
        }
        ::execv(binary.c_str(), argv.data());
        std::perror("iclab: exec");
        ::_exit(127);
    }
    return pid;
}

// A job that exits with 128 + SIGINT/SIGTERM/SIGHUP stopped at a checkpoint on request.
bool interrupted_status(int exit_status) {
    return exit_status == 128 + SIGINT || exit_status == 128 + SIGTERM || exit_status == 128 + SIGHUP;
}

int exit_status_of(int raw) { return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0); }

std::string format_seconds(double seconds) {
    const long long s = std::llround(seconds);  // whole seconds first, so 59.6 s never shows as "0 min 60 s"
    char text[32];
    if (s < 60) std::snprintf(text, sizeof text, "%lld s", s);
    else if (s < 3600) std::snprintf(text, sizeof text, "%lld min %02lld s", s / 60, s % 60);
    else std::snprintf(text, sizeof text, "%lld h %02lld min", s / 3600, (s / 60) % 60);
    return text;
}

}  // namespace

fs::path self_binary() { return fs::read_symlink("/proc/self/exe"); }

namespace {

struct RunningJob {
    const SweepJob* job;
    std::chrono::steady_clock::time_point start;
    JobLock lock;
};

struct EndedJob {
    pid_t pid = -1;
    int exit_status = 0;
    double peak_rss_gib = 0.0;  // the job process's peak resident set (wait4's ru_maxrss)
};

// Waits for one of `running` to end, forwarding SIGTERM once to all of them when an interrupt arrives. Polls (50 ms)
// rather than blocking, so a signal that lands between the check and the wait is never missed.
EndedJob wait_for_a_job(std::map<pid_t, RunningJob>& running, bool& forwarded) {
    for (;;) {
        if (interrupt_requested() && !forwarded) {
            for (const auto& entry : running) ::kill(entry.first, SIGTERM);
            forwarded = true;
        }
        int raw = 0;
        struct rusage usage {};
        const pid_t pid = ::wait4(-1, &raw, WNOHANG, &usage);
        if (pid > 0) return {pid, exit_status_of(raw), static_cast<double>(usage.ru_maxrss) / (1024.0 * 1024.0)};  // KiB
        if (pid < 0 && errno != EINTR) return {};
        ::usleep(50000);
    }
}

JobOutcome outcome_of(const EndedJob& ended, double seconds) {
    JobOutcome outcome;
    outcome.exit_status = ended.exit_status;
    outcome.status = ended.exit_status == 0 ? "done" : interrupted_status(ended.exit_status) ? "interrupted" : "failed";
    outcome.seconds = seconds;
    outcome.peak_rss_gib = ended.peak_rss_gib;
    return outcome;
}

}  // namespace

JobOutcome run_job_process(const Sweep& sweep, const SweepJob& job, int threads, const fs::path& binary) {
    JobOutcome outcome;
    std::optional<JobLock> lock = JobLock::try_acquire(job_lock_path(sweep, job));
    if (!lock) {
        outcome.status = "running elsewhere";  // another launcher has it: never train a job twice
        return outcome;
    }
    const std::vector<std::string> args = job_arguments(sweep, job, threads);  // its state, now that it is ours
    if (args.empty()) {
        outcome.status = "skipped";  // finished before
        return outcome;
    }
    InterruptScope scope;  // Slurm's scancel / time limit: the job checkpoints, the outcome says interrupted
    const auto start = std::chrono::steady_clock::now();
    std::map<pid_t, RunningJob> running;
    const pid_t pid = spawn(binary, args, job_log_path(sweep, job), lock->fd());
    running.emplace(pid, RunningJob{&job, start, std::move(*lock)});
    bool forwarded = false;
    const EndedJob ended = wait_for_a_job(running, forwarded);
    ICLAB_CHECK(ended.pid == pid, "lost the job's process " << pid);
    outcome = outcome_of(ended, seconds_since(start));
    write_job_outcome(sweep, job, outcome);
    return outcome;
}

double sweep_eta_seconds(const EtaInput& in) {
    const int jobs = std::max(1, in.jobs);
    const std::size_t left = in.running_flops.size() + in.queued_flops.size();
    if (left == 0 || in.done_seconds.empty()) return 0.0;
    double done_work = 0.0, done_time = 0.0;
    bool known = true;
    for (double f : in.done_flops) known = known && f > 0.0, done_work += f;
    for (double f : in.running_flops) known = known && f > 0.0;
    for (double f : in.queued_flops) known = known && f > 0.0;
    for (double t : in.done_seconds) done_time += t;
    if (!known || done_time <= 0.0)
        return mean_of(in.done_seconds) * std::ceil(static_cast<double>(left) / jobs);
    const double seconds_per_flop = done_time / done_work;
    double remaining = 0.0;
    for (double f : in.queued_flops) remaining += f * seconds_per_flop;
    for (std::size_t i = 0; i < in.running_flops.size(); ++i)
        remaining += std::max(0.0, in.running_flops[i] * seconds_per_flop - in.running_elapsed[i]);
    return remaining / static_cast<double>(std::min<std::size_t>(jobs, left));
}

std::size_t run_local_pool(const Sweep& sweep, const LocalPoolOptions& options) {
    return run_local_pool(std::vector<PoolSweep>{{&sweep, options.threads}}, options);
}

std::size_t run_local_pool(const std::vector<PoolSweep>& sweeps, const LocalPoolOptions& options) {
    struct Queued {
        const Sweep* sweep;
        const SweepJob* job;
        int threads;
    };
    std::vector<Queued> pending;
    std::size_t skipped = 0, planned = 0;
    for (const PoolSweep& part : sweeps) {
        planned += part.sweep->jobs.size();
        for (const auto& job : part.sweep->jobs) {
            if (job_state(*part.sweep, job) == JobState::finished) ++skipped;
            else pending.push_back({part.sweep, &job, std::max(1, part.threads)});
        }
    }
    // Longest estimated job first (stable: ties keep the sweeps' order, jobs without an estimate go last), so that a
    // long job never starts last and idles the other slots while it runs alone.
    std::stable_sort(pending.begin(), pending.end(),
                     [](const Queued& a, const Queued& b) { return a.job->estimated_flops > b.job->estimated_flops; });
    std::deque<Queued> queue(pending.begin(), pending.end()), elsewhere;
    const std::size_t total = queue.size();
    if (!options.quiet) {
        const std::string where = sweeps.size() == 1 ? "sweep " + sweeps.front().sweep->dir.string()
                                                     : std::to_string(sweeps.size()) + " sweeps in one queue";
        std::fprintf(stderr, "iclab: %s: %zu jobs, %zu finished before, %zu to run, %d at a time, longest estimated first\n",
                     where.c_str(), planned, skipped, total, options.jobs);
    }
    InterruptScope scope;  // SIGINT/SIGTERM/SIGHUP: forward to the jobs, let them checkpoint, record `interrupted`
    for (const PoolSweep& part : sweeps) write_manifest(*part.sweep);
    const auto pool_start = std::chrono::steady_clock::now();
    std::map<pid_t, RunningJob> running;
    std::map<pid_t, const Sweep*> sweep_of;
    std::vector<Queued> failed, interrupted;
    std::vector<double> durations, done_flops;
    std::size_t done = 0;
    bool forwarded = false;
    // Starts `q` under `lock` unless it finished meanwhile (then it counts as done).
    const auto start_job = [&](const Queued& q, JobLock lock) {
        const std::vector<std::string> args = job_arguments(*q.sweep, *q.job, q.threads);
        if (args.empty()) {
            ++done;
            if (!options.quiet) std::fprintf(stderr, "iclab: %s finished in another launcher\n", q.job->name.c_str());
            return;
        }
        const pid_t pid = spawn(options.binary, args, job_log_path(*q.sweep, *q.job), lock.fd());
        running.emplace(pid, RunningJob{q.job, std::chrono::steady_clock::now(), std::move(lock)});
        sweep_of[pid] = q.sweep;
    };
    for (;;) {
        while (!interrupt_requested() && !queue.empty() && static_cast<int>(running.size()) < options.jobs) {
            const Queued q = queue.front();
            queue.pop_front();
            std::optional<JobLock> lock = JobLock::try_acquire(job_lock_path(*q.sweep, *q.job));
            if (!lock) {  // another launcher runs it: wait for it at the end instead of training it twice
                if (!options.quiet) std::fprintf(stderr, "iclab: %s is running in another launcher; waiting for it at the end\n", q.job->name.c_str());
                elsewhere.push_back(q);
                continue;
            }
            start_job(q, std::move(*lock));
        }
        if (running.empty()) {
            if (interrupt_requested() || (queue.empty() && elsewhere.empty())) break;
            if (queue.empty()) {  // only jobs of another launcher are left: wait for each, then run it if it did not finish
                const Queued q = elsewhere.front();
                elsewhere.pop_front();
                std::optional<JobLock> lock = JobLock::acquire_waiting(job_lock_path(*q.sweep, *q.job));
                if (!lock) break;  // interrupted while waiting
                start_job(q, std::move(*lock));
            }
            continue;
        }
        const EndedJob ended = wait_for_a_job(running, forwarded);
        if (ended.pid < 0) break;
        const auto found = running.find(ended.pid);
        if (found == running.end()) continue;
        const SweepJob& job = *found->second.job;
        const Sweep& sweep = *sweep_of.at(ended.pid);
        const JobOutcome outcome = outcome_of(ended, seconds_since(found->second.start));
        running.erase(found);  // releases the job's lock (the job's process has ended)
        sweep_of.erase(ended.pid);
        write_job_outcome(sweep, job, outcome);
        write_manifest(sweep);
        ++done;
        durations.push_back(outcome.seconds);
        done_flops.push_back(job.estimated_flops);
        if (outcome.status == "failed") failed.push_back({&sweep, &job, 0});
        if (outcome.status == "interrupted") interrupted.push_back({&sweep, &job, 0});
        if (!options.quiet) {
            EtaInput eta_input;  // weighted by each job's estimated work (sweep_eta_seconds), over the whole queue
            eta_input.done_seconds = durations, eta_input.done_flops = done_flops, eta_input.jobs = options.jobs;
            for (const auto& [running_pid, r] : running)
                eta_input.running_elapsed.push_back(seconds_since(r.start)), eta_input.running_flops.push_back(r.job->estimated_flops);
            for (const Queued& queued : queue) eta_input.queued_flops.push_back(queued.job->estimated_flops);
            for (const Queued& queued : elsewhere) eta_input.queued_flops.push_back(queued.job->estimated_flops);
            const double eta = sweep_eta_seconds(eta_input);
            const std::string name = sweeps.size() == 1 ? job.name : sweep.dir.filename().string() + "/" + job.name;
            std::fprintf(stderr, "iclab: [%zu/%zu] %s %s in %s%s; elapsed %s, ETA %s\n", done, total, name.c_str(),
                         outcome.status == "done" ? "done" : outcome.status == "interrupted" ? "INTERRUPTED" : "FAILED",
                         format_seconds(outcome.seconds).c_str(),
                         outcome.status == "done" ? "" : (" (exit " + std::to_string(outcome.exit_status) + ")").c_str(),
                         format_seconds(seconds_since(pool_start)).c_str(), format_seconds(eta).c_str());
        }
    }
    for (const PoolSweep& part : sweeps) write_manifest(*part.sweep);
    if (interrupt_requested()) {
        std::string manifests;
        for (const PoolSweep& part : sweeps) manifests += (manifests.empty() ? "" : ", ") + (part.sweep->dir / "manifest.csv").string();
        std::fprintf(stderr,
                     "iclab: sweep interrupted by %s: %zu running job(s) stopped at a checkpoint, %zu not started; "
                     "launch the sweep again to resume (manifest: %s)\n",
                     signal_name(interrupt_signal()), interrupted.size(), queue.size() + elsewhere.size(), manifests.c_str());
    }
    if (!failed.empty()) {
        std::fprintf(stderr, "iclab: %zu of %zu jobs failed:\n", failed.size(), total);
        for (const Queued& q : failed) {
            std::ifstream status(q.sweep->dir / "status" / q.job->name);
            std::string word;
            int code = 0;
            status >> word >> code;
            std::fprintf(stderr, "  %s: exit status %d, log %s\n", q.job->name.c_str(), code, job_log_path(*q.sweep, *q.job).c_str());
        }
    }
    return failed.size();
}

void check_slurm_options(const SlurmOptions& options) {
    // These go into #SBATCH lines, which sbatch parses itself (no shell quoting applies): refused unless well-formed.
    static const std::regex partition(R"(^[A-Za-z0-9_.-]{1,64}(,[A-Za-z0-9_.-]{1,64}){0,15}$)");
    // Slurm's formats: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
    static const std::regex time(R"(^([0-9]{1,7}|[0-9]{1,7}:[0-9]{1,2}|[0-9]{1,4}:[0-9]{1,2}:[0-9]{1,2}|[0-9]{1,4}-[0-9]{1,2}(:[0-9]{1,2}){0,2})$)");
    ICLAB_INPUT_CHECK(options.partition.empty() || std::regex_match(options.partition, partition),
                      "--partition must be partition names (letters, digits, _ . -, comma-separated), got '"
                          << (has_control_characters(options.partition) ? std::string("(control characters)") : options.partition) << "'");
    ICLAB_INPUT_CHECK(options.time.empty() || std::regex_match(options.time, time),
                      "--time must be a Slurm time (M, M:S, H:M:S, D-H, D-H:M or D-H:M:S), got '"
                          << (has_control_characters(options.time) ? std::string("(control characters)") : options.time) << "'");
    ICLAB_INPUT_CHECK(options.cpus >= 1 && options.cpus <= 1024, "--cpus must be from 1 to 1024, got " << options.cpus);
}

fs::path write_slurm_script(const Sweep& sweep, const SlurmOptions& options) {
    check_slurm_options(options);
    // Every path goes into the script through shell_quote (control characters refused: exit 2), and none into an
    // #SBATCH line: the log path there is relative to the sweep folder, where sbatch is run.
    const std::string sweep_dir = shell_quote(sweep.dir.string(), "the sweep folder (output.dir)");
    const std::string binary = shell_quote(options.binary.string(), "the iclab binary's path");
    std::string job_name = "iclab-" + sweep.dir.filename().string();  // a sweep name: [A-Za-z0-9._+,-] only
    for (char& c : job_name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) c = '_';
    const fs::path script = sweep.dir / "slurm" / "array.sbatch";
    fs::create_directories(script.parent_path());
    fs::create_directories(sweep.dir / "logs");
    std::ostringstream out;
    out << "#!/bin/bash\n"
        << "#SBATCH --job-name=" << job_name << "\n"
        << "#SBATCH --array=0-" << sweep.jobs.size() - 1 << "\n"
        << "#SBATCH --cpus-per-task=" << options.cpus << "\n"
        << "#SBATCH --ntasks=1\n"
        << "#SBATCH --output=logs/slurm-%A_%a.out\n";
    if (!options.partition.empty()) out << "#SBATCH --partition=" << options.partition << "\n";
    if (!options.time.empty()) out << "#SBATCH --time=" << options.time << "\n";
    out << "# Written by iclab: one array task per job of the sweep in the folder below. Each task runs `iclab sweep-job`,\n"
        << "# which skips a finished job, resumes an interrupted one and leaves one that another launcher is running, so\n"
        << "# submitting again after failures reruns only what is unfinished. Submit from the sweep folder:\n"
        << "#   cd " << sweep_dir << " && sbatch slurm/array.sbatch\n"
        << "exec " << binary << " sweep-job " << sweep_dir << " \"$SLURM_ARRAY_TASK_ID\" --threads " << options.cpus << "\n";
    const fs::path partial = script.string() + ".partial";
    {
        std::ofstream file(partial);
        file << out.str();
        ICLAB_CHECK(file.good(), "cannot write " << partial.string());
    }
    fs::rename(partial, script);
    fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add);
    return script;
}

std::string submit_slurm_script(const fs::path& script) {
    // sbatch runs from the sweep folder (the script's #SBATCH --output is relative to it), with an argv: no shell.
    const fs::path sweep_dir = script.parent_path().parent_path();
    const ProcessResult result = run_process({"sbatch", "--parsable", "slurm/array.sbatch"}, sweep_dir.string());
    std::string output = result.output;
    while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
    ICLAB_CHECK(result.exit_status == 0, "sbatch " << script.string() << " failed (exit " << result.exit_status
                                                   << (result.exit_status == 127 ? ": is sbatch on PATH?" : "") << "): " << output);
    return output;
}

}  // namespace iclab::run
