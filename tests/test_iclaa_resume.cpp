// ICLAA's staged resume (issue 21; framework/run/stage_store.hpp, experiments/iclaa/iclaa_stages.hpp), end to end through
// the iclab command: a run stopped after some learned-map fits, inside the fits by SIGTERM, or inside the scoring, and
// resumed, ends with results bit-identical to an uninterrupted run's (but timings); a stored unit of another config or
// another model is never used.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <fstream>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <thread>

#include "experiments/registry.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/stage_store.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclaa_resume {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab_test;
using iclab::io::ResultsReader;

namespace {

// A tiny model (20 training steps) and every kind of unit: 2 learned F x 2 fit seeds, 10 validation and 20 test pairs
// in chunks of 8 (2 + 3 chunks): 9 units.
const std::string kTiny =
    "configs/quick/iclaa.yaml train.steps=20 train.warmup_steps=5 eval.every=20 eval.sequences=16 iclaa.pairs=20 "
    "iclaa.validation_pairs=10 iclaa.batch_size=8 'iclaa.random_features=[16,64]' iclaa.feature_seeds=2 "
    "'iclaa.learned.features=[16,32]' iclaa.learned.fit_seeds=2 'iclaa.keep_tokens=[4]' iclaa.bootstrap=50 --quiet --threads 1";

// Wall times: the only values a resumed run may differ in (and the run's identity and provenance attributes).
const std::set<std::string> kTimings = {"/curves/tokens_per_s", "/curves/elapsed_s", "/tables/iclaa/conversion_ms_per_prompt"};
const std::set<std::string> kVaryingAttributes = {"config",     "overrides",   "created_utc", "start_time",   "end_time",
                                                  "resumed_at", "wall_time_s", "iclaa_seconds", "git_commit", "git_dirty"};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same(const ResultsReader::AttributeValue& a, const ResultsReader::AttributeValue& b) {
    if (a.index() != b.index()) return false;
    if (const auto* x = std::get_if<double>(&a)) return same_bits(*x, std::get<double>(b));  // NaN included
    return a == b;
}

bool same(const iclab::io::Column& a, const iclab::io::Column& b) {
    if (a.values.index() != b.values.index()) return false;
    if (const auto* x = std::get_if<std::vector<double>>(&a.values)) {
        const auto& y = std::get<std::vector<double>>(b.values);
        return x->size() == y.size() && (x->empty() || std::memcmp(x->data(), y.data(), x->size() * sizeof(double)) == 0);
    }
    return a.values == b.values;
}

// Every table (every column, bit for bit) and every root attribute of two results files agree, but the wall times.
void check_same_results(const fs::path& file_a, const fs::path& file_b) {
    INFO(file_a.string() << " vs " << file_b.string());
    const ResultsReader a(file_a), b(file_b);
    std::size_t columns = 0;
    std::vector<std::string> groups = {"/"};
    while (!groups.empty()) {
        const std::string group = groups.back();
        groups.pop_back();
        const auto names = a.list(group);
        CHECK(b.list(group) == names);
        for (const auto& name : names) {
            const std::string path = (group == "/" ? "" : group) + "/" + name;
            if (!a.is_table(path)) {
                try {
                    a.list(path);
                    groups.push_back(path);
                } catch (const iclab::Error&) {  // a dataset: the tensors of /checkpoint
                    INFO(path);
                    const auto ta = a.read_tensor_double(path), tb = b.read_tensor_double(path);
                    CHECK(ta.shape == tb.shape);
                    CHECK(same(iclab::io::Column{"t", ta.values}, iclab::io::Column{"t", tb.values}));
                }
                continue;
            }
            const iclab::io::Table ta = a.read_table(path), tb = b.read_table(path);
            REQUIRE(tb.columns.size() == ta.columns.size());
            for (std::size_t c = 0; c < ta.columns.size(); ++c) {
                INFO(path << "/" << ta.columns[c].name);
                CHECK(tb.columns[c].name == ta.columns[c].name);
                if (kTimings.count(path + "/" + ta.columns[c].name)) continue;
                CHECK(same(ta.columns[c], tb.columns[c]));
                ++columns;
            }
        }
    }
    CHECK(columns > 100);  // /tables/iclaa, tradeoff, diagnostics, pairs, learned_selection, validation_pairs, /claims, /curves ...
    const auto attributes_a = a.attributes("/"), attributes_b = b.attributes("/");
    std::map<std::string, ResultsReader::AttributeValue> in_b(attributes_b.begin(), attributes_b.end());
    for (const auto& [name, value] : attributes_a) {
        INFO("root attribute " << name);
        if (kVaryingAttributes.count(name)) continue;
        REQUIRE(in_b.count(name));
        CHECK(same(in_b.at(name), value));
    }
    CHECK(a.has("/tables/learned_selection"));
}

std::size_t stored_units(const fs::path& run_dir) {
    return fs::exists(run_dir / "stages") ? count_entries(run_dir / "stages") : 0;
}

CommandResult resume(const fs::path& run_dir, const Scratch& scratch, const std::string& flags = "") {
    return run_iclab("run --resume " + run_dir.string() + " --quiet --threads 1" + flags, scratch.path);
}

}  // namespace

