#pragma once
// Threading policy. iclab parallelizes its own loops (attention, norms, losses) with OpenMP and calls
// OpenBLAS single-threaded: OpenBLAS's pthread workers spin after every call and, on a 2-core machine,
// steal the cores the OpenMP loops need. Measured on the quick induction config (2 layers, width 64,
// B 64 x T 64, 100 steps): OpenMP 2 + OpenBLAS 1 thread 3.4 s; 1 + 1 5.2 s; 1 + 2 5.2 s; 2 + 2 7.9 s.
#include <omp.h>

#include "framework/core/check.hpp"

extern "C" void openblas_set_num_threads(int);

namespace iclab {

// threads <= 0: all cores OpenMP sees (OMP_NUM_THREADS or the machine's).
// threads outside [0, 1024] is bad input (--threads 100000 crashed OpenMP; -1 was taken as "all").
inline int configure_threads(int threads) {
    ICLAB_INPUT_CHECK(threads >= 0 && threads <= 1024, "--threads must be from 0 (all cores) to 1024, got " << threads);
    openblas_set_num_threads(1);
    if (threads > 0) omp_set_num_threads(threads);
    return omp_get_max_threads();
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
