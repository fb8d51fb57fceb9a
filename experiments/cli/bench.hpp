#pragma once
// `iclab bench`: throughput of the model a config describes (issue 3 item 8; regression models: issue 13).
// Two kinds of model, told apart by the task's keys: induction-head models (task.triggers: token inputs,
// vocabulary logits, the mean cross-entropy over all positions; random tokens from a seeded Rng) and
// in-context regression models (task.kind, task.format, e.g. paper 003's configs/cpu2/prefix_vs_causal.yaml:
// real-valued tokens through the read-in, the trainer's batch sampling and loss, bench_regression.cpp).
// Builds the config's model at its batch size and sequence length and measures, as the median over `iters`
// after `warmup` untimed repetitions:
//   - forward tokens/s (Transformer::forward, logits included, no loss);
//   - training-step tokens/s: forward + loss + zero_grad + backward + gradient clipping + optimizer
//     step, the trainer's step without the data sampling;
//   - the FLOP rate inside the model's GEMMs and their share of the step time (a second pass with the
//     GEMM counter of framework/nn/gemm.hpp switched on, so the timed pass above pays nothing for it);
//   - the plain BLAS gemm rate at a large square size through the same wrapper and threads, and the
//     ratio model-GEMM rate / that rate.
// It prints a table and optionally writes it to an HDF5 file with provenance. `export_path` writes a
// cross-check file for an independent implementation (scripts/bench/torch_reference.py --check):
// parameters, tokens, targets, logits, loss and gradients of one forward/backward (regression: inputs,
// targets, position kinds, outputs, loss and gradients).
#include <cstddef>
#include <string>
#include <vector>

namespace iclab::cli {

struct BenchOptions {
    std::string config_path;
    std::vector<std::string> overrides;
    int warmup = 3;
    int iters = 10;                  // 0: no timing (only export_path is written)
    std::size_t blas_size = 2048;    // the square reference product
    std::string out;                 // HDF5 table ("" for none)
    std::string export_path;         // HDF5 cross-check file ("" for none)
    bool overwrite = false;          // replace existing out / export files
};

// Runs the benchmark; prints the table on stdout. InputError for a config it cannot benchmark.
void bench(const BenchOptions& options);

}  // namespace iclab::cli
