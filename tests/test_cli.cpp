// The iclab command end to end: config rejection (exit 2, key and line named, nothing written), the
// results file's contents, never overwriting a completed run, killed runs, determinism and predict.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_cli {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab_test;

namespace {

const std::string kTiny =
    "configs/quick/induction_head.yaml train.steps=12 train.warmup_steps=2 eval.every=6 task.seq_len=16 "
    "eval.sequences=8 train.batch_size=4 --quiet";

}  // namespace

TEST_CASE("bad configs exit 2 naming key, file and line, and write nothing", "[cli]") {
    Scratch scratch;
    const fs::path out_dir = scratch.path / "results";
    const std::string out = " output.dir=" + out_dir.string();
    const fs::path bad = scratch.path / "bad.yaml";

    SECTION("unknown key in a file, with a suggestion") {
        std::ofstream(bad) << "experiment: induction_head\nmodel:\n  layers: 2\n  layrs: 3\n";
        const auto r = run_iclab("run " + bad.string() + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains(bad.string() + ":4") && Catch::Contains("model.layrs") &&
                              Catch::Contains("did you mean 'model.layers'"));
    }
    SECTION("unknown key in an override") {
        const auto r = run_iclab("run configs/quick/induction_head.yaml train.setps=5" + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains("train.setps") && Catch::Contains("did you mean 'train.steps'"));
    }
    SECTION("a key without its section") {
        const auto r = run_iclab("run configs/quick/induction_head.yaml warmup_steps=5" + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains("did you mean 'train.warmup_steps'"));
    }
    SECTION("wrong type") {
        std::ofstream(bad) << "experiment: induction_head\ntrain:\n  steps: many\n";
        const auto r = run_iclab("run " + bad.string() + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains(bad.string() + ":3") && Catch::Contains("train.steps"));
    }
    SECTION("out of range") {
        std::ofstream(bad) << "experiment: induction_head\ntrain:\n  lr: -1.0\n";
        const auto r = run_iclab("run " + bad.string() + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains(bad.string() + ":3") && Catch::Contains("train.lr"));
    }
    SECTION("inconsistent widths") {
        std::ofstream(bad) << "experiment: induction_head\nmodel:\n  width: 64\n  heads: 3\n";
        const auto r = run_iclab("run " + bad.string() + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains("model.width") && Catch::Contains("model.heads") && Catch::Contains(":3"));
    }
    SECTION("odd head width with RoPE") {
        const auto r = run_iclab("run configs/quick/induction_head.yaml model.width=66 model.heads=2" + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains("RoPE needs an even head width"));
    }
    SECTION("induction-head models that cannot learn in context, or whose task is not what it seems") {
        for (const std::string bad_setting : {"model.mask=prefix", "model.mask=full", "model.isolate_queries=true"}) {
            const auto r = run_iclab("run configs/quick/induction_head.yaml " + bad_setting + out, scratch.path);
            CHECK(r.status == 2);
            CHECK_THAT(r.err, Catch::Contains(bad_setting.substr(0, bad_setting.find('='))) && Catch::Contains("induction-head"));
        }
    }
    SECTION("task rules run at validation: a repeated trigger, no trigger, no letter left for successors") {
        const auto twice = run_iclab("run configs/quick/induction_head.yaml 'task.triggers=[a, a, b]'" + out, scratch.path);
        CHECK(twice.status == 2);
        CHECK_THAT(twice.err, Catch::Contains("task.triggers") && Catch::Contains("listed twice"));
        const auto none = run_iclab("run configs/quick/induction_head.yaml 'task.triggers=[]'" + out, scratch.path);
        CHECK(none.status == 2);
        CHECK_THAT(none.err, Catch::Contains("task.triggers") && Catch::Contains("at least one trigger"));
        std::string all_letters = "[";
        for (char c = 'a'; c <= 'z'; ++c) all_letters += std::string(all_letters.size() > 1 ? ", " : "") + c;
        for (char c = 'A'; c <= 'Z'; ++c) all_letters += std::string(", ") + c;
        const auto full = run_iclab("run configs/quick/induction_head.yaml 'task.triggers=" + all_letters + "]' --dry-run" + out,
                                    scratch.path);
        CHECK(full.status == 2);
        CHECK_THAT(full.err, Catch::Contains("non_trigger"));
    }
    SECTION("performer features that underflow at initialization") {
        // quick config: init_std 0.3, C 64, D 32: with s = 1 the features are ~1e-23 and attention outputs nothing
        const auto r = run_iclab("run configs/quick/induction_head.yaml model.feature_map=performer model.performer_input_scale=1" + out,
                                 scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains("underflow") && Catch::Contains("model.performer_input_scale"));
        // the default scale D^(-1/4) works with the same model
        const auto ok = run_iclab("run configs/quick/induction_head.yaml model.feature_map=performer --dry-run" + out, scratch.path);
        CHECK(ok.status == 0);
    }
    SECTION("missing config file") {
        const auto r = run_iclab("run " + (scratch.path / "nope.yaml").string() + out, scratch.path);
        CHECK(r.status == 2);
        CHECK_THAT(r.err, Catch::Contains("nope.yaml"));
    }
    CHECK(count_entries(out_dir) == 0);
}

