#pragma once
// Threading policy. iclab parallelizes its own loops (attention, norms, losses) with OpenMP and calls
// OpenBLAS single-threaded: OpenBLAS's pthread workers spin after every call and, on a 2-core machine,
// steal the cores the OpenMP loops need. Measured on the quick induction config (2 layers, width 64,
// B 64 x T 64, 100 steps): OpenMP 2 + OpenBLAS 1 thread 3.4 s; 1 + 1 5.2 s; 1 + 2 5.2 s; 2 + 2 7.9 s.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "framework/core/check.hpp"

extern "C" void openblas_set_num_threads(int);

namespace iclab {

// threads <= 0: all cores OpenMP sees (OMP_NUM_THREADS or the machine's).
// Cores not busy with other processes right now: the cores OpenMP sees minus the other runnable tasks
// (/proc/stat procs_running minus the runnable threads of this process), the median of 5 samples 20 ms apart; at least 1.
inline int free_cores() {
    const int cores = omp_get_num_procs();
    std::vector<int> others;
    for (int sample = 0; sample < 5; ++sample) {
        std::ifstream stat("/proc/stat");
        std::string key;
        long running = -1;
        for (std::string line; std::getline(stat, line);)
            if (line.rfind("procs_running ", 0) == 0) running = std::stol(line.substr(14));
        if (running < 0) return cores;  // not Linux: assume a quiet machine
        // Minus this process's own runnable threads (OpenBLAS's pool spins for a while after it starts).
        long own = 0;
        for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
            std::ifstream task_stat(task.path() / "stat");
            std::string text;
            std::getline(task_stat, text);
            const std::size_t close = text.rfind(')');
            if (close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'R') ++own;
        }
        others.push_back(static_cast<int>(std::max(0L, running - own)));
        if (sample + 1 < 5) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::sort(others.begin(), others.end());
    return std::max(1, cores - others[others.size() / 2]);
}

// threads > 0: that many. threads == 0 (the default): OMP_NUM_THREADS if the user set it, else the cores that are
// free now (free_cores). Measured (docs/performance.md): with both cores busy with other work, 2 OpenMP threads ran
// the quick model at 0.07-0.8x the speed of 1 thread, so a loaded machine gets one thread.
// threads outside [0, 1024] is bad input (--threads 100000 crashed OpenMP; -1 was taken as "all").
inline int configure_threads(int threads) {
    ICLAB_INPUT_CHECK(threads >= 0 && threads <= 1024, "--threads must be from 0 (all free cores) to 1024, got " << threads);
    openblas_set_num_threads(1);
    if (threads > 0) omp_set_num_threads(threads);
    else if (std::getenv("OMP_NUM_THREADS") == nullptr) omp_set_num_threads(std::min(omp_get_max_threads(), free_cores()));
    return omp_get_max_threads();
}

// OpenMP's wait policy is read when libgomp loads, so it is set by running the program again. libgomp's default
// spins ~300,000 iterations at every barrier; when other processes share the cores, a spinning thread holds the core
// its partner needs, and the quick model fell to 15K tokens/s with 2 threads where 1 thread ran 210K.
// GOMP_SPINCOUNT=10000 spins briefly, then sleeps: as fast as the default on a quiet machine and 7x faster than it
// at worst under load (docs/performance.md). Left alone when the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, or
// under LD_PRELOAD (sanitizers, profilers). Call first thing in main().
inline void reexec_with_wait_policy(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || std::getenv("LD_PRELOAD")) return;
    ::setenv("GOMP_SPINCOUNT", "10000", 1);
    ::execv("/proc/self/exe", argv);  // returns only on failure: then run on with libgomp's default
}

// Runs a scope with one OpenMP thread. For work made of many tiny forward passes (B = 1): too small to share,
// and each of their many parallel regions ends in a barrier that waits for the other thread to be scheduled.
// Measured for iclca_induction's quick config (1000 pairs, M_new one pair at a time) on the shared 2-core
// machine: 64 s with 2 threads, 0.9 s with 1. Results do not depend on the thread count (tests/test_gemm.cpp).
class SingleThreaded {
public:
    SingleThreaded() : threads_(omp_get_max_threads()) { omp_set_num_threads(1); }
    ~SingleThreaded() { omp_set_num_threads(threads_); }
    SingleThreaded(const SingleThreaded&) = delete;
    SingleThreaded& operator=(const SingleThreaded&) = delete;

private:
    int threads_;
};

}  // namespace iclab
