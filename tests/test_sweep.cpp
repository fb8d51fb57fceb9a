// Sweeps (iclab run -m, iclab sweep), collect and show: the grid, canonical job names, skipping finished jobs,
// resuming interrupted ones, reporting failed ones, and one row per run in the collected table.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <H5Cpp.h>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/sweep.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_sweep {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

// A tiny induction-head training (12 steps of 4 x 16 tokens, well under a second).
const std::string kTiny =
    "configs/quick/induction_head.yaml train.steps=12 train.warmup_steps=2 eval.every=6 task.seq_len=16 eval.sequences=8 "
    "train.batch_size=4";

std::vector<std::string> csv_lines(const fs::path& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// The index of a header's column (CSV fields without quoted commas in the header).
std::size_t column_index(const std::string& header, const std::string& name) {
    std::stringstream fields(header);
    std::size_t index = 0;
    for (std::string field; std::getline(fields, field, ','); ++index)
        if (field == name) return index;
    FAIL("no column " << name);
    return 0;
}

}  // namespace

TEST_CASE("sweep overrides: lists, ranges and fixed values", "[sweep]") {
    iclab::run::SweepAxis axis;
    REQUIRE(iclab::run::parse_sweep_override("train.lr=1e-3,3e-3", axis));
    CHECK(axis.key == "train.lr");
    CHECK(axis.values == std::vector<std::string>{"1e-3", "3e-3"});
    REQUIRE(iclab::run::parse_sweep_override("seed=0:3", axis));
    CHECK(axis.values == std::vector<std::string>{"0", "1", "2"});
    REQUIRE(iclab::run::parse_sweep_override("task.triggers=[a, b],[c]", axis));
    CHECK(axis.values == std::vector<std::string>{"[a, b]", "[c]"});
    CHECK_FALSE(iclab::run::parse_sweep_override("task.triggers=[a, b]", axis));  // one list is one value
    CHECK_FALSE(iclab::run::parse_sweep_override("model.feature_map=elu1", axis));
    CHECK_FALSE(iclab::run::parse_sweep_override("output.name=\"a,b\"", axis));  // a quoted comma
    CHECK_THROWS_WITH(iclab::run::parse_sweep_override("seed=3:3", axis), Catch::Contains("empty"));
    // Found by the fuzzer: a bound past int64 was a std::out_of_range (exit 1); both extremes at once overflowed to - from.
    CHECK_THROWS_AS(iclab::run::parse_sweep_override("seed=0:44444444444444444444", axis), iclab::InputError);
    CHECK_THROWS_WITH(iclab::run::parse_sweep_override("seed=-9223372036854775807:9223372036854775807", axis),
                      Catch::Contains("at most 4096"));
}

TEST_CASE("a 2 x 2 x 2-seed multirun runs 8 jobs once, and collect gives 8 rows", "[sweep][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string();
    const auto first = run_iclab("run -m " + kTiny + " train.lr=1e-3,3e-3 model.layers=1,2 seed=0:2 --jobs 2" + out, scratch.path);
    INFO(first.err);
    REQUIRE(first.status == 0);
    const fs::path sweep = last_line(first.out);
    CHECK_THAT(first.err, Catch::Contains("8 to run") && Catch::Contains("[8/8]"));
    std::set<std::string> folders;
    for (const auto& entry : fs::directory_iterator(sweep))
        if (fs::exists(entry.path() / "results.h5")) folders.insert(entry.path().filename().string());
    CHECK(folders.size() == 8);
    CHECK(folders.count("model.layers-2,seed-1,train.lr-0.003") == 1);  // canonical: sorted keys, normalized numbers
    for (const auto& name : folders) CHECK(name.find('=') == std::string::npos);
    const auto manifest = csv_lines(sweep / "manifest.csv");
    REQUIRE(manifest.size() == 9);
    CHECK_THAT(manifest[0], Catch::StartsWith("index,name,status,exit_status,seconds,peak_rss_gib,run_dir"));
    for (std::size_t i = 1; i < manifest.size(); ++i) {
        CHECK_THAT(manifest[i], Catch::Contains(",done,0,"));
        // seconds, then the job process's peak resident memory (wait4): an iclab process holds at least its binary
        // and libraries (> 4 MiB) and a tiny run far less than 1 GiB.
        std::smatch m;
        REQUIRE(std::regex_search(manifest[i], m, std::regex(",done,0,([0-9.e+-]+),([0-9.e+-]+),")));
        CHECK(std::stod(m[1].str()) > 0.0);
        CHECK(std::stod(m[2].str()) > 4.0 / 1024.0);
        CHECK(std::stod(m[2].str()) < 1.0);
    }

    // The same sweep typed differently (order, 0.003 for 3e-3) is the same jobs: nothing runs again.
    const auto again = run_iclab("run -m " + kTiny + " seed=0,1 model.layers=2,1 train.lr=0.003,0.001 --jobs 2" + out, scratch.path);
    REQUIRE(again.status == 0);
    CHECK(last_line(again.out) == sweep.string());
    CHECK_THAT(again.err, Catch::Contains("8 finished before, 0 to run"));

    const fs::path csv = scratch.path / "runs.csv";
    const auto collected = run_iclab("collect " + sweep.string() + " --out " + csv.string(), scratch.path);
    INFO(collected.err);
    REQUIRE(collected.status == 0);
    const auto rows = csv_lines(csv);
    REQUIRE(rows.size() == 9);
    column_index(rows[0], "train.lr");
    column_index(rows[0], "final_icl_accuracy");
    CHECK(csv_lines(scratch.path / "runs_curves.csv").size() > 8);
    // HDF5 output: one 1-D column per key, with run_dir as strings
    const fs::path h5 = scratch.path / "runs.h5";
    REQUIRE(run_iclab("collect " + sweep.string() + " --out " + h5.string(), scratch.path).status == 0);
    iclab::io::ResultsReader reader(h5);
    const auto lrs = reader.read_column_double("/runs/train.lr");
    CHECK(std::set<double>(lrs.begin(), lrs.end()) == std::set<double>{0.001, 0.003});
    for (double accuracy : reader.read_column_double("/runs/final_icl_accuracy")) CHECK((accuracy >= 0.0 && accuracy <= 1.0));
    CHECK(reader.read_column_string("/runs/run_dir").size() == 8);
}

