#pragma once
// A run folder: <output.dir>/<run name>/ with config.yaml, log.txt, checkpoint.h5 (written by the Trainer)
// and, at commit, results.h5 — and what identifies a run across interruptions and resumes.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "framework/config/config.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/run_options.hpp"

namespace iclab::run {

class Catalog;

// "[<experiment>_]<config folder>_<config stem>[_<overrides_name>]_seed<k>" unless output.name is set.
std::string run_name(const config::Config& cfg);

// key=value with the value as the resolved config writes it (3e-3 and 0.003 give one text); the override itself
// for a key the config does not declare (a section given as a map).
std::string canonical_override(const config::Config& cfg, const std::string& override_text);
// "key-value,key-value": the overrides canonical and sorted by key, in characters safe in folder names (no '=',
// quotes, brackets or blanks; a list's commas as '+'). The same config gives the same name however it was typed.
std::string overrides_name(const config::Config& cfg, const std::vector<std::string>& overrides);

// File names inside a run folder.
inline const char* kConfigFile = "config.yaml";
inline const char* kLogFile = "log.txt";
inline const char* kResultsFile = "results.h5";
inline const char* kCheckpointFile = "checkpoint.h5";
inline const char* kLiveCurvesFile = "curves.csv";  // the Trainer's evaluations as they happen
inline const char* kStagesDir = "stages";           // finished units after training, for resume (stage_store.hpp)

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

// "line N: 'x' <a_name>, 'y' <b_name>" for the first line where two config texts differ ("no line differs").
std::string first_difference(const std::string& a_text, const std::string& b_text, const std::string& a_name,
                             const std::string& b_name);

// For `iclab run --resume RUN_DIR`: checks that RUN_DIR holds an unfinished run with a checkpoint
// (InputError, saying so, when it has no checkpoint.h5 or is already complete) and that its
// config.yaml is unchanged since the checkpoint (same fingerprint); returns that config, validated with
// its experiment's schema from the catalog, and the checkpoint's step.
struct ResumePoint {
    config::Config config;
    std::size_t step = 0;         // steps done at the checkpoint
    std::size_t total_steps = 0;  // train.steps
};
ResumePoint load_resume_config(const std::filesystem::path& run_dir, const Catalog& catalog);

// A run folder being filled. With RunOptions::resume_dir, the existing folder is reopened: log.txt is
// appended to, and the identity comes from its checkpoint.h5.
class RunFolder {
public:
    RunFolder(const config::Config& cfg, const RunOptions& options);
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path checkpoint_path() const { return path_ / kCheckpointFile; }
    bool resumed() const { return resumed_; }
    const RunIdentity& identity() const { return identity_; }
    std::ostream& log() { return log_; }
    io::ResultsWriter& results() { return *writer_; }
    // Writes the end time and commits results.h5 (temporary file, fsync, rename); a run started with --overwrite over
    // an existing one is then put in that one's place (path() becomes it).
    void commit();
    // A checkpoint.h5 that carries the run's identity (experiment, config and its fingerprint, source,
    // overrides, seed, start and resume times) as root attributes, for `iclab run --resume` to reopen the folder;
    // the caller adds its own state and commits it.
    std::unique_ptr<io::ResultsWriter> open_checkpoint() const;

private:
    void start_replacement(const config::Config& cfg);
    std::filesystem::path path_;
    std::filesystem::path replaces_;  // --overwrite: the old run folder this one replaces at commit ("" otherwise)
    bool resumed_ = false;
    RunIdentity identity_;
    std::ofstream log_;
    std::unique_ptr<io::ResultsWriter> writer_;
};

}  // namespace iclab::run
