// Checkpoints, resuming and the NaN stop, end to end through the iclab command: a run stopped
// (--stop-after) or killed (SIGKILL) and resumed (--resume) ends bit-identical to an uninterrupted one;
// a diverging run exits 1 naming the step and keeps its last good checkpoint; resuming is refused
// (exit 2) where it cannot be done faithfully.
#include <H5Cpp.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_resume {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab_test;
using iclab::io::ResultsReader;

namespace {

// 12 steps of a tiny model: evaluations after steps 6 and 12, checkpoints after 4, 8 and 12.
const std::string kTiny =
    "configs/quick/induction_head.yaml train.steps=12 train.warmup_steps=2 eval.every=6 task.seq_len=16 "
    "eval.sequences=8 train.batch_size=4 train.checkpoint_every=4 --quiet";

// SGD at learning rate 1000 without clipping: on this tiny model the loss becomes NaN after a few
// steps (step 6 on the development machine), an honest divergence rather than an injected fault.
const std::string kDiverging =
    "configs/quick/induction_head.yaml train.steps=30 eval.every=30 task.seq_len=16 eval.sequences=8 train.batch_size=4 "
    "train.optimizer=sgd train.schedule=constant train.grad_clip=0 train.lr=1000 --quiet";

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

// Every tensor under `group` (read as double: float32 widens exactly) is bit-identical in both files.
void check_same_tensors(const ResultsReader& a, const ResultsReader& b, const std::string& group) {
    const auto names = a.list(group);
    REQUIRE(!names.empty());
    CHECK(b.list(group) == names);
    for (const auto& name : names) {
        INFO(group << "/" << name);
        const auto ta = a.read_tensor_double(group + "/" + name), tb = b.read_tensor_double(group + "/" + name);
        CHECK(ta.shape == tb.shape);
        CHECK(same_bits(ta.values, tb.values));
    }
}

// /steps and /curves bit-identical but the wall-clock columns, and the parameters.
void check_same_training(const fs::path& file_a, const fs::path& file_b) {
    INFO(file_a.string() << " vs " << file_b.string());
    const ResultsReader a(file_a), b(file_b);
    CHECK(a.read_column_int64("/steps/step") == b.read_column_int64("/steps/step"));
    for (const char* column : {"loss", "lr", "grad_norm"}) {
        INFO("/steps/" << column);
        CHECK(same_bits(a.read_column_double(std::string("/steps/") + column), b.read_column_double(std::string("/steps/") + column)));
    }
    const std::string order = a.read_attr_string("/curves", "column_order");
    CHECK(b.read_attr_string("/curves", "column_order") == order);
    std::stringstream columns(order);
    int compared = 0;
    for (std::string column; std::getline(columns, column, ',');) {
        if (column == "tokens_per_s" || column == "elapsed_s") continue;  // wall time
        INFO("/curves/" << column);
        CHECK(same_bits(a.read_column_double("/curves/" + column), b.read_column_double("/curves/" + column)));
        ++compared;
    }
    CHECK(compared >= 4);
    check_same_tensors(a, b, "/checkpoint");
}

// The optimizer state and data stream of two checkpoint.h5 files.
void check_same_checkpoint_state(const fs::path& file_a, const fs::path& file_b) {
    const ResultsReader a(file_a), b(file_b);
    CHECK(a.read_attr_int64("/", "next_step") == b.read_attr_int64("/", "next_step"));
    CHECK(a.read_attr_int64("/", "optimizer_steps_taken") == b.read_attr_int64("/", "optimizer_steps_taken"));
    CHECK(a.read_column_int64("/trainer/data_rng/words") == b.read_column_int64("/trainer/data_rng/words"));
    check_same_tensors(a, b, "/optimizer/first_moment");
    if (a.has("/optimizer/second_moment")) check_same_tensors(a, b, "/optimizer/second_moment");
    CHECK(b.has("/optimizer/second_moment") == a.has("/optimizer/second_moment"));
}

std::int64_t checkpoint_step(const fs::path& run_dir) {
    return ResultsReader(run_dir / "checkpoint.h5").read_attr_int64("/", "next_step");
}

// Runs `config` uninterrupted and again stopped after each step in `stops` and resumed, and compares.
void check_stop_and_resume(const std::string& config, const std::vector<int>& stops) {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto full = run_iclab("run " + config + out + " output.name=full", scratch.path);
    REQUIRE(full.status == 0);
    const fs::path full_dir = last_line(full.out);

    auto part = run_iclab("run " + config + out + " output.name=part --stop-after " + std::to_string(stops.front()), scratch.path);
    REQUIRE(part.status == 0);
    const fs::path part_dir = last_line(part.out);
    CHECK_THAT(part.err, Catch::Contains("stopped after step " + std::to_string(stops.front())) && Catch::Contains("--resume"));
    for (std::size_t i = 0;; ++i) {
        REQUIRE_FALSE(fs::exists(part_dir / "results.h5"));
        REQUIRE(checkpoint_step(part_dir) == stops[i]);
        const std::string stop = i + 1 < stops.size() ? " --stop-after " + std::to_string(stops[i + 1]) : "";
        const auto resumed = run_iclab("run --resume " + part_dir.string() + " --quiet" + stop, scratch.path);
        INFO(resumed.err);
        REQUIRE(resumed.status == 0);
        CHECK(fs::path(last_line(resumed.out)) == part_dir);
        if (stop.empty()) break;
    }
    REQUIRE(fs::exists(part_dir / "results.h5"));
    check_same_training(full_dir / "results.h5", part_dir / "results.h5");
    check_same_training(full_dir / "checkpoint.h5", part_dir / "checkpoint.h5");
    check_same_checkpoint_state(full_dir / "checkpoint.h5", part_dir / "checkpoint.h5");
    const ResultsReader a(full_dir / "results.h5"), b(part_dir / "results.h5");
    CHECK(same_bits(a.read_column_double("/tables/final_eval/loss"), b.read_column_double("/tables/final_eval/loss")));
    CHECK(a.read_attr_double("/", "final_icl_accuracy") == b.read_attr_double("/", "final_icl_accuracy"));
    CHECK(a.read_attr_double("/", "final_eval_loss") == b.read_attr_double("/", "final_eval_loss"));

    // The resumed results carry the original run's identity, and say where it was resumed.
    const ResultsReader first_session(part_dir / "checkpoint.h5");
    CHECK(b.read_attr_string("/", "config_source") == "configs/quick/induction_head.yaml");
    CHECK_THAT(b.read_attr_string("/", "overrides"), Catch::Contains("output.name=part"));
    CHECK(b.read_attr_string("/", "start_time") == first_session.read_attr_string("/", "start_time"));
    for (int stop : stops) CHECK_THAT(b.read_attr_string("/", "resumed_at"), Catch::Contains("step " + std::to_string(stop) + " at"));
    CHECK_THROWS(a.read_attr_string("/", "resumed_at"));  // only a resumed run has it

    // log.txt was appended to by every session.
    const std::string log = read_file(part_dir / "log.txt");
    CHECK_THAT(log, Catch::StartsWith("run ") && Catch::Contains("checkpoint at step " + std::to_string(stops.front())) &&
                        Catch::Contains("stopped after step " + std::to_string(stops.front())) && Catch::Contains("finished"));
    std::size_t resumes = 0;
    for (auto at = log.find("\nresumed "); at != std::string::npos; at = log.find("\nresumed ", at + 1)) ++resumes;
    CHECK(resumes == stops.size());
}

}  // namespace