TEST_CASE("a sweep resumes an interrupted job, reruns a stale one, and reports a failed one", "[sweep][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string();
    const std::string sweep_args = "run -m " + kTiny + " train.lr=1e-3,1e6 train.grad_clip=0 --jobs 2" + out;
    const auto plan = run_iclab(sweep_args + " --dry-run", scratch.path);
    REQUIRE(plan.status == 0);
    const fs::path sweep = last_line(plan.out);
    CHECK_THAT(plan.out, Catch::Contains("pending"));
    // Interrupt the first job by hand where the sweep would put it.
    const auto stopped = run_iclab("run " + kTiny + " train.lr=0.001 train.grad_clip=0 output.dir=" + sweep.string() +
                                       " output.name=train.lr-0.001 --stop-after 6 --quiet",
                                   scratch.path);
    REQUIRE(stopped.status == 0);
    REQUIRE(fs::exists(sweep / "train.lr-0.001" / "checkpoint.h5"));
    const auto run = run_iclab(sweep_args, scratch.path);
    CHECK(run.status == 1);  // lr 1e6 without clipping diverges
    CHECK_THAT(run.err, Catch::Contains("1 of 2 jobs failed") && Catch::Contains("train.lr-1000000.0: exit status 1"));
    CHECK(fs::exists(sweep / "train.lr-0.001" / "results.h5"));
    CHECK_THAT(read_file(sweep / "logs" / "train.lr-0.001.log"), Catch::Contains("--resume"));
    const std::string manifest = read_file(sweep / "manifest.csv");
    CHECK_THAT(manifest, Catch::Contains("train.lr-0.001\",done,0") || Catch::Contains("train.lr-0.001,done,0"));
    CHECK_THAT(manifest, Catch::Contains("failed,1"));
}

// A run whose config.yaml lacks a key the schema gained later (here model.attention_form, at its default "auto") is
// the same job (its config resolved again equals the job's); an edited value is another config.
TEST_CASE("a finished run made before the schema gained a key is the same job, an edited value is not", "[sweep][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string();
    const auto first = run_iclab("run -m " + kTiny + " seed=0,1 --jobs 2" + out, scratch.path);
    INFO(first.err);
    REQUIRE(first.status == 0);
    const fs::path sweep = last_line(first.out);
    const fs::path config = sweep / "seed-0" / "config.yaml";
    const std::string text = read_file(config);
    const std::string line = "  attention_form: \"auto\"\n";
    REQUIRE(text.find(line) != std::string::npos);
    std::string older = text;
    older.erase(older.find(line), line.size());
    std::ofstream(config, std::ios::trunc) << older;
    const auto again = run_iclab("run -m " + kTiny + " seed=0,1 --jobs 2 --dry-run" + out, scratch.path);
    INFO(again.err);
    CHECK(again.status == 0);
    CHECK_THAT(again.err, Catch::Contains("0 of 2 jobs to run"));
    std::string edited = older;
    edited.replace(edited.find("rope_base: 10000.0"), 18, "rope_base: 500.0");
    std::ofstream(config, std::ios::trunc) << edited;
    const auto refused = run_iclab("run -m " + kTiny + " seed=0,1 --jobs 2 --dry-run" + out, scratch.path);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("holds a run of another config"));
    CHECK_THAT(refused.err, Catch::Contains("in the folder") && Catch::Contains("in the job"));  // names the first line
}

