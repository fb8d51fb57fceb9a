#pragma once
// Where a training step's time goes, by kind of operation (`iclab bench`'s profile; issue 23).
// Off by default: a training run pays one predictable branch per scope. `iclab bench` switches it on for a
// separate counted pass, so its timed passes pay nothing.
//
// Times are exclusive: a scope's time excludes the scopes opened inside it (a linear layer's bias add is
// "elementwise", its GEMM "gemm_large"). A scope opened inside an OpenMP parallel region (the per-(batch, head)
// GEMMs and RoPE of attention) counts its duration divided by the team size, the same wall-equivalent as
// nn::GemmCounter, and that much is taken off the enclosing serial scope. Serial scopes nest up to kDepth.
//
// The clock: wall time (omp_get_wtime) unless `thread_cpu_clock` is set (`iclab bench` sets it when
// ICLAB_PROFILE_CLOCK=thread_cpu): then the calling thread's CPU time, which other processes on a loaded machine do
// not inflate (issue 44: the profile of a 1-thread step on a shared host). Meant for --threads 1: in a parallel
// region each thread reads its own CPU clock, and the serial scopes' time is the main thread's.
#include <omp.h>
#include <time.h>

#include <array>
#include <cstddef>

namespace iclab::profile {

enum class Kind : int {
    gemm_large,   // products over the whole batch (projections, MLP, weight gradients)
    gemm_small,   // products per (batch, head) inside attention
    attention,    // attention outside its GEMMs: gathers, masks, softmax, feature maps, normalizer
    rope,         // rotary encoding of q, k (and its transpose in backward)
    norm,         // LayerNorm forward and backward
    activation,   // GELU forward and backward
    elementwise,  // bias adds and bias gradients, other per-element passes inside layers
    loss,         // cross-entropy or squared error, forward and backward
    optimizer,    // gradient clipping and the optimizer step
    input,        // embedding / read-in gather, position embeddings, their gradients
    allocation,   // buffer resizing and zeroing of gradients and backward scratch
    count
};

inline const char* kind_name(Kind kind) {
    static const char* const names[] = {"gemm_large", "gemm_small", "attention", "rope",  "norm",      "activation",
                                        "elementwise", "loss",      "optimizer", "input", "allocation"};
    return names[static_cast<int>(kind)];
}

struct Profile {
    static constexpr int kKinds = static_cast<int>(Kind::count);
    static constexpr int kDepth = 16;
    bool enabled = false;
    bool thread_cpu_clock = false;  // the clock of the scopes (see the top of this file)
    std::array<double, kKinds> seconds{};
    std::array<std::size_t, kKinds> calls{};
    // open serial scopes: their start and the time of the scopes inside them so far
    std::array<double, kDepth> child_seconds{};
    int depth = 0;

    void reset() {
        seconds.fill(0.0);
        calls.fill(0);
        child_seconds.fill(0.0);
        depth = 0;
    }
    double total() const {
        double sum = 0.0;
        for (double s : seconds) sum += s;
        return sum;
    }
};
inline Profile profiler;  // the process's one profile (C++17 inline variable)

// Seconds on the profile's clock: wall, or the calling thread's CPU time (Profile::thread_cpu_clock).
inline double now() {
    if (!profiler.thread_cpu_clock) return omp_get_wtime();
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// RAII: `profile::Scope scope(profile::Kind::norm);` at the top of a function.
class Scope {
public:
    explicit Scope(Kind kind) : kind_(kind) {
        if (!profiler.enabled) return;
        active_ = true;
        parallel_ = omp_in_parallel() != 0;
        if (!parallel_) {
            if (profiler.depth < Profile::kDepth) profiler.child_seconds[profiler.depth] = 0.0;
            ++profiler.depth;
        }
        start_ = now();
    }
    ~Scope() {
        if (!active_) return;
        const double elapsed = now() - start_;
        const int k = static_cast<int>(kind_);
        if (parallel_) {
            const double wall = elapsed / omp_get_num_threads();
#pragma omp critical(iclab_profile)
            {
                profiler.seconds[k] += wall;
                ++profiler.calls[k];
                if (profiler.depth > 0 && profiler.depth <= Profile::kDepth) profiler.child_seconds[profiler.depth - 1] += wall;
            }
            return;
        }
        --profiler.depth;
        const double own = profiler.depth < Profile::kDepth ? elapsed - profiler.child_seconds[profiler.depth] : elapsed;
        profiler.seconds[k] += own;
        ++profiler.calls[k];
        if (profiler.depth > 0 && profiler.depth <= Profile::kDepth) profiler.child_seconds[profiler.depth - 1] += elapsed;
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

private:
    Kind kind_;
    bool active_ = false, parallel_ = false;
    double start_ = 0.0;
};

}  // namespace iclab::profile
