#pragma once
// Service: "train the language model this config describes on a token file" (experiment lm, issue 22). The data is
// a token file (framework/text/token_file.hpp: int32 /train and /heldout); every step draws train.batch_size random
// contiguous windows of task.seq_len + 1 tokens from /train (inputs: the first seq_len, targets: shifted by one);
// every evaluation computes the mean next-token loss and its perplexity on eval.sequences held-out windows, drawn
// once (the same windows every time). The Trainer (trainer.hpp) owns the optimizer, checkpoints and resume.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/run/memory_estimate.hpp"
#include "framework/model/transformer.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::run {

// data.tokens, data.tokenizer, task.seq_len (the lm experiment's own keys besides lm_run.hpp's).
void add_lm_training_keys(config::Schema& schema);

// Random contiguous windows: starts (count) drawn uniformly from [0, size − window], window = seq_len + 1.
// InputError naming `name` when the split holds fewer than seq_len + 1 tokens.
std::vector<std::size_t> sample_window_starts(std::size_t split_size, std::size_t seq_len, std::size_t count, Rng& rng,
                                              const std::string& name);

struct LmTraining {
    bool completed = false;  // false: stopped by RunOptions::stop_after (checkpoint written)
    std::size_t steps_done = 0, steps_total = 0;
    double final_eval_loss = 0.0, final_eval_perplexity = 0.0;
    std::size_t parameter_count = 0, train_tokens = 0, heldout_tokens = 0;
    double wall_time_s = 0.0;
    std::vector<double> parameters;  // the trained parameters (completed runs), for experiments that go on to probe them
};

// Everything train_lm reads besides the config, checked before the run folder is made (exit 2, nothing written):
// data.tokens given and a valid token file, its vocabulary within the model's, task.seq_len within the context, and
// data.tokenizer (when given) the tokenizer the token file was made with.
void check_lm_training_inputs(const config::Config& cfg);

// The files an lm training config names, checked cheaply before any work (Experiment::check_inputs: iclab run and its
// --dry-run, sweep planning): data.tokens given, a regular file with an iclab token file's header
// (text::check_token_file_header), data.tokenizer "" or a tokenizer folder (text::Bpe::files). InputError through
// Config::fail: the key, and the file and line that set it.
void check_lm_data_files(const config::Config& cfg);

// Trains in `run` and writes /curves, /steps, the summary attributes and (output.checkpoint) /checkpoint into
// run.results(), and the tokenizer (data.tokenizer) into RUN_DIR/tokenizer — all but run.commit(). Streams of
// `seed`: 1 initialization, 2 training windows, 3 held-out windows.
LmTraining train_lm(const config::Config& cfg, const RunOptions& options, RunFolder& run);

// Memory and work of training the model an lm config describes (framework/run/memory_estimate.hpp).
RunEstimate estimate_lm_training(const config::Config& cfg);

}  // namespace iclab::run
