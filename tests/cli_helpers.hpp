#pragma once
// Running the built `iclab` binary from tests (test_cli.cpp, test_resume.cpp): capture its exit status,
// stdout and stderr; scratch folders removed at the end of a test.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace iclab_test {

namespace fs = std::filesystem;

struct CommandResult {
    int status = -1;
    std::string out, err;
};

inline std::string read_file(const fs::path& path) {
    std::ifstream file(path);
    std::stringstream buffer;
    buffer << file.rdbuf();
    return buffer.str();
}

// Runs `iclab <args>` from the repository root, capturing stdout and stderr; `environment` ("NAME=value ...") is
// set for the command only.
inline CommandResult run_iclab(const std::string& args, const fs::path& scratch, const std::string& environment = "") {
    const fs::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
    const std::string command = "cd '" ICLAB_SOURCE_DIR "' && " + environment + " OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} '" ICLAB_BINARY "' " + args + " >'" +
                                out.string() + "' 2>'" + err.string() + "'";
    const int raw = std::system(command.c_str());
    CommandResult result;
    result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    result.out = read_file(out);
    result.err = read_file(err);
    return result;
}

inline std::string last_line(const std::string& text) {
    std::string trimmed = text;
    while (!trimmed.empty() && trimmed.back() == '\n') trimmed.pop_back();
    const auto position = trimmed.rfind('\n');
    return position == std::string::npos ? trimmed : trimmed.substr(position + 1);
}

struct Scratch {
    fs::path path;
    Scratch() {
        path = fs::temp_directory_path() / ("iclab_cli_" + std::to_string(::getpid()) + "_" + std::to_string(std::rand()));
        fs::create_directories(path);
    }
    ~Scratch() { fs::remove_all(path); }
};

inline std::size_t count_entries(const fs::path& dir) {
    if (!fs::exists(dir)) return 0;
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace iclab_test
