// The output-path policy (framework/io/output_path.hpp) as a property: over generated pairs of an input and an output
// path (the same, its parent, a child, a sibling with a suffix, through a symbolic link, with a trailing slash, '.',
// '..'), as a file or a folder, with and without --overwrite, every write is either refused or leaves every input
// byte for byte; an output that is, contains or lies inside an input is always refused.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/io/output_path.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_output_policy {  // this file's names (unity build: CMakeLists.txt)

namespace {

namespace fs = std::filesystem;
using iclab_test::Scratch;

// Every entry under `root` (links as links) with its content's hash: what "byte for byte" compares.
std::map<std::string, std::string> snapshot(const fs::path& root) {
    std::map<std::string, std::string> entries;
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
        const fs::path relative = fs::relative(it->path(), root);
        if (it->is_symlink()) {
            entries[relative.string()] = "link " + fs::read_symlink(it->path()).string();
        } else if (it->is_regular_file()) {
            iclab::Fnv1a64 hash;
            hash.mix_string(iclab_test::read_file(it->path()));
            entries[relative.string()] = "file " + hash.hex();
        } else {
            entries[relative.string()] = "folder";
        }
    }
    return entries;
}

void write_iclab_file(const fs::path& path, bool overwrite) {
    iclab::io::ResultsWriter writer(path, overwrite);
    iclab::io::write_provenance(writer);
    const std::vector<double> values{1.0, 2.0};
    writer.write_tensor("/values", values.data(), {values.size()}, {});
    writer.commit();
}

// An input folder made by iclab (its marker, an iclab results file) and an input file of iclab's: the kinds
// --overwrite could otherwise replace.
void make_inputs(const fs::path& root) {
    fs::create_directories(root / "run" / "sub");
    iclab::io::write_output_marker(root / "run", "a test run");
    write_iclab_file(root / "run" / "results.h5", false);
    std::ofstream(root / "run" / "config.yaml") << "experiment: test\n";
    std::ofstream(root / "run" / "sub" / "notes.txt") << "keep me\n";
    write_iclab_file(root / "adapter.h5", false);
    fs::create_directory_symlink(root / "run", root / "run_link");
    fs::create_symlink(root / "adapter.h5", root / "adapter_link.h5");
}

bool within(const fs::path& inner, const fs::path& outer) {
    const std::string i = inner.string(), o = outer.string();
    return i == o || (i.size() > o.size() && i.compare(0, o.size(), o) == 0 && i[o.size()] == '/');
}

}  // namespace

TEST_CASE("output policy: every generated input/output pair is refused or leaves the inputs byte for byte", "[io][output]") {
    Scratch scratch;
    const fs::path root = fs::canonical(scratch.path);
    make_inputs(root);
    const fs::path previous_cwd = fs::current_path();
    fs::create_directories(root / "work");
    fs::current_path(root / "work");  // '.' and '..' below are relative to here
    const std::vector<fs::path> inputs{root / "run", root / "adapter.h5"};
    // Output paths generated from each input: same, parent, child, sibling with a suffix, symlinked, trailing slash,
    // '.', '..', and the working directory and its parent.
    std::vector<std::string> outputs{".", "..", "./", "../work", root.string(), (root / "work").string() + "/"};
    for (const std::string& base : std::vector<std::string>{(root / "run").string(), (root / "adapter.h5").string(), (root / "run_link").string(),
                                   (root / "adapter_link.h5").string()}) {
        for (const char* suffix : {"", "/", "/.", "/..", "/sub", "/sub/..", "/results.h5", "/new.h5", ".partial", "_2", "/../run",
                                         "/./"})
            outputs.push_back(base + suffix);
    }
    const auto before = snapshot(root);
    std::size_t refused = 0, written = 0;
    for (const std::string& output : outputs)
        for (const auto kind : {iclab::io::OutputKind::file, iclab::io::OutputKind::folder})
            for (const bool overwrite : {false, true}) {
                INFO("output " << output << (kind == iclab::io::OutputKind::file ? " (file)" : " (folder)") << (overwrite ? " --overwrite" : ""));
                bool done = false;
                fs::path resolved;
                try {
                    const auto target = iclab::io::check_output(output, kind, overwrite, "test --out", inputs);
                    resolved = target.path;
                    if (kind == iclab::io::OutputKind::file) {
                        write_iclab_file(target.path, overwrite);
                    } else {
                        iclab::io::StagedFolder staged(target, "test output");
                        std::ofstream(staged.path() / "out.txt") << "new\n";
                        staged.commit();
                    }
                    done = true;
                } catch (const iclab::InputError&) {
                    ++refused;
                }
                // Whatever happened, the inputs and the working directory are as they were.
                auto now = snapshot(root);
                if (done) {
                    ++written;
                    // The output is the one new thing: never an input, inside one, around one, or the working directory.
                    for (const fs::path& input : inputs) {
                        CHECK_FALSE(within(resolved, input));
                        CHECK_FALSE(within(input, resolved));
                    }
                    CHECK_FALSE(within(root / "work", resolved));
                    std::error_code ignored;
                    fs::remove_all(resolved, ignored);
                    now = snapshot(root);
                }
                CHECK(now == before);
            }
    fs::current_path(previous_cwd);
    CHECK(refused > 0);
    CHECK(written > 0);  // the sibling names (".partial", "_2") are fine outputs
}

