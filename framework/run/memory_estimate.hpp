#pragma once
// What a run will hold in memory and how much arithmetic it will do, estimated from its config before anything is
// allocated. Every experiment provides its estimate (Experiment::estimate); `iclab run` refuses at validation (exit 2,
// before the run folder exists) a config whose memory estimate exceeds the machine's available memory or whose work
// exceeds kMaxRunFlops, and prints the estimate before a long run starts (issues 15, 20: width 4096 x 64 layers,
// lsa_gd's std::bad_alloc, 2^20 random features).
#include <string>
#include <vector>

#include "framework/config/config.hpp"

namespace iclab::run {

// A run's size: estimates within ~2-4x (the large tensors and the dominant loops only).
// How they are checked (docs/testing.md, Estimates; ctest estimates, scripts/estimates/check_estimates.py): a short run
// of every experiment family with ICLAB_COUNT_WORK=1 (experiments/cli/work_count.hpp) counts the arithmetic of every
// product through nn::gemm, which must lie within [0.5, 2] x gemm_flops, and its peak resident set must stay within
// 2 x memory_gib + the process's baseline. The rest of `flops` (loops, weighted for time below) is not counted.
struct RunEstimate {
    double memory_gib = 0;  // the largest allocations alive at once
    double flops = 0;       // arithmetic of the whole run (a multiply-add counts 2), loops weighted by kFp64LoopWeight etc.
    // Of flops, the unweighted arithmetic of the products that go through nn::gemm (2 m n k each): what
    // ICLAB_COUNT_WORK counts. Equal to flops for a run that is all transformer layers.
    double gemm_flops = 0;
    // The keys that set the size, named in a refusal (the first one's file:line leads the message).
    std::vector<std::string> keys;
};

// Nominal throughput for the printed time. Measured as estimate / wall time on this 2-core machine: 37-103 GFLOP/s
// (quick lsa_gd 12 s, quick gd_duals 2 s, paper induction_head 6 min, paper bias_training ~11.5 min a run on one
// thread, cpu2 prefix_vs_causal, paper iclca_exactness 89 min); a loaded machine is slower.
constexpr double kNominalFlopsPerSecond = 5e10;
// Work after training that runs as fp64 loops over small per-head blocks (ICLAA's learned-map fits and scoring: the
// feature maps with their exps, the per-sample distillation, GEMMs of a few dozen rows, double-precision forwards)
// counts this many nominal FLOPs per FLOP: measured 3.8-7.6 GFLOP/s on one thread of this machine under load (issue 21:
// quick iclaa fits 2.3e12 FLOP in 306 s and scoring 3.7e11 in ~60 s; paper fits 1.9e13 in 3130 s, paper scoring
// 1.3e13 in 58 min), against the nominal 50.
constexpr double kFp64LoopWeight = 8.0;
// Loops bound by memory bandwidth rather than arithmetic count this many nominal FLOPs per FLOP: one-token decoding
// steps (every weight, and the cached keys and values, read once per token: 1.4 GFLOP/s in fp64 and 2.2 in fp32 of CPU
// time, width 64, V 50257) and paper 004's Performer features and attention over long feature vectors (gd004_figures
// §6: 1.1-1.7 us per feature and cell at R = 4096 .. 2^20, T 16, C 12), measured on this machine (issue 41).
constexpr double kStreamingWeight = 25.0;
// Work refused outright: ~2.3 days at the nominal rate, ten times the largest run of the paper profile (~1e15 FLOP);
// issue 41: gd004_figures at 2^20 features x 100000 repeats (2.7e16 FLOP, about 6 days) was started. Longer work is a
// sweep of runs, each resumable.
constexpr double kMaxRunFlops = 1e16;
// Runs of at least this much work print their estimate before starting (~10 s at the nominal rate).
constexpr double kPrintEstimateFlops = 5e11;

// "about 2.1 GiB, 3.4e+12 FLOP (about 6 min at 10 GFLOP/s)".
std::string describe_estimate(const RunEstimate& estimate);

// The validation rule: cfg.fail on estimate.keys naming the estimate and the limit.
void check_run_estimate(const config::Config& cfg, const RunEstimate& estimate);

struct MemoryEstimate {
    double parameters = 0;    // values
    double state_gib = 0;     // parameters, gradients and two optimizer moments
    double activations_gib = 0;  // saved for the backward pass at train.batch_size
    double total_gib() const { return state_gib + activations_gib; }
};

// For configs with the model and train key groups; the sequence length is task.seq_len (token tasks) or
// task.examples + task.queries (vector tasks). An estimate within ~2x: it counts the large tensors only.
MemoryEstimate estimate_training_memory(const config::Config& cfg);

// A transformer trained from the model/train keys: memory as estimate_training_memory, FLOPs of train.steps steps
// (forward + backward = 3 forwards) and of the evaluations (eval.sequences every eval.every steps).
RunEstimate estimate_training(const config::Config& cfg);

// FLOPs of one forward pass of a model of the model keys over one sequence of T tokens with an output width V.
double transformer_forward_flops(const config::Config& cfg, double T, double V);

// V of a vector task's model for transformer_forward_flops: the token width d_x + d_y read in by a linear read-in plus
// the d_y read out by a linear read-out (an identity read-in and a sliced read-out multiply nothing); 64 (a bound)
// for a config without the regression keys. issue 44: vo_trained (identity, slice) was counted at 64, 2x its work.
double vector_io_width(const config::Config& cfg);

// Whether the model's causal linear attention runs in its recurrent form at T tokens (Transformer::use_recurrent_form:
// model.attention_form, or auto from ModelSpec::recurrent_min_time): O(T) loops instead of the quadratic form's GEMMs.
bool recurrent_attention(const config::Config& cfg, double T);

// Memory of a model of the model keys in inference mode on B sequences of T tokens, output width V: the parameters
// and one layer's activations (q, k, v, MLP, attention rows, Performer features), the logits. bytes: of a value (0: the
// model.dtype's).
double inference_memory_gib(const config::Config& cfg, double B, double T, double V, double bytes = 0.0);

// The validation rule of the training experiments: fails naming the estimate and the machine's available memory.
void check_training_memory(const config::Config& cfg);

}  // namespace iclab::run
