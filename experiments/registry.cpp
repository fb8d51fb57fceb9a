#include "experiments/registry.hpp"

#include <yaml-cpp/yaml.h>

#include "experiments/bias_training.hpp"
#include "experiments/forward_pass.hpp"
#include "experiments/iclca_serving.hpp"
#include "experiments/iclca_exactness.hpp"
#include "experiments/iclca_induction.hpp"
#include "experiments/induction_head.hpp"
#include "experiments/regression.hpp"
#include "framework/core/check.hpp"

namespace iclab::experiments {

const std::vector<Experiment>& all_experiments() {
    static const std::vector<Experiment> experiments = {
        {"induction_head", "train a linearized-attention transformer on the bigram induction-head task (paper 000 §6.2)",
         induction_head_schema, run_induction_head},
        {"regression", "train on in-context linear/sigmoid regression or classification with real-valued tokens "
                       "(papers 003, 004)", regression_schema, run_regression},
        {"iclca_serving", "time the logits of an input with the ICL prompt prepended vs with its ICLCA adapter (paper 000 §7)",
         iclca_serving_schema, run_iclca_serving},
        {"forward_pass", "forward-only passes of a randomly initialized model: throughput and peak memory (inference mode)",
         forward_pass_schema, run_forward_pass},
        {"iclca_exactness", "ICLCA exactness on random-weight models of several sizes, fp32 and fp64 (paper 000 Table 1, "
                            "Theorem 4.1)", iclca_exactness_schema, run_iclca_exactness},
        {"iclca_induction", "ICLCA on a trained induction-head model: ICL accuracy of M_old with and without the prompt "
                            "and of the converted M_new (paper 000 Table 2)",
         iclca_induction_schema, run_iclca_induction},
        {"bias_training", "the induction-head model trained with and without trainable b_KV, b_D over several seeds: "
                          "curves and steps to ICL accuracy (paper 000 Figure 1)",
         bias_training_schema, run_bias_training},
    };
    return experiments;
}

const Experiment& find_experiment(const std::string& name) {
    std::string known;
    for (const auto& experiment : all_experiments()) {
        if (experiment.name == name) return experiment;
        known += (known.empty() ? "" : ", ") + experiment.name;
    }
    throw InputError("unknown experiment '" + name + "' (known: " + known + ")");
}

std::string peek_experiment_name(const std::string& config_path, const std::vector<std::string>& overrides) {
    for (const auto& o : overrides)
        if (o.rfind("experiment=", 0) == 0) return o.substr(11);
    std::filesystem::path path = config_path;
    for (int depth = 0; depth < 32; ++depth) {
        YAML::Node root;
        try {
            root = YAML::LoadFile(path.string());
        } catch (const YAML::BadFile&) {
            throw InputError("config error: cannot read config file '" + path.string() + "'");
        } catch (const YAML::Exception&) {
            // A syntax error: load_config reports it with file and line; let it.
            return "";
        }
        if (root.IsMap() && root["experiment"] && root["experiment"].IsScalar()) return root["experiment"].as<std::string>();
        if (!root.IsMap() || !root["inherit"] || !root["inherit"].IsScalar()) break;
        path = path.parent_path() / root["inherit"].as<std::string>();
    }
    throw InputError("config error: " + config_path + ": missing top-level key 'experiment' (which experiment to run)");
}

config::Config load_experiment_config(const std::string& config_path, const std::vector<std::string>& overrides) {
    std::string name = peek_experiment_name(config_path, overrides);
    // With a syntax error we cannot know the experiment yet: any schema makes load_config report it.
    if (name.empty()) return config::load_config(config_path, overrides, all_experiments().front().schema());
    const Experiment* experiment = nullptr;
    try {
        experiment = &find_experiment(name);
    } catch (const InputError& error) {
        throw InputError("config error: " + config_path + ": experiment: " + error.what());
    }
    return config::load_config(config_path, overrides, experiment->schema());
}

}  // namespace iclab::experiments
