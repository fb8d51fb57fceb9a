#include "framework/run/run_folder.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "framework/core/hash.hpp"
#include "framework/io/output_path.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/run_dir.hpp"
#include "framework/run/experiment.hpp"

namespace iclab::run {

std::string run_name(const config::Config& cfg) {
    if (!cfg.get_string("output.name").empty()) return cfg.get_string("output.name");
    // "<folder>_<config stem>", e.g. "quick_induction_head", prefixed by the experiment when the stem
    // does not already name it; then the overrides (but seed and output.*) and the seed.
    const std::filesystem::path source(cfg.source_path());
    const std::string experiment = cfg.get_string("experiment"), stem = source.stem().string();
    const std::string folder = source.parent_path().filename().string();
    std::string name = (folder.empty() ? "" : folder + "_") + stem;
    if (stem.find(experiment) == std::string::npos) name = experiment + "_" + name;
    std::vector<std::string> named;
    for (const auto& override_text : cfg.overrides())
        if (override_text.rfind("seed=", 0) != 0 && override_text.rfind("output.", 0) != 0) named.push_back(override_text);
    if (!named.empty()) name += "_" + overrides_name(cfg, named);
    return name + "_seed" + std::to_string(cfg.get_int("seed"));
}

std::string canonical_override(const config::Config& cfg, const std::string& override_text) {
    const std::string key = override_text.substr(0, override_text.find('='));
    return cfg.has(key) ? key + "=" + cfg.value_text(key) : override_text;
}

std::string overrides_name(const config::Config& cfg, const std::vector<std::string>& overrides) {
    std::vector<std::string> canonical;
    for (const auto& o : overrides) canonical.push_back(canonical_override(cfg, o));
    std::sort(canonical.begin(), canonical.end());
    canonical.erase(std::unique(canonical.begin(), canonical.end()), canonical.end());
    std::string name;
    for (const auto& o : canonical) {
        const std::size_t equals = o.find('=');
        std::string value;
        for (char c : o.substr(equals + 1)) {
            if (c == '"' || c == '\'' || c == '[' || c == ']' || c == '{' || c == '}' || c == ' ') continue;
            if (c == ',') value += '+';
            else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '+') value += c;
            else value += '_';
        }
        name += (name.empty() ? "" : ",") + o.substr(0, equals) + "-" + (value.empty() ? "_" : value);
    }
    return name;
}

std::string config_fingerprint(const std::string& config_text) { return fnv1a64_hex(config_text); }

std::string first_difference(const std::string& a_text, const std::string& b_text, const std::string& a_name,
                             const std::string& b_name) {
    std::istringstream a(a_text), b(b_text);
    std::string line_a, line_b;
    for (int line = 1;; ++line) {
        const bool more_a = static_cast<bool>(std::getline(a, line_a)), more_b = static_cast<bool>(std::getline(b, line_b));
        if (!more_a && !more_b) return "no line differs";
        if (!more_a) line_a = "<end>";
        if (!more_b) line_b = "<end>";
        if (line_a != line_b)
            return "line " + std::to_string(line) + ": '" + line_a + "' " + a_name + ", '" + line_b + "' " + b_name;
    }
}

namespace {

// The checkpoint must have been written with exactly this resolved config, or with the folder's config.yaml as it
// is (byte for byte) when today's schema has keys that run's did not: `cfg`, that file resolved again, then differs
// only by those keys at their defaults (the rule of framework/workflow/sweep.hpp resolve_again).
void check_checkpoint_config(const io::ResultsReader& checkpoint, const config::Config& cfg) {
    const std::string stored = checkpoint.read_attr_string("/", "config");
    const std::string stored_fingerprint = checkpoint.read_attr_string("/", "config_fingerprint");
    ICLAB_INPUT_CHECK(config_fingerprint(stored) == stored_fingerprint,
                      checkpoint.path().string() << " is damaged: its config does not match its config_fingerprint");
    const std::string now = cfg.to_yaml();
    if (config_fingerprint(now) != stored_fingerprint && !cfg.source_path().empty()) {
        std::ifstream file(cfg.source_path(), std::ios::binary);
        std::ostringstream text;
        text << file.rdbuf();
        if (file.good() || file.eof()) {
            if (text.str() == stored) return;  // the schema gained keys since; every key of the run keeps its value
        }
    }
    ICLAB_INPUT_CHECK(config_fingerprint(now) == stored_fingerprint,
                      "cannot resume: the config (" << cfg.source_path() << ", fingerprint " << config_fingerprint(now)
                          << ") is not the one " << checkpoint.path().string() << " was written with (fingerprint "
                          << stored_fingerprint << "); " << first_difference(now, stored, "now", "in the checkpoint")
                          << ". A resumed run continues with the config it started with: restore config.yaml "
                             "(the checkpoint's root attribute 'config' holds it)");
}

}  // namespace

