#pragma once
// Language-model runs (experiment `lm`): a token model over a real vocabulary (GPT-2's BPE, V = 50257) with a
// fixed context. Such a run folder comes from `iclab import gpt2` (framework/run/gpt2_checkpoint.hpp) or, later,
// from training on token files; predict, export (and generate) load it here. The folder is the usual finished run
// (config.yaml, log.txt, results.h5 with /checkpoint) plus, when known, the tokenizer files in tokenizer/.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "framework/config/config.hpp"
#include "framework/model/transformer.hpp"

namespace iclab::run {

class Catalog;

// The lm experiment's own keys (task.vocab_size, task.context_length), declared once here for the experiment and
// the loaders.
void add_lm_task_keys(config::Schema& schema);
// The model an lm config describes: model.* keys, V = task.vocab_size, max_seq_len = task.context_length.
model::ModelSpec lm_model_spec(const config::Config& cfg);

inline const char* kTokenizerFolder = "tokenizer";  // RUN_DIR/tokenizer/: vocab.json + merges.txt or encoder.json + vocab.bpe

template <class T>
struct LmRun {
    std::filesystem::path dir;
    config::Config config;
    std::unique_ptr<model::Transformer<T>> model;
    std::size_t context_length() const { return model->spec().max_seq_len; }
    // RUN_DIR/tokenizer when the run has one, else empty.
    std::filesystem::path tokenizer_dir() const;
};

// InputError naming RUN_DIR when it is no finished run, is not an lm run, or holds no parameters; `who` names the
// caller ("iclab predict"). The parameters are read in T whatever model.dtype says (float32 values convert exactly).
template <class T>
LmRun<T> load_lm_run(const std::filesystem::path& run_dir, const Catalog& catalog, const std::string& who,
                     typename model::Transformer<T>::Mode mode = model::Transformer<T>::Mode::inference);

// InputError saying the limit when a sequence of `tokens` does not fit the model's context (learned positions
// exist for max_seq_len positions only).
void check_fits_context(std::size_t tokens, const model::ModelSpec& spec, const std::string& who);

}  // namespace iclab::run