TEST_CASE("iclaa: stopped after k learned fits and inside the scoring, resumed, it ends bit-identical to an uninterrupted run",
          "[iclaa][cli][resume]") {
    Scratch scratch;
    const std::string config = kTiny + " iclaa.learned.steps=5 output.dir=" + (scratch.path / "results").string();
    const auto full = run_iclab("run " + config + " output.name=full", scratch.path);
    INFO(full.err);
    REQUIRE(full.status == 0);
    const fs::path full_dir = last_line(full.out);
    CHECK_FALSE(fs::exists(full_dir / "stages"));  // a completed run keeps no units

    // 3 of the 4 fits (both F of fit seed 0 together, then F=16 of fit seed 1 alone: the stop lands where it would fit
    // by fit), then the last fit, both validation chunks and the first test chunk, then the rest
    const auto part = run_iclab("run " + config + " output.name=part --stop-after-units 3", scratch.path);
    INFO(part.err);
    REQUIRE(part.status == 0);
    const fs::path part_dir = last_line(part.out);
    CHECK_THAT(part.err, Catch::Contains("stopped after training (--stop-after-units)") && Catch::Contains("--resume"));
    CHECK_FALSE(fs::exists(part_dir / "results.h5"));
    CHECK(stored_units(part_dir) == 3);
    CHECK(fs::exists(part_dir / "stages" / "learned_fit_f32_seed0.h5"));

    const auto second = resume(part_dir, scratch, " --stop-after-units 4");
    INFO(second.err);
    REQUIRE(second.status == 0);
    CHECK_FALSE(fs::exists(part_dir / "results.h5"));
    CHECK(stored_units(part_dir) == 7);
    CHECK(fs::exists(part_dir / "stages" / "validation_pairs_00000008.h5"));
    CHECK(fs::exists(part_dir / "stages" / "test_pairs_00000000.h5"));

    const auto last = resume(part_dir, scratch);
    INFO(last.err);
    REQUIRE(last.status == 0);
    REQUIRE(fs::exists(part_dir / "results.h5"));
    CHECK_FALSE(fs::exists(part_dir / "stages"));
    const std::string log = read_file(part_dir / "log.txt");
    CHECK_THAT(log, Catch::Contains("learned map F=16 fit seed 0: loaded from stages/") &&
                        Catch::Contains("stopped with 3 of 9 units") && Catch::Contains("stopped with 7 of 9 units"));
    check_same_results(full_dir / "results.h5", part_dir / "results.h5");
}

TEST_CASE("iclaa: SIGTERM during the learned fits exits 143 with the finished fits stored, and the resumed run ends as an "
          "uninterrupted one",
          "[iclaa][cli][resume]") {
    Scratch scratch;
    // fits long enough (40 steps each) that the signal lands inside the second one
    const std::string config = kTiny + " iclaa.learned.steps=40 output.dir=" + (scratch.path / "results").string();
    const auto full = run_iclab("run " + config + " output.name=full", scratch.path);
    INFO(full.err);
    REQUIRE(full.status == 0);

    const fs::path run_dir = scratch.path / "results" / "signalled";
    // kTiny's overrides as an argv (no shell quotes); built before fork(): the child only redirects and execs
    std::vector<std::string> args = {ICLAB_BINARY, "run", "configs/quick/iclaa.yaml"};
    for (const char* o : {"train.steps=20", "train.warmup_steps=5", "eval.every=20", "eval.sequences=16", "iclaa.pairs=20",
                          "iclaa.validation_pairs=10", "iclaa.batch_size=8", "iclaa.random_features=[16,64]", "iclaa.feature_seeds=2",
                          "iclaa.learned.features=[16,32]", "iclaa.learned.fit_seeds=2", "iclaa.keep_tokens=[4]", "iclaa.bootstrap=50",
                          "--quiet", "--threads", "1", "iclaa.learned.steps=40", "output.name=signalled"})
        args.push_back(o);
    args.push_back("output.dir=" + (scratch.path / "results").string());
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const std::string output = (scratch.path / "signalled.txt").string();
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int out = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || ::chdir(ICLAB_SOURCE_DIR) != 0) ::_exit(127);
        ::dup2(out, 1);
        ::dup2(out, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    // wait for the first fit to be stored, then stop the run
    const auto start = std::chrono::steady_clock::now();
    while (read_file(run_dir / "log.txt").find("fit seed 0: fitted") == std::string::npos &&
           std::chrono::steady_clock::now() - start < std::chrono::minutes(10))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ::kill(pid, SIGTERM);
    int raw = 0;
    REQUIRE(::waitpid(pid, &raw, 0) == pid);
    INFO(read_file(scratch.path / "signalled.txt"));
    REQUIRE(WIFEXITED(raw));
    CHECK(WEXITSTATUS(raw) == 128 + SIGTERM);  // as an interrupted training: the sweep marks the job interrupted
    REQUIRE_FALSE(fs::exists(run_dir / "results.h5"));
    CHECK(stored_units(run_dir) >= 1);
    CHECK_THAT(read_file(scratch.path / "signalled.txt"), Catch::Contains("stopped after training (SIGTERM)"));

    const auto resumed = resume(run_dir, scratch);
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    check_same_results(fs::path(last_line(full.out)) / "results.h5", run_dir / "results.h5");
}

