#pragma once
// `iclab predict RUN_DIR --text ...`: load a trained induction-head run and show its next-token predictions.
#include <filesystem>
#include <string>

namespace iclab::experiments {

struct PredictOptions {
    std::filesystem::path run_dir;
    std::string text;
    std::size_t top = 3;
    std::filesystem::path out;  // empty: no file; else logits (T, V) and tokens (T) as HDF5
    bool overwrite = false;
};

void predict(const PredictOptions& options);

}  // namespace iclab::experiments
