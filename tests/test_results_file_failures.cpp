// Results files under failure: a full disk, racing writers and processes, damaged and tampered files
// (split from test_results_file.cpp).
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

namespace iclab_test_results_file_failures {  // this file's names (unity build: CMakeLists.txt)


namespace fs = std::filesystem;
using namespace iclab::io;
using iclab_test_io::TempDir;
using iclab_test_io::write_text;

namespace {

// Runs `body` in a forked child and returns its exit status (the child's Catch assertions do not reach the parent:
// the body reports through its exit status).
template <class Body>
int in_child(Body body) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(body());
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::vector<fs::path> entries(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path().filename());
    return out;
}

}  // namespace

TEST_CASE("a full disk gives a clear error, removes the temporary file and keeps the earlier result", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "checkpoint.h5";
    {
        ResultsWriter writer(file);
        writer.set_attr("version", "old");
        writer.commit();
    }
    // A file-size limit of 64 KiB stands for a full disk: write(2) fails with EFBIG as it would with ENOSPC
    // (SIGXFSZ ignored), in a child so that the limit does not outlive the test.
    const int status = in_child([&] {
        ::signal(SIGXFSZ, SIG_IGN);
        rlimit limit{64 * 1024, 64 * 1024};
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return 10;
        try {
            ResultsWriter writer(file, /*overwrite=*/true);
            writer.set_attr("version", "new");
            const std::vector<double> big(100000, 1.5);  // 800 KB
            writer.write_tensor("/checkpoint/big", big.data(), {big.size()});
            writer.commit();
            return 11;  // the limit did not bite
        } catch (const iclab::Error& error) {
            const std::string message = error.what();
            if (message.find("no space left writing " + file.string()) == std::string::npos) return 12;
            return 0;
        }
    });
    CHECK(status == 0);
    CHECK(entries(dir.path) == std::vector<fs::path>{"checkpoint.h5"});  // no temporary file left
    CHECK(ResultsReader(file).read_attr_string("/", "version") == "old");
}

TEST_CASE("two writers of one path never share a temporary file, and the second commit is refused", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "s.h5";
    ResultsWriter first(file), second(file);
    CHECK(first.partial_path() != second.partial_path());
    const std::vector<double> a = {1, 2, 3}, b = {7, 8, 9, 10};
    first.write_tensor("/logits", a.data(), {3});
    second.write_tensor("/logits", b.data(), {4});
    second.commit();
    CHECK_THROWS_AS(first.commit(), iclab::InputError);
    CHECK(ResultsReader(file).read_tensor_double("/logits").values == b);
    CHECK(entries(dir.path) == std::vector<fs::path>{"s.h5"});
}

TEST_CASE("processes racing to complete one path: exactly one wins and its file is whole", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "race.h5";
    std::vector<pid_t> children;
    for (int child = 0; child < 4; ++child) {
        const pid_t pid = ::fork();
        if (pid == 0) {
            int code = 3;
            try {
                ResultsWriter writer(file);
                const std::vector<double> values(20000, static_cast<double>(child + 1));
                writer.write_tensor("/values", values.data(), {values.size()});
                writer.set_attr("writer", static_cast<int64_t>(child + 1));
                writer.commit();
                code = 0;
            } catch (const iclab::InputError&) {
                code = 2;
            } catch (...) {
            }
            ::_exit(code);
        }
        children.push_back(pid);
    }
    int winners = 0, refused = 0;
    for (pid_t pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        REQUIRE(WIFEXITED(status));
        winners += WEXITSTATUS(status) == 0;
        refused += WEXITSTATUS(status) == 2;
    }
    CHECK(winners == 1);
    CHECK(refused == 3);
    ResultsReader reader(file);
    const double writer = static_cast<double>(reader.read_attr_int64("/", "writer"));
    for (double v : reader.read_tensor_double("/values").values) REQUIRE(v == writer);
    CHECK(entries(dir.path) == std::vector<fs::path>{"race.h5"});
}

