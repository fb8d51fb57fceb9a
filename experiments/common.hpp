#pragma once
// What every training experiment shares: the config keys of the model, the optimizer and the output,
// their translation into the framework's specs, the run folder and checkpoints.
// This is the one place where config meets model (the pipeline runs config -> task -> model -> experiment -> results).
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "framework/config/config.hpp"
#include "framework/io/results_file.hpp"
#include "framework/model/transformer.hpp"
#include "framework/train/optimizer.hpp"

namespace iclab::experiments {

struct RunOptions {
    bool quiet = false;      // no progress output on stderr
    bool overwrite = false;  // replace a completed run of the same name instead of choosing a new name
};

// Declares model.*, train.*, eval.*, output.*, seed and their cross-key rules.
void add_model_keys(config::Schema& schema);
void add_train_keys(config::Schema& schema);
void add_output_keys(config::Schema& schema);

model::ModelSpec model_spec_from_config(const config::Config& cfg, std::size_t vocab, std::size_t max_seq_len);
train::OptimizerSpec optimizer_spec_from_config(const config::Config& cfg);
train::ScheduleSpec schedule_spec_from_config(const config::Config& cfg);

// "[<experiment>_]<config folder>_<config stem>[_<overrides>]_seed<k>" unless output.name is set.
std::string run_name(const config::Config& cfg);

// A run folder being filled: <output.dir>/<run name>/ with config.yaml, log.txt and (at commit) results.h5.
class RunFolder {
public:
    RunFolder(const config::Config& cfg, const RunOptions& options);
    const std::filesystem::path& path() const { return path_; }
    std::ostream& log() { return log_; }
    io::ResultsWriter& results() { return *writer_; }
    // Writes the end time and renames results.h5.partial to results.h5.
    void commit();

private:
    std::filesystem::path path_;
    std::ofstream log_;
    std::unique_ptr<io::ResultsWriter> writer_;
};

// /checkpoint/<parameter name> for every parameter, with its shape and math convention as attributes.
template <class T>
void write_checkpoint(io::ResultsWriter& writer, const model::Transformer<T>& model);
// Loads /checkpoint/* into the model; every parameter must be present with the right shape.
template <class T>
void read_checkpoint(const io::ResultsReader& reader, model::Transformer<T>& model);

}  // namespace iclab::experiments