TEST_CASE("a run writes a complete results file and never overwrites a completed one", "[cli][results]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto first = run_iclab("run " + kTiny + out, scratch.path);
    REQUIRE(first.status == 0);
    const fs::path run_dir = last_line(first.out);
    REQUIRE(fs::exists(run_dir / "results.h5"));
    CHECK(fs::exists(run_dir / "config.yaml"));
    CHECK(fs::exists(run_dir / "log.txt"));
    CHECK_FALSE(fs::exists(run_dir / "results.h5.partial"));

    {
        iclab::io::ResultsReader reader(run_dir / "results.h5");
        for (const char* attr : {"config", "overrides", "git_commit", "git_dirty", "iclab_version", "compiler", "blas_core",
                                 "start_time", "end_time"})
            CHECK_FALSE(reader.read_attr_string("/", attr).empty());
        CHECK(reader.read_attr_int64("/", "seed") == 0);
        CHECK_THAT(reader.read_attr_string("/", "config"), Catch::Contains("steps: 12"));
        const auto steps = reader.read_column_double("/curves/step");
        CHECK(steps == std::vector<double>{6.0, 12.0});
        for (const char* curve : {"train_loss", "eval_loss", "icl_accuracy", "nontrigger_accuracy", "lr", "tokens_per_s"})
            CHECK(reader.read_column_double(std::string("/curves/") + curve).size() == 2);
        CHECK(reader.read_column_double("/steps/loss").size() == 12);
        CHECK(reader.read_attr_string("/tables/final_eval", "column_order") ==
              "position_kind,positions,loss,accuracy,best_possible_accuracy");
        const auto w_qkv = reader.read_tensor_float("/checkpoint/blocks.0.attn.w_qkv");
        CHECK(w_qkv.shape == std::vector<size_t>{64, 192});
        CHECK_THAT(reader.read_attr_string("/checkpoint/blocks.0.attn.w_qkv", "layout"), Catch::Contains("W_Q"));
    }

    const auto stamp = fs::last_write_time(run_dir / "results.h5");
    const auto second = run_iclab("run " + kTiny + out, scratch.path);
    REQUIRE(second.status == 0);
    const fs::path second_dir = last_line(second.out);
    CHECK(second_dir != run_dir);
    CHECK(second_dir.string() == run_dir.string() + "-2");
    CHECK(fs::last_write_time(run_dir / "results.h5") == stamp);

    const auto third = run_iclab("run " + kTiny + out + " --overwrite", scratch.path);
    REQUIRE(third.status == 0);
    CHECK(fs::path(last_line(third.out)) == run_dir);
}

TEST_CASE("a killed run leaves no results.h5 under the final name", "[cli][results]") {
    Scratch scratch;
    const fs::path out_dir = scratch.path / "results";
    // Killed once its run folder holds config.yaml (the run is under way), not after a fixed time: under ASan on a
    // loaded machine validation alone can take longer than any fixed delay. Up to 10 min of waiting; then SIGKILL.
    const std::string command = "exec 2>/dev/null; cd '" ICLAB_SOURCE_DIR "' && { '" ICLAB_BINARY
                                "' run configs/quick/induction_head.yaml train.steps=1000000 --quiet output.dir=" +
                                out_dir.string() + " >/dev/null 2>&1 & pid=$!; for i in $(seq 3000); do "
                                "ls " + out_dir.string() + "/*/config.yaml >/dev/null 2>&1 && break; sleep 0.2; done; "
                                "sleep 1; kill -KILL $pid; wait $pid; exit $?; }";
    const int raw = std::system(command.c_str());
    CHECK(WEXITSTATUS(raw) == 137);  // 128 + SIGKILL
    REQUIRE(count_entries(out_dir) == 1);
    const fs::path run_dir = fs::directory_iterator(out_dir)->path();
    CHECK(fs::exists(run_dir / "config.yaml"));
    CHECK_FALSE(fs::exists(run_dir / "results.h5"));
}