TEST_CASE("damaged results files are bad input (exit 2) naming the file", "[io]") {
    TempDir dir;
    write_text(dir.path / "empty.h5", "");
    CHECK_THROWS_AS(ResultsReader(dir.path / "empty.h5"), iclab::InputError);
    write_text(dir.path / "text.h5", "experiment: induction_head\n");
    CHECK_THROWS_AS(ResultsReader(dir.path / "text.h5"), iclab::InputError);
    CHECK_THROWS_AS(ResultsReader(dir.path), iclab::InputError);  // a folder
    const fs::path whole = dir.path / "whole.h5";
    {
        ResultsWriter writer(whole);
        const std::vector<double> values(4096, 0.25);
        writer.write_tensor("/checkpoint/w", values.data(), {64, 64});
        writer.commit();
    }
    std::ifstream in(whole, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_text(dir.path / "truncated.h5", bytes.substr(0, bytes.size() / 3));
    CHECK_THROWS_AS(ResultsReader(dir.path / "truncated.h5").read_tensor_double("/checkpoint/w"), iclab::InputError);
    CHECK_THROWS_WITH(ResultsReader(dir.path / "truncated.h5").read_tensor_double("/checkpoint/w"), Catch::Contains("truncated.h5"));
}

TEST_CASE("a flipped bit in a tensor is refused by its checksum, naming the dataset", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "checkpoint.h5";
    const double marker = 1234.5678125;  // exact in binary; its bytes are found in the file
    std::vector<double> values(256, 0.5);
    values[17] = marker;
    {
        ResultsWriter writer(file);
        writer.write_tensor("/checkpoint/blocks.0.attn.w_qkv", values.data(), {16, 16});
        writer.commit();
    }
    REQUIRE(ResultsReader(file).read_tensor_double("/checkpoint/blocks.0.attn.w_qkv").values == values);
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const std::string pattern(reinterpret_cast<const char*>(&marker), sizeof marker);
    const std::size_t at = bytes.find(pattern);
    REQUIRE(at != std::string::npos);
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);  // the lowest mantissa bit: a silent change of 2e-13
    write_text(file, bytes);
    CHECK_THROWS_AS(ResultsReader(file).read_tensor_double("/checkpoint/blocks.0.attn.w_qkv"), iclab::InputError);
    CHECK_THROWS_WITH(ResultsReader(file).read_tensor_double("/checkpoint/blocks.0.attn.w_qkv"),
                      Catch::Contains("blocks.0.attn.w_qkv") && Catch::Contains("checksum"));
}

TEST_CASE("a dataset claiming more values than it stores is refused before allocating", "[io]") {
    TempDir dir;
    const fs::path file = dir.path / "sparse.h5";
    {
        H5::H5File raw(file.string(), H5F_ACC_TRUNC);
        const hsize_t dims[2] = {10000000, 10000000}, chunk[2] = {16, 16};
        H5::DSetCreatPropList properties;
        properties.setChunk(2, chunk);
        raw.createGroup("/checkpoint");
        raw.createDataSet("/checkpoint/w", H5::PredType::IEEE_F64LE, H5::DataSpace(2, dims), properties);
    }
    CHECK_THROWS_AS(ResultsReader(file).read_tensor_double("/checkpoint/w"), iclab::InputError);
    CHECK_THROWS_WITH(ResultsReader(file).read_tensor_double("/checkpoint/w"), Catch::Contains("claims"));
}

TEST_CASE("parameters that are not finite floats are refused on load, naming the tensor", "[io]") {
    TempDir dir;
    iclab::model::ParameterLayout layout;
    layout.add("blocks.0.attn.w_qkv", {2, 3}, true, true, "(C, 3C)");
    std::vector<double> good = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, loaded;
    const auto write = [&](const fs::path& file, auto values) {
        ResultsWriter writer(file);
        writer.write_tensor("/checkpoint/blocks.0.attn.w_qkv", values.data(), {2, 3});
        writer.commit();
    };
    write(dir.path / "good.h5", good);
    iclab::run::read_parameter_tensors(ResultsReader(dir.path / "good.h5"), "/checkpoint", layout, loaded);
    CHECK(loaded == good);
    std::vector<double> with_nan = good;
    with_nan[4] = std::numeric_limits<double>::quiet_NaN();
    write(dir.path / "nan.h5", with_nan);
    CHECK_THROWS_AS(iclab::run::read_parameter_tensors(ResultsReader(dir.path / "nan.h5"), "/checkpoint", layout, loaded),
                    iclab::InputError);
    CHECK_THROWS_WITH(iclab::run::read_parameter_tensors(ResultsReader(dir.path / "nan.h5"), "/checkpoint", layout, loaded),
                      Catch::Contains("blocks.0.attn.w_qkv") && Catch::Contains("non-finite"));
    write(dir.path / "int.h5", std::vector<int32_t>{1, 2, 3, 4, 5, 6});
    CHECK_THROWS_AS(iclab::run::read_parameter_tensors(ResultsReader(dir.path / "int.h5"), "/checkpoint", layout, loaded),
                    iclab::InputError);
}

}  // namespace iclab_test_results_file_failures
