#pragma once
// Helpers shared by the results-file tests (test_results_file.cpp, test_results_file_failures.cpp).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace iclab_test_io {

namespace fs = std::filesystem;

// A fresh folder under the system temp directory, removed with everything in it at scope exit.
struct TempDir {
    fs::path path;
    TempDir() {
        std::random_device random;
        path = fs::temp_directory_path() /
               ("iclab_test_io_" + std::to_string(::getpid()) + "_" + std::to_string(random()));
        REQUIRE(fs::create_directory(path));
    }
    ~TempDir() {
        std::error_code ignored;
        fs::remove_all(path, ignored);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
};

inline void write_text(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    REQUIRE(out.good());
}

}  // namespace iclab_test_io
