// LD_PRELOAD interposer that logs every OpenMP parallel region (GOMP_parallel) of a run: its start and end (µs,
// CLOCK_MONOTONIC) and the offset of its outlined body in the binary, for region_trace.py (issue 23: where the 2-thread
// step loses against the 1-thread step; docs/performance.md). A measurement tool, not part of iclab's build.
//
//   g++ -O2 -shared -fPIC scripts/bench/region_trace/region_trace.cpp -o /tmp/region_trace.so -ldl
//   GOMP_SPINCOUNT=10000 GOMP_TRACE_OUT=/tmp/trace.txt LD_PRELOAD=/tmp/region_trace.so \
//       build/iclab bench configs/quick/induction_head.yaml --threads 2 --warmup 2 --iters 10
//   /usr/bin/python3 scripts/bench/region_trace/region_trace.py build/iclab /tmp/trace.txt
//
// iclab does not re-execute itself with GOMP_SPINCOUNT under LD_PRELOAD (framework/core/threads.hpp): set it as above.
#include <dlfcn.h>
#include <link.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
struct Region {
    double start, end;
    void* body;
};
std::vector<Region>* regions = nullptr;
double now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}
using GompParallel = void (*)(void (*)(void*), void*, unsigned, unsigned);
}  // namespace

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned threads, unsigned flags) {
    static GompParallel real = reinterpret_cast<GompParallel>(dlsym(RTLD_NEXT, "GOMP_parallel"));
    if (regions == nullptr) {
        regions = new std::vector<Region>();
        regions->reserve(1 << 22);
    }
    const double start = now_us();
    real(fn, data, threads, flags);
    if (regions->size() < regions->capacity()) regions->push_back({start, now_us(), reinterpret_cast<void*>(fn)});
}

__attribute__((destructor)) static void write_trace() {
    if (regions == nullptr) return;
    const char* path = std::getenv("GOMP_TRACE_OUT");
    FILE* out = std::fopen(path != nullptr ? path : "/tmp/gomp_trace.txt", "w");
    if (out == nullptr) return;
    for (const Region& r : *regions) {
        Dl_info info{};
        dladdr(r.body, &info);
        std::fprintf(out, "%.3f %.3f %lx %s\n", r.start, r.end,
                     static_cast<unsigned long>(static_cast<char*>(r.body) - static_cast<char*>(info.dli_fbase)),
                     info.dli_fname != nullptr ? info.dli_fname : "?");
    }
    std::fclose(out);
}
