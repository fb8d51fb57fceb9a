#pragma once
// Allocator policy for long runs of identical steps (issue 23, steady timings). glibc serves allocations above
// M_MMAP_THRESHOLD (128 KiB at start, raised dynamically) with fresh mmap'd pages and returns freed heap tops above
// M_TRIM_THRESHOLD to the system: a buffer freed and allocated again in every step then page-faults again in every
// step, and how often depends on glibc's adaptive threshold, i.e. on the run's history. Fixing both thresholds keeps
// freed memory in the process. Buffers of the training step itself are kept between steps (no allocation in a step);
// this covers the rest (results rows, evaluation, libraries). Call once at startup. Numerics are unaffected.
#include <malloc.h>

namespace iclab {

inline void keep_freed_memory() {
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);   // glibc's maximum on 64-bit: blocks below it come from the heap
    mallopt(M_TRIM_THRESHOLD, 512 * 1024 * 1024);  // give memory back only above 512 MiB of free heap top
}

}  // namespace iclab
