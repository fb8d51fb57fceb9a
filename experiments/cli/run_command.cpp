#include "experiments/cli/run_command.hpp"

#include "experiments/registry.hpp"
#include "framework/core/check.hpp"
#include "framework/core/threads.hpp"

namespace iclab::cli {

config::Config load_run_config(const std::string& config_path, const std::vector<std::string>& overrides, const std::string& who) {
    for (const auto& o : overrides)
        ICLAB_INPUT_CHECK(o.find('=') != std::string::npos, who << ": '" << o << "' is not an override of the form key.path=value");
    return experiments::catalog().load_config(config_path, overrides);
}

run::RunOutcome run_loaded_config(const config::Config& cfg, const run::RunOptions& options, int threads) {
    const auto& experiment = experiments::catalog().find(cfg.get_string("experiment"));
    if (experiment.check_inputs) experiment.check_inputs(cfg);  // the data files the config names, before any work
    configure_threads(threads);
    return experiments::catalog().run(cfg, options);
}

}  // namespace iclab::cli
