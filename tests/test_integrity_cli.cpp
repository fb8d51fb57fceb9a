// Integrity of what the commands read and write (issue 20), through the iclab binary: damaged adapters given to predict
// (the ICLAA feature_map edit that corrupted the heap included), damaged results tables given to show and collect,
// outputs that cannot be written (collect, bench, predict, convert) and prompt files that are no files. Every case:
// exit status 2, a one-line message naming the problem, no crash, no file written. Composition of ICLAA adapters
// inherits the base's feature map or refuses a different one.
#include <catch2/catch.hpp>

#include <H5Cpp.h>

#include <functional>

#include "framework/core/measure.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_integrity_cli {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab;
using namespace iclab_test;

namespace {

const std::string kTinyRun =
    "configs/quick/induction_head.yaml train.steps=2 train.warmup_steps=1 eval.every=2 task.seq_len=16 eval.sequences=8 "
    "train.batch_size=4 --quiet";

std::string train_tiny(const Scratch& scratch, const std::string& extra) {
    const auto run = run_iclab("run " + kTinyRun + " output.dir=" + (scratch.path / "results").string() + " " + extra, scratch.path);
    INFO(run.err);
    REQUIRE(run.status == 0);
    return last_line(run.out);
}

// Exit 2, one line on stderr that holds every part, nothing on disk under `must_not_exist`.
void require_refused(const CommandResult& result, const std::vector<std::string>& parts, const std::vector<fs::path>& must_not_exist = {}) {
    INFO(result.err);
    CHECK(result.status == 2);
    std::string err = result.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    CHECK(err.find('\n') == std::string::npos);
    for (const auto& part : parts) CHECK(err.find(part) != std::string::npos);
    for (const auto& path : must_not_exist) CHECK_FALSE(fs::exists(path));
}

void edit(const fs::path& file, const std::function<void(H5::H5File&)>& change) {
    H5::H5File raw(file.string(), H5F_ACC_RDWR);
    change(raw);
}

void set_string(H5::H5File& file, const std::string& name, const std::string& value) {
    if (file.attrExists(name)) file.removeAttr(name);
    const H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    const char* text = value.c_str();
    file.createAttribute(name, type, H5::DataSpace(H5S_SCALAR)).write(type, &text);
}

void set_int(H5::H5File& file, const std::string& name, std::int64_t value) {
    if (file.attrExists(name)) file.removeAttr(name);
    file.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR)).write(H5::PredType::NATIVE_INT64, &value);
}

// No "*.partial*" left anywhere below `dir`.
std::size_t partial_files(const fs::path& dir) {
    std::size_t count = 0;
    for (const auto& entry : fs::recursive_directory_iterator(dir))
        if (entry.path().filename().string().find(".partial") != std::string::npos) ++count;
    return count;
}

}  // namespace

TEST_CASE("predict refuses damaged ICLAA adapters with exit 2 naming the field (the feature_map edit corrupted the heap)",
          "[integrity][cli][iclaa]") {
    Scratch scratch;
    const std::string run = train_tiny(scratch, "model.attention=softmax");
    const fs::path prf = scratch.path / "prf.h5", out = scratch.path / "p.h5";
    REQUIRE(run_iclab("convert " + run + " --prompt abcab --random-features 8 --out " + prf.string(), scratch.path).status == 0);
    const auto with_edit = [&](const std::function<void(H5::H5File&)>& change) {
        const fs::path edited = scratch.path / "edited.h5";
        fs::copy_file(prf, edited, fs::copy_options::overwrite_existing);
        edit(edited, change);
        return run_iclab("predict " + run + " --adapter " + edited.string() + " --text abcab --out " + out.string(), scratch.path);
    };
    require_refused(with_edit([](H5::H5File& f) { set_string(f, "feature_map", "elu1"); }), {"edited.h5", "features = 8", "elu1"}, {out});
    require_refused(with_edit([](H5::H5File& f) { set_string(f, "feature_map", "bogus"); }), {"feature_map", "bogus"}, {out});
    require_refused(with_edit([](H5::H5File& f) { set_string(f, "rope_convention", "unrotated"); }), {"content_checksum"}, {out});
    require_refused(with_edit([](H5::H5File& f) { f.unlink("/prompt_tokens"); }), {"/prompt_tokens", "missing"}, {out});
    require_refused(with_edit([](H5::H5File& f) { set_int(f, "model_layers", 3); }), {"model_layers = 3"}, {out});
    // the untouched adapter still works
    const auto fine = run_iclab("predict " + run + " --adapter " + prf.string() + " --text abcab", scratch.path);
    INFO(fine.err);
    CHECK(fine.status == 0);
}

