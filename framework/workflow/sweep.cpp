#include "framework/workflow/sweep.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iomanip>
#include <map>
#include <regex>
#include <sstream>

#include "framework/config/config.hpp"
#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/core/process.hpp"
#include "framework/io/output_path.hpp"
#include "framework/workflow/job_lock.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

// The output policy (framework/io/output_path.hpp) for a sweep folder, which is added to and never replaced: never a
// config or the sweep file, inside one or around one; an existing folder must be iclab's (its marker, or sweep.yaml
// from before the marker), so a launch never fills a folder iclab did not make.
void check_sweep_folder(const fs::path& dir, const SweepSpec& spec) {
    std::vector<fs::path> inputs(spec.configs.begin(), spec.configs.end());
    if (!spec.source.empty() && spec.source != "command line") inputs.emplace_back(spec.source);
    const fs::path resolved = fs::weakly_canonical(fs::absolute(dir));
    for (const fs::path& input : inputs) {
        const fs::path in = fs::weakly_canonical(fs::absolute(input));
        ICLAB_INPUT_CHECK(!io::path_within(resolved, in) && !io::path_within(in, resolved),
                          "the sweep folder " << dir.string() << " is, contains or lies inside an input of the sweep (" << input.string()
                                              << "): set output.dir elsewhere");
    }
    std::error_code error;
    if (!fs::exists(fs::symlink_status(dir, error))) return;
    ICLAB_INPUT_CHECK(fs::is_directory(fs::symlink_status(dir, error)), "the sweep folder " << dir.string() << " exists and is not a folder");
    ICLAB_INPUT_CHECK(fs::exists(dir / io::kOutputMarker) || fs::is_regular_file(dir / "sweep.yaml"),
                      "the sweep folder " << dir.string() << " exists and was not made by iclab (no " << io::kOutputMarker
                                          << " or sweep.yaml): move it, or set output.dir or the sweep's name elsewhere");
}

std::string key_of(const std::string& override_text) { return override_text.substr(0, override_text.find('=')); }

// A derived folder name: characters outside [A-Za-z0-9._+-] become '_', a leading '.' too, and a name longer than
// kMaxNameLength keeps its start and gets a hash of the whole, so two long names stay apart.
std::string bounded_name(std::string name) {
    for (char& c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '+' || c == ',')) c = '_';
    if (!name.empty() && name.front() == '.') name.front() = '_';
    if (name.size() > kMaxNameLength) name = name.substr(0, kMaxNameLength - 17) + "_" + fnv1a64_hex(name);
    return name.empty() ? "_" : name;
}

