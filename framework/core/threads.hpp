#pragma once
// Threading policy. iclab parallelizes its own loops (attention, norms, losses) with OpenMP and calls
// OpenBLAS single-threaded: OpenBLAS's pthread workers spin after every call and, on a 2-core machine,
// steal the cores the OpenMP loops need. Measured on the quick induction config (2 layers, width 64,
// B 64 x T 64, 100 steps): OpenMP 2 + OpenBLAS 1 thread 3.4 s; 1 + 1 5.2 s; 1 + 2 5.2 s; 2 + 2 7.9 s.
#include <omp.h>

extern "C" void openblas_set_num_threads(int);

namespace iclab {

// threads <= 0: all cores OpenMP sees (OMP_NUM_THREADS or the machine's).
inline int configure_threads(int threads) {
    openblas_set_num_threads(1);
    if (threads > 0) omp_set_num_threads(threads);
    return omp_get_max_threads();
}

}  // namespace iclab
