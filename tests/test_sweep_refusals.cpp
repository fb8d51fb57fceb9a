// Sweeps refuse what they cannot do safely, with exit 2, one message, and nothing written (issue 20): names that are
// not one folder name, keys set twice, plans over the job cap, Slurm options that are not well-formed, a moved or
// edited plan. Also: the job lock that keeps two launchers from training one job.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <string>

#include "framework/core/process.hpp"
#include "framework/workflow/job_lock.hpp"
#include "framework/workflow/sweep.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_sweep_refusals {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

const std::string kTiny =
    "configs/quick/induction_head.yaml train.steps=12 train.warmup_steps=2 eval.every=6 task.seq_len=16 eval.sequences=8 "
    "train.batch_size=4";

// Single-quoted for the test's own shell (run_iclab runs a command line); newlines kept, as a user could type them.
std::string quoted(const std::string& text) {
    std::string out = "'";
    for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
    std::size_t count = 0;
    for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
    return count;
}

}  // namespace

TEST_CASE("sweeps refuse bad names, repeated keys, oversized plans and malformed Slurm options, writing nothing", "[sweep][cli]") {
    Scratch scratch;
    const fs::path out = scratch.path / "out";
    const std::string dir = " output.dir=" + quoted(out.string());
    struct Case {
        std::string args, message;
    };
    const std::vector<Case> cases = {
        {"run -m " + kTiny + " seed=0,1 --name .." + dir, "must not start with '.'"},
        {"run -m " + kTiny + " seed=0,1 --name ." + dir, "must not start with '.'"},
        {"run -m " + kTiny + " seed=0,1 --name " + std::string(300, 'a') + dir, "1 to 120 characters"},
        {"run -m " + kTiny + " seed=0,1 --name a/b" + dir, "one folder name"},
        {"run -m " + kTiny + " seed=0,1 --name " + quoted("x'$(touch y)'") + dir, "one folder name"},
        {"run -m " + kTiny + " model.layers=1,2 model.layers=3,4" + dir, "model.layers is set twice"},
        {"run -m " + kTiny + " model.layers=1,2 model.layers=3" + dir, "model.layers is set twice"},
        {"run -m " + kTiny + " seed=0:5000" + dir, "at most 4096 jobs"},
        {"run -m " + kTiny + " seed=0:100 model.layers=1:100" + dir, "the sweep has 9900 jobs"},
        {"run -m " + kTiny + " seed=0,1 --launcher slurm --dry-run --partition " + quoted("p;touch x") + dir, "--partition must be"},
        {"run -m " + kTiny + " seed=0,1 --launcher slurm --dry-run --partition " + quoted("p\n#SBATCH --x") + dir, "--partition must be"},
        {"run -m " + kTiny + " seed=0,1 --launcher slurm --dry-run --time " + quoted("1:00\ntouch x") + dir, "--time must be"},
        {"run -m " + kTiny + " seed=0,1 --launcher slurm --dry-run --time " + quoted("$(id)") + dir, "--time must be"},
        {"run -m " + kTiny + " seed=0,1 --launcher slurm --dry-run --cpus 0" + dir, "--cpus must be"},
        {"run -m " + kTiny + " seed=0,1 --launcher slurm --dry-run output.dir=" + quoted("\"" + out.string() + "/a\\nb\""), "control character"},  // YAML "\n"
    };
    for (const auto& c : cases) {
        INFO("iclab " << c.args);
        const auto result = run_iclab(c.args, scratch.path);
        INFO(result.err);
        CHECK(result.status == 2);
        CHECK_THAT(result.err, Catch::Contains(c.message));
        CHECK(count_entries(out) == 0);  // nothing written: no sweep folder, no run folder
    }
}