TEST_CASE("the same config and seed give identical curves, another seed does not", "[cli][determinism]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto a = run_iclab("run " + kTiny + out + " output.name=a", scratch.path);
    const auto b = run_iclab("run " + kTiny + out + " output.name=b", scratch.path);
    const auto c = run_iclab("run " + kTiny + out + " output.name=c seed=1", scratch.path);
    REQUIRE(a.status == 0);
    REQUIRE(b.status == 0);
    REQUIRE(c.status == 0);
    iclab::io::ResultsReader ra(fs::path(last_line(a.out)) / "results.h5"), rb(fs::path(last_line(b.out)) / "results.h5"),
        rc(fs::path(last_line(c.out)) / "results.h5");
    for (const char* curve : {"/steps/loss", "/steps/grad_norm", "/curves/eval_loss", "/curves/icl_accuracy"}) {
        CHECK(ra.read_column_double(curve) == rb.read_column_double(curve));
    }
    CHECK(ra.read_tensor_float("/checkpoint/unembedding.w").values == rb.read_tensor_float("/checkpoint/unembedding.w").values);
    CHECK(ra.read_column_double("/steps/loss") != rc.read_column_double("/steps/loss"));
}

TEST_CASE("results do not depend on thread count or wait policy while other processes load both cores", "[cli][determinism]") {
    // Two busy processes hold both cores (as a shared node or a parallel ctest does); runs with 1 and 2 OpenMP threads,
    // libgomp's spinning default and a passive policy must give the same numbers bit for bit.
    std::vector<pid_t> load;
    for (int i = 0; i < 2; ++i) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            for (volatile unsigned long spin = 0;; spin = spin + 1) {
            }
        }
        load.push_back(pid);
    }
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto one = run_iclab("run " + kTiny + out + " output.name=t1 --threads 1", scratch.path);
    const auto two = run_iclab("run " + kTiny + out + " output.name=t2 --threads 2", scratch.path);
    const auto spin = run_iclab("run " + kTiny + out + " output.name=spin --threads 2", scratch.path, "GOMP_SPINCOUNT=300000");
    const auto passive = run_iclab("run " + kTiny + out + " output.name=passive --threads 2", scratch.path, "OMP_WAIT_POLICY=PASSIVE");
    for (pid_t pid : load) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    for (const auto* run : {&one, &two, &spin, &passive}) REQUIRE(run->status == 0);
    iclab::io::ResultsReader reference(fs::path(last_line(one.out)) / "results.h5");
    for (const auto* run : {&two, &spin, &passive}) {
        iclab::io::ResultsReader other(fs::path(last_line(run->out)) / "results.h5");
        for (const char* curve : {"/steps/loss", "/steps/grad_norm", "/curves/eval_loss"})
            CHECK(reference.read_column_double(curve) == other.read_column_double(curve));
        CHECK(reference.read_tensor_float("/checkpoint/unembedding.w").values == other.read_tensor_float("/checkpoint/unembedding.w").values);
    }
}

