// Untrusted HDF5 files (issue 20, framework/io/hdf5_guard.hpp): HDF5 1.10.8 loops forever in H5HG_read and crashes in
// H5G__dense_get_name_by_idx on the two damaged files of tests/data/hdf5_damaged/ (make_damaged.py says how each is
// made). Before the guard `iclab predict --adapter` hung on the first and exited 139 on the second; now every command
// that reads an HDF5 file refuses both with exit 2 and one line, because a child process reads the file first.
// Also: the reader reads the bytes it checked (a file changed afterwards does not matter), links iclab never writes are
// refused, files that are not regular files are refused without blocking.
#include <catch2/catch.hpp>

#include <H5Cpp.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "framework/io/hdf5_guard.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_hdf5_guard {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab;
using namespace iclab_test;

namespace {

const fs::path kDamaged = fs::path(ICLAB_SOURCE_DIR) / "tests/data/hdf5_damaged";

std::string train_tiny(const Scratch& scratch) {
    const auto run = run_iclab("run configs/quick/induction_head.yaml train.steps=2 train.warmup_steps=1 eval.every=2 task.seq_len=16 "
                               "eval.sequences=8 train.batch_size=4 --quiet output.dir=" + (scratch.path / "results").string(),
                               scratch.path);
    INFO(run.err);
    REQUIRE(run.status == 0);
    return last_line(run.out);
}

// Exit 2 and one line on stderr holding every part.
void require_refused(const CommandResult& result, const std::vector<std::string>& parts) {
    INFO(result.err);
    CHECK(result.status == 2);
    std::string err = result.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    CHECK(err.find('\n') == std::string::npos);
    for (const auto& part : parts) CHECK(err.find(part) != std::string::npos);
}

void write_small_results(const fs::path& file) {
    io::ResultsWriter writer(file);
    writer.set_attr("format", "test");
    const double values[3] = {1.0, 2.0, 3.0};
    writer.write_tensor("/group/values", values, {3});
    writer.commit();
}

}  // namespace

TEST_CASE("the damaged HDF5 files that crash or hang HDF5 itself are refused by every command with exit 2", "[hdf5_guard][cli]") {
    Scratch scratch;
    const std::string run = train_tiny(scratch);
    const fs::path loop = kDamaged / "global_heap_loop.h5", segv = kDamaged / "dense_links_segv.h5";
    const auto start = std::chrono::steady_clock::now();
    SECTION("predict --adapter: the global-heap loop (hung before) and the dense-link crash (exit 139 before)") {
        require_refused(run_iclab("predict " + run + " --adapter " + loop.string() + " --text abcab", scratch.path),
                        {loop.string(), "damaged HDF5 file", "did not finish reading it"});
        require_refused(run_iclab("predict " + run + " --adapter " + segv.string() + " --text abcab", scratch.path),
                        {segv.string(), "damaged HDF5 file", "crashed reading it"});
    }
    SECTION("convert --adapter (a base adapter); show, collect, claims, predict of a run whose results.h5 is damaged") {
        require_refused(run_iclab("convert " + run + " --prompt abc --adapter " + segv.string() + " --out " +
                                      (scratch.path / "a.h5").string(), scratch.path),
                        {segv.string(), "damaged HDF5 file"});
        CHECK_FALSE(fs::exists(scratch.path / "a.h5"));
        fs::copy_file(segv, fs::path(run) / "results.h5", fs::copy_options::overwrite_existing);
        const std::string results = (fs::path(run) / "results.h5").string();
        require_refused(run_iclab("show " + run, scratch.path), {results, "damaged HDF5 file", "crashed"});
        // collect skips a run it cannot read, naming it on its own line, and exits 2 when no run could be read
        const auto collected = run_iclab("collect " + (scratch.path / "results").string() + " --out " + (scratch.path / "c.csv").string(),
                                         scratch.path);
        INFO(collected.err);
        CHECK(collected.status == 2);
        CHECK(collected.err.find("skipped " + run + ": " + results + ": damaged HDF5 file") != std::string::npos);
        CHECK_FALSE(fs::exists(scratch.path / "c.csv"));
        require_refused(run_iclab("predict " + run + " --text abc", scratch.path), {results, "damaged HDF5 file"});
        require_refused(run_iclab("claims " + (scratch.path / "results").string(), scratch.path), {results, "damaged HDF5 file"});
    }
    // No hang: the endless loop is stopped by the child's CPU limit (5 s), generous for a loaded machine.
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::minutes(5));
}

TEST_CASE("the reader reads the bytes it checked, refuses links iclab never writes and files that are no files", "[hdf5_guard]") {
    Scratch scratch;
    const fs::path file = scratch.path / "r.h5";
    write_small_results(file);
    SECTION("a file rewritten after it was opened does not change what is read") {
        const io::ResultsReader reader(file);
        std::ofstream(file, std::ios::binary | std::ios::trunc) << "garbage, not HDF5";
        CHECK(reader.read_attr_string("/", "format") == "test");
        CHECK(reader.read_tensor_double("/group/values").values == std::vector<double>{1.0, 2.0, 3.0});
        CHECK_THROWS_AS(io::ResultsReader(file), InputError);
    }
    SECTION("soft and external links are refused naming the link") {
        {
            H5::H5File raw(file.string(), H5F_ACC_RDWR);
            REQUIRE(H5Lcreate_soft("/group/values", raw.getId(), "/alias", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        }
        CHECK_THROWS_WITH(io::ResultsReader(file), Catch::Contains("/alias is a soft, external or user-defined link"));
        write_small_results(scratch.path / "s.h5");
        {
            H5::H5File raw((scratch.path / "s.h5").string(), H5F_ACC_RDWR);
            REQUIRE(H5Lcreate_external("/etc/passwd", "/x", raw.getId(), "/outside", H5P_DEFAULT, H5P_DEFAULT) >= 0);
        }
        CHECK_THROWS_WITH(io::ResultsReader(scratch.path / "s.h5"), Catch::Contains("/outside is a soft, external"));
    }
    SECTION("a folder, a FIFO, an empty file, a missing file: InputError, no blocking") {
        REQUIRE(::mkfifo((scratch.path / "fifo").c_str(), 0600) == 0);
        std::ofstream(scratch.path / "empty.h5").flush();
        for (const char* name : {"fifo", "empty.h5", "missing.h5", "."})
            CHECK_THROWS_AS(io::ResultsReader(scratch.path / name), InputError);
    }
    SECTION("the damaged files through the library: InputError naming the file, this process unharmed") {
        CHECK_THROWS_WITH(io::ResultsReader(kDamaged / "dense_links_segv.h5"), Catch::Contains("crashed reading it"));
        CHECK_THROWS_WITH(io::ResultsReader(kDamaged / "dense_links_segv.h5"), Catch::Contains("damaged HDF5 file"));  // remembered
        io::set_hdf5_check_limits(io::Hdf5CheckLimits{1.0, 0.0, 20.0, 60.0}, false);
        CHECK_THROWS_WITH(io::ResultsReader(kDamaged / "global_heap_loop.h5"), Catch::Contains("did not finish reading it"));
        io::set_hdf5_check_limits(io::Hdf5CheckLimits{});
        const io::ResultsReader fine(file);
        CHECK(fine.list("/group") == std::vector<std::string>{"values"});
    }
}

}  // namespace iclab_test_hdf5_guard
