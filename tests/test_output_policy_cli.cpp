// Issue 41's data-loss cases, one regression test each: the command is refused (exit 2) or does what was asked, and
// every input survives byte for byte (framework/io/output_path.hpp, docs/cli.md "Where iclab writes").
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "framework/core/hash.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/lm_run_helpers.hpp"

namespace iclab_test_output_policy_cli {  // this file's names (unity build: CMakeLists.txt)

namespace {

namespace fs = std::filesystem;
using iclab_test::CommandResult;
using iclab_test::run_iclab;
using iclab_test::Scratch;

// Every entry under `root` with its content's hash.
std::map<std::string, std::string> snapshot(const fs::path& root) {
    std::map<std::string, std::string> entries;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
        iclab::Fnv1a64 hash;
        if (it->is_regular_file() && !it->is_symlink()) hash.mix_string(iclab_test::read_file(it->path()));
        entries[fs::relative(it->path(), root).string()] = it->is_symlink() ? "link" : it->is_directory() ? "folder" : hash.hex();
    }
    return entries;
}

// `iclab <args>` run from the folder `cwd` (run_iclab runs from the repository root).
CommandResult run_in(const fs::path& cwd, const std::string& args, const fs::path& scratch) {
    const fs::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
    const std::string command = "cd '" + cwd.string() + "' && '" ICLAB_BINARY "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int raw = std::system(command.c_str());
    CommandResult result;
    result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    result.out = iclab_test::read_file(out);
    result.err = iclab_test::read_file(err);
    return result;
}

// A tiny GPT-2-shaped run and its Hugging Face export: the inputs of import and export.
struct Gpt2Fixture {
    Scratch scratch;
    fs::path run, hf;
    Gpt2Fixture() {
        run = iclab_test::train_tiny_lm_run(scratch.path);
        hf = scratch.path / "hf";
        const auto exported = run_iclab("export " + run.string() + " --format safetensors --out " + hf.string(), scratch.path);
        INFO(exported.err);
        REQUIRE(exported.status == 0);
    }
};

}  // namespace

TEST_CASE("import and export never destroy their inputs, the working directory or an unrelated folder", "[cli][gpt2][output]") {
    Gpt2Fixture f;
    const fs::path root = f.scratch.path;
    const auto imported = run_iclab("import gpt2 " + f.hf.string() + " --out " + (root / "imported").string(), root);
    INFO(imported.err);
    REQUIRE(imported.status == 0);
    const auto hf_before = snapshot(f.hf), run_before = snapshot(f.run);

    SECTION("--out RUN/ --overwrite (trailing slash) replaces the run and leaves a working one") {
        const auto again = run_iclab("import gpt2 " + f.hf.string() + " --out " + (root / "imported").string() + "/ --overwrite --quiet", root);
        INFO(again.err);
        CHECK(again.status == 0);
        CHECK(fs::exists(root / "imported" / "results.h5"));
        CHECK(fs::exists(root / "imported" / "tokenizer" / "encoder.json"));
        const auto predicted = run_iclab("predict " + (root / "imported").string() + " --tokens 72,101", root);
        CHECK(predicted.status == 0);
    }
    SECTION("--out . --overwrite in a folder of files is refused and deletes nothing") {
        fs::create_directories(root / "cwd");
        std::ofstream(root / "cwd" / "thesis.tex") << "chapter 1\n";
        const auto cwd_before = snapshot(root / "cwd");
        for (const std::string& out : std::vector<std::string>{".", "./", "../cwd", (root / "cwd").string()}) {
            const auto refused = run_in(root / "cwd", "import gpt2 " + f.hf.string() + " --out " + out + " --overwrite", root);
            CHECK(refused.status == 2);
            CHECK_THAT(refused.err, Catch::Contains("working directory"));
        }
        const auto parent = run_in(root / "cwd", "import gpt2 " + f.hf.string() + " --out .. --overwrite", root);
        CHECK(parent.status == 2);
        CHECK(snapshot(root / "cwd") == cwd_before);
    }
    SECTION("an unrelated RUN.partial folder is never touched") {
        fs::create_directories(root / "fresh.partial");
        std::ofstream(root / "fresh.partial" / "keep.txt") << "mine\n";
        const auto fresh = run_iclab("import gpt2 " + f.hf.string() + " --out " + (root / "fresh").string() + " --quiet", root);
        CHECK(fresh.status == 0);
        CHECK(iclab_test::read_file(root / "fresh.partial" / "keep.txt") == "mine\n");
    }
    SECTION("import --out onto or inside its input folder is refused") {
        for (const fs::path& out : std::vector<fs::path>{f.hf, f.hf / "run", f.hf / ".", root}) {
            const auto refused = run_iclab("import gpt2 " + f.hf.string() + " --out " + out.string() + " --overwrite", root);
            CHECK(refused.status == 2);
        }
        CHECK(snapshot(f.hf) == hf_before);
    }
    SECTION("export --out onto the run it exports is refused") {
        for (const std::string& out : std::vector<std::string>{f.run.string(), f.run.string() + "/", (f.run / "hf").string(), (f.run / "..").string()}) {
            const auto refused = run_iclab("export " + f.run.string() + " --format safetensors --out " + out + " --overwrite", root);
            INFO(out << ": " << refused.err);
            CHECK(refused.status == 2);
        }
        CHECK(snapshot(f.run) == run_before);
    }
    SECTION("--overwrite never replaces a folder iclab did not make") {
        fs::create_directories(root / "photos");
        std::ofstream(root / "photos" / "a.jpg") << "jpeg";
        const auto refused = run_iclab("export " + f.run.string() + " --format safetensors --out " + (root / "photos").string() + " --overwrite", root);
        CHECK(refused.status == 2);
        CHECK_THAT(refused.err, Catch::Contains("not written by iclab"));
        CHECK(iclab_test::read_file(root / "photos" / "a.jpg") == "jpeg");
    }
    SECTION("a tokenizer file linked out of its folder is refused, not copied") {
        const fs::path linked = root / "hf_linked";
        fs::create_directories(linked);
        for (const auto& entry : fs::directory_iterator(f.hf))
            if (entry.path().filename() != "vocab.bpe") fs::copy_file(entry.path(), linked / entry.path().filename());
        std::ofstream(root / "secret.txt") << "#version: 0.2\n";
        fs::create_symlink(root / "secret.txt", linked / "vocab.bpe");
        const auto refused = run_iclab("import gpt2 " + linked.string() + " --out " + (root / "linked_run").string(), root);
        CHECK(refused.status == 2);
        CHECK_THAT(refused.err, Catch::Contains("symbolic link out of its folder"));
        CHECK_FALSE(fs::exists(root / "linked_run"));
    }
    // Nothing iclab stages is left behind in any case.
    for (const auto& entry : fs::directory_iterator(root)) CHECK(entry.path().filename().string().find(".iclab-") == std::string::npos);
}