TEST_CASE("predict prints next-token predictions and writes logits", "[cli][predict]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto run = run_iclab("run " + kTiny + out, scratch.path);
    REQUIRE(run.status == 0);
    const std::string run_dir = last_line(run.out);
    const fs::path logits = scratch.path / "logits.h5";
    const auto p = run_iclab("predict " + run_dir + " --text abcXab --top 2 --out " + logits.string(), scratch.path);
    REQUIRE(p.status == 0);
    CHECK_THAT(p.out, Catch::Contains("icl"));  // the second 'a' and 'b' are repeated triggers
    iclab::io::ResultsReader reader(logits);
    CHECK(reader.read_tensor_float("/logits").shape == std::vector<size_t>{6, 52});
    CHECK(reader.read_int32("/tokens").values == std::vector<int32_t>{0, 1, 2, 49, 0, 1});
    CHECK(reader.read_int32("/position_kinds").values == std::vector<int32_t>{1, 1, 1, 0, 2, 2});

    const auto again = run_iclab("predict " + run_dir + " --text abc --out " + logits.string(), scratch.path);
    CHECK(again.status == 2);  // an existing file is not overwritten without --overwrite
    const auto bad = run_iclab("predict " + run_dir + " --text ab1", scratch.path);
    CHECK(bad.status == 2);
    CHECK_THAT(bad.err, Catch::Contains("'1'"));

    // An edited RUN_DIR/config.yaml (here RoPE switched) would change what predict and convert compute: refused.
    const fs::path config = fs::path(run_dir) / "config.yaml";
    std::string text;
    {
        std::ifstream in(config);
        text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    { std::ofstream(config) << text << "# edited\n"; }
    const auto edited = run_iclab("predict " + run_dir + " --text abcab", scratch.path);
    CHECK(edited.status == 2);
    CHECK_THAT(edited.err, Catch::Contains("edited after the run"));
    { std::ofstream(config) << text; }
    CHECK(run_iclab("predict " + run_dir + " --text abcab", scratch.path).status == 0);
}

TEST_CASE("bench measures a config's model and writes its table and an export", "[cli][bench]") {
    Scratch scratch;
    const fs::path table = scratch.path / "bench.h5", exported = scratch.path / "export.h5";
    const std::string config = "configs/quick/induction_head.yaml task.seq_len=16 train.batch_size=4 model.layers=1 model.mlp=true";
    const auto r = run_iclab("bench " + config + " --threads 2 --warmup 0 --iters 2 --blas-size 64 --out " + table.string() +
                                 " --export " + exported.string(),
                             scratch.path);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("training step"));
    CHECK_THAT(r.out, Catch::Contains("model GEMM rate / BLAS rate"));
    {
        iclab::io::ResultsReader reader(table);
        for (const char* metric : {"forward_tokens_per_s", "train_tokens_per_s", "gemm_gflops", "blas_gflops", "gemm_gflop_per_step"})
            CHECK(reader.read_attr_double("/", metric) > 0.0);
        CHECK(reader.read_attr_int64("/", "tokens_per_step") == 64);
        CHECK(reader.read_attr_int64("/", "threads") == 2);
        CHECK_FALSE(reader.read_attr_string("/", "git_commit").empty());
        CHECK(reader.read_column_string("/tables/bench/metric").size() == reader.read_column_double("/tables/bench/value").size());
        CHECK_FALSE(reader.read_column_int64("/tables/gemm_shapes/m").empty());
        CHECK(reader.read_column_double("/samples/train_step_s").size() == 2);
    }
    {
        iclab::io::ResultsReader reader(exported);
        CHECK(reader.read_tensor_float("/check/logits").shape == std::vector<size_t>{4, 16, 52});
        CHECK(reader.read_int32("/check/tokens").shape == std::vector<size_t>{4, 16});
        for (const auto& name : reader.list("/checkpoint"))
            CHECK(reader.read_tensor_float("/check/grads/" + name).shape == reader.read_tensor_float("/checkpoint/" + name).shape);
        CHECK(std::isfinite(reader.read_attr_double("/", "loss")));
    }
    // Existing files are refused before anything is measured.
    const auto again = run_iclab("bench " + config + " --iters 1 --out " + table.string(), scratch.path);
    CHECK(again.status == 2);
    CHECK_THAT(again.err, Catch::Contains("--overwrite"));
}

TEST_CASE("the quick config learns the induction head", "[cli][learning][slow]") {
    // The default experiment, end to end, as scripts/run.sh runs it (about a minute on 2 cores).
    Scratch scratch;
    const auto run = run_iclab("run configs/quick/induction_head.yaml --quiet output.dir=" + (scratch.path / "results").string(),
                               scratch.path);
    REQUIRE(run.status == 0);
    iclab::io::ResultsReader reader(fs::path(last_line(run.out)) / "results.h5");
    const double icl = reader.read_attr_double("/", "final_icl_accuracy");
    const double non_trigger = reader.read_attr_double("/", "final_nontrigger_accuracy");
    INFO("ICL accuracy " << icl << ", non-trigger accuracy " << non_trigger);
    CHECK(icl >= 0.95);
    CHECK(non_trigger < 0.03);  // chance is 1/52 = 0.019: nothing to learn there
    const auto curve = reader.read_column_double("/curves/icl_accuracy");
    CHECK(curve.front() < 0.2);  // it starts near chance: the accuracy is learned, not given
}

