#pragma once
// How `iclab run` asks an experiment to run, and what the run did.
#include <cstddef>
#include <filesystem>

namespace iclab::run {

struct RunOptions {
    bool quiet = false;      // no progress output on stderr
    bool overwrite = false;  // replace a completed run of the same name instead of choosing a new name
    // Continue the run in this folder from its checkpoint.h5 instead of starting a new one (`iclab run
    // --resume`); the config must be the one load_resume_config returned for it.
    std::filesystem::path resume_dir;
    // Stop after this step (1-based count of finished steps) with a checkpoint and without results.h5,
    // as if interrupted there; 0: train to train.steps (`iclab run --stop-after`).
    std::size_t stop_after = 0;
    // Stop after this many units of a staged experiment's work after training (ICLAA: learned-map fits, chunks of
    // evaluated pairs; framework/run/stage_store.hpp) are stored in this session, as if interrupted there; 0: no such
    // stop (`iclab run --stop-after-units`).
    std::size_t stop_after_units = 0;
};

// What a run did: its folder, and whether it completed (results.h5 written) or stopped early
// (RunOptions::stop_after, stop_after_units, or a signal) after `steps_done` steps (steps_done = steps_total:
// stopped after its training, in the work a staged experiment stores in units).
struct RunOutcome {
    std::filesystem::path run_dir;
    bool completed = false;
    std::size_t steps_done = 0;
    std::size_t steps_total = 0;
};

}  // namespace iclab::run
