#include "framework/workflow/job_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "framework/core/check.hpp"
#include "framework/core/interrupt.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

int open_lock_file(const fs::path& file) {
    fs::create_directories(file.parent_path());
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    ICLAB_CHECK(fd >= 0, "cannot open the lock file " << file.string() << ": " << std::strerror(errno));
    return fd;
}

}  // namespace

std::optional<JobLock> JobLock::try_acquire(const fs::path& file) {
    const int fd = open_lock_file(file);
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return JobLock(fd);
    const int error = errno;
    ::close(fd);
    ICLAB_CHECK(error == EWOULDBLOCK, "cannot lock " << file.string() << ": " << std::strerror(error));
    return std::nullopt;
}

std::optional<JobLock> JobLock::acquire_waiting(const fs::path& file) {
    const int fd = open_lock_file(file);
    for (;;) {
        if (::flock(fd, LOCK_EX) == 0) return JobLock(fd);
        const int error = errno;
        if (error == EINTR && !interrupt_requested()) continue;
        ::close(fd);
        ICLAB_CHECK(error == EINTR, "cannot lock " << file.string() << ": " << std::strerror(error));
        return std::nullopt;
    }
}

JobLock& JobLock::operator=(JobLock&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}

JobLock::~JobLock() {
    if (fd_ >= 0) ::close(fd_);  // closing the last descriptor of the open file releases the flock
}

bool lock_held_elsewhere(const fs::path& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return false;  // never locked
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return held;
}

}  // namespace iclab::run