ResumePoint load_resume_config(const std::filesystem::path& run_dir, const Catalog& catalog) {
    namespace fs = std::filesystem;
    ICLAB_INPUT_CHECK(fs::is_directory(run_dir), "iclab run --resume: " << run_dir.string() << " is not a folder");
    const fs::path config_path = run_dir / kConfigFile, checkpoint_path = run_dir / kCheckpointFile;
    ICLAB_INPUT_CHECK(fs::exists(config_path), "iclab run --resume: " << run_dir.string() << " is not a run folder (no "
                                                                      << kConfigFile << ")");
    ICLAB_INPUT_CHECK(!fs::exists(run_dir / kResultsFile),
                      "iclab run --resume: the run in " << run_dir.string() << " is already complete ("
                                                        << kResultsFile << " exists): nothing to resume");
    const config::Config cfg = catalog.load_config(config_path.string(), {});
    ICLAB_INPUT_CHECK(fs::exists(checkpoint_path),
                      "iclab run --resume: " << run_dir.string() << " has no " << kCheckpointFile
                                             << ": the run stopped before its first checkpoint (train.checkpoint_every = "
                                             << cfg.get_int("train.checkpoint_every") << "); start it again");
    std::unique_ptr<io::ResultsReader> checkpoint;
    try {
        checkpoint = std::make_unique<io::ResultsReader>(checkpoint_path);
    } catch (const InputError&) {
        throw;
    } catch (const Error& error) {
        throw InputError(std::string("iclab run --resume: cannot read the checkpoint: ") + error.what());
    }
    check_checkpoint_config(*checkpoint, cfg);
    ResumePoint point;
    point.config = cfg;
    point.step = static_cast<std::size_t>(checkpoint->read_attr_int64("/", "next_step"));
    // The checkpoint's own count: train.steps for a training run, the sub-runs of an experiment made of several
    // (bias_training).
    point.total_steps = static_cast<std::size_t>(checkpoint->read_attr_int64("/", "total_steps"));
    return point;
}

RunFolder::RunFolder(const config::Config& cfg, const RunOptions& options) {
    identity_.experiment = cfg.get_string("experiment");
    identity_.config_text = cfg.to_yaml();
    identity_.seed = cfg.get_int("seed");
    if (!options.resume_dir.empty()) {
        // Reopen the folder: the identity is the run's original one, kept in its checkpoint.
        resumed_ = true;
        path_ = options.resume_dir;
        io::ResultsReader checkpoint(checkpoint_path());
        check_checkpoint_config(checkpoint, cfg);
        identity_.config_source = checkpoint.read_attr_string("/", "config_source");
        identity_.overrides = checkpoint.read_attr_string("/", "overrides");
        identity_.start_time = checkpoint.read_attr_string("/", "start_time");
        const std::string earlier = checkpoint.read_attr_string("/", "resumed_at");
        if (checkpoint.has_attr("/", "replaces")) replaces_ = checkpoint.read_attr_string("/", "replaces");
        identity_.resumed_at = (earlier.empty() ? "" : earlier + "; ") + "step " +
                               std::to_string(checkpoint.read_attr_int64("/", "next_step")) + " at " + io::now_iso8601();
        log_.open(path_ / kLogFile, std::ios::out | std::ios::app);
        ICLAB_CHECK(log_.good(), "cannot write " << (path_ / kLogFile));
        log_ << "resumed " << io::now_iso8601() << " from " << kCheckpointFile << " at step "
             << checkpoint.read_attr_int64("/", "next_step") << "\n" << std::flush;
    } else {
        bool existed = false;
        path_ = io::make_run_dir(cfg.get_string("output.dir"), run_name(cfg), options.overwrite, &existed);
        if (existed) start_replacement(cfg);
        identity_.config_source = cfg.source_path();
        for (const auto& o : cfg.overrides()) identity_.overrides += (identity_.overrides.empty() ? "" : " ") + o;
        identity_.start_time = io::now_iso8601();
        // Only an --overwrite run reuses a folder: a checkpoint of the run it replaces must not be resumed.
        std::filesystem::remove(checkpoint_path());
        std::filesystem::remove(path_ / kLiveCurvesFile);
        std::filesystem::remove_all(path_ / kStagesDir);  // the replaced run's stored units (stage_store.hpp)
        std::filesystem::remove(path_ / (std::string(kCheckpointFile) + ".partial"));
        {
            std::ofstream config_file(path_ / kConfigFile);
            config_file << identity_.config_text;
            ICLAB_CHECK(config_file.good(), "cannot write " << (path_ / kConfigFile));
        }
        log_.open(path_ / kLogFile, std::ios::out | std::ios::trunc);
        ICLAB_CHECK(log_.good(), "cannot write " << (path_ / kLogFile));
        log_ << "run " << path_.string() << "\nstarted " << identity_.start_time << "\n" << std::flush;
    }
    writer_ = std::make_unique<io::ResultsWriter>(path_ / kResultsFile, options.overwrite);
    io::ResultsWriter& w = *writer_;
    w.set_attr("experiment", identity_.experiment);
    w.set_attr("config", identity_.config_text);
    w.set_attr("config_source", identity_.config_source);
    w.set_attr("overrides", identity_.overrides);
    w.set_attr("seed", identity_.seed);
    w.set_attr("start_time", identity_.start_time);
    if (resumed_) w.set_attr("resumed_at", identity_.resumed_at);
    io::write_provenance(w);
}