TEST_CASE("a run stopped and resumed ends bit-identical to an uninterrupted run", "[resume]") {
    SECTION("adamw float32: stopped before the first evaluation, then mid-interval") {
        // Step 3: no /curves row yet; step 9: between evaluations, so the interval sums must carry over.
        check_stop_and_resume(kTiny, {3, 9});
    }
    SECTION("sgd with momentum, float64: stopped on an evaluation step") {
        check_stop_and_resume(kTiny + " model.dtype=float64 train.optimizer=sgd train.momentum=0.9 train.lr=0.05", {6});
    }
}

TEST_CASE("a run killed with SIGKILL after a checkpoint resumes to the uninterrupted result", "[resume]") {
    Scratch scratch;
    const fs::path out_dir = scratch.path / "results";
    // Long enough not to finish before the kill; one thread so a loaded machine does not stretch it.
    const std::string config =
        "configs/quick/induction_head.yaml train.steps=400 train.warmup_steps=2 eval.every=100 task.seq_len=16 "
        "eval.sequences=8 train.batch_size=4 train.checkpoint_every=5 --quiet --threads 1 output.dir=" +
        out_dir.string();
    const fs::path killed_dir = out_dir / "killed";
    const std::string command = "cd '" ICLAB_SOURCE_DIR "' && { '" ICLAB_BINARY "' run " + config +
                                " output.name=killed >/dev/null 2>&1 & pid=$!; for i in $(seq 1 2000); do "
                                "[ -f '" + (killed_dir / "checkpoint.h5").string() + "' ] && break; sleep 0.01; done; "
                                "kill -9 $pid; wait $pid; } 2>/dev/null";  // no "Killed" from the shell
    const int raw = std::system(command.c_str());
    CHECK(WEXITSTATUS(raw) == 137);  // the shell reports the SIGKILL
    REQUIRE(fs::exists(killed_dir / "checkpoint.h5"));
    REQUIRE_FALSE(fs::exists(killed_dir / "results.h5"));
    const auto killed_at = checkpoint_step(killed_dir);
    CHECK(killed_at > 0);
    CHECK(killed_at < 400);
    CHECK(killed_at % 5 == 0);

    const auto resumed = run_iclab("run --resume " + killed_dir.string() + " --quiet --threads 1", scratch.path);
    INFO(resumed.err);
    REQUIRE(resumed.status == 0);
    const auto full = run_iclab("run " + config + " output.name=full", scratch.path);
    REQUIRE(full.status == 0);
    check_same_training(out_dir / "full" / "results.h5", killed_dir / "results.h5");
    check_same_checkpoint_state(out_dir / "full" / "checkpoint.h5", killed_dir / "checkpoint.h5");
}

