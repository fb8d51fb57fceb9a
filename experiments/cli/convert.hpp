#pragma once
// `iclab convert RUN_DIR --prompt LETTERS --out ADAPTER.h5`: ICLCA (paper 000 Algorithm 1) on a trained
// induction-head run: the prompt becomes the b_KV, b_D of every layer, written as an adapter file
// (framework/icl/adapter_file.hpp, docs/adapter_format.md) that `iclab predict --adapter` applies.
#include <filesystem>
#include <string>
#include <vector>

namespace iclab::cli {

struct ConvertOptions {
    std::filesystem::path run_dir;
    std::string prompt;                          // letters a-z, A-Z (tasks::encode_letters)
    std::filesystem::path out;                   // the adapter file to write
    std::vector<std::filesystem::path> adapters; // applied in this order before converting (composition)
    bool overwrite = false;                      // replace an existing adapter file
};

// Prints the prompt length M, the adapter's and the model's parameter counts, the percentage and, as the
// last line of stdout, the adapter file. InputError (exit 2) for a model ICLCA does not support (naming the
// assumption), a letter outside the vocabulary, an existing --out without overwrite, or base adapters that
// do not fit the model or each other.
void convert(const ConvertOptions& options);

}  // namespace iclab::cli
