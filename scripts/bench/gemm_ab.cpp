// The blocked GEMM kernel (framework/nn/small_gemm.hpp) of this checkout against the same kernel at another commit
// (namespace base_nn, written by scripts/bench/gemm_ab.sh) and against OpenBLAS, on one thread, in one process: per
// repetition OpenBLAS, base, this, each timed in thread CPU time, so that the three share the machine's state of the
// moment (the load of other processes moved the rates of scripts/bench/gemm_kernels.cpp's separate binaries by 2x
// between minutes). Prints per product the median GFLOP/s of each and, per repetition, OpenBLAS's time over each
// kernel's (min / median), this kernel's speed over base's (median), and whether the two kernels' results are equal
// byte for byte (they must be: the kernel's order of summation is pinned, small_gemm.hpp).
//   gemm_ab REPEATS BASE_NAME MARCH   (run by scripts/bench/gemm_ab.sh)
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <vector>

#include "small_gemm_base.hpp"
#include "framework/nn/small_gemm.hpp"

namespace {

// m × n × k, op(A), op(B); ldb: op(B)'s row stride when the product is one thread's column cell of a wider one
// (gemm.hpp blocked_compute splits a weight gradient by columns: n / 2 columns per thread at 2 threads)
struct Shape {
    const char* what;
    int m, n, k;
    bool ta, tb;
    int ldb;  // 0: the product's own
};

double seconds_of(const std::function<void()>& f, int calls) {  // thread CPU time per call
    timespec start{}, stop{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    for (int i = 0; i < calls; ++i) f();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &stop);
    return (static_cast<double>(stop.tv_sec - start.tv_sec) + 1e-9 * static_cast<double>(stop.tv_nsec - start.tv_nsec)) / calls;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

volatile float alpha_one = 1.0f, beta_zero = 0.0f;  // run-time values, as the library passes them

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
    openblas_set_num_threads(1);
    // the linear layers' products of a training step (forward, d_in = d_y Wᵀ, d_W = xᵀ d_y) of the quick (C 64) and paper
    // (C 128) induction_head models at 64 × 64 tokens and the cpu2 prefix_vs_causal model (C 64, FFN 256) at 64 × 30
    const Shape shapes[] = {
        {"quick: QKV forward", 4096, 192, 64, false, false, 0},   {"quick: QKV d_in", 4096, 64, 192, false, true, 0},
        {"quick: QKV d_W", 64, 192, 4096, true, false, 0},        {"quick: W_o forward", 4096, 64, 64, false, false, 0},
        {"quick: W_o d_in", 4096, 64, 64, false, true, 0},        {"quick: W_o d_W", 64, 64, 4096, true, false, 0},
        {"paper: QKV forward", 4096, 384, 128, false, false, 0},  {"paper: QKV d_in", 4096, 128, 384, false, true, 0},
        {"paper: QKV d_W", 128, 384, 4096, true, false, 0},       {"paper: W_o forward", 4096, 128, 128, false, false, 0},
        {"paper: W_o d_in", 4096, 128, 128, false, true, 0},      {"paper: W_o d_W", 128, 128, 4096, true, false, 0},
        {"cpu2: QKV forward", 1920, 192, 64, false, false, 0},    {"cpu2: QKV d_in", 1920, 64, 192, false, true, 0},
        {"cpu2: QKV d_W", 64, 192, 1920, true, false, 0},         {"cpu2: W_o forward", 1920, 64, 64, false, false, 0},
        {"cpu2: W_o d_in", 1920, 64, 64, false, true, 0},         {"cpu2: W_o d_W", 64, 64, 1920, true, false, 0},
        {"cpu2: MLP up forward", 1920, 256, 64, false, false, 0}, {"cpu2: MLP up d_in", 1920, 64, 256, false, true, 0},
        {"cpu2: MLP up d_W", 64, 256, 1920, true, false, 0},      {"cpu2: MLP down forward", 1920, 64, 256, false, false, 0},
        {"cpu2: MLP down d_in", 1920, 256, 64, false, true, 0},   {"cpu2: MLP down d_W", 256, 64, 1920, true, false, 0},
        // one thread's column cell of a weight gradient at 2 threads (what a training step runs)
        {"quick: QKV d_W, cell", 64, 96, 4096, true, false, 192}, {"quick: W_o d_W, cell", 64, 32, 4096, true, false, 64},
        {"paper: QKV d_W, cell", 128, 192, 4096, true, false, 384}, {"paper: W_o d_W, cell", 128, 64, 4096, true, false, 128},
        {"cpu2: QKV d_W, cell", 64, 96, 1920, true, false, 192},  {"cpu2: MLP up d_W, cell", 64, 128, 1920, true, false, 256},
        {"cpu2: MLP down d_W, cell", 256, 32, 1920, true, false, 64},
        // the attention's per-(batch, head) products (full products here; the models skip the causal triangle's zeros)
        {"quick/paper: scores q kᵀ per head", 64, 64, 32, false, true, 0}, {"quick/paper: S v per head", 64, 32, 64, false, false, 0},
        {"quick/paper: d k = dSᵀ q per head", 64, 32, 64, true, false, 0}, {"cpu2: scores q kᵀ per head", 30, 20, 32, false, true, 0},
        {"square", 1024, 1024, 1024, false, false, 0},
    };
    std::mt19937 gen(1);
    std::normal_distribution<float> normal;
    std::printf("base: %s, this: the checkout; -march=%s; 1 thread; %d alternating repetitions\n\n", argc > 2 ? argv[2] : "?",
                argc > 3 ? argv[3] : "?", repeats);
    std::printf("| product | m × n × k, op | GFLOP/s median: OpenBLAS / base / this | base ÷ OpenBLAS min / median | this ÷ "
                "OpenBLAS min / median | this ÷ base median | bits equal |\n|---|---|---|---|---|---|---|\n");
    for (const Shape& s : shapes) {
        const int lda = s.ta ? s.m : s.k, ldb = s.ldb > 0 ? s.ldb : (s.tb ? s.k : s.n);
        std::vector<float> a(static_cast<std::size_t>(s.ta ? s.k : s.m) * lda), b(static_cast<std::size_t>(s.tb ? s.n : s.k) * ldb);
        for (auto& x : a) x = normal(gen);
        for (auto& x : b) x = normal(gen);
        std::vector<float> c_blas(static_cast<std::size_t>(s.m) * s.n), c_base(c_blas.size()), c_this(c_blas.size());
        const auto blas = [&] {
            cblas_sgemm(CblasRowMajor, s.ta ? CblasTrans : CblasNoTrans, s.tb ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f,
                        a.data(), lda, b.data(), ldb, 0.0f, c_blas.data(), s.n);
        };
        const auto base = [&] {
            base_nn::small_gemm_blocked(c_base.data(), s.n, a.data(), lda, b.data(), ldb, s.m, s.n, s.k, s.ta, s.tb,
                                        static_cast<float>(alpha_one), static_cast<float>(beta_zero));
        };
        const auto current = [&] {
            iclab::nn::small_gemm_blocked(c_this.data(), s.n, a.data(), lda, b.data(), ldb, s.m, s.n, s.k, s.ta, s.tb,
                                          static_cast<float>(alpha_one), static_cast<float>(beta_zero));
        };
        const double flops = 2.0 * s.m * s.n * static_cast<double>(s.k);
        const int calls = std::max(1, static_cast<int>(1.5e9 / flops));  // ~20 ms per measurement
        blas();
        base();
        current();
        const bool same = std::memcmp(c_base.data(), c_this.data(), c_base.size() * sizeof(float)) == 0;
        std::vector<double> rate_blas, rate_base, rate_this, base_vs_blas, this_vs_blas, this_vs_base;
        for (int r = 0; r < repeats; ++r) {
            const double t_blas = seconds_of(blas, calls), t_base = seconds_of(base, calls), t_this = seconds_of(current, calls);
            rate_blas.push_back(flops / t_blas * 1e-9);
            rate_base.push_back(flops / t_base * 1e-9);
            rate_this.push_back(flops / t_this * 1e-9);
            base_vs_blas.push_back(t_blas / t_base);
            this_vs_blas.push_back(t_blas / t_this);
            this_vs_base.push_back(t_base / t_this);
        }
        std::printf("| %s | %d × %d × %d %c%c | %.0f / %.0f / %.0f | %.2f / %.2f | %.2f / %.2f | %.2f | %s |\n", s.what, s.m,
                    s.n, s.k, s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', median(rate_blas), median(rate_base), median(rate_this),
                    *std::min_element(base_vs_blas.begin(), base_vs_blas.end()), median(base_vs_blas),
                    *std::min_element(this_vs_blas.begin(), this_vs_blas.end()), median(this_vs_blas), median(this_vs_base),
                    same ? "yes" : "NO");
        std::fflush(stdout);
    }
    return 0;
}
