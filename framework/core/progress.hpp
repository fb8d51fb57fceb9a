#pragma once
// Progress of a command's long steps on stderr (issue 44: "progress on every step longer than ~10 s"). One format for
// every command: "WHO: WHAT (at 12 s)" when a stage starts, and, inside a loop, "WHO: 12 of 40 tokens (3.1 per s,
// about 9 s left)" at most every `interval` seconds. Nothing is printed when quiet; a stage line also goes to the
// run's log when one is given. stderr only: stdout stays the command's output (scripts parse it).
//
// Two ways to announce a stage:
//   Progress::eager  every stage prints when it starts (an experiment's stages, which its log records);
//   Progress::lazy   a stage prints only once it has lasted `after` seconds ("WHO: WHAT (5 s so far)"), from a watcher
//                    thread, so a command on a small model prints nothing extra and one on a 124M model says what it
//                    is doing (iclab convert, generate, predict, import).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace iclab {

class Progress {
public:
    using Clock = std::chrono::steady_clock;
    enum Mode { eager, lazy };

    // interval: seconds between two loop reports; after (lazy): how long a stage runs before it is announced.
    Progress(std::string who, bool quiet, std::ostream* log = nullptr, Mode mode = eager, double interval = 5.0, double after = 3.0)
        : who_(std::move(who)), quiet_(quiet), log_(log), mode_(mode), interval_(interval), after_(after), start_(Clock::now()),
          stage_start_(start_), last_report_(start_) {
        if (mode_ == lazy && !quiet_) watcher_ = std::thread([this] { watch(); });
    }
    ~Progress() {
        if (watcher_.joinable()) {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                done_ = true;
            }
            wake_.notify_all();
            watcher_.join();
        }
    }
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    double elapsed() const { return seconds_since(start_); }

    // A stage starts: one line now (eager), or once it has lasted `after` seconds (lazy).
    void stage(const std::string& what) {
        std::lock_guard<std::mutex> lock(mutex_);
        char at[32];
        std::snprintf(at, sizeof at, "%.0f s", elapsed());
        if (log_ != nullptr) *log_ << who_ << ": " << what << " (at " << at << ")\n" << std::flush;
        stage_ = what;
        announced_ = mode_ == eager;
        if (!quiet_ && mode_ == eager) std::fprintf(stderr, "%s: %s (at %s)\n", who_.c_str(), what.c_str(), at);
        stage_start_ = last_report_ = Clock::now();
    }

    // Inside a stage's loop: `done` of `total` units finished. Prints at most every interval seconds, with the rate
    // since the stage started and the time left at that rate. Cheap when it prints nothing (a lock and a clock read).
    void tick(std::size_t done, std::size_t total, const char* units) {
        if (quiet_ || done == 0) return;
        std::lock_guard<std::mutex> lock(mutex_);
        if (seconds_since(last_report_) < interval_) return;
        last_report_ = Clock::now();
        announced_ = true;  // the loop's line says enough
        const double rate = static_cast<double>(done) / seconds_since(stage_start_);
        const double left = done < total ? static_cast<double>(total - done) / rate : 0.0;
        std::fprintf(stderr, "%s: %s%s%zu of %zu %s (%.3g per s, about %.0f s left)\n", who_.c_str(), stage_.c_str(),
                     stage_.empty() ? "" : ": ", done, total, units, rate, left);
    }

private:
    static double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

    void watch() {  // lazy mode: announce a stage that has lasted `after` seconds
        std::unique_lock<std::mutex> lock(mutex_);
        while (!done_) {
            wake_.wait_for(lock, std::chrono::milliseconds(250));
            if (done_ || announced_ || stage_.empty()) continue;
            const double lasted = seconds_since(stage_start_);
            if (lasted < after_) continue;
            announced_ = true;
            last_report_ = Clock::now();
            std::fprintf(stderr, "%s: %s (%.0f s so far)\n", who_.c_str(), stage_.c_str(), lasted);
        }
    }

    std::string who_;
    bool quiet_;
    std::ostream* log_;
    Mode mode_;
    double interval_, after_;
    Clock::time_point start_, stage_start_, last_report_;
    std::string stage_;
    bool announced_ = true, done_ = false;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::thread watcher_;
};

}  // namespace iclab