// The checkpoint of a run stopped before the schema gained model.attention_form: its config (attribute, fingerprint and
// config.yaml) lacks the key; today's binary resumes it. An edited config.yaml is still refused.
TEST_CASE("a run stopped before the schema gained a key resumes, an edited config is refused", "[sweep][cli][resume]") {
    Scratch scratch;
    const auto stop = [&](const std::string& name) {
        const auto stopped = run_iclab("run " + kTiny + " output.dir=" + scratch.path.string() + " output.name=" + name +
                                           " --stop-after 6 --quiet", scratch.path);
        REQUIRE(stopped.status == 0);
        REQUIRE(fs::exists(scratch.path / name / "checkpoint.h5"));
        return scratch.path / name;
    };
    const fs::path older = stop("older"), edited = stop("edited");
    const std::string line = "  attention_form: \"auto\"\n";
    std::string text = read_file(older / "config.yaml");
    REQUIRE(text.find(line) != std::string::npos);
    text.erase(text.find(line), line.size());
    std::ofstream(older / "config.yaml", std::ios::trunc) << text;
    {
        H5::H5File raw((older / "checkpoint.h5").string(), H5F_ACC_RDWR);
        H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
        type.setCset(H5T_CSET_UTF8);
        for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
                 {"config", text}, {"config_fingerprint", iclab::fnv1a64_hex(text)}}) {
            raw.removeAttr(name);
            const char* chars = value.c_str();
            raw.createAttribute(name, type, H5::DataSpace(H5S_SCALAR)).write(type, &chars);
        }
    }
    const auto resumed = run_iclab("run --resume " + older.string() + " --quiet", scratch.path);
    INFO(resumed.err);
    CHECK(resumed.status == 0);
    CHECK(fs::exists(older / "results.h5"));

    std::string changed = read_file(edited / "config.yaml");
    changed.replace(changed.find("rope_base: 10000.0"), 18, "rope_base: 500.0");
    std::ofstream(edited / "config.yaml", std::ios::trunc) << changed;
    const auto refused = run_iclab("run --resume " + edited.string() + " --quiet", scratch.path);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("cannot resume"));
    CHECK_FALSE(fs::exists(edited / "results.h5"));
}

TEST_CASE("a sweep file with grid and zip, bad jobs refused before anything runs, and the Slurm script", "[sweep][cli]") {
    Scratch scratch;
    const fs::path file = scratch.path / "lr_width.yaml";
    std::ofstream(file) << "name: lr_width\nconfig: configs/quick/induction_head.yaml\noverrides: [train.steps=12, train.warmup_steps=2, "
                           "eval.every=6, task.seq_len=16, eval.sequences=8, train.batch_size=4, output.dir="
                        << scratch.path.string() << "]\ngrid:\n  seed: 0:2\nzip:\n  model.width: [16, 32]\n  model.heads: [1, 2]\n";
    const auto plan = run_iclab("sweep " + file.string() + " --dry-run", scratch.path);
    INFO(plan.err);
    REQUIRE(plan.status == 0);
    CHECK_THAT(plan.out, Catch::Contains("model.heads-1,model.width-16,seed-0") && Catch::Contains("model.heads-2,model.width-32,seed-1"));
    CHECK(std::count(plan.out.begin(), plan.out.end(), '\n') == 5);  // 4 jobs and the sweep folder
    // each job with the experiment's estimate, the pending total on stderr (scripts/reproduce.sh --plan)
    CHECK_THAT(plan.out, Catch::Contains("GiB, ") && Catch::Contains(" FLOP (about "));
    CHECK_THAT(plan.err, Catch::Contains("4 of 4 jobs to run, estimated about "));

    const auto slurm = run_iclab("sweep " + file.string() + " --launcher slurm --dry-run --cpus 2 --time 00:10:00", scratch.path);
    REQUIRE(slurm.status == 0);
    const std::string script = read_file(fs::path(last_line(slurm.out)) / "slurm" / "array.sbatch");
    CHECK_THAT(script, Catch::Contains("#SBATCH --array=0-3") && Catch::Contains("sweep-job") && Catch::Contains("--time=00:10:00") &&
                           Catch::Contains("--cpus-per-task=2"));

    // One bad value: exit 2 naming the job, no folder made.
    const auto bad = run_iclab("run -m " + kTiny + " model.width=16,30 model.heads=4 output.dir=" + (scratch.path / "bad").string(),
                               scratch.path);
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("model.width=30") && Catch::Contains("divisible"));
    CHECK_FALSE(fs::exists(scratch.path / "bad"));
}

TEST_CASE("show prints a run's tables with the paper's column beside ours", "[cli][show]") {
    Scratch scratch;
    const auto trained = run_iclab("run configs/quick/iclca_induction.yaml " + kTiny.substr(kTiny.find(' ')) +
                                       " task.seq_len=24 iclca.pairs=4 iclca.prompt_length=12 iclca.input_length=12 --quiet output.dir=" +
                                       scratch.path.string(),
                                   scratch.path);
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    const auto shown = run_iclab("show " + last_line(trained.out), scratch.path);
    REQUIRE(shown.status == 0);
    CHECK_THAT(shown.out, Catch::Contains("/tables/table2") && Catch::Contains("icl_accuracy  paper_icl_accuracy") &&
                              Catch::Contains("M_old, ICL") && Catch::Contains("0.9995"));
    CHECK(run_iclab("show " + scratch.path.string(), scratch.path).status == 2);
}

}  // namespace iclab_test_sweep
