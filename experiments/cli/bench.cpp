#include "experiments/cli/bench.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numeric>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/registry.hpp"
#include "framework/core/measure.hpp"
#include "framework/run/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/core/check.hpp"
#include "framework/core/rng.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::cli {

using namespace iclab::run;

namespace {

// Sub-streams of the config's seed. kInitStream is the trainer's (experiments/induction_head.cpp), so
// the benchmarked model starts from the parameters a training run of the same config starts from.
enum Stream : std::uint64_t { kInitStream = 1, kBenchTokenStream = 101, kExportPerturbStream = 102 };

double now_seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

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

template <class T>
void write_export(const std::string& path, bool overwrite, const config::Config& cfg, const model::ModelSpec& spec,
                  const std::vector<std::int32_t>& tokens, const std::vector<std::int32_t>& targets, std::size_t batch,
                  std::size_t time) {
    // A fresh model from the trainer's initialization, with every parameter that initializes to a
    // constant (biases, LayerNorm gains and shifts, b_KV, b_D) moved off it, so that the cross-check also
    // covers the terms that are zero or one at initialization. b_D stays positive: the kernel normalizer
    // φ(q)ᵀ(Σφ(k) + b_D) + eps must stay away from zero.
    model::Transformer<T> model(spec);
    Rng init_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kInitStream);
    Rng perturb_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kExportPerturbStream);
    model.init(init_rng);
    for (const auto& entry : model.layout().entries()) {
        if (entry.weight_decay) continue;  // matrices keep their initialization
        T* p = model.params.data() + entry.offset;
        const bool positive = entry.name.size() >= 4 && entry.name.compare(entry.name.size() - 4, 4, ".b_d") == 0;
        for (std::size_t i = 0; i < entry.size; ++i) {
            const double noise = perturb_rng.normal(0.0, 0.1);
            p[i] += static_cast<T>(positive ? std::abs(noise) : noise);
        }
    }
    const std::size_t N = batch * time, V = spec.vocab;
    std::vector<T> weights(N, static_cast<T>(1.0 / static_cast<double>(N)));  // the mean loss over all positions
    model.forward(tokens.data(), batch, time);
    const double loss = model.loss(targets.data(), weights.data());
    model.zero_grad();
    model.backward(targets.data(), weights.data());

    io::ResultsWriter writer(path, overwrite);
    writer.set_attr("config", cfg.to_yaml());
    writer.set_attr("config_source", cfg.source_path());
    writer.set_attr("dtype", dtype_name<T>());
    writer.set_attr("loss", loss);
    writer.set_attr("parameter_count", model.parameter_count());
    writer.set_attr("note",
                    "iclab bench --export: parameters (/checkpoint, initialization with biases, LayerNorm "
                    "parameters, b_KV and b_D perturbed), inputs (/check/tokens, /check/targets, (B, T)), "
                    "logits (/check/logits, (B, T, V)), the mean cross-entropy over all positions (attribute loss) "
                    "and its gradient (/check/grads/<parameter>), before clipping");
    io::write_provenance(writer);
    write_checkpoint(writer, model);
    writer.write_tensor("/check/tokens", tokens.data(), {batch, time});
    writer.write_tensor("/check/targets", targets.data(), {batch, time});
    writer.write_tensor("/check/logits", model.logits(), {batch, time, V});
    for (const auto& entry : model.layout().entries())
        writer.write_tensor("/check/grads/" + entry.name, model.grads.data() + entry.offset, entry.shape);
    writer.commit();
    std::printf("export: %s (parameters, tokens, logits, loss %.6f, gradients)\n", path.c_str(), loss);
}