TEST_CASE("iclaa: a stored learned fit of another config is not used: ignored with a message and fitted again", "[iclaa][cli][resume]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    // the foreign fits: learned.steps 5; this run's: 6
    const auto other = run_iclab("run " + kTiny + " iclaa.learned.steps=5 output.name=other --stop-after-units 2" + out, scratch.path);
    REQUIRE(other.status == 0);
    const std::string config = kTiny + " iclaa.learned.steps=6" + out;
    const auto full = run_iclab("run " + config + " output.name=full", scratch.path);
    REQUIRE(full.status == 0);
    const auto part = run_iclab("run " + config + " output.name=part --stop-after-units 1", scratch.path);
    REQUIRE(part.status == 0);
    // fits run fit seed by fit seed (the F of one fit seed together): --stop-after-units 2 stored F=16 and F=32 of fit
    // seed 0, --stop-after-units 1 only F=16's
    const fs::path part_dir = last_line(part.out), unit = "stages/learned_fit_f32_seed0.h5";
    REQUIRE_FALSE(fs::exists(part_dir / unit));
    fs::copy_file(fs::path(last_line(other.out)) / unit, part_dir / unit);

    const auto second = resume(part_dir, scratch, " --stop-after-units 1");
    INFO(second.err);
    REQUIRE(second.status == 0);
    CHECK_THAT(read_file(part_dir / "log.txt"), Catch::Contains("learned_fit_f32_seed0.h5 ignored (written for another config"));
    // the unit was fitted again and replaced: its maps are this config's, not the foreign ones
    {
        const ResultsReader foreign(fs::path(last_line(other.out)) / unit), own(part_dir / unit);
        CHECK(foreign.read_attr_string("/", "config_fingerprint") != own.read_attr_string("/", "config_fingerprint"));
        CHECK(foreign.read_tensor_double("/maps/layer_0/w").values != own.read_tensor_double("/maps/layer_0/w").values);
    }
    const auto last = resume(part_dir, scratch);
    REQUIRE(last.status == 0);
    check_same_results(fs::path(last_line(full.out)) / "results.h5", part_dir / "results.h5");
}

TEST_CASE("stage store: a unit of another model, another unit name or a damaged file is ignored and a partial file is removed",
          "[iclaa][resume]") {
    Scratch scratch;
    const iclab::config::Config cfg = iclab::experiments::catalog().load_config(
        std::string(ICLAB_SOURCE_DIR) + "/configs/quick/iclaa.yaml", {"output.dir=" + (scratch.path / "results").string(), "output.name=r"});
    iclab::run::RunOptions options;
    options.quiet = true;
    iclab::run::RunFolder run(cfg, options);
    const std::vector<double> model_a = {1.0, 2.0, 3.0}, model_b = {1.0, 2.0, 3.0000000000000004};
    REQUIRE(iclab::run::parameter_fingerprint(model_a) != iclab::run::parameter_fingerprint(model_b));
    {
        iclab::run::StageStore store(run, options, iclab::run::parameter_fingerprint(model_a), "model a");
        const auto unit = store.open("unit_one");
        const double value = 0.125;
        unit->write_tensor("/value", &value, {});
        store.save(*unit);
        CHECK(store.saved() == 1);
    }
    std::ofstream(run.path() / "stages" / "unit_two.h5.partial.1.2") << "a writer killed mid-write";
    std::ofstream(run.path() / "stages" / "unit_three.h5") << "not HDF5";
    fs::copy_file(run.path() / "stages" / "unit_one.h5", run.path() / "stages" / "unit_four.h5");

    iclab::run::StageStore other_model(run, options, iclab::run::parameter_fingerprint(model_b), "model b");
    CHECK_FALSE(fs::exists(run.path() / "stages" / "unit_two.h5.partial.1.2"));
    CHECK(other_model.load("unit_one") == nullptr);
    CHECK(other_model.loaded() == 0);
    iclab::run::StageStore same_model(run, options, iclab::run::parameter_fingerprint(model_a), "model a");
    const auto loaded = same_model.load("unit_one");
    REQUIRE(loaded != nullptr);
    CHECK(loaded->read_tensor_double("/value").values == std::vector<double>{0.125});
    CHECK(same_model.load("unit_three") == nullptr);  // damaged
    CHECK(same_model.load("unit_four") == nullptr);   // holds unit_one
    CHECK(same_model.load("unit_five") == nullptr);   // absent
    CHECK(same_model.loaded() == 1);
    const std::string log = read_file(run.path() / "log.txt");
    CHECK_THAT(log, Catch::Contains("unit_one.h5 ignored (computed on another model: model a") &&
                        Catch::Contains("unit_three.h5 ignored (unreadable") && Catch::Contains("unit_four.h5 ignored (it holds unit 'unit_one')"));
    CHECK_THROWS(same_model.open("Bad/name"));
}

}  // namespace iclab_test_iclaa_resume