TEST_CASE("predict refuses an ICLCA adapter with a token outside the vocabulary, no prompt_tokens or an edited model_layers",
          "[integrity][cli][adapter]") {
    Scratch scratch;
    const std::string run = train_tiny(scratch, "");
    const fs::path adapter = scratch.path / "a.h5", out = scratch.path / "p.h5";
    REQUIRE(run_iclab("convert " + run + " --prompt abcab --out " + adapter.string(), scratch.path).status == 0);
    const auto predict = [&](const fs::path& file) {
        return run_iclab("predict " + run + " --adapter " + file.string() + " --text abc --out " + out.string(), scratch.path);
    };
    {  // a token past V = 52, written with a matching fingerprint (as a foreign writer could)
        icl::Adapter read = icl::read_adapter_file(adapter);
        read.prompt[1] = 77;
        icl::write_adapter_file(scratch.path / "token.h5", read);
    }
    require_refused(predict(scratch.path / "token.h5"), {"/prompt_tokens[1] = 77", "vocabulary"}, {out});
    fs::copy_file(adapter, scratch.path / "no_prompt.h5");
    edit(scratch.path / "no_prompt.h5", [](H5::H5File& f) { f.unlink("/prompt_tokens"); });
    require_refused(predict(scratch.path / "no_prompt.h5"), {"/prompt_tokens", "missing"}, {out});
    fs::copy_file(adapter, scratch.path / "layers.h5");
    edit(scratch.path / "layers.h5", [](H5::H5File& f) { set_int(f, "model_layers", 3); });
    require_refused(predict(scratch.path / "layers.h5"), {"model_layers = 3"}, {out});
}

TEST_CASE("show and collect refuse a results table whose columns differ in length (they printed heap garbage)", "[integrity][cli]") {
    Scratch scratch;
    const std::string run = train_tiny(scratch, "");
    REQUIRE(io::ResultsReader(fs::path(run) / "results.h5").has("/tables/final_eval"));
    edit(fs::path(run) / "results.h5", [](H5::H5File& f) {
        // the table's second column, cut to one row and without its checksum
        H5::Group group = f.openGroup("/tables/final_eval");
        std::string order;
        group.openAttribute("column_order").read(group.openAttribute("column_order").getStrType(), order);
        const std::string second = order.substr(order.find(',') + 1, order.find(',', order.find(',') + 1) - order.find(',') - 1);
        f.unlink("/tables/final_eval/" + second);
        const hsize_t one = 1;
        const double value = 6.2e223;
        f.createDataSet("/tables/final_eval/" + second, H5::PredType::IEEE_F64LE, H5::DataSpace(1, &one)).write(&value, H5::PredType::NATIVE_DOUBLE);
    });
    const auto shown = run_iclab("show " + run, scratch.path);
    require_refused(shown, {"final_eval", "rows"});
    CHECK(shown.out.find("e+223") == std::string::npos);
    const fs::path csv = scratch.path / "runs.csv";
    const auto collected = run_iclab("collect " + run + " --out " + csv.string(), scratch.path);
    INFO(collected.err);
    CHECK(collected.status == 2);
    CHECK_THAT(collected.err, Catch::Contains("final_eval") && Catch::Contains("rows"));  // the skipped line names it
    CHECK_FALSE(fs::exists(csv));
    CHECK(partial_files(scratch.path) == 0);
}

TEST_CASE("collect --out that cannot be written is refused before any work, leaving no partial file", "[integrity][cli]") {
    Scratch scratch;
    const std::string run = train_tiny(scratch, "");
    const auto collect = [&](const std::string& out) { return run_iclab("collect " + run + " --out " + out, scratch.path); };
    std::ofstream(scratch.path / "plain").put('x');
    fs::create_directories(scratch.path / "dir.csv");
    require_refused(collect("/proc/runs.csv"), {"/proc", "cannot create"});
    require_refused(collect((scratch.path / "plain" / "runs.csv").string()), {"plain", "not a folder"});
    require_refused(collect((scratch.path / "missing" / "runs.csv").string()), {"missing", "does not exist"});
    require_refused(collect((scratch.path / "dir.csv").string()), {"dir.csv", "is a directory"});
    fs::create_directories(scratch.path / "pair" / "runs_curves.csv");
    require_refused(collect((scratch.path / "pair" / "runs.csv").string()), {"runs_curves.csv", "is a directory"},
                    {scratch.path / "pair" / "runs.csv"});
    CHECK(partial_files(scratch.path) == 0);
    const auto fine = collect((scratch.path / "runs.csv").string());
    INFO(fine.err);
    CHECK(fine.status == 0);
    CHECK(fs::exists(scratch.path / "runs.csv"));
    CHECK(fs::exists(scratch.path / "runs_curves.csv"));
    CHECK(partial_files(scratch.path) == 0);
}

