#pragma once
// Service: an experiment made of sub-runs (seeds x variants, ...). Each sub-run is a complete run of another
// experiment in <run folder>/runs/<name>/ (its own config.yaml, log.txt, checkpoint.h5, results.h5), configured
// by the parent's resolved config — the keys that experiment declares — plus the sub-run's overrides
// (config::derive_config). No YAML text is edited.
//
// Resuming: the parent keeps a small checkpoint.h5 (its identity and the count of finished sub-runs), so
// `iclab run --resume <run folder>` re-enters it: finished sub-runs are read back, an interrupted one continues
// from its own checkpoint.h5 (bit-identical, as any run), missing ones start. --stop-after S stops the first
// unfinished sub-run after its step S, and the parent with it.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::run {

struct SubRunSpec {
    std::string name;                    // folder name under runs/, e.g. "no_bias_seed0"
    std::vector<std::string> overrides;  // e.g. {"seed=0", "model.attention_bias_trainable=false"}
};

class SubRuns {
public:
    // Sub-runs of `experiment` (a name in the catalog) inside the parent's run folder. A parent that starts anew
    // empties runs/ (only --overwrite reuses a folder) and writes its checkpoint with 0 sub-runs finished.
    SubRuns(const RunContext& parent_context, RunFolder& parent, std::string experiment, std::vector<SubRunSpec> subs);

    std::size_t size() const { return subs_.size(); }
    const SubRunSpec& spec(std::size_t i) const { return subs_[i]; }
    std::filesystem::path dir(std::size_t i) const { return runs_dir_ / subs_[i].name; }
    // The sub-run's config: the parent's keys that the experiment declares, then experiment=, the overrides,
    // output.dir and output.name.
    config::Config config(std::size_t i) const;

    // Runs sub-run i: reads it back when complete, continues it from its checkpoint, or starts it. After a
    // completed sub-run the parent's checkpoint counts it. Sub-runs must be run in order.
    RunOutcome run(std::size_t i);

private:
    void write_parent_checkpoint(std::size_t finished) const;

    const RunContext& context_;
    RunFolder& parent_;
    std::string experiment_;
    std::vector<SubRunSpec> subs_;
    std::filesystem::path runs_dir_;
};

}  // namespace iclab::run
