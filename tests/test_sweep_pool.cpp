// `iclab sweep A.yaml B.yaml`: the jobs of several sweep files in one queue, longest estimated job first (issue 44:
// scripts/reproduce.sh runs a profile's parts as one pool, so a long job never idles the other core at the end).
#include <catch2/catch.hpp>

#include <fstream>

#include "tests/cli_helpers.hpp"

namespace iclab_test_sweep_pool {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

// A sweep file of two tiny induction-head trainings (seeds 0, 1) of `steps` steps each, in the scratch folder.
fs::path tiny_sweep_file(const fs::path& dir, const std::string& name, int steps) {
    const fs::path file = dir / (name + ".yaml");
    std::ofstream(file) << "name: " << name << "\nconfig: configs/quick/induction_head.yaml\noverrides: [train.steps=" << steps
                        << ", train.warmup_steps=2, eval.every=6, task.seq_len=16, eval.sequences=8, train.batch_size=4, output.dir="
                        << dir.string() << "]\ngrid:\n  seed: 0:2\n";
    return file;
}

}  // namespace

TEST_CASE("several sweep files run as one queue, longest estimated job first, and print every folder", "[sweep][cli]") {
    Scratch scratch;
    const fs::path short_file = tiny_sweep_file(scratch.path, "short_part", 12);
    const fs::path long_file = tiny_sweep_file(scratch.path, "long_part", 36);
    const auto ran = run_iclab("sweep " + short_file.string() + " " + long_file.string() + " --jobs 1", scratch.path);
    INFO(ran.err);
    REQUIRE(ran.status == 0);
    CHECK_THAT(ran.err, Catch::Contains("2 sweeps in one queue: 4 jobs, 0 finished before, 4 to run"));
    // The long part's jobs (3x the estimated work) start and end first although its file comes second.
    const auto first_long = ran.err.find("long_part/seed-0 done");
    const auto first_short = ran.err.find("short_part/seed-0 done");
    REQUIRE(first_long != std::string::npos);
    REQUIRE(first_short != std::string::npos);
    CHECK(first_long < first_short);
    CHECK_THAT(ran.err, Catch::Contains("[4/4]"));
    // stdout ends with both folders, in the files' order; each part has its own finished runs.
    const std::string out = ran.out;
    const auto short_dir = out.find(scratch.path.string() + "/sweeps/short_part");
    const auto long_dir = out.find(scratch.path.string() + "/sweeps/long_part");
    REQUIRE(short_dir != std::string::npos);
    REQUIRE(long_dir != std::string::npos);
    CHECK(short_dir < long_dir);
    for (const char* part : {"short_part", "long_part"})
        for (const char* seed : {"seed-0", "seed-1"})
            CHECK(fs::exists(scratch.path / "sweeps" / part / seed / "results.h5"));

    // Launched again: nothing to run; a dry run lists each part's jobs followed by its folder.
    const auto again = run_iclab("sweep " + short_file.string() + " " + long_file.string() + " --jobs 2", scratch.path);
    CHECK(again.status == 0);
    CHECK_THAT(again.err, Catch::Contains("4 finished before, 0 to run"));
    const auto listed = run_iclab("sweep " + short_file.string() + " " + long_file.string() + " --dry-run", scratch.path);
    CHECK(listed.status == 0);
    CHECK(std::count(listed.out.begin(), listed.out.end(), '\n') == 6);  // 2 x (2 jobs and the folder)
}

TEST_CASE("several sweep files: one folder twice, --name and Slurm are refused before anything runs", "[sweep][cli]") {
    Scratch scratch;
    const fs::path file = tiny_sweep_file(scratch.path, "part", 12);
    const auto twice = run_iclab("sweep " + file.string() + " " + file.string(), scratch.path);
    CHECK(twice.status == 2);
    CHECK_THAT(twice.err, Catch::Contains("plan the same sweep folder"));
    CHECK_FALSE(fs::exists(scratch.path / "sweeps" / "part" / "seed-0"));
    const fs::path other = tiny_sweep_file(scratch.path, "other", 12);
    CHECK(run_iclab("sweep " + file.string() + " " + other.string() + " --name x", scratch.path).status == 2);
    const auto slurm = run_iclab("sweep " + file.string() + " " + other.string() + " --launcher slurm --dry-run", scratch.path);
    CHECK(slurm.status == 2);
    CHECK_THAT(slurm.err, Catch::Contains("one SWEEP.yaml"));
}

}  // namespace iclab_test_sweep_pool