void write_atomically(const fs::path& path, const std::string& text) {
    const fs::path partial = path.string() + ".partial." + std::to_string(::getpid());
    {
        std::ofstream out(partial);
        out << text;
        ICLAB_CHECK(out.good(), "cannot write " << partial.string());
    }
    fs::rename(partial, path);
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

Sweep plan_sweep(const SweepSpec& spec, const Catalog& catalog) {
    for (const auto& o : spec.overrides)
        ICLAB_INPUT_CHECK(o.find('=') != std::string::npos, spec.source << ": '" << o << "' is not an override key=value");
    std::vector<std::string> swept;
    for (const auto* block : {&spec.grid, &spec.zip})
        for (const auto& axis : *block) swept.push_back(axis.key);
    for (const auto& key : swept)
        ICLAB_INPUT_CHECK(key.rfind("output.", 0) != 0, spec.source << ": the sweep sets output.dir and output.name itself; "
                                                                       "do not sweep " << key);
    for (const auto& o : spec.overrides)
        ICLAB_INPUT_CHECK(key_of(o) != "output.name", spec.source << ": the sweep names every run folder; leave out output.name");
    // One key, one place: a key set twice (two axes, an axis and a fixed value, two fixed values) is refused rather
    // than resolved silently by order.
    {
        std::map<std::string, std::string> where;
        const auto claim = [&](const std::string& key, const std::string& as) {
            const auto [previous, inserted] = where.emplace(key, as);
            ICLAB_INPUT_CHECK(inserted, spec.source << ": " << key << " is set twice (" << previous->second << " and " << as
                                                    << "); give each key once");
        };
        for (const auto& o : spec.overrides) claim(key_of(o), "a fixed value");
        for (const auto& axis : spec.grid) claim(axis.key, "a grid axis");
        for (const auto& axis : spec.zip) claim(axis.key, "a zipped axis");
    }
    if (!spec.name.empty()) check_sweep_name(spec.name, spec.source);
    // The size of the plan before planning it: each job's config is resolved and validated below.
    {
        double count = static_cast<double>(spec.configs.size());
        for (const auto& axis : spec.grid) count *= static_cast<double>(axis.values.size());
        if (!spec.zip.empty()) count *= static_cast<double>(spec.zip.front().values.size());
        ICLAB_INPUT_CHECK(count <= static_cast<double>(kMaxSweepJobs),
                          spec.source << ": the sweep has " << count << " jobs; at most " << kMaxSweepJobs
                                      << " are planned at once (split it into several sweeps)");
    }
    // The fixed overrides once per config, so a bad one is reported once, not once per job.
    for (const auto& config_path : spec.configs) {
        try {
            (void)catalog.load_config(fs::absolute(config_path).lexically_normal().string(), spec.overrides);
        } catch (const InputError& error) {
            std::string message = error.what();
            if (spec.source != "command line")
                for (std::size_t at; (at = message.find("command-line override")) != std::string::npos;)
                    message.replace(at, 21, "override (from " + spec.source + ")");
            throw InputError(spec.source + ": " + config_path + ": " + message);
        }
    }

    // Every combination: grid (first axis slowest), crossed with the zipped axes.
    std::vector<std::vector<std::string>> combinations = {{}};
    for (const auto& axis : spec.grid) {
        std::vector<std::vector<std::string>> next;
        for (const auto& combination : combinations)
            for (const auto& value : axis.values) {
                next.push_back(combination);
                next.back().push_back(axis.key + "=" + value);
            }
        combinations = next;
    }
    if (!spec.zip.empty()) {
        std::vector<std::vector<std::string>> next;
        for (const auto& combination : combinations)
            for (std::size_t i = 0; i < spec.zip.front().values.size(); ++i) {
                next.push_back(combination);
                for (const auto& axis : spec.zip) next.back().push_back(axis.key + "=" + axis.values[i]);
            }
        combinations = next;
    }

    Sweep sweep;
    std::string errors, fixed_canonical;
    std::map<std::string, std::size_t> seen;  // config + name -> job
    fs::path output_dir;
    for (const auto& config_path : spec.configs) {
        const std::string absolute = fs::absolute(config_path).lexically_normal().string();
        for (const auto& combination : combinations) {
            std::vector<std::string> overrides = spec.overrides;
            overrides.insert(overrides.end(), combination.begin(), combination.end());
            std::string label = config_path;
            for (const auto& o : combination) label += " " + o;
            try {
                const config::Config cfg = catalog.load_config(absolute, overrides);
                SweepJob job;
                job.config_path = absolute;
                job.experiment = cfg.get_string("experiment");
                if (const auto& check_inputs = catalog.find(job.experiment).check_inputs) check_inputs(cfg);  // data files, cheaply
                try {  // weights the launcher's ETA; an estimate that needs what is not there yet (a source run) is unknown
                    const RunEstimate estimate = catalog.find(job.experiment).estimate(cfg);
                    job.estimated_flops = estimate.flops;
                    job.estimated_memory_gib = estimate.memory_gib;
                } catch (const Error&) {
                    job.estimated_flops = 0.0;
                    job.estimated_memory_gib = 0.0;
                }
                std::vector<std::string> fixed, varied;
                for (const auto& o : spec.overrides)  // output.dir places the sweep folder; the job's own is set at launch
                    if (key_of(o) != "output.dir") fixed.push_back(canonical_override(cfg, o));
                for (const auto& o : combination) varied.push_back(canonical_override(cfg, o));
                std::sort(fixed.begin(), fixed.end());
                std::sort(varied.begin(), varied.end());
                if (fixed_canonical.empty())
                    for (const auto& o : fixed) fixed_canonical += o + "\n";
                job.overrides = fixed;
                job.overrides.insert(job.overrides.end(), varied.begin(), varied.end());
                std::string name = spec.configs.size() > 1 ? fs::path(config_path).parent_path().filename().string() + "_" +
                                                                 fs::path(config_path).stem().string()
                                                           : "";
                if (!combination.empty()) name += (name.empty() ? "" : "_") + overrides_name(cfg, combination);
                job.name = name.empty() ? "base" : bounded_name(name);
                if (output_dir.empty()) output_dir = fs::absolute(cfg.get_string("output.dir"));
                if (!seen.emplace(absolute + "\n" + job.name, sweep.jobs.size()).second) continue;  // the same job twice
                job.index = sweep.jobs.size();
                sweep.jobs.push_back(job);
            } catch (const InputError& error) {
                errors += "\n  job " + label + ":\n    " + error.what();
            }
        }
    }
    ICLAB_INPUT_CHECK(errors.empty(), spec.source << ": bad configs in the sweep, nothing was run:" << errors);
    ICLAB_INPUT_CHECK(!sweep.jobs.empty(), spec.source << ": the sweep has no jobs");
    std::string name = spec.name;
    if (name.empty()) {
        name = fs::path(spec.configs.front()).stem().string();
        if (!fixed_canonical.empty()) name += "_" + fnv1a64_hex(fixed_canonical).substr(0, 8);
    }
    sweep.dir = output_dir / "sweeps" / bounded_name(name);
    check_sweep_folder(sweep.dir, spec);
    // What each run will write as its config.yaml, to recognize its folder later.
    for (auto& job : sweep.jobs) {
        std::vector<std::string> overrides = job.overrides;
        overrides.push_back(config::string_override("output.dir", sweep.dir.string()));
        overrides.push_back(config::string_override("output.name", job.name));
        job.config_text = catalog.load_config(job.config_path, overrides).to_yaml();
        const fs::path earlier = sweep.dir / job.name / kConfigFile;
        if (fs::exists(earlier)) {
            const std::string text = read_text(earlier);
            if (text != job.config_text && resolve_again(earlier, catalog) == job.config_text) job.earlier_config_text = text;
        }
    }
    return sweep;
}

std::string resolve_again(const fs::path& config_file, const Catalog& catalog) {
    try {
        return catalog.load_config(config_file.string(), {}).to_yaml();
    } catch (const InputError&) {
        return "";
    }
}

const char* job_state_name(JobState state) {
    switch (state) {
        case JobState::finished: return "finished";
        case JobState::interrupted: return "interrupted";
        case JobState::stale: return "stale";
        case JobState::pending: return "pending";
    }
    return "?";
}

JobState job_state(const Sweep& sweep, const SweepJob& job) {
    const fs::path dir = sweep.dir / job.name;
    if (!fs::exists(dir)) return JobState::pending;
    const bool finished = fs::exists(dir / kResultsFile), interrupted = fs::exists(dir / kCheckpointFile);
    if ((finished || interrupted) && fs::exists(dir / kConfigFile)) {
        const std::string text = read_text(dir / kConfigFile);
        ICLAB_INPUT_CHECK(text == job.config_text || (!job.earlier_config_text.empty() && text == job.earlier_config_text),
                          dir.string() << " holds a run of another config than this sweep's job " << job.name
                                       << " (another sweep of the same name, an edited config.yaml, or a default that "
                                          "changed since the run, e.g. model.small_gemm / large_gemm on 2026-11-27; "
                                       << first_difference(text, job.config_text, "in the folder", "in the job")
                                       << "): move it away, or give the job that value");
    }
    if (finished) return JobState::finished;
    if (interrupted) return JobState::interrupted;
    return JobState::stale;
}

std::vector<std::string> job_arguments(const Sweep& sweep, const SweepJob& job, int threads) {
    const JobState state = job_state(sweep, job);
    const std::vector<std::string> common = {"--quiet", "--threads", std::to_string(threads)};
    std::vector<std::string> args;
    if (state == JobState::finished) return args;
    if (state == JobState::interrupted) {
        args = {"run", "--resume", (sweep.dir / job.name).string()};
    } else {
        args = {"run", job.config_path};
        args.insert(args.end(), job.overrides.begin(), job.overrides.end());
        args.push_back(config::string_override("output.dir", sweep.dir.string()));
        args.push_back(config::string_override("output.name", job.name));
        if (state == JobState::stale) args.push_back("--overwrite");
    }
    args.insert(args.end(), common.begin(), common.end());
    return args;
}

fs::path job_log_path(const Sweep& sweep, const SweepJob& job) { return sweep.dir / "logs" / (job.name + ".log"); }

fs::path job_lock_path(const Sweep& sweep, const SweepJob& job) { return sweep.dir / "locks" / (job.name + ".lock"); }

bool job_running(const Sweep& sweep, const SweepJob& job) { return lock_held_elsewhere(job_lock_path(sweep, job)); }

void write_sweep_plan(const Sweep& sweep) {
    fs::create_directories(sweep.dir);
    if (!fs::exists(sweep.dir / io::kOutputMarker)) io::write_output_marker(sweep.dir, "a sweep folder (iclab run -m / iclab sweep)");
    YAML::Emitter out;
    out << YAML::Comment("iclab sweep plan: written by iclab run -m / iclab sweep, read by iclab sweep-job");
    out << YAML::BeginMap << YAML::Key << "dir" << YAML::Value << sweep.dir.string() << YAML::Key << "jobs" << YAML::Value
        << YAML::BeginSeq;
    for (const auto& job : sweep.jobs) {
        out << YAML::BeginMap << YAML::Key << "name" << YAML::Value << job.name << YAML::Key << "config" << YAML::Value
            << job.config_path << YAML::Key << "experiment" << YAML::Value << job.experiment << YAML::Key << "overrides"
            << YAML::Value << YAML::Flow << job.overrides << YAML::Key << "config_text" << YAML::Value << YAML::Literal
            << job.config_text << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
    write_atomically(sweep.dir / "sweep.yaml", std::string(out.c_str()) + "\n");
}

Sweep read_sweep_plan(const fs::path& sweep_dir) {
    const fs::path path = sweep_dir / "sweep.yaml";
    std::error_code no_throw;
    ICLAB_INPUT_CHECK(fs::is_regular_file(path, no_throw), sweep_dir.string() << " is not a sweep folder (no sweep.yaml)");
    Sweep sweep;
    // The folder given is the truth: jobs are written under it, never under a `dir:` the file records. A plan that
    // records another folder was moved or edited: its jobs' configs name the old folder, so it is refused.
    std::error_code error;
    sweep.dir = fs::canonical(sweep_dir, error);
    ICLAB_INPUT_CHECK(!error, sweep_dir.string() << ": " << error.message());
    try {
        const YAML::Node root = YAML::Load(config::read_config_text(path.string()));
        ICLAB_INPUT_CHECK(root.IsMap() && root["dir"] && root["jobs"] && root["jobs"].IsSequence(),
                          path.string() << " is damaged: expected the keys dir and jobs");
        const fs::path recorded = root["dir"].as<std::string>();
        ICLAB_INPUT_CHECK(fs::weakly_canonical(recorded, error) == sweep.dir,
                          path.string() << " records the sweep folder " << recorded.string() << " but lives in "
                                        << sweep.dir.string() << ": the sweep was moved or its plan edited; plan it again "
                                        << "(iclab sweep / iclab run -m) where it is now");
        ICLAB_INPUT_CHECK(root["jobs"].size() <= kMaxSweepJobs, path.string() << " is damaged: more than " << kMaxSweepJobs << " jobs");
        for (const auto& node : root["jobs"]) {
            SweepJob job;
            job.index = sweep.jobs.size();
            job.name = node["name"].as<std::string>();
            check_sweep_name(job.name, path.string() + ": job " + std::to_string(job.index));  // one folder under the sweep
            job.config_path = node["config"].as<std::string>();
            job.experiment = node["experiment"].as<std::string>();
            job.overrides = node["overrides"].as<std::vector<std::string>>();
            job.config_text = node["config_text"].as<std::string>();
            sweep.jobs.push_back(job);
        }
    } catch (const YAML::Exception& e) {
        throw InputError(path.string() + " is damaged: " + e.what());
    }
    return sweep;
}

void write_job_outcome(const Sweep& sweep, const SweepJob& job, const JobOutcome& outcome) {
    fs::create_directories(sweep.dir / "status");
    double peak = outcome.peak_rss_gib;
    {
        std::ifstream previous(sweep.dir / "status" / job.name);
        std::string last;
        int code = 0;
        double seconds = 0.0, earlier_peak = 0.0;
        if (previous >> last >> code >> seconds >> earlier_peak) peak = std::max(peak, earlier_peak);
    }
    std::ostringstream text;
    text << outcome.status << " " << outcome.exit_status << " " << outcome.seconds << " " << peak << "\n";
    write_atomically(sweep.dir / "status" / job.name, text.str());
}

void write_manifest(const Sweep& sweep) {
    const auto csv = [](const std::string& field) {
        if (field.find_first_of(",\"\n") == std::string::npos) return field;
        std::string quoted = "\"";
        for (char c : field) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
        return quoted + "\"";
    };
    std::ostringstream out;
    out << "index,name,status,exit_status,seconds,peak_rss_gib,run_dir,log,overrides\n";
    for (const auto& job : sweep.jobs) {
        std::string status = job_state_name(job_state(sweep, job)), exit_status, seconds, peak_rss;
        std::ifstream outcome(sweep.dir / "status" / job.name);
        std::string last;
        int code = 0;
        double s = 0.0, peak = 0.0;
        if (outcome >> last >> code >> s) {
            // A finished folder is done whatever the last attempt said; otherwise the last attempt's outcome.
            if (status != "finished") status = last;
            exit_status = std::to_string(code);
            std::ostringstream t;
            t << s;
            seconds = t.str();
            if (outcome >> peak && peak > 0.0) {
                std::ostringstream p;
                p << std::setprecision(4) << peak;
                peak_rss = p.str();
            }
        }
        if (status == "finished") status = "done";
        else if (job_running(sweep, job)) status = "running";
        std::string overrides;
        for (const auto& o : job.overrides) overrides += (overrides.empty() ? "" : " ") + o;
        out << job.index << "," << csv(job.name) << "," << status << "," << exit_status << "," << seconds << "," << peak_rss << ","
            << csv((sweep.dir / job.name).string()) << "," << csv(job_log_path(sweep, job).string()) << "," << csv(overrides)
            << "\n";
    }
    write_atomically(sweep.dir / "manifest.csv", out.str());
}

}  // namespace iclab::run
