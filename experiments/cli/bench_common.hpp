#pragma once
// What the models of `iclab bench` share (bench.cpp: dispatch and the induction-head model; bench_regression.cpp:
// the in-context regression model of papers 003/004; bench_report.cpp: timing and the table). A model part builds
// its model, batch and loss from the config and hands over two closures; the report part times them, runs the
// GEMM-counter pass and the BLAS reference, prints the table and writes the results file. Export files are the
// model part's own: their contents depend on the model's inputs and outputs.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "experiments/cli/bench.hpp"
#include "framework/config/config.hpp"
#include "framework/core/rng.hpp"
#include "framework/model/transformer.hpp"

namespace iclab::cli {

// Sub-streams of the config's seed used by the bench only (1, the model's initialization, is the trainers').
enum BenchStream : std::uint64_t { kBenchInitStream = 1, kBenchDataStream = 101, kBenchExportPerturbStream = 102 };

// One model as the report part times it.
struct BenchSubject {
    std::string model_line;          // printed under the header: layers, width, attention, parameters, dtype
    std::size_t batch = 0, time = 0;  // B, T: B·T tokens per step
    std::size_t parameter_count = 0;
    std::string attention_form;      // results attribute: "quadratic", "recurrent" (Eq. 19) or "softmax"
    std::string attention_note;      // printed: "quadratic (Eq. 13)", ...
    std::function<void()> forward;     // one forward pass (no loss)
    std::function<void()> train_step;  // forward + loss + zero_grad + backward + clipping + optimizer step
};

// Times subject (median of options.iters after options.warmup), prints the table, writes options.out if set.
template <class T>
void report_bench(const config::Config& cfg, const BenchOptions& options, const BenchSubject& subject);

// subject.attention_form / attention_note: the form Transformer::use_recurrent_form picks for spec at length `time`
// (linear attention with a plain causal mask: recurrent from recurrent_min_time), or softmax.
void describe_attention(BenchSubject& subject, const model::ModelSpec& spec, std::size_t time);

// "L layers, width C, H heads, MLP on, <attention>, P parameters, dtype" for the printed header.
std::string bench_model_line(const model::ModelSpec& spec, std::size_t parameter_count, const char* dtype);

// The export's parameters: the initialized model with every parameter that initializes to a constant (biases,
// LayerNorm gains and shifts, b_KV, b_D) moved off it by N(0, 0.1) noise from `perturb`, so that a cross-check
// also covers the terms that are zero or one at initialization. b_D stays positive: the kernel normalizer
// φ(q)ᵀ(Σφ(k) + b_D) + eps must stay away from zero. Matrices keep their initialization.
template <class T>
void perturb_constant_parameters(model::Transformer<T>& model, Rng& perturb);

// The regression models (task.kind / task.format configs): bench_regression.cpp.
void bench_regression(const config::Config& cfg, const BenchOptions& options);

}  // namespace iclab::cli
