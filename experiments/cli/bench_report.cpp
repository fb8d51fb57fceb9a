// Timing and reporting of `iclab bench`, shared by its models (bench_common.hpp).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "experiments/cli/bench_common.hpp"
#include "framework/core/check.hpp"
#include "framework/core/profile.hpp"
#include "framework/core/measure.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/run/config_keys.hpp"

namespace iclab::cli {

using namespace iclab::run;

namespace {

// Wall time, or with ICLAB_PROFILE_CLOCK=thread_cpu the calling thread's CPU time (profile.hpp): then every timing of
// the bench (steps, profile, square products) is CPU time, which a loaded host does not inflate; for --threads 1.
double now_seconds() {
    if (profile::profiler.thread_cpu_clock) return profile::now();
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Durations of `iters` calls of `work` after `warmup` untimed ones.
std::vector<double> time_calls(int warmup, int iters, const std::function<void()>& work) {
    for (int i = 0; i < warmup; ++i) work();
    std::vector<double> seconds;
    for (int i = 0; i < iters; ++i) {
        const double start = now_seconds();
        work();
        seconds.push_back(now_seconds() - start);
    }
    return seconds;
}

std::string load_average() {
    std::ifstream file("/proc/loadavg");
    std::string one, five, fifteen;
    if (!(file >> one >> five >> fifteen)) return "unknown";
    return one + " " + five + " " + fifteen;
}

// One row of the printed and stored table.
struct Metric {
    std::string name;
    double value;
    std::string unit;
};

// The model's GEMMs of one training step, by shape, from the counter.
struct ShapeRow {
    nn::GemmShapeKey key;
    nn::GemmTally per_step;
};

}  // namespace

std::string bench_model_line(const model::ModelSpec& spec, std::size_t parameter_count, const char* dtype) {
    std::ostringstream line;
    line << spec.layers << " layers" << (spec.shared_layers ? " (one shared block)" : "") << ", width " << spec.width << ", "
         << spec.heads << " heads, MLP " << (spec.mlp ? "on" : "off") << ", "
         << (spec.attention == model::ModelSpec::Attention::softmax ? "softmax" : nn::feature_map_name(spec.feature_map)) << ", "
         << parameter_count << " parameters, " << dtype;
    return line.str();
}

void describe_attention(BenchSubject& subject, const model::ModelSpec& spec, std::size_t time) {
    using Spec = model::ModelSpec;
    const bool softmax = spec.attention == Spec::Attention::softmax;
    const bool recurrent = !softmax && spec.mask == nn::MaskKind::causal && !spec.isolate_queries &&
                           (spec.attention_form == Spec::AttentionForm::recurrent ||
                            (spec.attention_form == Spec::AttentionForm::automatic && time >= spec.recurrent_min_time));
    subject.attention_form = softmax ? "softmax" : recurrent ? "recurrent" : "quadratic";
    subject.attention_note = softmax ? "softmax (masked, exact)" : recurrent ? "recurrent (Eq. 19)" : "quadratic (Eq. 13)";
}

template <class T>
void perturb_constant_parameters(model::Transformer<T>& model, Rng& perturb) {
    for (const auto& entry : model.layout().entries()) {
        if (entry.weight_decay) continue;  // matrices keep their initialization
        T* p = model.params.data() + entry.offset;
        const bool positive = entry.name.size() >= 4 && entry.name.compare(entry.name.size() - 4, 4, ".b_d") == 0;
        for (std::size_t i = 0; i < entry.size; ++i) {
            const double noise = perturb.normal(0.0, 0.1);
            p[i] += static_cast<T>(positive ? std::abs(noise) : noise);
        }
    }
}

template <class T>
void report_bench(const config::Config& cfg, const BenchOptions& options, const BenchSubject& subject) {
    const std::size_t B = subject.batch, TT = subject.time, N = B * TT;
    const int threads = omp_get_max_threads();
    const char* dtype = dtype_name<T>();
    const auto& forward = subject.forward;
    const auto& train_step = subject.train_step;
    const char* clock_name = std::getenv("ICLAB_PROFILE_CLOCK");
    ICLAB_INPUT_CHECK(clock_name == nullptr || std::string(clock_name) == "wall" || std::string(clock_name) == "thread_cpu",
                      "ICLAB_PROFILE_CLOCK must be wall or thread_cpu, got '" << clock_name << "'");
    profile::profiler.thread_cpu_clock = clock_name != nullptr && std::string(clock_name) == "thread_cpu";
    const std::string load_before = load_average();
    const std::string start_time = io::now_iso8601();
    const std::vector<double> forward_s = time_calls(options.warmup, options.iters, forward);
    const std::vector<double> train_s = time_calls(options.warmup, options.iters, train_step);

    // Second pass with the GEMM counter on: FLOPs and time per shape. Its step times are kept apart
    // (the counter reads the clock twice per call and takes a lock for calls inside parallel regions).
    // The same pass also times every operation by kind (framework/core/profile.hpp).
    nn::gemm_counter.reset();
    nn::gemm_counter.enabled = true;
    profile::profiler.reset();
    profile::profiler.enabled = true;
    const std::vector<double> counted_s = time_calls(0, options.iters, train_step);
    profile::profiler.enabled = false;
    nn::gemm_counter.enabled = false;
    std::vector<ShapeRow> shapes;
    for (const auto& [key, tally] : nn::gemm_counter.shapes) {
        nn::GemmTally per_step = tally;
        per_step.calls /= static_cast<std::size_t>(options.iters);
        per_step.flops /= options.iters;
        per_step.seconds /= options.iters;
        shapes.push_back({key, per_step});
    }
    std::sort(shapes.begin(), shapes.end(), [](const ShapeRow& a, const ShapeRow& b) { return a.per_step.seconds > b.per_step.seconds; });
    nn::GemmTally gemm_step;
    for (const auto& row : shapes) gemm_step.add(row.per_step);
    nn::gemm_counter.reset();
    const double counted_step_s = std::accumulate(counted_s.begin(), counted_s.end(), 0.0) / options.iters;
    // The profile per step by kind; "other" is the rest of the counted step (residual adds, copies, the caller's loop).
    std::vector<std::string> profile_kinds;
    std::vector<double> profile_ms;
    for (int k = 0; k < profile::Profile::kKinds; ++k) {
        profile_kinds.push_back(profile::kind_name(static_cast<profile::Kind>(k)));
        profile_ms.push_back(profile::profiler.seconds[k] / options.iters * 1e3);
    }
    profile_kinds.push_back("other");
    profile_ms.push_back(std::max(0.0, counted_step_s * 1e3 - profile::profiler.total() / options.iters * 1e3));
    profile::profiler.reset();

    // The reference, "the BLAS limit": one large square product through the same wrapper, same threads, with each of the
    // two kernels nn::gemm can run (OpenBLAS under the core it picked, and iclab's blocked kernel, the default since
    // 2026-11-27), calls alternating; the limit is the faster kernel's median (on AVX-512 CPUs with OpenBLAS's Haswell
    // core the blocked kernel is the faster one: measuring against OpenBLAS alone would flatter the whole-step rate).
    const std::size_t S = options.blas_size;
    std::vector<T> a(S * S), b(S * S), c(S * S);
    Rng blas_rng(12345);
    for (auto& x : a) x = static_cast<T>(blas_rng.uniform(-1.0, 1.0));
    for (auto& x : b) x = static_cast<T>(blas_rng.uniform(-1.0, 1.0));
    const auto square_product = [&](nn::SmallGemm kernel) {
        return [&, kernel] {
            nn::gemm<T>(nn::matrix(c.data(), S, S), nn::matrix<const T>(a.data(), S, S), nn::matrix<const T>(b.data(), S, S),
                        false, false, T(1), T(0), kernel);
        };
    };
    // Beside it, the machine's memory speed at that moment: a STREAM-style triad x = y + s·z over three 4 MB arrays (the
    // size of a layer's activations in the quick model, beyond L2), static halves per thread. On a shared VM the square
    // product (compute-bound, cache-blocked) hardly moves while the other tenants' memory traffic slows every pass that
    // streams activations (docs/performance.md, 2026-11-27 14:20-16:00): this rate shows which of the two moved.
    constexpr std::size_t kStream = (std::size_t(4) << 20) / sizeof(float);
    std::vector<float> sx(kStream), sy(kStream, 1.0f), sz(kStream, 2.0f);
    const auto triad = [&] {
#pragma omp parallel for schedule(static)
        for (std::size_t i = 0; i < kStream; ++i) sx[i] = sy[i] + 0.5f * sz[i];
    };
    std::vector<double> openblas_s, blocked_s, stream_s;
    time_calls(1, 0, square_product(nn::SmallGemm::openblas));
    time_calls(1, 0, square_product(nn::SmallGemm::blocked));
    time_calls(1, 0, triad);
    for (int i = 0; i < options.iters; ++i) {
        openblas_s.push_back(time_calls(0, 1, square_product(nn::SmallGemm::openblas)).front());
        blocked_s.push_back(time_calls(0, 1, square_product(nn::SmallGemm::blocked)).front());
        stream_s.push_back(time_calls(0, 1, triad).front());
    }
    const std::string load_after = load_average();

    const double forward_median = median_of(forward_s), train_median = median_of(train_s);
    const double gemm_gflops = gemm_step.seconds > 0 ? gemm_step.flops / gemm_step.seconds * 1e-9 : 0.0;
    const double square_flops = 2.0 * S * S * static_cast<double>(S);
    const double openblas_gflops = options.iters > 0 ? square_flops / median_of(openblas_s) * 1e-9 : 0.0;
    const double blocked_gflops = options.iters > 0 ? square_flops / median_of(blocked_s) * 1e-9 : 0.0;
    const double blas_gflops = std::max(openblas_gflops, blocked_gflops);
    const double stream_gbs = options.iters > 0 ? 3.0 * kStream * sizeof(float) / median_of(stream_s) * 1e-9 : 0.0;
    const std::vector<Metric> metrics = {
        {"forward_tokens_per_s", N / forward_median, "tokens/s"},
        {"forward_ms", forward_median * 1e3, "ms"},
        {"train_tokens_per_s", N / train_median, "tokens/s"},
        {"train_step_ms", train_median * 1e3, "ms"},
        {"gemm_gflop_per_step", gemm_step.flops * 1e-9, "GFLOP"},
        {"gemm_calls_per_step", static_cast<double>(gemm_step.calls), "calls"},
        {"gemm_ms_per_step", gemm_step.seconds * 1e3, "ms"},
        {"gemm_gflops", gemm_gflops, "GFLOP/s"},
        {"gemm_share_of_step", counted_step_s > 0 ? gemm_step.seconds / counted_step_s : 0.0, "fraction"},
        {"counted_step_ms", counted_step_s * 1e3, "ms"},
        {"step_gflops", gemm_step.flops / train_median * 1e-9, "GFLOP/s"},
        {"blas_gflops", blas_gflops, "GFLOP/s"},  // the limit: the faster of the two below
        {"openblas_square_gflops", openblas_gflops, "GFLOP/s"},
        {"blocked_square_gflops", blocked_gflops, "GFLOP/s"},
        {"stream_triad_gbs", stream_gbs, "GB/s"},  // 3 arrays' bytes per triad (STREAM's count; no write-allocate)
        {"gemm_over_blas", gemm_gflops / blas_gflops, "fraction"},
        {"step_over_blas", gemm_step.flops / train_median * 1e-9 / blas_gflops, "fraction"},
        {"train_step_spread", *std::max_element(train_s.begin(), train_s.end()) / *std::min_element(train_s.begin(), train_s.end()),
         "max/min"},
    };
    const auto metric = [&](const std::string& name) {
        for (const auto& m : metrics)
            if (m.name == name) return m.value;
        throw Error("bench: no metric " + name);
    };

    std::printf("iclab bench %s", cfg.source_path().c_str());
    for (const auto& o : cfg.overrides()) std::printf(" %s", o.c_str());
    std::printf("\n  model: %s\n", subject.model_line.c_str());
    std::printf("  batch %zu x seq_len %zu = %zu tokens per step; attention form %s\n", B, TT, N, subject.attention_note.c_str());
    std::printf("  threads %d (OpenMP; OpenBLAS %s, 1 thread); warmup %d, median of %d; load average %s -> %s\n", threads,
                io::openblas_core().c_str(), options.warmup, options.iters, load_before.c_str(), load_after.c_str());
    std::printf("\n  %-34s %12s  %s\n", "metric", "value", "unit");
    std::printf("  %-34s %12.0f  tokens/s   (%.2f ms)\n", "forward", metric("forward_tokens_per_s"), metric("forward_ms"));
    std::printf("  %-34s %12.0f  tokens/s   (%.2f ms)\n", "training step", metric("train_tokens_per_s"), metric("train_step_ms"));
    std::printf("  %-34s %12.3f  GFLOP      (%zu calls)\n", "GEMM FLOPs per training step", metric("gemm_gflop_per_step"),
                gemm_step.calls);
    std::printf("  %-34s %12.1f  GFLOP/s\n", "model GEMM rate", gemm_gflops);
    std::printf("  %-34s %12.1f  %%          (%.2f of %.2f ms; counted pass)\n", "GEMM share of the step time",
                100 * metric("gemm_share_of_step"), gemm_step.seconds * 1e3, counted_step_s * 1e3);
    std::printf("  %-34s %12.1f  GFLOP/s    (GEMM FLOPs / step time)\n", "whole-step rate", metric("step_gflops"));
    const std::string square = std::to_string(S) + "^3";
    std::printf("  %-34s %12.1f  GFLOP/s\n", ((sizeof(T) == 4 ? "sgemm " : "dgemm ") + square + ", OpenBLAS").c_str(),
                openblas_gflops);
    std::printf("  %-34s %12.1f  GFLOP/s\n", (square + ", blocked kernel").c_str(), blocked_gflops);
    std::printf("  %-34s %12.1f  GFLOP/s    (the faster of the two)\n", "BLAS rate (limit)", blas_gflops);
    std::printf("  %-34s %12.1f  GB/s       (x = y + s z, 3 x 4 MB, the memory's speed now)\n", "stream triad", stream_gbs);
    std::printf("  %-34s %12.1f  %%\n", "model GEMM rate / BLAS rate", 100 * metric("gemm_over_blas"));
    std::printf("  %-34s %12.1f  %%\n", "whole-step rate / BLAS rate", 100 * metric("step_over_blas"));
    std::printf("  %-34s %12.3f  max/min    (%d timed steps)\n", "training step spread", metric("train_step_spread"), options.iters);
    std::printf("\n  Profile of one training step by kind of operation (counted pass, exclusive times%s):\n",
                profile::profiler.thread_cpu_clock ? "; every time above and below in thread CPU time" : "");
    std::printf("  %-12s %9s %7s\n", "kind", "ms", "share");
    for (std::size_t k = 0; k < profile_kinds.size(); ++k)
        std::printf("  %-12s %9.3f %6.1f%%\n", profile_kinds[k].c_str(), profile_ms[k],
                    counted_step_s > 0 ? profile_ms[k] / (counted_step_s * 1e3) * 100 : 0.0);
    std::printf("\n  GEMMs of one training step, by time (m x n x k of C = op(A) op(B); T = transposed; par = called\n"
                "  inside a parallel region, per (batch, head)):\n");
    std::printf("  %6s %6s %6s  %-3s %-3s %5s %8s %9s %9s %8s\n", "m", "n", "k", "op", "par", "calls", "MFLOP", "ms", "GFLOP/s",
                "share");
    for (const auto& row : shapes) {
        const std::string op = std::string(row.key.transpose_a ? "T" : "N") + (row.key.transpose_b ? "T" : "N");
        std::printf("  %6zu %6zu %6zu  %-3s %-3s %5zu %8.1f %9.3f %9.1f %7.1f%%\n", row.key.m, row.key.n, row.key.k, op.c_str(),
                    row.key.in_parallel ? "yes" : "no", row.per_step.calls, row.per_step.flops * 1e-6, row.per_step.seconds * 1e3,
                    row.per_step.seconds > 0 ? row.per_step.flops / row.per_step.seconds * 1e-9 : 0.0,
                    100 * row.per_step.seconds / gemm_step.seconds);
    }

    if (options.out.empty()) return;
    io::ResultsWriter writer(options.out, options.overwrite);
    writer.set_attr("experiment", "bench");
    writer.set_attr("config", cfg.to_yaml());
    writer.set_attr("config_source", cfg.source_path());
    std::string overrides;
    for (const auto& o : cfg.overrides()) overrides += (overrides.empty() ? "" : " ") + o;
    writer.set_attr("overrides", overrides);
    writer.set_attr("dtype", dtype);
    writer.set_attr("threads", static_cast<std::int64_t>(threads));
    writer.set_attr("warmup", static_cast<std::int64_t>(options.warmup));
    writer.set_attr("iters", static_cast<std::int64_t>(options.iters));
    writer.set_attr("batch_size", B);
    writer.set_attr("seq_len", TT);
    writer.set_attr("tokens_per_step", N);
    writer.set_attr("parameter_count", subject.parameter_count);
    writer.set_attr("attention_form", subject.attention_form);
    writer.set_attr("blas_size", S);
    writer.set_attr("load_average_before", load_before);
    writer.set_attr("clock", std::string(profile::profiler.thread_cpu_clock ? "thread_cpu" : "wall"));
    writer.set_attr("load_average_after", load_after);
    writer.set_attr("start_time", start_time);
    writer.set_attr("end_time", io::now_iso8601());
    io::write_provenance(writer);
    for (const auto& m : metrics) writer.set_attr(m.name, m.value);
    std::vector<std::string> names, units;
    std::vector<double> values;
    for (const auto& m : metrics) {
        names.push_back(m.name);
        values.push_back(m.value);
        units.push_back(m.unit);
    }
    writer.write_columns("/tables/bench", {{"metric", names}, {"value", values}, {"unit", units}});
    std::vector<std::int64_t> col_m, col_n, col_k, col_ta, col_tb, col_par, col_calls;
    std::vector<double> col_mflop, col_ms, col_rate;
    for (const auto& row : shapes) {
        col_m.push_back(static_cast<std::int64_t>(row.key.m));
        col_n.push_back(static_cast<std::int64_t>(row.key.n));
        col_k.push_back(static_cast<std::int64_t>(row.key.k));
        col_ta.push_back(row.key.transpose_a);
        col_tb.push_back(row.key.transpose_b);
        col_par.push_back(row.key.in_parallel);
        col_calls.push_back(static_cast<std::int64_t>(row.per_step.calls));
        col_mflop.push_back(row.per_step.flops * 1e-6);
        col_ms.push_back(row.per_step.seconds * 1e3);
        col_rate.push_back(row.per_step.seconds > 0 ? row.per_step.flops / row.per_step.seconds * 1e-9 : 0.0);
    }
    writer.write_columns("/tables/gemm_shapes", {{"m", col_m},
                                                 {"n", col_n},
                                                 {"k", col_k},
                                                 {"transpose_a", col_ta},
                                                 {"transpose_b", col_tb},
                                                 {"in_parallel", col_par},
                                                 {"calls_per_step", col_calls},
                                                 {"mflop_per_step", col_mflop},
                                                 {"ms_per_step", col_ms},
                                                 {"gflops", col_rate}});
    std::vector<double> profile_share;
    for (double ms : profile_ms) profile_share.push_back(counted_step_s > 0 ? ms / (counted_step_s * 1e3) : 0.0);
    writer.write_columns("/tables/profile", {{"kind", profile_kinds}, {"ms_per_step", profile_ms}, {"share_of_step", profile_share}});
    for (std::size_t k = 0; k < profile_kinds.size(); ++k) writer.set_attr("profile_" + profile_kinds[k] + "_ms", profile_ms[k]);
    writer.write_columns("/samples", {{"forward_s", forward_s},
                                      {"train_step_s", train_s},
                                      {"counted_train_step_s", counted_s},
                                      {"openblas_square_s", openblas_s},
                                      {"blocked_square_s", blocked_s},
                                      {"stream_triad_s", stream_s}});
    writer.commit();
    std::printf("\nwrote %s\n", options.out.c_str());
}

template void report_bench<float>(const config::Config&, const BenchOptions&, const BenchSubject&);
template void report_bench<double>(const config::Config&, const BenchOptions&, const BenchSubject&);
template void perturb_constant_parameters<float>(model::Transformer<float>&, Rng&);
template void perturb_constant_parameters<double>(model::Transformer<double>&, Rng&);

}  // namespace iclab::cli
