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
    // Continue the run in this folder from its checkpoint.h5 instead of starting a new one (`iclab run
    // --resume`); the config must be the one load_resume_config returned for it.
    std::filesystem::path resume_dir;
    // Stop after this step (1-based count of finished steps) with a checkpoint and without results.h5,
    // as if interrupted there; 0: train to train.steps (`iclab run --stop-after`).
    std::size_t stop_after = 0;
};

// What a run did: its folder, and whether it completed (results.h5 written) or stopped early
// (RunOptions::stop_after) after `steps_done` steps.
struct RunOutcome {
    std::filesystem::path run_dir;
    bool completed = false;
    std::size_t steps_done = 0;
    std::size_t steps_total = 0;
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

// File names inside a run folder.
inline const char* kConfigFile = "config.yaml";
inline const char* kLogFile = "log.txt";
inline const char* kResultsFile = "results.h5";
inline const char* kCheckpointFile = "checkpoint.h5";

// What identifies a run across interruptions: written into every checkpoint.h5 and, from there, into
// the results.h5 of a resumed run, so it carries the same root attributes as an uninterrupted one.
struct RunIdentity {
    std::string experiment;
    std::string config_text;      // the resolved config (Config::to_yaml), also RUN_DIR/config.yaml
    std::string config_source;    // the config file the run was started with
    std::string overrides;        // its command-line overrides, space-separated
    std::string start_time;       // when the run was first started
    std::string resumed_at;       // "" or one "step K at <time>" per resume, separated by "; "
    std::int64_t seed = 0;
};

// FNV-1a 64 of the resolved config text, as 16 hex digits: stored in checkpoints so that resuming
// with another config is refused.
std::string config_fingerprint(const std::string& config_text);

// For `iclab run --resume RUN_DIR`: checks that RUN_DIR holds an unfinished run with a checkpoint
// (InputError, saying so, when it has no checkpoint.h5 or is already complete) and that its
// config.yaml is unchanged since the checkpoint (same fingerprint); returns that config and the
// checkpoint's step.
struct ResumePoint {
    config::Config config;
    std::size_t step = 0;         // steps done at the checkpoint
    std::size_t total_steps = 0;  // train.steps
};
ResumePoint load_resume_config(const std::filesystem::path& run_dir);

// A run folder being filled: <output.dir>/<run name>/ with config.yaml, log.txt, checkpoint.h5 (written
// by the Trainer) and, at commit, results.h5. With RunOptions::resume_dir, the existing folder is
// reopened: log.txt is appended to, and the identity comes from its checkpoint.h5.
class RunFolder {
public:
    RunFolder(const config::Config& cfg, const RunOptions& options);
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path checkpoint_path() const { return path_ / kCheckpointFile; }
    bool resumed() const { return resumed_; }
    const RunIdentity& identity() const { return identity_; }
    std::ostream& log() { return log_; }
    io::ResultsWriter& results() { return *writer_; }
    // Writes the end time and renames results.h5.partial to results.h5.
    void commit();

private:
    std::filesystem::path path_;
    bool resumed_ = false;
    RunIdentity identity_;
    std::ofstream log_;
    std::unique_ptr<io::ResultsWriter> writer_;
};

// Parameters (or anything in their layout, e.g. optimizer moments) as one dataset per tensor
// <group>/<name>, with its shape and the attributes layout and trainable.
template <class T>
void write_parameter_tensors(io::ResultsWriter& writer, const std::string& group, const model::ParameterLayout& layout,
                             const std::vector<T>& buffer);
// Reads <group>/<name> for every tensor of the layout into the buffer; InputError naming the file
// when one is missing or has another shape.
template <class T>
void read_parameter_tensors(const io::ResultsReader& reader, const std::string& group, const model::ParameterLayout& layout,
                            std::vector<T>& buffer);

// /checkpoint/<parameter name> for every parameter, with its shape and math convention as attributes.
template <class T>
void write_checkpoint(io::ResultsWriter& writer, const model::Transformer<T>& model);
// Loads /checkpoint/* into the model; every parameter must be present with the right shape.
template <class T>
void read_checkpoint(const io::ResultsReader& reader, model::Transformer<T>& model);

}  // namespace iclab::experiments
