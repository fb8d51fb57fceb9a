#include "framework/run/finished_run.hpp"

#include <algorithm>

#include "framework/config/config.hpp"
#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/induction_training.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::run {

config::Config load_finished_run_config(const std::filesystem::path& run_dir, const Catalog& catalog, const std::string& who) {
    const auto config_path = run_dir / kConfigFile, results_path = run_dir / kResultsFile;
    ICLAB_INPUT_CHECK(std::filesystem::is_directory(run_dir), who << ": " << run_dir.string() << " is not a run folder");
    ICLAB_INPUT_CHECK(std::filesystem::exists(config_path), who << ": " << run_dir.string() << " is not a run folder (no "
                                                                << kConfigFile << ")");
    ICLAB_INPUT_CHECK(std::filesystem::exists(results_path),
                      who << ": " << run_dir.string() << " has no completed " << kResultsFile << " (did the run finish?)");
    {
        // What predict and convert compute must be what the run trained: config.yaml is a copy for reading, the
        // record is results.h5's `config` attribute. An edited copy (rope, feature_map, triggers) is refused.
        const io::ResultsReader recorded(results_path);
        ICLAB_INPUT_CHECK(config::read_config_text(config_path.string()) == recorded.read_attr_string("/", "config"),
                          who << ": " << config_path.string() << " differs from the config recorded in " << results_path.string()
                              << ": it was edited after the run; restore it (iclab show " << run_dir.string()
                              << " prints the recorded one)");
    }
    return catalog.load_config(config_path.string(), {});
}

InductionRun load_induction_run(const std::filesystem::path& run_dir, const Catalog& catalog, std::size_t min_positions,
                                const std::string& who, model::Transformer<double>::Mode mode) {
    const auto results_path = run_dir / kResultsFile;
    InductionRun run;
    run.dir = run_dir;
    run.config = load_finished_run_config(run_dir, catalog, who);
    const std::string experiment = run.config.get_string("experiment");
    ICLAB_INPUT_CHECK(run.config.has("task.triggers") && run.config.has("model.attention"),
                      who << ": " << run_dir.string() << " is a " << experiment
                          << " run, which trains no induction-head model (task.triggers, model.*)");
    io::ResultsReader reader(results_path);
    if (!reader.has("/checkpoint")) {
        const bool from_source = run.config.has("source.run_dir") && !run.config.get_string("source.run_dir").empty();
        if (from_source)
            throw InputError(who + ": " + run_dir.string() + " converted the model of source.run_dir " +
                             run.config.get_string("source.run_dir") + " and holds no parameters; use that run");
        throw InputError(who + ": " + results_path.string() + " holds no trained parameters (output.checkpoint was false)");
    }
    run.task = induction_spec_from_config(run.config);
    // RoPE positions are relative, so the table may be longer than the training length; learned positions exist for
    // task.seq_len positions only.
    const bool learned = run.config.get_string("model.position_embedding") == "learned";
    ICLAB_INPUT_CHECK(!learned || min_positions <= static_cast<std::size_t>(run.task.seq_len),
                      who << ": " << min_positions << " tokens do not fit this model: it has learned positions for "
                          << run.task.seq_len << " (task.seq_len); give at most " << run.task.seq_len << " tokens");
    const std::size_t max_len = learned ? static_cast<std::size_t>(run.task.seq_len)
                                        : std::max<std::size_t>(min_positions, static_cast<std::size_t>(run.task.seq_len));
    run.model = std::make_unique<model::Transformer<double>>(model_spec_from_config(run.config, tasks::kInductionVocab, max_len), mode);
    read_checkpoint(reader, *run.model);
    return run;
}

void check_model_keys_agree(const config::Config& cfg, const config::Config& source, const std::string& source_description) {
    std::string differences;
    config::Schema keys;
    add_induction_task_keys(keys);
    add_model_keys(keys);
    for (const auto& key : keys.keys()) {
        if (!cfg.has(key.path) || !source.has(key.path) || cfg.origin(key.path) == "default") continue;
        const std::string mine = cfg.value_text(key.path), theirs = source.value_text(key.path);
        if (mine != theirs)
            differences += "\n  " + key.path + ": " + mine + " (" + cfg.origin(key.path) + ") but " + theirs + " in " +
                           source_description;
    }
    ICLAB_INPUT_CHECK(differences.empty(), "config error: with source.run_dir the model and task are the source run's; "
                                           "these keys are set to other values:"
                                               << differences << "\n(leave them out, or make them equal)");
}

}  // namespace iclab::run
