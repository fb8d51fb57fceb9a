// Pooling the claims of runs that differ only in their seed (framework/workflow/claims_pool.hpp).
#include "framework/workflow/claims_pool.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/io/precondition.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/workflow/sweep.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

constexpr const char* kPerturbKey = "train.perturb_init_ulps";  // the rounding twin's key (framework/run/config_keys.cpp)

namespace {

// The arm keys of one experiment's claims and, per key, the values that are an arm of one of them.
using ArmValues = std::map<std::string, std::set<std::string>>;

// The scalar at a dotted key of the resolved config ("train.permute_examples"); empty when absent.
std::string config_value(const YAML::Node& config, const std::string& key) {
    YAML::Node node = config;
    std::string rest = key;
    for (std::size_t dot; (dot = rest.find('.')) != std::string::npos && node.IsMap(); rest = rest.substr(dot + 1))
        node.reset(node[rest.substr(0, dot)]);
    if (!node.IsMap() || !node[rest] || !node[rest].IsScalar()) return "";
    return node[rest].Scalar();
}

// The resolved config without the keys that do not change the setting: seed and output (folder, overwrite, ...),
// and the keys that name the arms of the experiment's paired and ranked claims where the run's value is one of their
// arms (io::ClaimPair::key: "model.mask" pools the prefix and causal runs of a seed together, "train.permute_examples"
// the permuted and unpermuted ones, "task.pool_sequences" Figure 6's pools); a value that is no arm (a per_sequence
// run) keeps its own setting.
std::string setting_key(const std::string& config_text, const std::string& experiment, const ArmValues& arms) {
    YAML::Node config = YAML::Load(config_text);
    if (config.IsMap()) {
        config.remove("seed");
        config.remove("output");
        if (config["train"] && config["train"].IsMap()) config["train"].remove(std::string(kPerturbKey).substr(6));  // in the key's twin suffix
        for (const auto& [key, values] : arms) {
            if (values.count(config_value(config, key)) == 0) continue;
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

std::string without_seed(const std::string& overrides, const ArmValues& arms) {
    std::string out;
    std::string token;
    std::istringstream words(overrides);
    while (words >> token) {
        bool arm = false;
        for (const auto& [key, values] : arms) {
            if (token.rfind(key + "=", 0) != 0) continue;
            std::string value = token.substr(key.size() + 1);  // as the overrides attribute writes it: strings quoted
            if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
                value = value.substr(1, value.size() - 2);
            arm = arm || values.count(value) > 0;
        }
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

// The rounding twins (issue 45, "Robustness shown"): a setting that differs from another only in train.perturb_init_ulps
// (not 0) is that setting's twin; it becomes no rows of its own, and each claim of the base setting gets `rounding`
// from the twin's claim of the same id. A twin without a base setting stays a setting of its own.
std::vector<PooledClaims> with_rounding_twins(std::vector<PooledClaims> settings, const std::vector<std::string>& perturbations,
                                              const std::vector<std::string>& bases) {
    std::map<std::string, std::size_t> base_of;  // key without the perturbation -> the unperturbed setting
    for (std::size_t s = 0; s < settings.size(); ++s)
        if (perturbations[s].empty()) base_of.emplace(bases[s], s);
    std::map<std::size_t, std::map<std::string, std::vector<std::pair<std::string, io::Verdict>>>> twins;  // base -> id -> (ulps, verdict)
    std::vector<bool> folded(settings.size(), false);
    for (std::size_t s = 0; s < settings.size(); ++s) {
        if (perturbations[s].empty()) continue;
        const auto base = base_of.find(bases[s]);
        if (base == base_of.end()) continue;
        folded[s] = true;
        PooledClaims& into = settings[base->second];
        into.rounding_runs.insert(into.rounding_runs.end(), settings[s].runs.begin(), settings[s].runs.end());
        for (ExcludedRun e : settings[s].excluded) {
            e.reason = "rounding twin " + std::string(kPerturbKey) + " = " + perturbations[s] + ": " + e.reason;
            into.excluded.push_back(std::move(e));
        }
        for (const io::ClaimResult& c : settings[s].claims) twins[base->second][c.claim.id].emplace_back(perturbations[s], c.verdict);
    }
    std::vector<PooledClaims> out;
    for (std::size_t s = 0; s < settings.size(); ++s) {
        if (folded[s]) continue;
        const auto twin = twins.find(s);
        if (twin != twins.end())
            for (io::ClaimResult& c : settings[s].claims) {
                const auto found = twin->second.find(c.claim.id);
                if (found != twin->second.end()) c.rounding = rounding_text(c.verdict, found->second);
            }
        out.push_back(std::move(settings[s]));
    }
    return out;
}

// The fewest values on which the rule can decide: an interval needs 2, a count rule its own `needed` (every value: 1).
std::size_t values_required(const io::ClaimRule& rule) {
    if (!rule.counts()) return 2;
    return rule.needed == 0 ? 1 : rule.needed;
}

// The setting's claims with its excluded runs (claims_pool.hpp, "Preconditions"): `all` pooled over every run (the
// declarations, in order), `kept` over the runs not excluded; each claim's result is its `kept` one (none left: no
// value), marked with the excluded runs, and inconclusive with "<n> of <m> seeds learned the task" when fewer values
// are left than the rule needs.
std::vector<io::ClaimResult> without_excluded(const std::vector<io::ClaimResult>& all, const std::vector<io::ClaimResult>& kept,
                                              const std::vector<ExcludedRun>& excluded, const std::vector<std::int64_t>& seeds) {
    std::string listed;
    std::set<std::int64_t> every(seeds.begin(), seeds.end()), learned = every;
    for (const ExcludedRun& e : excluded) {
        listed += (listed.empty() ? "" : "; ") + ("seed " + std::to_string(e.seed) + ": " + e.reason);
        learned.erase(e.seed);
    }
    std::vector<io::ClaimResult> out;
    for (const io::ClaimResult& declared : all) {
        const auto found = std::find_if(kept.begin(), kept.end(), [&](const io::ClaimResult& k) { return k.claim.id == declared.claim.id; });
        io::ClaimResult r = found != kept.end() ? *found : io::evaluate_claim(declared.claim, {}, {});
        r.excluded = listed;
        const std::size_t required = values_required(r.claim.rule);
        if (r.values.size() < required) {
            r.verdict = io::Verdict::inconclusive;
            r.note = std::to_string(learned.size()) + " of " + std::to_string(every.size()) + " seeds learned the task (" +
                     std::to_string(r.values.size()) + (r.values.size() == 1 ? " value" : " values") + " left, the rule needs " +
                     std::to_string(required) + ")";
        }
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

std::string rounding_text(io::Verdict base, const std::vector<std::pair<std::string, io::Verdict>>& twins) {
    std::string differs;
    for (const auto& [ulps, verdict] : twins)
        if (verdict != base)
            differs += (differs.empty() ? "" : "; ") + (io::verdict_name(verdict) + (" at +" + ulps + (ulps == "1" ? " ulp" : " ulps")));
    if (twins.empty()) return "";
    return differs.empty() ? "holds under rounding" : "depends on rounding: " + differs;
}

std::vector<PooledClaims> pool_run_claims(const std::vector<fs::path>& run_dirs, const Catalog* catalog) {
    // First pass: each run's claims, checked against its config; the arm keys of each experiment (every key one of its
    // runs' claims pairs or ranks on), so that all runs of a grid over arms fall in one setting, whichever claims each
    // run declares (paper 003 Figure 6: every pool ranks on task.pool_sequences, the largest pool also pairs the masks).
    struct Read {
        fs::path dir;
        std::string experiment, config_text, overrides_text, config_source;
        std::string setting_text;  // the config the setting is judged on (resolved again when a catalog is given)
        std::vector<io::ClaimResult> claims;
        std::optional<io::Precondition> precondition;  // recorded by the run (framework/io/precondition.hpp), if any
    };
    std::vector<Read> read;
    std::map<std::string, ArmValues> arm_values;  // experiment -> arm key -> its arms
    for (const fs::path& dir : run_dirs) {
        const io::ResultsReader reader(dir / kResultsFile);
        Read r;
        r.claims = io::read_claims(reader);
        if (r.claims.empty()) continue;
        r.dir = dir;
        r.experiment = reader.read_attr_string("/", "experiment");
        r.config_text = reader.read_attr_string("/", "config");
        r.overrides_text = reader.has_attr("/", "overrides") ? reader.read_attr_string("/", "overrides") : "";
        r.config_source = reader.read_attr_string("/", "config_source");
        r.precondition = io::read_precondition(reader);
        if (catalog != nullptr) r.setting_text = resolve_again(dir / kConfigFile, *catalog);
        if (r.setting_text.empty()) r.setting_text = r.config_text;
        const YAML::Node config = YAML::Load(r.config_text);
        for (const io::ClaimResult& c : r.claims) {
            if (!c.claim.pair.paired()) continue;
            std::set<std::string>& values = arm_values[r.experiment][c.claim.pair.key];
            for (const std::string& a : c.claim.pair.ranked() ? c.claim.pair.arms : std::vector<std::string>{c.claim.pair.first, c.claim.pair.second})
                values.insert(a);
            // the arm a run declares is the value its config holds at the pair's key (else it would pair the wrong runs)
            const std::string value = config_value(config, c.claim.pair.key);
            ICLAB_INPUT_CHECK(value.empty() || value == c.claim.pair.arm,
                              dir.string() << ": claim '" << c.claim.id << "' declares arm '" << c.claim.pair.arm << "' but the run's "
                                           << c.claim.pair.key << " is '" << value << "'");
        }
        read.push_back(std::move(r));
    }
    std::vector<PooledClaims> out;
    std::map<std::string, std::size_t> index;
    std::vector<std::vector<std::pair<std::string, std::vector<io::ClaimResult>>>> per_setting;
    std::vector<std::vector<std::int64_t>> seeds;  // per setting: each run's training seed (the unit of seed_means claims)
    // per setting, the runs whose precondition is met (pooled) and their seeds; every run above gives the declarations
    std::vector<std::vector<std::pair<std::string, std::vector<io::ClaimResult>>>> kept_runs;
    std::vector<std::vector<std::int64_t>> kept_seeds;
    // One run per (setting, seed, arm): two copies of a run (or two runs of one setting and seed) would count its values
    // twice and narrow the interval, whatever unit its claims pool over.
    std::map<std::string, fs::path> run_of;
    std::vector<std::string> perturbations;  // per setting: its train.perturb_init_ulps when not 0, else empty
    std::vector<std::string> bases;          // per setting: its key without train.perturb_init_ulps
    for (Read& r : read) {
        const ArmValues& keys = arm_values[r.experiment];
        const std::string base = setting_key(r.setting_text, r.experiment, keys);
        std::string perturbation = config_value(YAML::Load(r.setting_text), kPerturbKey);
        if (perturbation == "0") perturbation.clear();
        const std::string key = base + (perturbation.empty() ? "" : "\nrounding twin: " + std::string(kPerturbKey) + " = " + perturbation);
        {
            const YAML::Node config = YAML::Load(r.config_text);
            const std::int64_t seed = run_seed(r.config_text, r.dir);
            std::string identity = key + "\nseed " + std::to_string(seed), arms;
            for (const auto& arm : keys) {
                const std::string value = config_value(config, arm.first);
                identity += "\n" + arm.first + " = " + value;
                arms += (arms.empty() ? " (" : ", ") + arm.first + " = " + value;
            }
            const auto [it, fresh] = run_of.emplace(identity, r.dir);
            ICLAB_INPUT_CHECK(fresh, "seed " << seed << (arms.empty() ? "" : arms + ")") << " is in both " << it->second.string() << " and "
                                             << r.dir.string() << ": runs of the same setting with the same seed (copies of one run?) "
                                                                  "would count its values twice; give one of them");
        }
        auto [it, fresh] = index.emplace(key, out.size());
        if (fresh) {
            PooledClaims p;
            const std::string overrides = without_seed(r.overrides_text, keys);
            p.setting = r.config_source + (overrides.empty() ? "" : " " + overrides);
            p.experiment = r.experiment;
            out.push_back(p);
            per_setting.emplace_back();
            seeds.emplace_back();
            kept_runs.emplace_back();
            kept_seeds.emplace_back();
            perturbations.push_back(perturbation);
            bases.push_back(base);
        }
        const std::int64_t seed = run_seed(r.config_text, r.dir);
        seeds[it->second].push_back(seed);
        if (r.precondition && !r.precondition->met()) {
            out[it->second].excluded.push_back({r.dir, seed, io::precondition_text(*r.precondition)});
        } else {
            out[it->second].runs.push_back(r.dir);
            kept_seeds[it->second].push_back(seed);
            kept_runs[it->second].push_back({r.dir.string(), r.claims});
        }
        per_setting[it->second].push_back({r.dir.string(), std::move(r.claims)});
    }
    for (std::size_t s = 0; s < out.size(); ++s) {
        out[s].claims = io::pool_claims(per_setting[s], seeds[s]);
        if (out[s].excluded.empty()) continue;
        const std::vector<io::ClaimResult> kept = kept_runs[s].empty() ? std::vector<io::ClaimResult>{} : io::pool_claims(kept_runs[s], kept_seeds[s]);
        out[s].claims = without_excluded(out[s].claims, kept, out[s].excluded, seeds[s]);
    }
    return with_rounding_twins(std::move(out), perturbations, bases);
}

namespace {

// The identity of a claim's values to the last bit (issue 45, "each distinct measurement is one claim": the report
// tells claims that judge one measurement from claims whose 3-digit values only look alike): FNV-1a 64 over the units
// and the IEEE-754 bits of the values, in order, as 16 hex digits.
std::string values_digest(const io::ClaimResult& r) {
    std::uint64_t h = 14695981039346656037ULL;
    auto mix = [&h](std::uint64_t word) {
        for (int b = 0; b < 8; ++b) h = (h ^ ((word >> (8 * b)) & 0xffU)) * 1099511628211ULL;
    };
    for (std::int64_t u : r.units) mix(static_cast<std::uint64_t>(u));
    for (double v : r.values) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        mix(bits);
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(h));
    return text;
}

// How many bit-distinct values: fewer than n means ties (a count, a rank statistic, steps at a fixed resolution), and
// two different quantities can then give equal values by chance.
double distinct_values(const io::ClaimResult& r) {
    std::set<std::uint64_t> seen;
    for (double v : r.values) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        seen.insert(bits);
    }
    return static_cast<double>(seen.size());
}

}  // namespace

WideTable claims_table(const std::vector<PooledClaims>& pooled) {
    WideTable table;
    for (const PooledClaims& p : pooled)
        for (const io::ClaimResult& r : p.claims) {
            const io::Claim& c = r.claim;
            std::string units, values;
            if (c.unit == "seed") {
                for (std::size_t i = 0; i < r.units.size(); ++i) units += (i ? "," : "") + std::to_string(r.units[i]);
                char text[32];
                for (std::size_t i = 0; i < r.values.size(); ++i) {
                    std::snprintf(text, sizeof text, "%s%.3g", i ? ", " : "", r.values[i]);
                    values += text;
                }
            } else {
                units = std::to_string(r.units.size()) + " instances";
            }
            table.add_row({{"setting", p.setting}, {"experiment", p.experiment}, {"runs", static_cast<double>(p.runs.size())},
                           {"paper", c.paper}, {"id", c.id}, {"source", c.source}, {"kind", io::claim_kind_name(c.kind)},
                           {"statement", r.selection.empty() ? c.statement : c.statement + " [picked on validation data: " + r.selection + "]"}, {"metric", c.metric}, {"rule", c.rule.text(r.values.size())}, {"unit", c.unit},
                           {"units", units}, {"n", static_cast<double>(r.values.size())}, {"mean", r.interval.mean},
                           {"ci95_low", r.interval.low}, {"ci95_high", r.interval.high},
                           {"on_claimed_side", static_cast<double>(r.on_side)}, {"paper_value", c.paper_value},
                           {"verdict", io::verdict_name(r.verdict)}, {"note", r.note}, {"readme", c.readme},
                           {"test", io::rule_test_name(c.rule.test)}, {"values", values},
                           {"values_digest", values_digest(r)}, {"distinct_values", distinct_values(r)},
                           {"leave_one_out", r.leave_one_out}, {"rounding", r.rounding}, {"excluded", r.excluded},
                           {"provenance", c.provenance}});
        }
    return table;
}

}  // namespace iclab::run