template <class T>
void run_bench(const config::Config& cfg, const BenchOptions& options) {
    const std::size_t TT = static_cast<std::size_t>(cfg.get_int("task.seq_len"));
    const std::size_t B = static_cast<std::size_t>(cfg.get_int("train.batch_size"));
    const std::size_t V = tasks::kInductionVocab, N = B * TT;
    const model::ModelSpec spec = model_spec_from_config(cfg, V, TT);
    const double grad_clip = cfg.get_float("train.grad_clip");
    const train::ScheduleSpec schedule = schedule_spec_from_config(cfg);
    const int threads = omp_get_max_threads();
    const char* dtype = dtype_name<T>();

    // Random tokens and targets: throughput does not depend on the token values.
    Rng token_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBenchTokenStream);
    std::vector<std::int32_t> tokens(N), targets(N);
    for (auto& t : tokens) t = static_cast<std::int32_t>(token_rng.uniform_int(V));
    for (auto& t : targets) t = static_cast<std::int32_t>(token_rng.uniform_int(V));

    if (!options.export_path.empty())
        write_export<T>(options.export_path, options.overwrite, cfg, spec, tokens, targets, B, TT);
    if (options.iters <= 0) return;

    model::Transformer<T> model(spec);
    Rng init_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kInitStream);
    model.init(init_rng);
    train::Optimizer<T> optimizer(optimizer_spec_from_config(cfg), model.layout());
    std::vector<T> weights(N, static_cast<T>(1.0 / static_cast<double>(N)));  // mean loss over all positions
    std::size_t step = 0;
    // The trainer's step (experiments/induction_head.cpp) minus the data sampling.
    const auto train_step = [&] {
        model.forward(tokens.data(), B, TT);
        const double loss = model.loss(targets.data(), weights.data());
        ICLAB_CHECK(std::isfinite(loss), "bench: the loss is " << loss << " at step " << step + 1);
        model.zero_grad();
        model.backward(targets.data(), weights.data());
        const double grad_norm = train::clip_gradient_norm(model.grads, model.layout(), grad_clip);
        ICLAB_CHECK(std::isfinite(grad_norm), "bench: the gradient norm is " << grad_norm << " at step " << step + 1);
        optimizer.step(model.params, model.grads, train::learning_rate(schedule, std::min(step, schedule.total_steps - 1)));
        ++step;
    };
    const auto forward = [&] { model.forward(tokens.data(), B, TT); };

    const std::string load_before = load_average();
    const std::string start_time = io::now_iso8601();
    const std::vector<double> forward_s = time_calls(options.warmup, options.iters, forward);
    const std::vector<double> train_s = time_calls(options.warmup, options.iters, train_step);

    // Second pass with the GEMM counter on: FLOPs and time per shape. Its step times are kept apart
    // (the counter reads the clock twice per call and takes a lock for calls inside parallel regions).
    nn::gemm_counter.reset();
    nn::gemm_counter.enabled = true;
    const std::vector<double> counted_s = time_calls(0, options.iters, train_step);
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

    // The reference: one large square product through the same wrapper, same threads.
    const std::size_t S = options.blas_size;
    std::vector<T> a(S * S), b(S * S), c(S * S);
    Rng blas_rng(12345);
    for (auto& x : a) x = static_cast<T>(blas_rng.uniform(-1.0, 1.0));
    for (auto& x : b) x = static_cast<T>(blas_rng.uniform(-1.0, 1.0));
    const auto blas_product = [&] {
        nn::gemm<T>(nn::matrix(c.data(), S, S), nn::matrix<const T>(a.data(), S, S), nn::matrix<const T>(b.data(), S, S), false,
                    false);
    };
    const std::vector<double> blas_s = time_calls(1, options.iters, blas_product);
    const std::string load_after = load_average();

    const double forward_median = median_of(forward_s), train_median = median_of(train_s), blas_median = median_of(blas_s);
    const double gemm_gflops = gemm_step.seconds > 0 ? gemm_step.flops / gemm_step.seconds * 1e-9 : 0.0;
    const double blas_gflops = 2.0 * S * S * static_cast<double>(S) / blas_median * 1e-9;
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
        {"blas_gflops", blas_gflops, "GFLOP/s"},
        {"gemm_over_blas", gemm_gflops / blas_gflops, "fraction"},
    };
    const auto metric = [&](const std::string& name) {
        for (const auto& m : metrics)
            if (m.name == name) return m.value;
        throw Error("bench: no metric " + name);
    };

    std::printf("iclab bench %s", cfg.source_path().c_str());
    for (const auto& o : cfg.overrides()) std::printf(" %s", o.c_str());
    std::printf("\n  model: %zu layers, width %zu, %zu heads, MLP %s, %s, %zu parameters, %s\n", spec.layers, spec.width,
                spec.heads, spec.mlp ? "on" : "off", nn::feature_map_name(spec.feature_map), model.parameter_count(), dtype);
    const bool recurrent = spec.attention_form == model::ModelSpec::AttentionForm::recurrent ||
                           (spec.attention_form == model::ModelSpec::AttentionForm::automatic && TT >= spec.recurrent_min_time);
    std::printf("  batch %zu x seq_len %zu = %zu tokens per step; attention form %s\n", B, TT, N,
                recurrent ? "recurrent (Eq. 19)" : "quadratic (Eq. 13)");
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
    std::printf("  %-34s %12.1f  GFLOP/s\n", (std::string(sizeof(T) == 4 ? "sgemm " : "dgemm ") + std::to_string(S) + "^3").c_str(),
                blas_gflops);
    std::printf("  %-34s %12.1f  %%\n", "model GEMM rate / BLAS rate", 100 * metric("gemm_over_blas"));
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
    writer.set_attr("parameter_count", model.parameter_count());
    writer.set_attr("attention_form", recurrent ? "recurrent" : "quadratic");
    writer.set_attr("blas_size", S);
    writer.set_attr("load_average_before", load_before);
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
    writer.write_columns("/samples", {{"forward_s", forward_s},
                                      {"train_step_s", train_s},
                                      {"counted_train_step_s", counted_s},
                                      {"blas_s", blas_s}});
    writer.commit();
    std::printf("\nwrote %s\n", options.out.c_str());
}

}  // namespace

void bench(const BenchOptions& options) {
    ICLAB_INPUT_CHECK(options.warmup >= 0, "iclab bench: --warmup must be >= 0");
    ICLAB_INPUT_CHECK(options.iters >= 0, "iclab bench: --iters must be >= 0");
    ICLAB_INPUT_CHECK(options.iters > 0 || !options.export_path.empty(), "iclab bench: --iters 0 only makes sense with --export");
    ICLAB_INPUT_CHECK(options.blas_size > 0, "iclab bench: --blas-size must be positive");
    const config::Config cfg = experiments::catalog().load_config(options.config_path, options.overrides);
    ICLAB_INPUT_CHECK(cfg.has("task.triggers") && cfg.has("model.attention") && cfg.has("train.optimizer"),
                      "iclab bench knows the models of configs that train an induction-head model (induction_head, ...); " << options.config_path << " is a "
                                                                                 << cfg.get_string("experiment") << " config");
    // Refuse an existing output before spending minutes measuring.
    for (const std::string& path : {options.out, options.export_path})
        ICLAB_INPUT_CHECK(path.empty() || options.overwrite || !std::filesystem::exists(path),
                          path << " exists (--overwrite replaces it)");
    with_model_dtype(cfg, [&](auto zero) { run_bench<decltype(zero)>(cfg, options); });
}

}  // namespace iclab::cli