TEST_CASE("small things: --stop-after past the end, warmup as a fraction, predict --out refused before the work", "[cli]") {
    Scratch scratch;
    const std::string tiny = "configs/quick/induction_head.yaml train.steps=12 eval.every=6 task.seq_len=16 eval.sequences=8 "
                             "train.batch_size=4 --quiet output.dir=" + scratch.path.string();
    const auto past = run_iclab("run " + tiny + " train.warmup_steps=2 --stop-after 12", scratch.path);
    CHECK(past.status == 2);
    CHECK_THAT(past.err, Catch::Contains("--stop-after 12") && Catch::Contains("train.steps"));

    // warmup_fraction 0.25 of 12 steps: the learning rate rises for 3 steps, then decays
    const auto fraction = run_iclab("run " + tiny + " train.warmup_fraction=0.25 train.schedule=warmup_cosine", scratch.path);
    INFO(fraction.err);
    REQUIRE(fraction.status == 0);
    const auto lr = iclab::io::ResultsReader(fs::path(last_line(fraction.out)) / "results.h5").read_column_double("/steps/lr");
    REQUIRE(lr.size() == 12);
    CHECK((lr[0] < lr[1] && lr[1] < lr[2]));       // warmup: steps 1-3 reach the peak at step 3
    CHECK(lr[2] == *std::max_element(lr.begin(), lr.end()));
    CHECK((lr[3] == lr[2] && lr[3] > lr[4]));      // the cosine decay starts from the peak
    const auto too_long = run_iclab("run " + tiny + " train.warmup_fraction=1.0 --dry-run", scratch.path);
    CHECK(too_long.status == 2);
    CHECK_THAT(too_long.err, Catch::Contains("must be shorter than train.steps"));

    const fs::path existing = scratch.path / "taken.h5";
    std::ofstream(existing) << "not an HDF5 file";
    const auto predict = run_iclab("predict " + last_line(fraction.out) + " --text abcab --out " + existing.string(), scratch.path);
    CHECK(predict.status == 2);
    CHECK_THAT(predict.err, Catch::Contains("exists"));
    CHECK(predict.out.find("next-token") == std::string::npos);  // refused before predicting
    const auto longer = run_iclab("predict " + last_line(fraction.out) + " --text abcabcabcabcabcabcab", scratch.path);
    CHECK(longer.status == 0);
    CHECK_THAT(longer.err, Catch::Contains("warning") && Catch::Contains("task.seq_len"));
}

TEST_CASE("a config that cannot fit in memory is refused at validation, before the run folder", "[cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    for (const char* huge : {" model.width=4096 model.heads=32 model.layers=64", " task.seq_len=1048576 train.batch_size=1048576"}) {
        const auto run = run_iclab("run configs/quick/induction_head.yaml" + out + huge, scratch.path);
        CHECK(run.status == 2);
        CHECK_THAT(run.err, Catch::Contains("GiB available") && Catch::Contains("needs about"));
        CHECK_FALSE(fs::exists(scratch.path / "results"));
    }
}


TEST_CASE("iclab version names the commit the binary was built from (as its results files do)", "[cli]") {
    Scratch scratch;
    for (const char* spelling : {"version", "--version"}) {
        const auto r = run_iclab(spelling, scratch.path);
        CHECK(r.status == 0);
        // the same stamp as this test binary's (one build): git_commit() is what write_provenance records
        CHECK_THAT(r.out, Catch::StartsWith("iclab ") && Catch::Contains(" commit " + iclab::io::git_commit()) &&
                              Catch::Contains(iclab::io::simd_target()) && Catch::Contains("OpenBLAS core " + iclab::io::openblas_core()));
        CHECK((iclab::io::git_dirty() == "true") == (r.out.find(iclab::io::git_commit() + "-dirty") != std::string::npos));
    }
    const auto extra = run_iclab("version now", scratch.path);
    CHECK(extra.status == 2);
    CHECK_THAT(extra.err, Catch::Contains("takes no arguments"));
}

}  // namespace iclab_test_cli