TEST_CASE("bench, convert and predict refuse unusable outputs and prompt files before work", "[integrity][cli]") {
    Scratch scratch;
    const fs::path same = scratch.path / "x.h5";
    require_refused(run_iclab("bench " + kTinyRun.substr(0, kTinyRun.find(' ')) + " --iters 1 --out " + same.string() + " --export " +
                                  same.string(),
                              scratch.path),
                    {"--out and --export", "same file"}, {same});
    fs::create_directories(scratch.path / "folder");
    // The prompt file is checked before the run folder is even read: a missing run does not matter here.
    const std::string convert = "convert " + (scratch.path / "no_run").string() + " --out " + (scratch.path / "a.h5").string();
    require_refused(run_iclab(convert + " --prompt-file /dev/zero", scratch.path), {"/dev/zero", "not a regular file"});
    require_refused(run_iclab(convert + " --prompt-file " + (scratch.path / "folder").string(), scratch.path), {"folder", "is a directory"});
    require_refused(run_iclab("predict " + (scratch.path / "no_run").string() + " --text-file /dev/zero", scratch.path),
                    {"/dev/zero", "not a regular file"});
    require_refused(run_iclab("predict " + (scratch.path / "no_run").string() + " --text abc --out " + (scratch.path / "folder").string(),
                              scratch.path),
                    {"folder", "is a directory"});
    CHECK_FALSE(fs::exists(scratch.path / "a.h5"));
}

TEST_CASE("converting on top of an ICLAA adapter inherits its feature map, F and seed, and refuses other ones", "[integrity][cli][iclaa]") {
    Scratch scratch;
    const std::string run = train_tiny(scratch, "model.attention=softmax");
    const fs::path base = scratch.path / "base.h5", on_top = scratch.path / "top.h5", refused = scratch.path / "refused.h5";
    REQUIRE(run_iclab("convert " + run + " --prompt abcab --feature-map orf --random-features 8 --seed 3 --out " + base.string(), scratch.path)
                .status == 0);
    require_refused(run_iclab("convert " + run + " --prompt xy --adapter " + base.string() + " --feature-map elu1 --out " + refused.string(),
                              scratch.path),
                    {"--feature-map", "orf"}, {refused});
    require_refused(run_iclab("convert " + run + " --prompt xy --adapter " + base.string() + " --seed 4 --out " + refused.string(), scratch.path),
                    {"--seed", "3"}, {refused});
    const auto composed = run_iclab("convert " + run + " --prompt xy --adapter " + base.string() + " --out " + on_top.string(), scratch.path);
    INFO(composed.err);
    REQUIRE(composed.status == 0);
    const io::ResultsReader reader(on_top);
    CHECK(reader.read_attr_string("/", "feature_map") == "orf");
    CHECK(reader.read_attr_int64("/", "features") == 8);
    CHECK(reader.read_attr_int64("/", "seed") == 3);
    CHECK(reader.read_attr_int64("/", "prompt_length") == 7);
    // The same as converting the joint prompt with the same map from scratch: byte-identical terms.
    const fs::path joint = scratch.path / "joint.h5";
    REQUIRE(run_iclab("convert " + run + " --prompt abcabxy --feature-map orf --random-features 8 --seed 3 --out " + joint.string(), scratch.path)
                .status == 0);
    const io::ResultsReader joint_reader(joint);
    CHECK(reader.read_attr_string("/", "content_checksum") == joint_reader.read_attr_string("/", "content_checksum"));
}

TEST_CASE("convert --random-features refuses an ICLAA adapter that cannot fit in memory, before any work", "[integrity][cli][iclaa]") {
    // width 512, 8 heads (D 64), 4 layers, F = 2^20: per layer and head b_KV and w (F x D) and b_D and c (F) in doubles,
    // an adapter of about 32 GiB whose conversion needs about 64 GiB.
    if (available_memory_gib() > 60.0) {
        WARN("skipped: this machine has more memory than the refused conversion needs");
        return;
    }
    Scratch scratch;
    const std::string run = train_tiny(scratch, "model.attention=softmax model.width=512 model.heads=8 model.layers=4");
    const fs::path out = scratch.path / "big.h5";
    require_refused(run_iclab("convert " + run + " --prompt abcab --random-features 1048576 --out " + out.string(), scratch.path),
                    {"iclab convert", "an adapter of about 32.5 GiB", "F 1048576", "GiB available", "lower --random-features"}, {out});
}

}  // namespace iclab_test_integrity_cli
