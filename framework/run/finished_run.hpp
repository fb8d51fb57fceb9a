#pragma once
// Service: "load a finished run's model". predict, convert and experiments that start from a trained model
// (iclca_induction with source.run_dir, ...) read it here, whatever experiment trained it.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>

#include "framework/config/config.hpp"
#include "framework/model/transformer.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::run {

class Catalog;

// RUN_DIR/config.yaml of a finished run (RUN_DIR/results.h5 exists), validated with its experiment's schema, after
// checking that it is the config recorded in results.h5 (an edited copy is refused). InputError naming RUN_DIR otherwise.
config::Config load_finished_run_config(const std::filesystem::path& run_dir, const Catalog& catalog, const std::string& who);

// A finished run that trained an induction-head model, loaded for inference in float64 whatever model.dtype
// it trained in: RUN_DIR/config.yaml (validated with its experiment's schema) and the parameters of
// RUN_DIR/results.h5 /checkpoint, b_KV and b_D included.
struct InductionRun {
    std::filesystem::path dir;
    config::Config config;
    tasks::InductionHeadSpec task;
    std::unique_ptr<model::Transformer<double>> model;
};

// Any experiment whose schema has the induction-head task and model keys qualifies; `who` names the caller in
// messages ("iclab predict", "source.run_dir"). InputError when RUN_DIR is no finished run, its experiment
// trains no induction-head model, or its results.h5 holds no parameters. The RoPE table covers
// max(min_positions, task.seq_len) positions (positions are relative, so it may exceed the training length).
InductionRun load_induction_run(const std::filesystem::path& run_dir, const Catalog& catalog, std::size_t min_positions,
                                const std::string& who,
                                model::Transformer<double>::Mode mode = model::Transformer<double>::Mode::training);

// With a source run, the model and task are the source's: InputError listing every task.* / model.* key that
// `cfg` sets explicitly (not by default) to another value than `source` has.
void check_model_keys_agree(const config::Config& cfg, const config::Config& source, const std::string& source_description);

}  // namespace iclab::run