TEST_CASE("sweep files: one value per scalar key, each key once, a bad fixed value reported once", "[sweep][cli]") {
    Scratch scratch;
    const fs::path out = scratch.path / "out";
    const std::string head = "config: configs/quick/induction_head.yaml\noverrides: [output.dir=" + out.string() + "]\n";
    struct Case {
        std::string text, message;
    };
    const std::vector<Case> cases = {
        {head + "name: '..'\ngrid: {seed: [0, 1]}\n", "must not start with '.'"},
        {head + "name: [a, b]\ngrid: {seed: [0, 1]}\n", "name: expected a single value"},
        {"config: configs/quick/induction_head.yaml\noverrides: [{a: 1}]\n", "expected a single value"},
        {head + "grid: {seed: [0, 1]}\ngrid: {model.layers: [1, 2]}\n", "'grid' is given twice"},
        {head + "grid: {seed: [0, 1]}\nzip: {seed: [2, 3]}\n", "seed is set twice"},
        {head + "grid: {seed: 0:5000}\n", "at most 4096 jobs"},
        // Found by the fuzzer: a config name too long for the file system was a std::filesystem_error (exit 1).
        {"config: " + std::string(5000, 'c') + "\n", "longer than 4096 characters"},
        {"configs: [" + std::string(300, '(') + "]\n", "cannot open file"},
    };
    for (const auto& c : cases) {
        INFO(c.text);
        write_text(scratch.path / "s.yaml", c.text);
        const auto result = run_iclab("sweep " + (scratch.path / "s.yaml").string() + " --dry-run", scratch.path);
        INFO(result.err);
        CHECK(result.status == 2);
        CHECK_THAT(result.err, Catch::Contains(c.message));
        CHECK(count_entries(out) == 0);
    }
    // One bad fixed value, 8 jobs: one message, naming the sweep file, not "command-line override".
    write_text(scratch.path / "s.yaml", "config: configs/quick/induction_head.yaml\noverrides: [output.dir=" + out.string() +
                                            ", model.layers=zero]\ngrid: {seed: 0:8}\n");
    const auto result = run_iclab("sweep " + (scratch.path / "s.yaml").string() + " --dry-run", scratch.path);
    CHECK(result.status == 2);
    CHECK(count_of(result.err, "\n") == 1);  // one line
    CHECK_THAT(result.err, Catch::Contains("s.yaml") && !Catch::Contains("command-line override"));
}

TEST_CASE("sweep-job takes the folder it is given: a moved or edited plan is refused, a job name is one folder", "[sweep][cli]") {
    Scratch scratch;
    const fs::path out = scratch.path / "out";
    const auto planned = run_iclab("run -m " + kTiny + " seed=0,1 --dry-run output.dir=" + out.string(), scratch.path);
    REQUIRE(planned.status == 0);
    const fs::path sweep = last_line(planned.out);
    REQUIRE(fs::exists(sweep / "sweep.yaml"));
    const fs::path moved = scratch.path / "moved";
    fs::rename(sweep, moved);
    const std::size_t entries = count_entries(moved);  // sweep.yaml, manifest.csv
    auto result = run_iclab("sweep-job " + moved.string() + " 0", scratch.path);
    CHECK(result.status == 2);
    CHECK_THAT(result.err, Catch::Contains("was moved or its plan edited"));
    CHECK_FALSE(fs::exists(sweep));  // nothing written at the recorded place
    CHECK(count_entries(moved) == entries);  // nor in the given one

    // An edited job name that leaves the folder.
    const std::string plan = read_file(moved / "sweep.yaml");
    std::string edited = std::regex_replace(plan, std::regex("name: seed-0"), "name: ../../escaped");
    edited = std::regex_replace(edited, std::regex("dir: .*"), "dir: " + moved.string());
    REQUIRE(edited != plan);
    write_text(moved / "sweep.yaml", edited);
    result = run_iclab("sweep-job " + moved.string() + " 0", scratch.path);
    CHECK(result.status == 2);
    CHECK_THAT(result.err, Catch::Contains("must be one folder name"));
    CHECK_FALSE(fs::exists(scratch.path / "escaped"));
}

TEST_CASE("job locks: one holder at a time, seen from another descriptor, released with the last descriptor", "[sweep]") {
    Scratch scratch;
    const fs::path file = scratch.path / "locks" / "job.lock";
    CHECK_FALSE(iclab::run::lock_held_elsewhere(file));  // never created
    {
        auto first = iclab::run::JobLock::try_acquire(file);
        REQUIRE(first);
        CHECK(iclab::run::lock_held_elsewhere(file));
        CHECK_FALSE(iclab::run::JobLock::try_acquire(file));  // a second open file description is refused
        // Another process sees it too (flock is per open file, across processes).
        CHECK(iclab::run_process({"flock", "-n", file.string(), "true"}).exit_status != 0);
    }
    CHECK_FALSE(iclab::run::lock_held_elsewhere(file));
    CHECK(iclab::run_process({"flock", "-n", file.string(), "true"}).exit_status == 0);
}

}  // namespace iclab_test_sweep_refusals
