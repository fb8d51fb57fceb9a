#pragma once
// Exclusive locks on a sweep job (flock on locks/<job>.lock), so that two launchers of one sweep — two local pools,
// a local pool and Slurm, a Slurm array submitted twice — never train the same job at once. The launcher takes the
// lock before it starts the job's process and hands the descriptor to it, so the lock lives as long as either.
#include <filesystem>
#include <optional>

namespace iclab::run {

class JobLock {
public:
    // The lock when it is free now; nothing when another process holds it.
    static std::optional<JobLock> try_acquire(const std::filesystem::path& file);
    // Waits for the lock; nothing when a signal of an InterruptScope ended the wait.
    static std::optional<JobLock> acquire_waiting(const std::filesystem::path& file);

    JobLock(JobLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    JobLock& operator=(JobLock&& other) noexcept;
    JobLock(const JobLock&) = delete;
    JobLock& operator=(const JobLock&) = delete;
    ~JobLock();

    int fd() const { return fd_; }  // close-on-exec; a launcher clears that flag in the job's child only

private:
    explicit JobLock(int fd) : fd_(fd) {}
    int fd_ = -1;
};

// True when some process (this one through another descriptor included) holds the lock on `file`.
bool lock_held_elsewhere(const std::filesystem::path& file);

}  // namespace iclab::run
