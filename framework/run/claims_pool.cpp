// Pooling the claims of runs that differ only in their seed (framework/run/claims_pool.hpp).
#include "framework/run/claims_pool.hpp"

#include <yaml-cpp/yaml.h>

#include <map>
#include <set>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

// The resolved config without the keys that do not change the setting: seed and output (folder, overwrite, ...),
// and the keys that name the arms of paired claims (io::ClaimPair::key: "model.mask" pools the prefix and causal runs
// of a seed together, "train.permute_examples" the permuted and unpermuted ones).
std::string setting_key(const std::string& config_text, const std::string& experiment, const std::set<std::string>& arm_keys) {
    YAML::Node config = YAML::Load(config_text);
    if (config.IsMap()) {
        config.remove("seed");
        config.remove("output");
        for (const std::string& key : arm_keys) {
            YAML::Node parent = config;
            std::string rest = key;
            for (std::size_t dot; (dot = rest.find('.')) != std::string::npos && parent.IsMap(); rest = rest.substr(dot + 1))
                parent.reset(parent[rest.substr(0, dot)]);
            if (parent.IsMap()) parent.remove(rest);
        }
    }
    YAML::Emitter emitter;
    emitter << config;
    return experiment + "\n" + emitter.c_str();
}

// The scalar at a dotted key of the resolved config ("train.permute_examples"); empty when absent.
std::string config_value(const YAML::Node& config, const std::string& key) {
    YAML::Node node = config;
    std::string rest = key;
    for (std::size_t dot; (dot = rest.find('.')) != std::string::npos && node.IsMap(); rest = rest.substr(dot + 1))
        node.reset(node[rest.substr(0, dot)]);
    if (!node.IsMap() || !node[rest] || !node[rest].IsScalar()) return "";
    return node[rest].Scalar();
}

std::string without_seed(const std::string& overrides, const std::set<std::string>& arm_keys) {
    std::string out;
    std::string token;
    std::istringstream words(overrides);
    while (words >> token) {
        bool arm = false;
        for (const std::string& key : arm_keys) arm = arm || token.rfind(key + "=", 0) == 0;
        if (!arm && token.rfind("seed=", 0) != 0 && token.rfind("output.", 0) != 0) out += (out.empty() ? "" : " ") + token;
    }
    return out;
}

// The run's training seed, from its resolved config (checked: a results file read here was not written here).
std::int64_t run_seed(const std::string& config_text, const fs::path& dir) {
    const YAML::Node config = YAML::Load(config_text);
    ICLAB_INPUT_CHECK(config.IsMap() && config["seed"] && config["seed"].IsScalar(), (dir / kResultsFile).string() << ": its config has no seed");
    std::int64_t seed = 0;
    const bool integer = YAML::convert<std::int64_t>::decode(config["seed"], seed);
    ICLAB_INPUT_CHECK(integer, (dir / kResultsFile).string() << ": its config's seed '" << config["seed"].Scalar() << "' is not an integer");
    return seed;
}

}  // namespace

std::vector<PooledClaims> pool_run_claims(const std::vector<fs::path>& run_dirs) {
    std::vector<PooledClaims> out;
    std::map<std::string, std::size_t> index;
    std::vector<std::vector<std::pair<std::string, std::vector<io::ClaimResult>>>> per_setting;
    std::vector<std::vector<std::int64_t>> seeds;  // per setting: each run's training seed (the unit of seed_means claims)
    for (const fs::path& dir : run_dirs) {
        const io::ResultsReader reader(dir / kResultsFile);
        std::vector<io::ClaimResult> claims = io::read_claims(reader);
        if (claims.empty()) continue;
        const std::string experiment = reader.read_attr_string("/", "experiment");
        const std::string config_text = reader.read_attr_string("/", "config");
        const YAML::Node config = YAML::Load(config_text);
        std::set<std::string> arm_keys;
        for (const io::ClaimResult& r : claims) {
            if (!r.claim.pair.paired()) continue;
            arm_keys.insert(r.claim.pair.key);
            // the arm a run declares is the value its config holds at the pair's key (else it would pair the wrong runs)
            const std::string value = config_value(config, r.claim.pair.key);
            ICLAB_INPUT_CHECK(value.empty() || value == r.claim.pair.arm,
                              dir.string() << ": claim '" << r.claim.id << "' declares arm '" << r.claim.pair.arm << "' but the run's "
                                           << r.claim.pair.key << " is '" << value << "'");
        }
        const std::string key = setting_key(config_text, experiment, arm_keys);
        auto [it, fresh] = index.emplace(key, out.size());
        if (fresh) {
            PooledClaims p;
            const std::string overrides = reader.has_attr("/", "overrides") ? without_seed(reader.read_attr_string("/", "overrides"), arm_keys) : "";
            p.setting = reader.read_attr_string("/", "config_source") + (overrides.empty() ? "" : " " + overrides);
            p.experiment = experiment;
            out.push_back(p);
            per_setting.emplace_back();
            seeds.emplace_back();
        }
        out[it->second].runs.push_back(dir);
        per_setting[it->second].push_back({dir.string(), std::move(claims)});
        seeds[it->second].push_back(run_seed(config_text, dir));
    }
    for (std::size_t s = 0; s < out.size(); ++s) out[s].claims = io::pool_claims(per_setting[s], seeds[s]);
    return out;
}

WideTable claims_table(const std::vector<PooledClaims>& pooled) {
    WideTable table;
    for (const PooledClaims& p : pooled)
        for (const io::ClaimResult& r : p.claims) {
            const io::Claim& c = r.claim;
            std::string units;
            if (c.unit == "seed") {
                for (std::size_t i = 0; i < r.units.size(); ++i) units += (i ? "," : "") + std::to_string(r.units[i]);
            } else {
                units = std::to_string(r.units.size()) + " instances";
            }
            table.add_row({{"setting", p.setting}, {"experiment", p.experiment}, {"runs", static_cast<double>(p.runs.size())},
                           {"paper", c.paper}, {"id", c.id}, {"source", c.source}, {"kind", io::claim_kind_name(c.kind)},
                           {"statement", r.selection.empty() ? c.statement : c.statement + " [picked on validation data: " + r.selection + "]"}, {"metric", c.metric}, {"rule", c.rule.text()}, {"unit", c.unit},
                           {"units", units}, {"n", static_cast<double>(r.values.size())}, {"mean", r.interval.mean},
                           {"ci95_low", r.interval.low}, {"ci95_high", r.interval.high},
                           {"on_claimed_side", static_cast<double>(r.on_side)}, {"paper_value", c.paper_value},
                           {"verdict", io::verdict_name(r.verdict)}, {"note", r.note}, {"readme", c.readme}});
        }
    return table;
}

}  // namespace iclab::run
