#pragma once
// Training progress: a one-line progress bar on stderr when stderr is a terminal, plain periodic log
// lines otherwise. Every line also goes to the run's log file.
#include <chrono>
#include <cstdio>
#include <ostream>
#include <string>
#include <unistd.h>

namespace iclab::train {

class Progress {
public:
    // first_step: steps already done before this process started (a resumed run), so the ETA is
    // estimated from the steps this process ran.
    Progress(std::size_t total_steps, bool quiet, std::ostream* log, std::size_t log_every, std::size_t first_step = 0)
        : total_(total_steps), first_step_(first_step), quiet_(quiet), log_(log), log_every_(log_every == 0 ? 1 : log_every),
          tty_(isatty(fileno(stderr)) != 0), start_(std::chrono::steady_clock::now()) {}

    // Seconds since this Progress was made (this process's share of the run).
    double elapsed_seconds() const {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    }

    // After step `step` (1-based count of finished steps); `status` is e.g. "loss 1.234 icl 0.95".
    void update(std::size_t step, const std::string& status) {
        const double elapsed = elapsed_seconds();
        const double eta = step > first_step_ ? elapsed / (step - first_step_) * (total_ - step) : 0.0;
        char head[96];
        std::snprintf(head, sizeof head, "step %zu/%zu", step, total_);
        const std::string line = std::string(head) + "  " + status + "  elapsed " + format_duration(elapsed) +
                                 "  eta " + format_duration(eta);
        const bool periodic = step % log_every_ == 0 || step == total_;
        if (periodic && log_ != nullptr) *log_ << line << '\n' << std::flush;
        if (quiet_) return;
        if (tty_) {
            const int width = 24;
            const int filled = total_ > 0 ? static_cast<int>(width * step / total_) : width;
            std::fprintf(stderr, "\r[%s%s] %s\033[K", std::string(filled, '#').c_str(),
                         std::string(width - filled, '-').c_str(), line.c_str());
            bar_open_ = step != total_;
            if (!bar_open_) std::fputc('\n', stderr);
            std::fflush(stderr);
        } else if (periodic) {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
    }

    // A line that must not be overwritten by the bar (evaluations, warnings).
    void message(const std::string& line) {
        if (log_ != nullptr) *log_ << line << '\n' << std::flush;
        if (quiet_) return;
        if (tty_) std::fprintf(stderr, "\r\033[K%s\n", line.c_str());
        else std::fprintf(stderr, "%s\n", line.c_str());
        bar_open_ = false;
    }

    // Ends an unfinished progress bar line, so whatever is printed next (an error) starts on its own line.
    void end_bar() {
        if (!bar_open_) return;
        std::fputc('\n', stderr);
        std::fflush(stderr);
        bar_open_ = false;
    }

    static std::string format_duration(double seconds) {
        const long s = static_cast<long>(seconds + 0.5);
        char buffer[32];
        if (s >= 3600) std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", s / 3600, (s / 60) % 60);
        else if (s >= 60) std::snprintf(buffer, sizeof buffer, "%ldm%02lds", s / 60, s % 60);
        else std::snprintf(buffer, sizeof buffer, "%lds", s);
        return buffer;
    }

private:
    std::size_t total_;
    std::size_t first_step_;
    bool quiet_;
    std::ostream* log_;
    std::size_t log_every_;
    bool tty_;
    bool bar_open_ = false;  // a bar line is on the terminal without its newline
    std::chrono::steady_clock::time_point start_;
};

}  // namespace iclab::train