TEST_CASE("output policy: --overwrite replaces only iclab's own files and folders, atomically", "[io][output]") {
    Scratch scratch;
    const fs::path root = fs::canonical(scratch.path);
    // A file iclab did not write is never replaced, with or without --overwrite.
    std::ofstream(root / "notes.h5") << "a researcher's notes\n";
    CHECK_THROWS_AS(iclab::io::check_output(root / "notes.h5", iclab::io::OutputKind::file, true, "test --out"), iclab::InputError);
    // A folder without iclab's marker is never replaced.
    fs::create_directories(root / "mine");
    std::ofstream(root / "mine" / "data.txt") << "precious\n";
    CHECK_THROWS_AS(iclab::io::check_output(root / "mine", iclab::io::OutputKind::folder, true, "test --out"), iclab::InputError);
    CHECK(iclab_test::read_file(root / "mine" / "data.txt") == "precious\n");
    // iclab's folder is replaced whole: the new content in, the old gone, no staging left beside it.
    fs::create_directories(root / "out");
    iclab::io::write_output_marker(root / "out", "first");
    std::ofstream(root / "out" / "old.txt") << "old\n";
    CHECK_THROWS_AS(iclab::io::check_output(root / "out", iclab::io::OutputKind::folder, false, "test --out"), iclab::InputError);
    {
        const auto target = iclab::io::check_output(root / "out/", iclab::io::OutputKind::folder, true, "test --out");
        CHECK(target.path == root / "out");
        CHECK(target.replaces);
        iclab::io::StagedFolder staged(target, "second");
        std::ofstream(staged.path() / "new.txt") << "new\n";
        staged.commit();
    }
    CHECK(fs::exists(root / "out" / "new.txt"));
    CHECK_FALSE(fs::exists(root / "out" / "old.txt"));
    // A staged folder that is not committed leaves the old output as it was and removes only itself.
    {
        const auto target = iclab::io::check_output(root / "out", iclab::io::OutputKind::folder, true, "test --out");
        iclab::io::StagedFolder staged(target, "third");
        std::ofstream(staged.path() / "half.txt") << "half\n";
    }
    CHECK(fs::exists(root / "out" / "new.txt"));
    std::size_t entries = 0;
    for (const auto& entry : fs::directory_iterator(root)) entries += entry.path().filename().string().find("iclab-") == std::string::npos;
    CHECK(entries == static_cast<std::size_t>(std::distance(fs::directory_iterator(root), fs::directory_iterator())));
    // Links, special files, missing parents, names too long: refused before any work.
    fs::create_symlink(root / "nowhere", root / "dangling.h5");
    CHECK_THROWS_AS(iclab::io::check_output(root / "dangling.h5", iclab::io::OutputKind::file, true, "test --out"), iclab::InputError);
    CHECK_THROWS_AS(iclab::io::check_output(root / "missing" / "x.h5", iclab::io::OutputKind::file, false, "test --out"), iclab::InputError);
    CHECK_THROWS_AS(iclab::io::check_output("/proc/iclab.h5", iclab::io::OutputKind::file, false, "test --out"), iclab::InputError);
    CHECK_THROWS_AS(iclab::io::check_output("/dev/null", iclab::io::OutputKind::file, true, "test --out"), iclab::InputError);
    CHECK_THROWS_AS(iclab::io::check_output(root / std::string(5000, 'a'), iclab::io::OutputKind::file, false, "test --out"), iclab::InputError);
    CHECK_THROWS_AS(iclab::io::check_output(root / std::string(240, 'a'), iclab::io::OutputKind::file, false, "test --out"), iclab::InputError);
    CHECK_THROWS_AS(iclab::io::check_output(root / "a\nb.h5", iclab::io::OutputKind::file, false, "test --out"), iclab::InputError);
    fs::create_symlink(root / "loop_b", root / "loop_a");
    fs::create_symlink(root / "loop_a", root / "loop_b");
    CHECK_THROWS_AS(iclab::io::check_output(root / "loop_a" / "x.h5", iclab::io::OutputKind::file, false, "test --out"), iclab::InputError);
    CHECK_THROWS_AS(iclab::io::check_output("/", iclab::io::OutputKind::folder, true, "test --out"), iclab::InputError);
}

}  // namespace iclab_test_output_policy
