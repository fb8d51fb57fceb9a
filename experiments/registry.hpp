#pragma once
// The experiments `iclab run` knows, selected by the config's top-level `experiment:` key.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "experiments/common.hpp"

namespace iclab::experiments {

struct Experiment {
    std::string name;
    std::string description;
    std::function<config::Schema()> schema;
    // Trains (or, with RunOptions::resume_dir, continues) the run of a validated config.
    std::function<RunOutcome(const config::Config&, const RunOptions&)> run;
};

const std::vector<Experiment>& all_experiments();
// InputError naming the known experiments when there is none of that name.
const Experiment& find_experiment(const std::string& name);
// The value of `experiment:` in the config file (following `inherit:`) or in an `experiment=` override.
// InputError naming the file when it is missing.
std::string peek_experiment_name(const std::string& config_path, const std::vector<std::string>& overrides);
// Loads and validates a config with its experiment's schema.
config::Config load_experiment_config(const std::string& config_path, const std::vector<std::string>& overrides);

}  // namespace iclab::experiments
