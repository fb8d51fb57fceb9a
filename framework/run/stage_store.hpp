#pragma once
// Staged resume: the finished units of a run's work after its training (ICLAA: each learned-map fit, each chunk of
// evaluated pairs), stored one file per unit in RUN_DIR/stages/<unit>.h5 as soon as it is done (built in memory,
// written under a temporary name and renamed), so that `iclab run --resume` loads a unit instead of computing it again.
//
// A stored unit is used only by the run it was written for: its file carries the fingerprint of the resolved config
// (config_fingerprint of the run's config text) and of the model it was computed on (model_fingerprint: FNV-1a of the
// parameters), and its unit name. A file that differs in any of them (another config, another model, a copied or
// damaged file) is ignored with a message in log.txt and on stderr and the unit is computed again (its file is then
// replaced): never silently used. A file written by another iclab commit is used with a warning, as the Trainer
// resumes a checkpoint of another commit.
//
// Stopping: stop_requested() is the check between units (and, for long units, between their steps): a
// SIGINT/SIGTERM/SIGHUP received inside an InterruptScope, or RunOptions::stop_after_units units saved in this
// session. The caller then returns without results.h5 and the command exits as an interrupted training does
// (128 + the signal, or 0 after --stop-after-units).
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "framework/io/results_file.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/run/run_options.hpp"

namespace iclab::run {

// FNV-1a 64 of the parameters' bytes, as 16 hex digits: what identifies the model a unit was computed on.
std::string parameter_fingerprint(const std::vector<double>& parameters);

class StageStore {
public:
    // model_fingerprint: parameter_fingerprint of the model the units are computed on; model_description: what it
    // is, for the files and the messages (e.g. "trained 2000 steps").
    StageStore(RunFolder& run, const RunOptions& options, std::string model_fingerprint, std::string model_description);

    // The stored unit `name` when its file belongs to this run (same config, model and unit), else null: absent, or
    // ignored with a message (another config or model, unreadable). Counts what it loads.
    std::unique_ptr<io::ResultsReader> load(const std::string& name);
    // A writer for unit `name` ([a-z0-9_] only) with the run's fingerprints as root attributes; fill it, then save() it.
    std::unique_ptr<io::ResultsWriter> open(const std::string& name) const;
    // Commits the unit (temporary file, fsync, rename over an ignored file of the same name) and counts it.
    void save(io::ResultsWriter& unit);

    // An interrupt (SIGINT/SIGTERM/SIGHUP) arrived, or RunOptions::stop_after_units units were saved in this session.
    bool stop_requested() const;
    // Units this session may still save before RunOptions::stop_after_units stops it (SIZE_MAX without that option):
    // work that saves several units at once takes at most this many, so the stop lands where it would unit by unit.
    std::size_t units_left() const;
    std::size_t saved() const { return saved_; }    // units computed and stored in this session
    std::size_t loaded() const { return loaded_; }  // units loaded from earlier sessions

    // For the caller's own checks of a loaded unit (shapes, finite values, the rows it scored): says why the unit is
    // not used (log.txt, stderr) and takes it back from loaded(); the caller then computes it again.
    void reject(const std::string& name, const std::string& why);

    const std::filesystem::path& dir() const { return dir_; }
    // Once the run's results.h5 is committed the stored units have done their job: removes RUN_DIR/stages.
    void remove_all();

private:
    void ignore(const std::string& name, const std::string& why);

    RunFolder& run_;
    RunOptions options_;
    std::filesystem::path dir_;
    std::string config_fingerprint_, model_fingerprint_, model_description_;
    std::size_t saved_ = 0, loaded_ = 0;
    bool warned_commit_ = false;
};

}  // namespace iclab::run
