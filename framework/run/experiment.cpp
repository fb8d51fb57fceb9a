#include "framework/run/experiment.hpp"

#include <algorithm>
#include <cstdio>

#include <yaml-cpp/yaml.h>

#include "framework/core/check.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/induction_training.hpp"
#include "framework/run/memory_estimate.hpp"
#include "framework/run/regression_training.hpp"

namespace iclab::run {

Rng RunContext::stream(std::uint64_t id) const {
    return Rng(static_cast<std::uint64_t>(config.get_int("seed"))).derive(id);
}

config::Schema Experiment::schema() const {
    config::Schema schema;
    schema.add_string("experiment", name, {name}, "which experiment this config runs");
    const auto uses = [&](KeyGroup group) {
        for (KeyGroup g : key_groups)
            if (g == group) return true;
        return false;
    };
    if (uses(KeyGroup::output)) add_output_keys(schema);
    if (uses(KeyGroup::induction_task)) add_induction_task_keys(schema);
    if (uses(KeyGroup::model)) add_model_keys(schema);
    if (uses(KeyGroup::train)) add_train_keys(schema);
    if (uses(KeyGroup::induction_task) && uses(KeyGroup::model)) add_induction_model_rules(schema);
    // A model trained on a task: refuse at validation what cannot fit in memory.
    if (uses(KeyGroup::model) && uses(KeyGroup::train) && (uses(KeyGroup::induction_task) || uses(KeyGroup::regression_task)))
        schema.add_rule(check_training_memory);
    if (uses(KeyGroup::regression_task)) {
        ICLAB_CHECK(uses(KeyGroup::model) && uses(KeyGroup::train), "key group regression_task needs model and train");
        add_regression_task_keys(schema);
    }
    if (declare_keys) declare_keys(schema);
    // After every other rule: the run's size (the estimate may assume the other rules' conditions, e.g. heads | width).
    if (estimate)
        schema.add_final_rule([estimate = estimate](const config::Config& cfg) { check_run_estimate(cfg, estimate(cfg)); });
    return schema;
}

Catalog::Catalog(std::vector<Experiment> experiments) : experiments_(std::move(experiments)) {
    for (const auto& experiment : experiments_)
        ICLAB_CHECK(static_cast<bool>(experiment.estimate) && static_cast<bool>(experiment.run),
                    "experiment " << experiment.name << " has no estimate of its memory and work (Experiment::estimate)");
    for (std::size_t i = 0; i < experiments_.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            ICLAB_CHECK(experiments_[i].name != experiments_[j].name, "experiment " << experiments_[i].name << " listed twice");
}

const Experiment& Catalog::find(const std::string& name) const {
    std::string known;
    for (const auto& experiment : experiments_) {
        if (experiment.name == name) return experiment;
        known += (known.empty() ? "" : ", ") + experiment.name;
    }
    throw InputError("unknown experiment '" + name + "' (known: " + known + ")");
}

std::string Catalog::peek_experiment_name(const std::string& config_path, const std::vector<std::string>& overrides) const {
    for (const auto& o : overrides)
        if (o.rfind("experiment=", 0) == 0) return o.substr(11);
    std::filesystem::path path = config_path;
    std::vector<std::string> seen;
    for (std::size_t depth = 0; depth < config::kMaxInheritDepth; ++depth) {
        std::error_code error;  // a symlink loop or an unreadable folder: read_config_text below names it (exit 2)
        std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
        const std::string identity = (error ? path.lexically_normal() : canonical).string();
        // A cycle or an over-deep chain: load_config names it with file and line; let it.
        if (std::find(seen.begin(), seen.end(), identity) != seen.end()) return "";
        seen.push_back(identity);
        YAML::Node root;
        try {
            root = YAML::Load(config::read_config_text(path.string()));  // regular file, size cap, no control characters
        } catch (const YAML::Exception&) {
            // A syntax error: load_config reports it with file and line; let it.
            return "";
        }
        if (root.IsMap() && root["experiment"] && root["experiment"].IsScalar()) return root["experiment"].as<std::string>();
        if (!root.IsMap() || !root["inherit"] || !root["inherit"].IsScalar()) break;
        path = path.parent_path() / root["inherit"].as<std::string>();
        if (depth + 1 == config::kMaxInheritDepth) return "";
    }
    throw InputError("config error: " + config_path + ": missing top-level key 'experiment' (which experiment to run)");
}

config::Config Catalog::load_config(const std::string& config_path, const std::vector<std::string>& overrides) const {
    const std::string name = peek_experiment_name(config_path, overrides);
    // With a syntax error we cannot know the experiment yet: any schema makes load_config report it.
    if (name.empty()) return config::load_config(config_path, overrides, experiments_.front().schema());
    const Experiment* experiment = nullptr;
    try {
        experiment = &find(name);
    } catch (const InputError& error) {
        throw InputError("config error: " + config_path + ": experiment: " + error.what());
    }
    return config::load_config(config_path, overrides, experiment->schema());
}

RunOutcome Catalog::run(const config::Config& cfg, const RunOptions& options) const {
    const Experiment& experiment = find(cfg.get_string("experiment"));
    if (experiment.check_inputs) experiment.check_inputs(cfg);
    const RunContext context{cfg, options, *this};
    const RunEstimate estimate = experiment.estimate(cfg);
    if (!options.quiet && estimate.flops >= kPrintEstimateFlops)
        std::fprintf(stderr, "[iclab] %s: estimated %s\n", experiment.name.c_str(), describe_estimate(estimate).c_str());
    return experiment.run(context);
}

}  // namespace iclab::run
