// Per-core GEMM rate of the two kernels iclab can use (issue 23, docs/performance.md): OpenBLAS (whatever core it
// picked: OPENBLAS_CORETYPE or its own detection) and iclab's register-blocked kernel (framework/nn/small_gemm.hpp,
// compiled with this build's flags), one thread, on the products of the configs' training steps (the linear layers'
// and the attention's per-(batch, head) ones) and a square one.
// A measurement, not a test: cmake --build build --target iclab_gemm_kernels && build/iclab_gemm_kernels [REPEATS]
// Alternating repetitions (OpenBLAS, blocked, OpenBLAS, ...), timed in thread CPU time; prints min / median GFLOP/s per
// kernel as a markdown table, and the largest |difference| between the two results relative to max |C| (they round
// differently).
#include <cblas.h>

#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/io/provenance.hpp"
#include "framework/nn/small_gemm.hpp"

namespace {

struct Shape {
    const char* what;
    int m, n, k;
    bool ta, tb;
};

// CPU time of this thread (CLOCK_THREAD_CPUTIME_ID), not wall time: on a machine shared with other jobs the time the
// thread waits for a core is not the kernel's (both kernels run on the calling thread: OpenBLAS with 1 thread).
double seconds_of(const std::function<void()>& f, int calls) {
    timespec start{}, stop{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    for (int i = 0; i < calls; ++i) f();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &stop);
    return (static_cast<double>(stop.tv_sec - start.tv_sec) + 1e-9 * static_cast<double>(stop.tv_nsec - start.tv_nsec)) / calls;
}

// alpha and beta as the library passes them (gemm.hpp: values known only at run time), not constants the compiler could
// specialize the kernel for
volatile float alpha_one = 1.0f, beta_zero = 0.0f;

std::string cpu_model() {  // /proc/cpuinfo's "model name", and whether the CPU has AVX-512
    std::ifstream in("/proc/cpuinfo");
    std::string line, model = "unknown", flags;
    while (std::getline(in, line)) {
        if (model == "unknown" && line.rfind("model name", 0) == 0) model = line.substr(line.find(':') + 2);
        if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
    }
    return model + (flags.find(" avx512f") != std::string::npos ? " (AVX-512)" : " (no AVX-512)");
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    openblas_set_num_threads(1);  // one core each
    const Shape shapes[] = {
        {"paper: QKV forward", 4096, 384, 128, false, false},
        {"paper: QKV d_in", 4096, 128, 384, false, true},
        {"paper: QKV d_W", 128, 384, 4096, true, false},
        {"paper: W_o forward", 4096, 128, 128, false, false},
        {"paper: W_o d_in", 4096, 128, 128, false, true},
        {"paper: W_o d_W", 128, 128, 4096, true, false},
        {"cpu2: QKV forward", 1920, 192, 64, false, false},
        {"cpu2: MLP down forward", 1920, 64, 256, false, false},
        {"cpu2: MLP up forward", 1920, 256, 64, false, false},
        {"cpu2: MLP down d_in", 1920, 256, 64, false, true},
        {"cpu2: MLP up d_W", 64, 256, 1920, true, false},
        {"square", 1024, 1024, 1024, false, false},
        // the per-(batch, head) attention products (full products here; the models skip the causal triangle's zeros)
        {"quick/paper: scores q kᵀ per head", 64, 64, 32, false, true},
        {"quick/paper: S v per head", 64, 32, 64, false, false},
        {"quick/paper: d k = dSᵀ q per head", 64, 32, 64, true, false},
        {"cpu2: scores q kᵀ per head", 30, 20, 32, false, true},
    };
    iclab::Rng rng(1);
    std::printf("CPU: %s; OpenBLAS core: %s; 1 thread; %d alternating repetitions\n\n", cpu_model().c_str(),
                iclab::io::openblas_core().c_str(), repeats);
    std::printf("| product | m x n x k | op | OpenBLAS GFLOP/s min / median | blocked GFLOP/s min / median | blocked / OpenBLAS "
                "(median) | max |diff| / max |C| |\n|---|---|---|---|---|---|---|\n");
    for (const Shape& s : shapes) {
        const int lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
        std::vector<float> a(static_cast<std::size_t>(s.m) * s.k), b(static_cast<std::size_t>(s.k) * s.n);
        std::vector<float> c_blas(static_cast<std::size_t>(s.m) * s.n), c_blocked(c_blas.size());
        for (auto& x : a) x = static_cast<float>(rng.normal());
        for (auto& x : b) x = static_cast<float>(rng.normal());
        const auto blas = [&] {
            cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                        a.data(), lda, b.data(), ldb, 0.0f, c_blas.data(), s.n);
        };
        const auto blocked = [&] {
            iclab::nn::small_gemm_blocked(c_blocked.data(), s.n, a.data(), lda, b.data(), ldb, s.m, s.n, s.k, s.ta, s.tb,
                                          static_cast<float>(alpha_one), static_cast<float>(beta_zero));
        };
        const double flops = 2.0 * s.m * s.n * static_cast<double>(s.k);
        const int calls = std::max(1, static_cast<int>(2e9 / flops));  // ~10-20 ms per measurement
        blas();
        blocked();
        std::vector<double> rate_blas, rate_blocked;
        for (int r = 0; r < repeats; ++r) {
            rate_blas.push_back(flops / seconds_of(blas, calls) * 1e-9);
            rate_blocked.push_back(flops / seconds_of(blocked, calls) * 1e-9);
        }
        double diff = 0.0, scale = 0.0;
        for (std::size_t i = 0; i < c_blas.size(); ++i) {
            diff = std::max(diff, static_cast<double>(std::fabs(c_blas[i] - c_blocked[i])));
            scale = std::max(scale, static_cast<double>(std::fabs(c_blas[i])));
        }
        std::printf("| %s | %d x %d x %d | %c%c | %.0f / %.0f | %.0f / %.0f | %.2f | %.1e |\n", s.what, s.m, s.n, s.k,
                    s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', *std::min_element(rate_blas.begin(), rate_blas.end()), median(rate_blas),
                    *std::min_element(rate_blocked.begin(), rate_blocked.end()), median(rate_blocked),
                    median(rate_blocked) / median(rate_blas), diff / scale);
    }
    return 0;
}
