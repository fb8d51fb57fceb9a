#pragma once
// The one Experiment interface. An experiment declares only its own config keys and names the shared key
// groups it uses; `iclab run` builds its schema, loads and validates the config, and calls run() with a
// RunContext. Experiments never call each other: what several need (train a model from a config, load a
// finished run's model, sub-runs over seeds x variants) are services in framework/run.
//
// Adding an experiment: docs/adding_an_experiment.md.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/core/rng.hpp"
#include "framework/run/memory_estimate.hpp"
#include "framework/run/run_options.hpp"

namespace iclab::run {

class Catalog;

// Shared key groups, declared (in this order) after `experiment`:
//   output          seed, output.*                                     (framework/run/config_keys.hpp)
//   induction_task  task.* of the bigram induction-head task          (framework/run/induction_training.hpp)
//   model           model.*                                            (framework/run/config_keys.hpp)
//   train           train.*, eval.*, log.every                         (framework/run/config_keys.hpp)
//   regression_task task.*, model.read_in/read_out, train.context_output_l2/loss_reduction of in-context
//                   regression (framework/run/regression_training.hpp); needs model and train
enum class KeyGroup { output, induction_task, model, train, regression_task };

// What an experiment's run() gets.
struct RunContext {
    const config::Config& config;  // validated with the experiment's schema
    const RunOptions& options;     // --quiet, --overwrite, --resume, --stop-after
    const Catalog& catalog;        // for services that load other runs' configs (source runs, resume, sub-runs)

    // An independent random stream of the run's `seed`: stream(k) = Rng(seed).derive(k). Each consumer
    // (initialization, data, evaluation set, ...) has its own id, so drawing more from one never changes another.
    Rng stream(std::uint64_t id) const;
};

struct Experiment {
    std::string name;
    std::string description;  // one line, with the paper reference
    std::vector<KeyGroup> key_groups;
    // Declares the experiment's own keys and cross-key rules (may be empty).
    std::function<void(config::Schema&)> declare_keys;
    std::function<RunOutcome(const RunContext&)> run;
    // The run's memory and work from a validated config (required: the Catalog refuses an experiment without it).
    // `iclab run` refuses a run that cannot fit (exit 2, before its folder exists) and prints a long run's estimate.
    std::function<RunEstimate(const config::Config&)> estimate;
    // Optional: the files a config names that the run will read (a token file, a tokenizer folder), checked cheaply
    // before any work by `iclab run` (--dry-run too), sweep planning and Catalog::run; InputError through Config::fail
    // (key, file and line). Not a schema rule: a finished run's config is loaded later without its inputs (moved or
    // deleted data, an imported model that was never trained here).
    std::function<void(const config::Config&)> check_inputs = {};

    // `experiment` (allowed: this name), the key groups in KeyGroup order, then the experiment's own keys.
    config::Schema schema() const;
};

// The experiments `iclab run` knows (experiments/registry.cpp lists them), selected by the config's
// top-level `experiment:` key.
class Catalog {
public:
    explicit Catalog(std::vector<Experiment> experiments);
    const std::vector<Experiment>& all() const { return experiments_; }
    // InputError naming the known experiments when there is none of that name.
    const Experiment& find(const std::string& name) const;
    // The value of `experiment:` in the config file (following `inherit:`) or in an `experiment=` override;
    // "" when the file has a YAML syntax error (load_config reports it). InputError naming the file when missing.
    std::string peek_experiment_name(const std::string& config_path, const std::vector<std::string>& overrides) const;
    // Loads and validates a config with its experiment's schema.
    config::Config load_config(const std::string& config_path, const std::vector<std::string>& overrides) const;
    // Runs a validated config's experiment.
    RunOutcome run(const config::Config& cfg, const RunOptions& options) const;

private:
    std::vector<Experiment> experiments_;
};

}  // namespace iclab::run
