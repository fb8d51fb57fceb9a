#pragma once
// Memory and work of the commands that run a language model (predict, generate and convert on lm runs), estimated from
// the run's model spec before anything large is allocated, and checked against the memory this process may use
// (available_memory: MemAvailable, cgroup, ulimit, ICLAB_MEMORY_GIB). Issue 41: `predict` with 25,000 ids held ~5 GB
// of logits and H T^2 attention probabilities and died of std::bad_alloc; `generate --max-new-tokens 1048576` kept
// every step's logits. The parts are counted as the code allocates them (framework/model/transformer.cpp,
// transformer_decode.cpp, framework/io/results_writer.cpp); tests/test_lm_estimates.cpp holds them within 2x of the
// measured peak resident memory.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/model/transformer.hpp"
#include "framework/run/memory_estimate.hpp"

namespace iclab::run {

// The run's parameters held in `bytes` per value (4: float, 8: double).
RunEstimate estimate_lm_parameters(const model::ModelSpec& spec, double bytes);
// What reading them holds besides, until they are read: the whole results file (io::ResultsReader reads it into
// memory) and one tensor as double; in GiB.
double lm_reading_memory_gib(const model::ModelSpec& spec, const std::filesystem::path& results_file);

// One inference-mode forward (Transformer::Mode::inference) over 1 x T tokens, parameters excluded: one block's
// activations, the residual stream, the attention's caches (softmax: the (H, T, T) probabilities; linear: the
// features (4 H F per token)) and the logits (T, V). FLOPs: the projections, the MLP, attention over the causal
// prefix, the read-out.
RunEstimate estimate_lm_forward(const model::ModelSpec& spec, double bytes, double tokens);

// Incremental decoding (model::TransformerDecoder), parameters excluded: the key/value caches of the whole context
// (softmax, allocated up front) or the recurrent state (linear), the prefill of `prompt` tokens `chunk` at a time
// (their activations and logits), then `steps` one-token steps.
RunEstimate estimate_lm_decoding(const model::ModelSpec& spec, double bytes, double prompt, double steps, double chunk);

// An HDF5 results file of `bytes` written by io::ResultsWriter: built in memory and copied once at commit, so twice
// its size, in GiB.
double results_file_memory_gib(double bytes);

// Adapter files applied by a command: io::ResultsReader holds each file, and the parsed adapter about as much again.
double adapter_files_memory_gib(const std::vector<std::filesystem::path>& files);

// InputError (exit 2) when the estimate exceeds the memory available or iclab's work limit (kMaxRunFlops), naming both
// and what to lower (`lower`: e.g. "the number of --tokens or --out"); else prints it to stderr when the work is long
// (>= kPrintEstimateFlops, ~10 s) unless quiet.
void check_command_estimate(const RunEstimate& estimate, const std::string& who, const std::string& lower, bool quiet = false);

}  // namespace iclab::run
