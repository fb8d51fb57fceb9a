#include "framework/run/sub_runs.hpp"

#include "framework/core/check.hpp"

namespace iclab::run {

namespace {

const char* const kRunsFolder = "runs";

}  // namespace

SubRuns::SubRuns(const RunContext& parent_context, RunFolder& parent, std::string experiment, std::vector<SubRunSpec> subs)
    : context_(parent_context), parent_(parent), experiment_(std::move(experiment)), subs_(std::move(subs)),
      runs_dir_(parent.path() / kRunsFolder) {
    context_.catalog.find(experiment_);  // InputError for an unknown experiment
    for (std::size_t i = 0; i < subs_.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            ICLAB_CHECK(subs_[i].name != subs_[j].name, "sub-run " << subs_[i].name << " listed twice");
    if (!parent_.resumed()) {
        std::filesystem::remove_all(runs_dir_);  // only an --overwrite run reuses a folder: its old sub-runs go too
        write_parent_checkpoint(0);
    }
    std::filesystem::create_directories(runs_dir_);
}

config::Config SubRuns::config(std::size_t i) const {
    std::vector<std::string> overrides = {"experiment=" + experiment_};
    overrides.insert(overrides.end(), subs_[i].overrides.begin(), subs_[i].overrides.end());
    overrides.push_back(config::string_override("output.dir", runs_dir_.string()));
    overrides.push_back(config::string_override("output.name", subs_[i].name));
    return config::derive_config(context_.config, context_.catalog.find(experiment_).schema(), overrides);
}

void SubRuns::write_parent_checkpoint(std::size_t finished) const {
    const auto writer = parent_.open_checkpoint();
    writer->set_attr("kind", "sub-runs finished; each sub-run's training state is in runs/<name>/checkpoint.h5");
    writer->set_attr("next_step", finished);
    writer->set_attr("total_steps", subs_.size());
    writer->commit();
}

RunOutcome SubRuns::run(std::size_t i) {
    namespace fs = std::filesystem;
    const config::Config sub_cfg = config(i);
    const fs::path sub_dir = dir(i);
    parent_.log() << "sub-run " << i + 1 << " of " << subs_.size() << ": " << subs_[i].name << "\n" << std::flush;
    if (!context_.options.quiet)
        std::fprintf(stderr, "iclab: %s sub-run %zu of %zu: %s\n", context_.config.get_string("experiment").c_str(), i + 1,
                     subs_.size(), subs_[i].name.c_str());
    RunOutcome outcome;
    if (fs::exists(sub_dir / kResultsFile)) {
        outcome = {sub_dir, true, 0, 0};  // finished before the parent was interrupted
    } else {
        RunOptions options = context_.options;
        options.resume_dir.clear();
        options.overwrite = false;
        config::Config cfg = sub_cfg;
        if (fs::exists(sub_dir / kCheckpointFile)) {
            const ResumePoint point = load_resume_config(sub_dir, context_.catalog);
            ICLAB_INPUT_CHECK(point.config.to_yaml() == sub_cfg.to_yaml(),
                              sub_dir.string() << "/" << kConfigFile << " is not the config this run gives the sub-run");
            options.resume_dir = sub_dir;
            cfg = point.config;
        } else {
            // Started but stopped before its first checkpoint (or never started): start it (again) in its folder.
            options.overwrite = fs::exists(sub_dir);
        }
        outcome = context_.catalog.run(cfg, options);
    }
    ICLAB_CHECK(outcome.run_dir == sub_dir, "sub-run " << subs_[i].name << " went to " << outcome.run_dir << ", not " << sub_dir);
    if (!outcome.completed)
        parent_.log() << "stopped in sub-run " << subs_[i].name << " after step " << outcome.steps_done << " (--stop-after)\n"
                      << std::flush;
    else
        write_parent_checkpoint(i + 1);
    return outcome;
}

}  // namespace iclab::run
