#include "framework/io/hdf5_guard.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <new>
#include <string>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/io/results_file.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define ICLAB_HDF5_GUARD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ICLAB_HDF5_GUARD_ASAN 1
#endif
#endif

namespace iclab::io {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::size_t kRememberedBytes = std::size_t{16} << 20;  // images this small are remembered once checked,
constexpr std::size_t kRememberedTotal = std::size_t{64} << 20;  // up to this many bytes in all
constexpr std::size_t kRemembered = 32;
// The child's exit codes: 0 read everything; kRefused its message follows on the pipe; kOutOfMemory bad_alloc.
constexpr int kRefused = 3, kOutOfMemory = 4, kOtherException = 5;

struct Remembered {
    std::shared_ptr<const FileImage> image;
    std::string refusal;  // empty: passed
};

std::mutex guard_mutex;
Hdf5CheckLimits current_limits;
bool remember_checked = true;
bool check_in_process = false;
std::deque<Remembered> remembered;
std::size_t remembered_bytes = 0;

std::string describe_errno() { return std::strerror(errno); }

#ifndef ICLAB_HDF5_GUARD_ASAN
// Virtual memory of this process now (bytes), for the child's RLIMIT_AS.
double virtual_bytes() {
    std::ifstream statm("/proc/self/statm");
    double pages = 0;
    statm >> pages;
    return pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
}
#endif

// In the child: limits, silence, read everything, _exit. Never returns.
[[noreturn]] void child_check(const std::shared_ptr<const FileImage>& image, double cpu_seconds, int message_fd) {
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd >= 0) {  // HDF5's or the C library's own messages ("free(): invalid pointer") are not the user's
        ::dup2(null_fd, 1);
        ::dup2(null_fd, 2);
    }
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // a crash leaves no core file in the user's folder
    const auto cpu = static_cast<rlim_t>(std::ceil(cpu_seconds));
    const rlimit cpu_limit{cpu, cpu + 1};  // SIGXCPU at the soft limit, SIGKILL a second later
    ::setrlimit(RLIMIT_CPU, &cpu_limit);
#ifndef ICLAB_HDF5_GUARD_ASAN
    const auto memory = static_cast<rlim_t>(virtual_bytes() + 2.0 * kGiB + 4.0 * static_cast<double>(image->bytes.size()));
    const rlimit memory_limit{memory, memory};
    ::setrlimit(RLIMIT_AS, &memory_limit);
#endif
    int code = 0;
    std::string message;
    try {
        const ResultsReader reader(image, ResultsReader::Unchecked{});
        reader.read_everything();
    } catch (const InputError& error) {
        code = kRefused;
        message = error.what();
    } catch (const std::bad_alloc&) {
        code = kOutOfMemory;
    } catch (...) {
        code = kOtherException;
    }
    for (std::size_t written = 0; written < message.size();) {
        const ssize_t count = ::write(message_fd, message.data() + written, message.size() - written);
        if (count <= 0) break;
        written += static_cast<std::size_t>(count);
    }
    ::_exit(code);
}

// The refusal for a child that ended by `status` (waitpid), or "" when it read everything.
std::string outcome_of(const std::string& file, int status, bool timed_out, double cpu_seconds, double wall_seconds,
                       double child_cpu_seconds, const std::string& message) {
    const std::string damaged = file + ": damaged HDF5 file (the HDF5 library ";
    // A child that loops is stopped by RLIMIT_CPU; the wall-clock limit only catches one that is blocked or starved of
    // CPU, which is not the file's fault.
    if (timed_out)
        throw Error("the check of " + file + " in a child process did not finish in " + std::to_string(std::lround(wall_seconds)) +
                    " s of wall-clock time (" + std::to_string(std::lround(child_cpu_seconds)) + " s of CPU): a blocked child or a busy machine; try again");
    if (WIFEXITED(status)) {
        const int code = WEXITSTATUS(status);
        if (code == 0) return "";
        if (code == kRefused) return message.empty() ? file + ": refused by the HDF5 check" : message;
        if (code == kOutOfMemory) return damaged + "ran out of the memory allowed for reading it)";
        // AddressSanitizer reports a SEGV in the child and exits 1
        return damaged + "crashed reading it: exit status " + std::to_string(code) + ")";
    }
    const int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (signal == SIGXCPU || signal == SIGKILL)
        return damaged + "did not finish reading it in " + std::to_string(std::lround(cpu_seconds)) + " s of CPU)";
    if (signal == SIGSEGV || signal == SIGBUS || signal == SIGABRT || signal == SIGFPE || signal == SIGILL ||
        signal == SIGSYS || signal == SIGTRAP)
        return damaged + "crashed reading it: " + strsignal(signal) + ")";
    throw Error("the check of " + file + " in a child process was stopped by signal " + std::to_string(signal) +
                " (" + strsignal(signal) + ")");
}

