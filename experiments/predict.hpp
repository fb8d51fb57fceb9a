#pragma once
// `iclab predict RUN_DIR --text ...`: load a trained induction-head run and show its next-token predictions,
// optionally with ICLCA adapters applied (`--adapter`, framework/icl/adapter_file.hpp).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/model/transformer.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::experiments {

// A finished induction-head run loaded for inference, in double precision whatever model.dtype it trained in:
// RUN_DIR/config.yaml and the parameters of RUN_DIR/results.h5 /checkpoint (b_KV, b_D included).
struct InductionRun {
    config::Config config;
    tasks::InductionHeadSpec task;
    std::unique_ptr<model::Transformer<double>> model;
};
// InputError when RUN_DIR is no finished induction-head run with a checkpoint. The RoPE table covers
// max(min_positions, task.seq_len) positions (positions are relative, so it may exceed the training length).
InductionRun load_induction_run(const std::filesystem::path& run_dir, std::size_t min_positions);

struct PredictOptions {
    std::filesystem::path run_dir;
    std::string text;
    std::size_t top = 3;
    std::filesystem::path out;  // empty: no file; else logits (T, V) and tokens (T) as HDF5
    bool overwrite = false;
    // Adapter files applied in this order before predicting (icl::apply_adapter_files); none: the model as trained.
    std::vector<std::filesystem::path> adapters;
};

void predict(const PredictOptions& options);

}  // namespace iclab::experiments
