// Experiment `forward_pass`: the forward-only (inference-mode) path at scale. Builds a randomly initialized
// model of the configured size without gradient or activation caches, runs forward passes over random
// tokens and records throughput and peak resident memory (issue 3 item 7: a 1.98B-parameter fp32 model
// within this machine's 24 GB; paper 000 Table 1's largest size).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace forward_pass_cpp {


namespace {

enum Stream : std::uint64_t { kInitStream = 1, kTokenStream = 2 };

// Current resident set size from /proc/self/statm (pages).
double current_rss_gb() {
    std::ifstream statm("/proc/self/statm");
    double total = 0, resident = 0;
    statm >> total >> resident;
    return resident * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0 * 1024.0);
}

template <class T>
RunOutcome forward_pass(const config::Config& cfg, const RunOptions& options) {
    const std::size_t vocab = cfg.get_int("task.vocab"), TT = cfg.get_int("task.seq_len"), B = cfg.get_int("task.batch_size");
    const std::size_t repeats = cfg.get_int("task.repeats");
    const model::ModelSpec spec = model_spec_from_config(cfg, vocab, TT);
    RunFolder run(cfg, options);
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    Rng init_rng = root.derive(kInitStream), token_rng = root.derive(kTokenStream);

    const auto start = std::chrono::steady_clock::now();
    model::Transformer<T> model(spec, model::Transformer<T>::Mode::inference);
    model.init(init_rng);
    const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double rss_after_init = current_rss_gb();
    const double parameter_gb = static_cast<double>(model.parameter_count()) * sizeof(T) / (1024.0 * 1024.0 * 1024.0);
    run.log() << "model: " << model.parameter_count() << " parameters (" << parameter_gb << " GiB), init " << init_s << " s\n";
    if (!options.quiet)
        std::fprintf(stderr, "iclab: %zu parameters (%.2f GiB) initialized in %.1f s; %zu forward passes of %zu x %zu tokens\n",
                     model.parameter_count(), parameter_gb, init_s, repeats, B, TT);

    std::vector<std::int32_t> tokens(B * TT);
    std::vector<double> seconds;
    double logit_norm = 0.0;
    for (std::size_t r = 0; r < repeats; ++r) {
        for (auto& t : tokens) t = static_cast<std::int32_t>(token_rng.uniform_int(vocab));
        const auto t0 = std::chrono::steady_clock::now();
        model.forward(tokens.data(), B, TT);
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        double sum = 0.0;
        for (std::size_t i = 0; i < B * TT * vocab; ++i) sum += static_cast<double>(model.logits()[i]) * model.logits()[i];
        ICLAB_CHECK(std::isfinite(sum), "the forward pass produced non-finite logits");
        logit_norm = std::sqrt(sum);
        if (!options.quiet) std::fprintf(stderr, "  pass %zu: %.2f s, %.0f tokens/s\n", r + 1, seconds.back(), B * TT / seconds.back());
    }
    const double median = median_of(seconds);
    const double peak = peak_rss_gib();

    io::ResultsWriter& w = run.results();
    std::vector<std::int64_t> pass(repeats);
    std::vector<double> tokens_per_s(repeats);
    for (std::size_t r = 0; r < repeats; ++r) {
        pass[r] = static_cast<std::int64_t>(r + 1);
        tokens_per_s[r] = B * TT / seconds[r];
    }
    w.write_columns("/passes", {{"pass", pass}, {"seconds", seconds}, {"tokens_per_s", tokens_per_s}});
    w.set_attr("parameter_count", static_cast<std::int64_t>(model.parameter_count()));
    w.set_attr("parameter_gib", parameter_gb);
    w.set_attr("init_s", init_s);
    w.set_attr("rss_after_init_gib", rss_after_init);
    w.set_attr("peak_rss_gib", peak);
    w.set_attr("median_forward_s", median);
    w.set_attr("median_tokens_per_s", B * TT / median);
    w.set_attr("last_logit_norm", logit_norm);
    run.commit();
    if (!options.quiet) {
        std::printf("\nforward-only pass, %s, %zu parameters (%.2f GiB of %s)\n", cfg.get_string("model.dtype").c_str(),
                    model.parameter_count(), parameter_gb, cfg.get_string("model.dtype").c_str());
        std::printf("  batch x tokens       %zu x %zu\n", B, TT);
        std::printf("  median forward       %.3f s  (%.1f tokens/s)\n", median, B * TT / median);
        std::printf("  resident after init  %.2f GiB\n", rss_after_init);
        std::printf("  peak resident        %.2f GiB\n", peak);
    }
    return {run.path(), true, 0, 0};
}

void declare_keys(config::Schema& schema) {
    schema.add_int("task.vocab", 52, 2, 1 << 20, "vocabulary V of the random tokens")
        .add_int("task.seq_len", 64, 1, 1 << 20, "T: tokens per sequence")
        .add_int("task.batch_size", 1, 1, 1 << 20, "sequences per forward pass")
        .add_int("task.repeats", 3, 1, 1000, "forward passes (median time reported)");
}

RunOutcome run_forward_pass(const RunContext& context) {
    return with_model_dtype(context.config, [&](auto zero) { return forward_pass<decltype(zero)>(context.config, context.options); });
}

}  // namespace
}  // namespace forward_pass_cpp

Experiment forward_pass() {
    using namespace forward_pass_cpp;
    return {"forward_pass",
            "forward-only passes of a randomly initialized model: throughput and peak memory (inference mode)",
            {KeyGroup::output, KeyGroup::model},
            declare_keys,
            run_forward_pass,
            [](const config::Config& cfg) {  // the parameters, one batch's activations; task.repeats forwards (no warm-up)
                const double B = static_cast<double>(cfg.get_int("task.batch_size")), T = static_cast<double>(cfg.get_int("task.seq_len"));
                const double V = static_cast<double>(cfg.get_int("task.vocab"));
                RunEstimate e;
                e.memory_gib = inference_memory_gib(cfg, B, T, V);
                e.flops = static_cast<double>(cfg.get_int("task.repeats")) * B * transformer_forward_flops(cfg, T, V);
                e.gemm_flops = e.flops;
                e.keys = {"model.width", "model.layers", "task.batch_size", "task.seq_len", "task.vocab"};
                return e;
            }};
}

}  // namespace iclab::experiments