// Runs child_check and waits for it: the refusal, or "" when the image may be read here.
std::string check_in_child(const std::shared_ptr<const FileImage>& image, const Hdf5CheckLimits& limits) {
    const double gib = static_cast<double>(image->bytes.size()) / kGiB;
    double per_gib = limits.cpu_seconds_per_gib;
#ifdef ICLAB_HDF5_GUARD_ASAN
    per_gib *= 4.0;  // instrumented checksums and copies
#endif
    const double cpu_seconds = std::max(1.0, limits.cpu_seconds + per_gib * gib);
    const double wall_seconds = limits.wall_factor * cpu_seconds + limits.wall_extra_seconds;
    int fds[2];
    ICLAB_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "cannot check " << image->path.string() << ": pipe failed (" << describe_errno() << ")");
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(fds[0]);
        child_check(image, cpu_seconds, fds[1]);
    }
    ::close(fds[1]);
    if (pid < 0) {
        ::close(fds[0]);
        throw Error("cannot check " + image->path.string() + ": fork failed (" + describe_errno() + ")");
    }
    // The pipe closes when the child ends (its only writer), whatever way it ends: wait on it with a deadline.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wall_seconds);
    std::string message;
    bool timed_out = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd wait_for{fds[0], POLLIN, 0};
        const int ready = ::poll(&wait_for, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
        if (ready < 0 && errno != EINTR) break;
        if (ready <= 0) continue;
        char buffer[1024];
        const ssize_t count = ::read(fds[0], buffer, sizeof buffer);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        if (message.size() < 4096) message.append(buffer, static_cast<std::size_t>(count));
    }
    ::close(fds[0]);
    if (timed_out) ::kill(pid, SIGKILL);
    int status = 0;
    rusage usage{};
    while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    const double child_cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                             1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    return outcome_of(image->path.string(), status, timed_out, cpu_seconds, wall_seconds, child_cpu, message);
}

const Remembered* find_remembered(const FileImage& image) {
    for (const Remembered& entry : remembered)
        if (entry.image->path == image.path && entry.image->bytes == image.bytes) return &entry;
    return nullptr;
}

}  // namespace

std::shared_ptr<const FileImage> read_file_image(const std::filesystem::path& path) {
    const std::string file = path.string();
    // O_NONBLOCK: a FIFO put in the file's place does not block the open; it is refused below.
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    ICLAB_INPUT_CHECK(fd >= 0, file << " is not a file (" << describe_errno() << ")");
    auto image = std::make_shared<FileImage>();
    image->path = path;
    try {
        struct stat info {};
        ICLAB_INPUT_CHECK(::fstat(fd, &info) == 0 && S_ISREG(info.st_mode), file << " is not a file");
        const double size = static_cast<double>(info.st_size), available = available_memory_gib() * kGiB;
        ICLAB_INPUT_CHECK(!(size > available / 2), file << " is " << size / kGiB << " GiB, more than half the memory available ("
                                                         << available / kGiB << " GiB): iclab reads HDF5 files into memory");
        image->bytes.resize(static_cast<std::size_t>(info.st_size));
        std::size_t done = 0;
        while (done < image->bytes.size()) {
            const ssize_t count = ::read(fd, image->bytes.data() + done, image->bytes.size() - done);
            if (count < 0 && errno == EINTR) continue;
            ICLAB_INPUT_CHECK(count >= 0, "cannot read " << file << ": " << describe_errno());
            ICLAB_INPUT_CHECK(count > 0, file << " became shorter while it was read: refused");
            done += static_cast<std::size_t>(count);
        }
        char extra = 0;
        ICLAB_INPUT_CHECK(::read(fd, &extra, 1) == 0, file << " grew while it was read: refused");
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    return image;
}

void check_hdf5_image(const std::shared_ptr<const FileImage>& image) {
    Hdf5CheckLimits limits;
    {
        const std::lock_guard<std::mutex> lock(guard_mutex);
        if (const Remembered* entry = remember_checked ? find_remembered(*image) : nullptr) {
            if (entry->refusal.empty()) return;
            throw InputError(entry->refusal);
        }
        limits = current_limits;
    }
    std::string refusal;
    if (check_in_process) {  // fuzzing only (set_hdf5_check_in_process)
        try {
            ResultsReader(image, ResultsReader::Unchecked{}).read_everything();
        } catch (const InputError& error) {
            refusal = error.what();
        }
    } else {
        refusal = check_in_child(image, limits);
    }
    {
        const std::lock_guard<std::mutex> lock(guard_mutex);
        if (remember_checked && image->bytes.size() <= kRememberedBytes) {
            remembered.push_back({image, refusal});
            remembered_bytes += image->bytes.size();
            while (remembered.size() > kRemembered || remembered_bytes > kRememberedTotal) {
                remembered_bytes -= remembered.front().image->bytes.size();
                remembered.pop_front();
            }
        }
    }
    if (!refusal.empty()) throw InputError(refusal);
}

std::shared_ptr<const FileImage> read_checked_hdf5_image(const std::filesystem::path& path) {
    std::shared_ptr<const FileImage> image = read_file_image(path);
    check_hdf5_image(image);
    return image;
}

void set_hdf5_check_in_process(bool in_process) {
    const std::lock_guard<std::mutex> lock(guard_mutex);
    check_in_process = in_process;
}

void set_hdf5_check_limits(const Hdf5CheckLimits& limits, bool remember) {
    const std::lock_guard<std::mutex> lock(guard_mutex);
    current_limits = limits;
    remember_checked = remember;
    if (!remember) {
        remembered.clear();
        remembered_bytes = 0;
    }
}

}  // namespace iclab::io