TEST_CASE("a diverging run exits 1 naming step and quantity and keeps its last good checkpoint", "[resume][nan]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto diverged = run_iclab("run " + kDiverging + out + " train.checkpoint_every=1 output.name=nan", scratch.path);
    CHECK(diverged.status == 1);
    std::smatch match;
    REQUIRE(std::regex_search(diverged.err, match, std::regex(R"(training diverged at step (\d+): the (loss|gradient norm) is (NaN|[+-]Inf))")));
    const int step = std::stoi(match[1]);
    INFO("diverged at step " << step << ": " << diverged.err);
    REQUIRE(step >= 2);  // else there is no good checkpoint to keep
    CHECK_THAT(diverged.err, Catch::Contains("last good checkpoint, step " + std::to_string(step - 1)));

    const fs::path run_dir = scratch.path / "results" / "nan";
    CHECK_FALSE(fs::exists(run_dir / "results.h5"));
    CHECK_FALSE(fs::exists(run_dir / "results.h5.partial"));
    CHECK_FALSE(fs::exists(run_dir / "checkpoint.h5.partial"));
    CHECK_THAT(read_file(run_dir / "log.txt"), Catch::Contains("training diverged at step " + std::to_string(step)));
    REQUIRE(checkpoint_step(run_dir) == step - 1);
    {
        const ResultsReader checkpoint(run_dir / "checkpoint.h5");
        std::size_t non_finite = 0;
        for (const auto& name : checkpoint.list("/checkpoint"))
            for (double value : checkpoint.read_tensor_double("/checkpoint/" + name).values) non_finite += !std::isfinite(value);
        CHECK(non_finite == 0);
    }
    // The kept checkpoint is exactly the state after step - 1, as a run stopped there writes it.
    const auto stopped = run_iclab("run " + kDiverging + out + " train.checkpoint_every=1 output.name=stopped --stop-after " +
                                       std::to_string(step - 1),
                                   scratch.path);
    REQUIRE(stopped.status == 0);
    check_same_training(run_dir / "checkpoint.h5", scratch.path / "results" / "stopped" / "checkpoint.h5");
    check_same_checkpoint_state(run_dir / "checkpoint.h5", scratch.path / "results" / "stopped" / "checkpoint.h5");
}