// --overwrite of an existing run (the output policy, framework/io/output_path.hpp): the old folder must be iclab's,
// neither the working directory nor around the config; the new run is built in ".<name>.iclab-replacing" beside it
// (resumable there) and put in its place only by commit(), so a run that fails or is stopped leaves the old one intact.
void RunFolder::start_replacement(const config::Config& cfg) {
    namespace fs = std::filesystem;
    const io::OutputTarget target =
        io::check_output(path_, io::OutputKind::folder, /*overwrite=*/true, "iclab run --overwrite", {cfg.source_path()});
    const fs::path staging = target.path.parent_path() / ("." + target.path.filename().string() + ".iclab-replacing");
    std::error_code error;
    if (fs::exists(fs::symlink_status(staging, error))) {
        // An earlier replacement that never finished: iclab's own (its marker), so it may go.
        ICLAB_INPUT_CHECK(fs::is_directory(fs::symlink_status(staging, error)) && io::written_by_iclab(staging),
                          "iclab run --overwrite: " << staging.string() << " is in the way and was not made by iclab; move it");
        fs::remove_all(staging);
    }
    ICLAB_CHECK(fs::create_directory(staging, error), "cannot create " << staging.string() << ": " << error.message());
    io::write_output_marker(staging, "a run replacing " + target.path.string() + " (iclab run --overwrite)");
    replaces_ = target.path;
    path_ = staging;
}

void RunFolder::commit() {
    writer_->set_attr("end_time", io::now_iso8601());
    writer_->commit();
    if (!replaces_.empty()) {
        // The finished run takes the old one's place atomically; the old one is removed last.
        ICLAB_INPUT_CHECK(!std::filesystem::exists(replaces_) || io::written_by_iclab(replaces_),
                          replaces_.string() << " changed during the run and is no longer iclab's: the new run stays in " << path_.string());
        io::replace_folder(path_, replaces_, /*may_replace=*/true);
        path_ = replaces_;
        replaces_.clear();
    }
    log_ << "finished " << io::now_iso8601() << "\n" << std::flush;
}

std::unique_ptr<io::ResultsWriter> RunFolder::open_checkpoint() const {
    // Built in memory, written under a temporary name and renamed over the previous checkpoint at commit.
    auto writer = std::make_unique<io::ResultsWriter>(checkpoint_path(), /*overwrite=*/true);
    writer->set_attr("experiment", identity_.experiment);
    writer->set_attr("config", identity_.config_text);
    writer->set_attr("config_fingerprint", config_fingerprint(identity_.config_text));
    writer->set_attr("config_source", identity_.config_source);
    writer->set_attr("overrides", identity_.overrides);
    writer->set_attr("seed", identity_.seed);
    writer->set_attr("start_time", identity_.start_time);
    writer->set_attr("resumed_at", identity_.resumed_at);
    writer->set_attr("written_time", io::now_iso8601());
    writer->set_attr("replaces", replaces_.string());  // "" or the run folder an --overwrite run replaces at its end
    return writer;
}

}  // namespace iclab::run
