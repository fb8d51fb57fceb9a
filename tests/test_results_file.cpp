// Results files, run folders and provenance (framework/io).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <H5Cpp.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/io/run_dir.hpp"
#include "framework/model/parameters.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "tests/results_file_helpers.hpp"

namespace iclab_test_results_file {  // this file's names (unity build: CMakeLists.txt)


namespace fs = std::filesystem;
using namespace iclab::io;
using iclab_test_io::TempDir;
using iclab_test_io::write_text;

namespace {

// True if text matches pattern, where '9' in the pattern stands for any digit and 'x' for any
// lowercase hex digit. (std::regex makes GCC 12 warn under -fsanitize, so it is avoided.)
bool matches_shape(const std::string& text, const std::string& pattern) {
    if (text.size() != pattern.size()) return false;
    for (size_t index = 0; index < text.size(); ++index) {
        const char character = text[index];
        const bool digit = character >= '0' && character <= '9';
        const bool ok = pattern[index] == '9'   ? digit
                        : pattern[index] == 'x' ? digit || (character >= 'a' && character <= 'f')
                                                : character == pattern[index];
        if (!ok) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("root attributes round-trip as string, int64 and double", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    const std::string utf8_text = "lr=3e-4, \xCE\xB7 \xE2\x86\x92 0";  // "η → 0": non-ASCII must survive
    {
        ResultsWriter writer(file);
        writer.set_attr("experiment", "induction_head");
        writer.set_attr("note", utf8_text);
        writer.set_attr("empty", std::string());
        writer.set_attr("seed", int64_t{-1234567890123});
        writer.set_attr("steps", 5000);  // an int goes through the integer overload
        writer.set_attr("learning_rate", 3.0e-4);
        writer.set_attr("seed_again", std::numeric_limits<int64_t>::max());
        writer.set_attr("experiment", "replaced");  // setting again replaces the value
        // A NUL would silently end a variable-length string: refused.
        CHECK_THROWS_AS(writer.set_attr("bad", std::string("a\0b", 3)), iclab::Error);
        CHECK_THROWS_AS(writer.write_columns("/bad", {{"text", std::vector<std::string>{std::string("a\0b", 3)}}}),
                        iclab::Error);
        writer.commit();
    }
    ResultsReader reader(file);
    CHECK(reader.read_attr_string("/", "experiment") == "replaced");
    CHECK(reader.read_attr_string("/", "note") == utf8_text);
    CHECK(reader.read_attr_string("/", "empty").empty());
    CHECK(reader.read_attr_int64("/", "seed") == -1234567890123);
    CHECK(reader.read_attr_int64("/", "steps") == 5000);
    CHECK(reader.read_attr_int64("/", "seed_again") == std::numeric_limits<int64_t>::max());
    CHECK(reader.read_attr_double("/", "learning_rate") == 3.0e-4);  // bit-exact: stored as fp64
    CHECK(reader.read_attr_double("/", "steps") == 5000.0);
    // Wrong kind or missing: errors that name the file.
    CHECK_THROWS_AS(reader.read_attr_int64("/", "learning_rate"), iclab::Error);
    CHECK_THROWS_AS(reader.read_attr_string("/", "seed"), iclab::Error);
    CHECK_THROWS_WITH(reader.read_attr_string("/", "missing"), Catch::Contains(file.string()));
    CHECK_FALSE(reader.has("/bad"));
}

TEST_CASE("columns round-trip with column_order", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    const std::vector<int64_t> steps = {0, 100, 200, 300};
    const std::vector<double> losses = {4.5, 2.25, 1.0 / 3.0, -0.0};
    const std::vector<std::string> phases = {"warmup", "", "train \xE2\x9C\x93", "done"};
    {
        ResultsWriter writer(file);
        writer.write_columns("/curves", {{"step", steps}, {"train_loss", losses}, {"phase", phases}});
        writer.write_columns("tables/attention.heads", {{"head", std::vector<int64_t>{0, 1}},
                                                        {"score", std::vector<double>{0.5, 0.75}}});
        writer.write_columns("/tables/empty", {{"x", std::vector<double>{}}});
        // Refused tables: mismatched lengths, a comma in a name, no columns, an existing group.
        CHECK_THROWS_AS(writer.write_columns("/bad1", {{"a", std::vector<double>{1, 2}},
                                                       {"b", std::vector<double>{1}}}),
                        iclab::Error);
        CHECK_THROWS_AS(writer.write_columns("/bad2", {{"a,b", std::vector<double>{1}}}), iclab::Error);
        CHECK_THROWS_AS(writer.write_columns("/bad3", {}), iclab::Error);
        CHECK_THROWS_AS(writer.write_columns("/curves", {{"a", std::vector<double>{1}}}), iclab::Error);
        writer.commit();
    }
    ResultsReader reader(file);
    CHECK(reader.read_attr_string("/curves", "column_order") == "step,train_loss,phase");
    CHECK(reader.read_column_int64("/curves/step") == steps);
    CHECK(reader.read_column_double("/curves/train_loss") == losses);
    CHECK(reader.read_column_double("curves/step") == std::vector<double>{0, 100, 200, 300});
    CHECK(reader.read_column_string("/curves/phase") == phases);
    CHECK(reader.list("/curves") == std::vector<std::string>{"phase", "step", "train_loss"});
    CHECK(reader.list("/tables") == std::vector<std::string>{"attention.heads", "empty"});
    CHECK(reader.read_attr_string("/tables/attention.heads", "column_order") == "head,score");
    CHECK(reader.read_column_double("/tables/attention.heads/score") == std::vector<double>{0.5, 0.75});
    CHECK(reader.read_column_double("/tables/empty/x").empty());
    CHECK_FALSE(reader.has("/bad1"));
    CHECK_FALSE(reader.has("/bad2"));
    CHECK_THROWS_AS(reader.read_column_int64("/curves/train_loss"), iclab::Error);  // never truncates
    CHECK_THROWS_AS(reader.read_int32("/curves/step"), iclab::Error);  // int64 would be clamped
}

TEST_CASE("strings are stored as variable-length UTF-8, which h5py reads as str", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    {
        ResultsWriter writer(file);
        writer.set_attr("experiment", "copy");
        writer.write_columns("/curves", {{"phase", std::vector<std::string>{"a", "b"}}});
        writer.commit();
    }
    // Checked with HDF5 directly: the reader above reads ASCII strings just as well.
    const H5::H5File h5(file.string(), H5F_ACC_RDONLY);
    const H5::StrType attribute_type = h5.openAttribute("experiment").getStrType();
    CHECK(attribute_type.isVariableStr());
    CHECK(attribute_type.getCset() == H5T_CSET_UTF8);
    const H5::StrType column_type = h5.openDataSet("/curves/phase").getStrType();
    CHECK(column_type.isVariableStr());
    CHECK(column_type.getCset() == H5T_CSET_UTF8);
    CHECK(h5.openGroup("/curves").openAttribute("column_order").getStrType().getCset() == H5T_CSET_UTF8);
}

TEST_CASE("N-d tensors round-trip with shapes and attributes", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    std::vector<float> weights(2 * 3 * 4);
    for (size_t index = 0; index < weights.size(); ++index) weights[index] = 0.1f * static_cast<float>(index) - 1.0f;
    const std::vector<double> matrix = {1.0, 2.0, 3.0, 4.0, 5.0, 1e-300};
    const std::vector<int32_t> tokens = {7, -1, 2147483647, 0, 3, 12};
    const double scalar = 2.5;
    const std::vector<int64_t> words = {INT64_MIN, -1, 0, INT64_MAX};  // e.g. RNG state words, bit for bit
    {
        ResultsWriter writer(file);
        writer.write_tensor("/checkpoint/blocks.0.attn.w_q", weights.data(), {2, 3, 4},
                            {{"layout", "(H, C, D) row-major"}, {"dtype", "float32"}});
        writer.write_tensor("/analysis/gram", matrix.data(), {3, 2});
        writer.write_tensor("/data/tokens", tokens.data(), {2, 1, 3}, {{"vocabulary", "V=16"}});
        writer.write_tensor("/analysis/scalar", &scalar, {});
        writer.write_tensor("/state/words", words.data(), {4});
        writer.write_tensor("/analysis/none", static_cast<const float*>(nullptr), {0, 5});
        CHECK_THROWS_AS(writer.write_tensor("/analysis/gram", matrix.data(), {6}), iclab::Error);
        CHECK_THROWS_AS(writer.write_tensor("/analysis//bad", matrix.data(), {6}), iclab::Error);
        writer.commit();
    }
    ResultsReader reader(file);
    const TensorData<float> read_weights = reader.read_tensor_float("/checkpoint/blocks.0.attn.w_q");
    CHECK(read_weights.shape == std::vector<size_t>{2, 3, 4});
    CHECK(read_weights.values == weights);
    CHECK(reader.read_attr_string("/checkpoint/blocks.0.attn.w_q", "layout") == "(H, C, D) row-major");
    CHECK(reader.read_attr_string("/checkpoint/blocks.0.attn.w_q", "dtype") == "float32");
    CHECK(reader.list("/checkpoint") == std::vector<std::string>{"blocks.0.attn.w_q"});

    // Doubles read as doubles exactly; floats widen exactly to double.
    const TensorData<double> read_matrix = reader.read_tensor_double("/analysis/gram");
    CHECK(read_matrix.shape == std::vector<size_t>{3, 2});
    CHECK(read_matrix.values == matrix);
    const TensorData<double> widened = reader.read_tensor_double("/checkpoint/blocks.0.attn.w_q");
    REQUIRE(widened.values.size() == weights.size());
    for (size_t index = 0; index < weights.size(); ++index) CHECK(widened.values[index] == double(weights[index]));
    CHECK(reader.read_tensor_float("/analysis/gram").values[1] == 2.0f);

    const TensorData<int32_t> read_tokens = reader.read_int32("/data/tokens");
    CHECK(read_tokens.shape == std::vector<size_t>{2, 1, 3});
    CHECK(read_tokens.values == tokens);
    CHECK(reader.read_attr_string("/data/tokens", "vocabulary") == "V=16");
    CHECK_THROWS_AS(reader.read_int32("/analysis/gram"), iclab::Error);  // floats are never truncated

    CHECK(reader.read_column_int64("/state/words") == words);
    CHECK_THROWS_AS(reader.read_int32("/state/words"), iclab::Error);  // wider than int32: never clamped

    const TensorData<double> read_scalar = reader.read_tensor_double("/analysis/scalar");
    CHECK(read_scalar.shape.empty());
    CHECK(read_scalar.values == std::vector<double>{2.5});
    CHECK(reader.read_tensor_float("/analysis/none").shape == std::vector<size_t>{0, 5});
    CHECK(reader.read_tensor_float("/analysis/none").values.empty());

    CHECK(reader.has("/"));
    CHECK(reader.has("/analysis"));
    CHECK(reader.has("checkpoint/blocks.0.attn.w_q"));
    CHECK_FALSE(reader.has("/checkpoint/blocks.1.attn.w_q"));
    CHECK_FALSE(reader.has("/missing/deeper/still"));
    CHECK_THROWS_WITH(reader.read_tensor_float("/missing"), Catch::Contains(file.string()));
}

TEST_CASE("the final name appears only at commit", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    ResultsWriter writer(file);
    CHECK(writer.partial_path().string().rfind((dir.path / "results.h5.partial.").string(), 0) == 0);
    CHECK(fs::is_empty(dir.path));  // built in memory: nothing on disk before commit
    CHECK_FALSE(fs::exists(file));
    writer.set_attr("status", "running");
    CHECK_FALSE(fs::exists(file));
    writer.commit();
    CHECK(writer.committed());
    CHECK(fs::exists(file));
    CHECK_FALSE(fs::exists(writer.partial_path()));
    CHECK_THROWS_AS(writer.set_attr("late", "too late"), iclab::Error);
    CHECK_THROWS_AS(writer.commit(), iclab::Error);
    CHECK(ResultsReader(file).read_attr_string("/", "status") == "running");
}

TEST_CASE("a writer destroyed without commit leaves no file", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    {
        ResultsWriter writer(file);
        const std::vector<double> values = {1, 2, 3};
        writer.write_tensor("/x", values.data(), {3});
        REQUIRE(fs::is_empty(dir.path));
    }
    CHECK_FALSE(fs::exists(file));
    CHECK_FALSE(fs::exists(dir.path / "results.h5.partial"));
    CHECK(fs::is_empty(dir.path));
    // The same happens when an exception unwinds through the writer.
    try {
        ResultsWriter writer(file);
        throw std::runtime_error("training diverged");
    } catch (const std::runtime_error&) {
    }
    CHECK(fs::is_empty(dir.path));
}

TEST_CASE("a completed file is never overwritten silently", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    {
        ResultsWriter writer(file);
        writer.set_attr("version", "old");
        writer.commit();
    }
    CHECK_THROWS_AS(ResultsWriter(file), iclab::InputError);
    CHECK_THROWS_WITH(ResultsWriter(file), Catch::Contains(file.string()));
    CHECK_FALSE(fs::exists(dir.path / "results.h5.partial"));
    {
        ResultsWriter writer(file, /*overwrite=*/true);
        writer.set_attr("version", "new");
        // Until commit the old result is intact.
        CHECK(ResultsReader(file).read_attr_string("/", "version") == "old");
    }
    CHECK(ResultsReader(file).read_attr_string("/", "version") == "old");
    {
        ResultsWriter writer(file, /*overwrite=*/true);
        writer.set_attr("version", "new");
        writer.commit();
    }
    CHECK(ResultsReader(file).read_attr_string("/", "version") == "new");
}

TEST_CASE("commit refuses a final name that appeared while writing", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    {
        ResultsWriter writer(file);
        write_text(file, "another process finished first");
        CHECK_THROWS_AS(writer.commit(), iclab::InputError);
    }
    std::ifstream in(file);
    std::string text;
    std::getline(in, text);
    CHECK(text == "another process finished first");
    CHECK_FALSE(fs::exists(dir.path / "results.h5.partial"));
}

TEST_CASE("HDF5 failures become iclab::Error naming the file", "[io]") {
    TempDir dir;
    CHECK_THROWS_AS(ResultsWriter(dir.path / "no_such_folder" / "results.h5"), iclab::Error);
    CHECK_THROWS_WITH(ResultsWriter(dir.path / "no_such_folder" / "results.h5"), Catch::Contains("no_such_folder"));
    CHECK_THROWS_WITH(ResultsReader(dir.path / "missing.h5"), Catch::Contains("missing.h5"));
    write_text(dir.path / "not_hdf5.h5", "this is not an HDF5 file\n");
    CHECK_THROWS_AS(ResultsReader(dir.path / "not_hdf5.h5"), iclab::Error);
    CHECK_THROWS_WITH(ResultsReader(dir.path / "not_hdf5.h5"), Catch::Contains("not_hdf5.h5"));
}

TEST_CASE("run names are sanitized", "[io]") {
    CHECK(sanitize_run_name("induction_head lr=3e-4,seed+1") == "induction_head_lr=3e-4,seed+1");
    CHECK(sanitize_run_name("a/b\\c:d*e?f\"g<h>i|j") == "a_b_c_d_e_f_g_h_i_j");
    CHECK(sanitize_run_name("..") == "_.");
    CHECK(sanitize_run_name("../escape") == "_._escape");
    CHECK(sanitize_run_name("-rf") == "_rf");
    CHECK(sanitize_run_name("") == "run");
    CHECK(sanitize_run_name("\xCE\xB7") == "__");  // each byte of a non-ASCII character
    CHECK(sanitize_run_name(std::string(500, 'x')).size() == max_run_name_length);
}

TEST_CASE("make_run_dir suffixes taken names and reuses only with overwrite", "[io]") {
    TempDir dir;
    const fs::path root = dir.path / "results" / "nested";  // created on demand
    const fs::path first = make_run_dir(root, "copy task/seed 1", false);
    CHECK(first == root / "copy_task_seed_1");
    CHECK(fs::is_directory(first));
    {
        ResultsWriter writer(first / "results.h5");
        writer.commit();
    }
    // A completed run is never reused without overwrite.
    const fs::path second = make_run_dir(root, "copy task/seed 1", false);
    CHECK(second == root / "copy_task_seed_1-2");
    // An interrupted run (a folder without results.h5) counts as taken too.
    const fs::path third = make_run_dir(root, "copy task/seed 1", false);
    CHECK(third == root / "copy_task_seed_1-3");
    CHECK(fs::exists(first / "results.h5"));
    // A file in the way is skipped as well.
    write_text(root / "copy_task_seed_1-4", "not a folder");
    CHECK(make_run_dir(root, "copy task/seed 1", false) == root / "copy_task_seed_1-5");
    // overwrite reuses the name and leaves the old results in place until a writer commits.
    CHECK(make_run_dir(root, "copy task/seed 1", true) == first);
    CHECK(fs::exists(first / "results.h5"));
    CHECK(make_run_dir(root, "fresh", true) == root / "fresh");
    CHECK_THROWS_AS(make_run_dir(root, "copy_task_seed_1-4", true), iclab::Error);
}

TEST_CASE("provenance is recorded", "[io]") {
    const std::string commit = git_commit();
    CHECK((commit == "unknown" || matches_shape(commit, std::string(40, 'x'))));
    const std::string dirty = git_dirty();
    CHECK((dirty == "true" || dirty == "false" || dirty == "unknown"));
    CHECK((commit == "unknown") == (dirty == "unknown"));
    CHECK_FALSE(openblas_core().empty());
    CHECK(openblas_core() != "unknown");
    CHECK_FALSE(openblas_config().empty());
    CHECK(openblas_threads() >= 1);
    CHECK_FALSE(compiler().empty());
    CHECK_FALSE(hostname().empty());
    CHECK(matches_shape(now_iso8601(), "9999-99-99T99:99:99Z"));
    CHECK_FALSE(matches_shape("2024-01-01 00:00:00Z", "9999-99-99T99:99:99Z"));  // the checker itself can fail

    TempDir dir;
    const fs::path file = dir.path / "results.h5";
    {
        ResultsWriter writer(file);
        write_provenance(writer);
        writer.commit();
    }
    ResultsReader reader(file);
    CHECK(reader.read_attr_string("/", "git_commit") == commit);
    CHECK(reader.read_attr_string("/", "git_dirty") == git_dirty());
    CHECK(reader.read_attr_string("/", "blas_core") == openblas_core());
    CHECK_FALSE(reader.read_attr_string("/", "blas_core").empty());
    CHECK(reader.read_attr_string("/", "blas_config") == openblas_config());
    CHECK(reader.read_attr_int64("/", "blas_threads") == openblas_threads());
    CHECK(reader.read_attr_string("/", "compiler") == compiler());
    CHECK_FALSE(reader.read_attr_string("/", "iclab_version").empty());
    CHECK_FALSE(reader.read_attr_string("/", "build_type").empty());
    const std::string simd = reader.read_attr_string("/", "simd");
    CHECK(simd == simd_target());
    CHECK((simd == "AVX-512" || simd == "AVX2" || simd == "SSE2" || simd == "other"));
    CHECK(reader.read_attr_string("/", "hostname") == hostname());
    CHECK(reader.read_attr_string("/", "cpu_model") == cpu_model());  // the CPU the run ran on, beside the BLAS core
    CHECK(matches_shape(reader.read_attr_string("/", "created_utc"), "9999-99-99T99:99:99Z"));
}

}  // namespace iclab_test_results_file