TEST_CASE("resuming is refused with exit 2 where it cannot be faithful", "[resume]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();

    SECTION("a completed run") {
        const auto run = run_iclab("run " + kTiny + out, scratch.path);
        REQUIRE(run.status == 0);
        const fs::path run_dir = last_line(run.out);
        const auto stamp = fs::last_write_time(run_dir / "results.h5");
        const auto again = run_iclab("run --resume " + run_dir.string(), scratch.path);
        CHECK(again.status == 2);
        CHECK_THAT(again.err, Catch::Contains("already complete"));
        CHECK(fs::last_write_time(run_dir / "results.h5") == stamp);
    }
    SECTION("a run that stopped before its first checkpoint") {
        const auto run = run_iclab("run " + kDiverging + out + " train.checkpoint_every=100 output.name=nan", scratch.path);
        REQUIRE(run.status == 1);
        CHECK_THAT(run.err, Catch::Contains("no checkpoint was written"));
        const auto again = run_iclab("run --resume " + (scratch.path / "results" / "nan").string(), scratch.path);
        CHECK(again.status == 2);
        CHECK_THAT(again.err, Catch::Contains("has no checkpoint.h5"));
    }
    SECTION("not a run folder") {
        const auto again = run_iclab("run --resume " + (scratch.path / "nothing").string(), scratch.path);
        CHECK(again.status == 2);
        CHECK_THAT(again.err, Catch::Contains("is not a folder"));
        const auto empty = run_iclab("run --resume " + scratch.path.string(), scratch.path);
        CHECK(empty.status == 2);
        CHECK_THAT(empty.err, Catch::Contains("no config.yaml"));
    }
    SECTION("overrides, a config, --overwrite, or a stop before the checkpoint") {
        const auto run = run_iclab("run " + kTiny + out + " --stop-after 5", scratch.path);
        REQUIRE(run.status == 0);
        const std::string run_dir = last_line(run.out);
        for (const char* extra : {" train.lr=0.01", " seed=1", " configs/quick/induction_head.yaml"}) {
            const auto again = run_iclab("run --resume " + run_dir + extra, scratch.path);
            CHECK(again.status == 2);
            CHECK_THAT(again.err, Catch::Contains("takes no CONFIG or overrides"));
        }
        const auto overwrite = run_iclab("run --resume " + run_dir + " --overwrite", scratch.path);
        CHECK(overwrite.status == 2);
        const auto early = run_iclab("run --resume " + run_dir + " --stop-after 3", scratch.path);
        CHECK(early.status == 2);
        CHECK_THAT(early.err, Catch::Contains("--stop-after 3"));
        CHECK(checkpoint_step(run_dir) == 5);
        CHECK_FALSE(fs::exists(fs::path(run_dir) / "results.h5"));
    }
    SECTION("a config.yaml changed since the checkpoint; restored, the run resumes") {
        const auto run = run_iclab("run " + kTiny + out + " --stop-after 5", scratch.path);
        REQUIRE(run.status == 0);
        const fs::path run_dir = last_line(run.out);
        const std::string original = read_file(run_dir / "config.yaml");
        std::string changed = original;
        const auto at = changed.find("  lr: 0.001\n");
        REQUIRE(at != std::string::npos);
        changed.replace(at, 12, "  lr: 0.002\n");
        std::ofstream(run_dir / "config.yaml") << changed;
        const std::string log = read_file(run_dir / "log.txt");
        const auto again = run_iclab("run --resume " + run_dir.string(), scratch.path);
        CHECK(again.status == 2);
        CHECK_THAT(again.err, Catch::Contains("fingerprint") && Catch::Contains("lr: 0.002") && Catch::Contains("lr: 0.001"));
        CHECK(read_file(run_dir / "log.txt") == log);  // nothing was started
        CHECK(checkpoint_step(run_dir) == 5);

        std::ofstream(run_dir / "config.yaml") << original;
        const auto dry = run_iclab("run --resume " + run_dir.string() + " --dry-run", scratch.path);
        CHECK(dry.status == 0);
        const auto resumed = run_iclab("run --resume " + run_dir.string(), scratch.path);
        CHECK(resumed.status == 0);
        CHECK(fs::exists(run_dir / "results.h5"));
    }
}

