#pragma once
// The work of `iclab run CONFIG [overrides]` after its flags are parsed, shared by the command (main.cpp) and the
// Python module's iclab.run (python/src/): the config loaded with its overrides, then the run.
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/run/run_options.hpp"

namespace iclab::cli {

// CONFIG with its overrides (each key.path=value), validated by its experiment's schema. InputError (`who`:
// "iclab run") for an override without '=' and for every refusal of the config.
config::Config load_run_config(const std::string& config_path, const std::vector<std::string>& overrides, const std::string& who);

// Checks the data files the config names, sets the compute threads (framework/core/threads.hpp: 0 = the free cores)
// and runs the config's experiment.
run::RunOutcome run_loaded_config(const config::Config& cfg, const run::RunOptions& options, int threads);

}  // namespace iclab::cli