TEST_CASE("convert, predict, generate and claims never write onto or into the run they read", "[cli][output]") {
    Scratch scratch;
    const fs::path run = iclab_test::train_tiny_lm_run(scratch.path);
    const auto before = snapshot(run);
    const std::string results = (run / "results.h5").string();
    const auto convert = run_iclab("convert " + run.string() + " --prompt-tokens 72,101 --out " + results + " --overwrite", scratch.path);
    CHECK(convert.status == 2);
    CHECK_THAT(convert.err, Catch::Contains("input of the command"));
    const auto predict = run_iclab("predict " + run.string() + " --tokens 72,101 --out " + results + " --overwrite", scratch.path);
    CHECK(predict.status == 2);
    const auto inside = run_iclab("predict " + run.string() + " --tokens 72,101 --out " + (run / "p.h5").string(), scratch.path);
    CHECK(inside.status == 2);
    const auto generate = run_iclab("generate " + run.string() + " --prompt-tokens 72 --max-new-tokens 2 --out " + results + " --overwrite",
                                    scratch.path);
    CHECK(generate.status == 2);
    const auto claims = run_iclab("claims " + run.string() + " --out " + (run / "claims.csv").string(), scratch.path);
    CHECK(claims.status == 2);
    const auto collect = run_iclab("collect " + run.string() + " --out " + (run / "runs.csv").string(), scratch.path);
    CHECK(collect.status == 2);
    CHECK(snapshot(run) == before);
}

TEST_CASE("claims refuses two copies of one run instead of pooling them as two seeds", "[cli][claims][output]") {
    Scratch scratch;
    const auto trained = run_iclab("run configs/quick/gd_duals.yaml --quiet output.dir=" + (scratch.path / "a").string(), scratch.path);
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    const fs::path run = iclab_test::last_line(trained.out);
    fs::create_directories(scratch.path / "b");
    fs::copy(run, scratch.path / "b" / run.filename(), fs::copy_options::recursive);
    const auto one = run_iclab("claims " + (scratch.path / "a").string(), scratch.path);
    CHECK(one.status == 0);
    const auto twice = run_iclab("claims " + (scratch.path / "a").string() + " " + (scratch.path / "b").string(), scratch.path);
    CHECK(twice.status == 2);
    CHECK_THAT(twice.err, Catch::Contains("same seed"));
}

TEST_CASE("run --overwrite replaces only iclab's run folder, and only when the new run completes", "[cli][output]") {
    Scratch scratch;
    const std::string base = "run configs/quick/induction_head.yaml train.steps=12 train.warmup_steps=2 eval.every=6 task.seq_len=16 "
                             "eval.sequences=8 train.batch_size=4 train.checkpoint_every=4 --quiet output.name=r output.dir=" +
                             (scratch.path / "runs").string();
    const auto first = run_iclab(base, scratch.path);
    INFO(first.err);
    REQUIRE(first.status == 0);
    const fs::path run = iclab_test::last_line(first.out);
    CHECK(fs::exists(run / ".iclab_output"));
    const auto before = snapshot(run);
    // Stopped before it completes, the replacing run leaves the old one byte for byte, and waits beside it.
    const auto stopped = run_iclab(base + " --overwrite train.lr=0.002 --stop-after 5", scratch.path);
    INFO(stopped.err);
    REQUIRE(stopped.status == 0);
    const fs::path staging = iclab_test::last_line(stopped.out);
    CHECK(staging != run);
    CHECK(snapshot(run) == before);
    // Resumed, it completes and takes the old one's place.
    const auto resumed = run_iclab("run --resume " + staging.string() + " --quiet", scratch.path);
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    CHECK(iclab_test::last_line(resumed.out) == run.string());
    CHECK_FALSE(fs::exists(staging));
    CHECK(fs::exists(run / "results.h5"));
    CHECK(snapshot(run) != before);
    for (const auto& entry : fs::directory_iterator(scratch.path / "runs")) CHECK(entry.path().filename().string().find(".iclab-") == std::string::npos);
    // A folder of the same name that iclab did not make is never replaced.
    fs::remove_all(run);
    fs::create_directories(run);
    std::ofstream(run / "mine.txt") << "mine\n";
    const auto refused = run_iclab(base + " --overwrite", scratch.path);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("not written by iclab"));
    CHECK(iclab_test::read_file(run / "mine.txt") == "mine\n");
}

}  // namespace iclab_test_output_policy_cli