TEST_CASE("a damaged or edited checkpoint is refused with exit 2, never resumed into other results", "[resume]") {
    Scratch scratch;
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto run = run_iclab("run " + kTiny + out + " --stop-after 8", scratch.path);  // past the evaluation at step 6
    REQUIRE(run.status == 0);
    const fs::path run_dir = last_line(run.out), checkpoint = run_dir / "checkpoint.h5";
    const fs::path pristine = scratch.path / "pristine.h5";
    fs::copy_file(checkpoint, pristine);
    const auto resume_refused = [&](const std::string& expected) {
        const auto again = run_iclab("run --resume " + run_dir.string(), scratch.path);
        CHECK(again.status == 2);
        CHECK_THAT(again.err, Catch::Contains(expected));
        CHECK_FALSE(fs::exists(run_dir / "results.h5"));
        fs::copy_file(pristine, checkpoint, fs::copy_options::overwrite_existing);
    };
    SECTION("an edited optimizer_steps_taken") {
        {
            H5::H5File raw(checkpoint.string(), H5F_ACC_RDWR);
            H5::Attribute attribute = raw.openAttribute("optimizer_steps_taken");
            const std::int64_t edited = 3;
            attribute.write(H5::PredType::NATIVE_INT64, &edited);
        }
        resume_refused("trainer state");
    }
    SECTION("a checkpoint written with another OpenBLAS kernel resumes, with a warning") {
        {
            H5::H5File raw(checkpoint.string(), H5F_ACC_RDWR);
            raw.removeAttr("blas_core");
            const char* other = "SomeOtherCore";
            H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
            raw.createAttribute("blas_core", type, H5::DataSpace(H5S_SCALAR)).write(type, &other);
        }
        const auto again = run_iclab("run --resume " + run_dir.string() + " --stop-after 9", scratch.path);
        CHECK(again.status == 0);
        CHECK_THAT(again.err, Catch::Contains("OpenBLAS kernel SomeOtherCore"));
        fs::copy_file(pristine, checkpoint, fs::copy_options::overwrite_existing);
    }
    SECTION("a parameter value edited") {
        {
            H5::H5File raw(checkpoint.string(), H5F_ACC_RDWR);
            H5::DataSet dataset = raw.openDataSet("/checkpoint/embedding.wte");
            std::vector<float> values(dataset.getSpace().getSimpleExtentNpoints());
            dataset.read(values.data(), H5::PredType::NATIVE_FLOAT);
            values[7] *= 1.0001f;
            dataset.write(values.data(), H5::PredType::NATIVE_FLOAT);
        }
        resume_refused("checksum");
    }
    SECTION("the data generator's state zeroed (it would loop forever)") {
        {
            H5::H5File raw(checkpoint.string(), H5F_ACC_RDWR);
            H5::DataSet dataset = raw.openDataSet("/trainer/data_rng/words");
            const std::int64_t zero[4] = {0, 0, 0, 0};
            dataset.write(zero, H5::PredType::NATIVE_INT64);
            dataset.removeAttr("checksum");  // past the checksum: the state itself is checked
        }
        resume_refused("all zero");
    }
    SECTION("a curve column one row short") {
        {
            H5::H5File raw(checkpoint.string(), H5F_ACC_RDWR);
            H5::DataSet dataset = raw.openDataSet("/curves/eval_loss");
            std::vector<double> values(dataset.getSpace().getSimpleExtentNpoints());
            dataset.read(values.data(), H5::PredType::NATIVE_DOUBLE);
            raw.unlink("/curves/eval_loss");
            const hsize_t rows = values.size() - 1;
            raw.createDataSet("/curves/eval_loss", H5::PredType::IEEE_F64LE, H5::DataSpace(1, &rows))
                .write(values.data(), H5::PredType::NATIVE_DOUBLE);
        }
        resume_refused("rows");
    }
    const auto resumed = run_iclab("run --resume " + run_dir.string(), scratch.path);
    CHECK(resumed.status == 0);
}

}  // namespace iclab_test_resume
