#include "framework/run/launch.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

// Starts `binary args...` with stdout and stderr appended to `log`; returns its pid.
pid_t spawn(const fs::path& binary, const std::vector<std::string>& args, const fs::path& log) {
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

JobOutcome run_job_process(const Sweep& sweep, const SweepJob& job, int threads, const fs::path& binary) {
    const std::vector<std::string> args = job_arguments(sweep, job, threads);
    JobOutcome outcome;
    if (args.empty()) {
        outcome.status = "skipped";  // finished before
        return outcome;
    }
    const auto start = std::chrono::steady_clock::now();
    const pid_t pid = spawn(binary, args, job_log_path(sweep, job));
    int raw = 0;
    ::waitpid(pid, &raw, 0);
    outcome.exit_status = exit_status_of(raw);
    outcome.status = outcome.exit_status == 0 ? "done" : "failed";
    outcome.seconds = seconds_since(start);
    write_job_outcome(sweep, job, outcome);
    return outcome;
}

std::size_t run_local_pool(const Sweep& sweep, const LocalPoolOptions& options) {
    std::deque<const SweepJob*> queue;
    std::size_t skipped = 0;
    for (const auto& job : sweep.jobs) {
        if (job_state(sweep, job) == JobState::finished) ++skipped;
        else queue.push_back(&job);
    }
    const std::size_t total = queue.size();
    if (!options.quiet)
        std::fprintf(stderr, "iclab: sweep %s: %zu jobs, %zu finished before, %zu to run, %d at a time, %d thread(s) each\n",
                     sweep.dir.string().c_str(), sweep.jobs.size(), skipped, total, options.jobs, options.threads);
    write_manifest(sweep);
    const auto sweep_start = std::chrono::steady_clock::now();
    std::map<pid_t, std::pair<const SweepJob*, std::chrono::steady_clock::time_point>> running;
    std::vector<const SweepJob*> failed;
    std::vector<double> durations;
    std::size_t done = 0;
    while (!queue.empty() || !running.empty()) {
        while (!queue.empty() && static_cast<int>(running.size()) < options.jobs) {
            const SweepJob* job = queue.front();
            queue.pop_front();
            const pid_t pid = spawn(options.binary, job_arguments(sweep, *job, options.threads), job_log_path(sweep, *job));
            running[pid] = {job, std::chrono::steady_clock::now()};
        }
        int raw = 0;
        const pid_t pid = ::waitpid(-1, &raw, 0);
        if (pid < 0) break;
        const auto found = running.find(pid);
        if (found == running.end()) continue;
        const SweepJob& job = *found->second.first;
        JobOutcome outcome;
        outcome.exit_status = exit_status_of(raw);
        outcome.status = outcome.exit_status == 0 ? "done" : "failed";
        outcome.seconds = seconds_since(found->second.second);
        running.erase(found);
        write_job_outcome(sweep, job, outcome);
        write_manifest(sweep);
        ++done;
        durations.push_back(outcome.seconds);
        if (outcome.status == "failed") failed.push_back(&job);
        if (!options.quiet) {
            // ETA: the mean job time so far for the jobs still queued or running, `jobs` at a time.
            const double left = static_cast<double>(total - done);
            const double eta = mean_of(durations) * std::ceil(left / options.jobs);
            std::fprintf(stderr, "iclab: [%zu/%zu] %s %s in %s%s; elapsed %s, ETA %s\n", done, total, job.name.c_str(),
                         outcome.status == "done" ? "done" : "FAILED", format_seconds(outcome.seconds).c_str(),
                         outcome.status == "done" ? "" : (" (exit " + std::to_string(outcome.exit_status) + ")").c_str(),
                         format_seconds(seconds_since(sweep_start)).c_str(), format_seconds(eta).c_str());
        }
    }
    if (!failed.empty()) {
        std::fprintf(stderr, "iclab: %zu of %zu jobs failed:\n", failed.size(), total);
        for (const SweepJob* job : failed) {
            std::ifstream status(sweep.dir / "status" / job->name);
            std::string word;
            int code = 0;
            status >> word >> code;
            std::fprintf(stderr, "  %s: exit status %d, log %s\n", job->name.c_str(), code, job_log_path(sweep, *job).c_str());
        }
    }
    return failed.size();
}

fs::path write_slurm_script(const Sweep& sweep, const SlurmOptions& options) {
    const fs::path script = sweep.dir / "slurm" / "array.sbatch";
    fs::create_directories(script.parent_path());
    fs::create_directories(sweep.dir / "logs");
    std::ofstream out(script);
    out << "#!/bin/bash\n"
        << "# Written by iclab: one array task per job of " << (sweep.dir / "sweep.yaml").string() << ".\n"
        << "# Each task runs `iclab sweep-job`, which skips a finished job and resumes an interrupted one,\n"
        << "# so submitting this script again after failures reruns only what is unfinished.\n"
        << "#SBATCH --job-name=iclab-" << sweep.dir.filename().string() << "\n"
        << "#SBATCH --array=0-" << sweep.jobs.size() - 1 << "\n"
        << "#SBATCH --cpus-per-task=" << options.cpus << "\n"
        << "#SBATCH --ntasks=1\n"
        << "#SBATCH --output=" << (sweep.dir / "logs" / "slurm-%A_%a.out").string() << "\n";
    if (!options.partition.empty()) out << "#SBATCH --partition=" << options.partition << "\n";
    if (!options.time.empty()) out << "#SBATCH --time=" << options.time << "\n";
    out << "exec '" << options.binary.string() << "' sweep-job '" << sweep.dir.string() << "' \"$SLURM_ARRAY_TASK_ID\" --threads "
        << options.cpus << "\n";
    ICLAB_CHECK(out.good(), "cannot write " << script.string());
    out.close();
    fs::permissions(script, fs::perms::owner_exec, fs::perm_options::add);
    return script;
}

std::string submit_slurm_script(const fs::path& script) {
    const std::string command = "sbatch --parsable '" + script.string() + "' 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ICLAB_CHECK(pipe != nullptr, "cannot run sbatch");
    std::string output;
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
    const int status = ::pclose(pipe);
    ICLAB_CHECK(status == 0, "sbatch " << script.string() << " failed: " << output);
    while (!output.empty() && (output.back() == '\n' || output.back() == '\r')) output.pop_back();
    return output;
}

}  // namespace iclab::run
