#include "framework/run/stage_store.hpp"

#include <cstdio>
#include <limits>

#include "framework/core/hash.hpp"
#include "framework/core/interrupt.hpp"
#include "framework/io/provenance.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

std::string parameter_fingerprint(const std::vector<double>& parameters) {
    Fnv1a64 hash;
    hash.mix_count(parameters.size());
    hash.mix(parameters.data(), parameters.size() * sizeof(double));
    return hash.hex();
}

StageStore::StageStore(RunFolder& run, const RunOptions& options, std::string model_fingerprint, std::string model_description)
    : run_(run),
      options_(options),
      dir_(run.path() / kStagesDir),
      config_fingerprint_(config_fingerprint(run.identity().config_text)),
      model_fingerprint_(std::move(model_fingerprint)),
      model_description_(std::move(model_description)) {
    fs::create_directories(dir_);
    // A session killed while writing a unit leaves its temporary file ("<unit>.h5.partial.<pid>.<random>"): never a unit.
    for (const auto& entry : fs::directory_iterator(dir_))
        if (entry.path().filename().string().find(".partial") != std::string::npos) fs::remove(entry.path());
}

void StageStore::ignore(const std::string& name, const std::string& why) {
    const std::string message = "stored unit " + (dir_ / (name + ".h5")).string() + " ignored (" + why + "): computed again";
    run_.log() << message << "\n" << std::flush;
    if (!options_.quiet) std::fprintf(stderr, "iclab: %s\n", message.c_str());
}

void StageStore::reject(const std::string& name, const std::string& why) {
    ICLAB_CHECK(loaded_ > 0, "reject() without a loaded unit");
    --loaded_;
    ignore(name, why);
}

std::unique_ptr<io::ResultsReader> StageStore::load(const std::string& name) {
    const fs::path file = dir_ / (name + ".h5");
    if (!fs::exists(file)) return nullptr;
    std::unique_ptr<io::ResultsReader> unit;
    try {
        unit = std::make_unique<io::ResultsReader>(file);
        for (const char* attr : {"unit", "config_fingerprint", "model_fingerprint", "model", "git_commit"})
            ICLAB_INPUT_CHECK(unit->has_attr("/", attr), "no root attribute " << attr);
    } catch (const Error& error) {
        ignore(name, std::string("unreadable: ") + error.what());
        return nullptr;
    }
    if (unit->read_attr_string("/", "unit") != name) {
        ignore(name, "it holds unit '" + unit->read_attr_string("/", "unit") + "'");
        return nullptr;
    }
    if (unit->read_attr_string("/", "config_fingerprint") != config_fingerprint_) {
        ignore(name, "written for another config: fingerprint " + unit->read_attr_string("/", "config_fingerprint") + ", this run's is " +
                         config_fingerprint_);
        return nullptr;
    }
    if (unit->read_attr_string("/", "model_fingerprint") != model_fingerprint_) {
        ignore(name, "computed on another model: " + unit->read_attr_string("/", "model") + ", parameter fingerprint " +
                         unit->read_attr_string("/", "model_fingerprint") + "; this run's model: " + model_description_ + ", " +
                         model_fingerprint_);
        return nullptr;
    }
    const std::string commit = unit->read_attr_string("/", "git_commit"), now = io::git_commit();
    if (commit != now && !warned_commit_) {
        warned_commit_ = true;
        const std::string warning = "warning: stored units in " + dir_.string() + " were written by iclab at commit " + commit + ", this is " +
                                    now + ": if the numerics changed, the resumed run differs from an uninterrupted one";
        run_.log() << warning << "\n" << std::flush;
        if (!options_.quiet) std::fprintf(stderr, "iclab: %s\n", warning.c_str());
    }
    ++loaded_;
    return unit;
}

std::unique_ptr<io::ResultsWriter> StageStore::open(const std::string& name) const {
    ICLAB_CHECK(!name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos,
                "stage unit name '" << name << "' is not [a-z0-9_]");
    auto unit = std::make_unique<io::ResultsWriter>(dir_ / (name + ".h5"), /*overwrite=*/true);
    unit->set_attr("unit", name);
    unit->set_attr("experiment", run_.identity().experiment);
    unit->set_attr("config_fingerprint", config_fingerprint_);
    unit->set_attr("model_fingerprint", model_fingerprint_);
    unit->set_attr("model", model_description_);
    unit->set_attr("git_commit", io::git_commit());
    unit->set_attr("blas_core", io::openblas_core());
    unit->set_attr("written_time", io::now_iso8601());
    return unit;
}

void StageStore::save(io::ResultsWriter& unit) {
    unit.commit();
    ++saved_;
}

std::size_t StageStore::units_left() const {
    if (options_.stop_after_units == 0) return std::numeric_limits<std::size_t>::max();
    return saved_ >= options_.stop_after_units ? 0 : options_.stop_after_units - saved_;
}

bool StageStore::stop_requested() const {
    return interrupt_requested() || (options_.stop_after_units > 0 && saved_ >= options_.stop_after_units);
}

void StageStore::remove_all() { fs::remove_all(dir_); }

}  // namespace iclab::run
