#include <omp.h>
#include "framework/io/provenance.hpp"

#include <unistd.h>

#include <array>
#include <fstream>
#include <cstdio>
#include <ctime>

#include "framework/io/results_file.hpp"

// The commit this binary was built from: written at every build by scripts/cmake/git_stamp.cmake (CMake target
// iclab_git_stamp) into the build folder. Without it (this file compiled on its own) both are "unknown".
#if __has_include("iclab_git_stamp.hpp")
#include "iclab_git_stamp.hpp"
#else
#define ICLAB_GIT_COMMIT "unknown"
#define ICLAB_GIT_DIRTY "unknown"
#endif
// Defined by CMake for the framework library; the fallbacks let this file compile on its own.
#ifndef ICLAB_VERSION
#define ICLAB_VERSION "unknown"
#endif
#ifndef ICLAB_BUILD_TYPE
#define ICLAB_BUILD_TYPE "unknown"
#endif
#ifndef ICLAB_COMPILER
#if defined(__clang__)
#define ICLAB_COMPILER "Clang " __clang_version__
#elif defined(__GNUC__)
#define ICLAB_COMPILER "GNU " __VERSION__
#else
#define ICLAB_COMPILER "unknown"
#endif
#endif

// OpenBLAS's own queries (declared in its cblas.h / openblas_config.h, repeated here so this file
// does not depend on which BLAS headers are on the include path).
extern "C" {
char* openblas_get_corename(void);
char* openblas_get_config(void);
int openblas_get_num_threads(void);
}

namespace iclab::io {

namespace {

std::string trimmed(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
    return text;
}

}  // namespace

// Both from the build, not from the checkout at run time: a binary kept running while its checkout moves on (a long
// sweep beside a session's commits) still names the source it was compiled from (issue 46).
std::string git_commit() { return ICLAB_GIT_COMMIT; }

std::string git_dirty() { return ICLAB_GIT_DIRTY; }

std::string openblas_core() {
    const char* name = openblas_get_corename();
    return name != nullptr && name[0] != '\0' ? trimmed(name) : "unknown";
}

std::string openblas_config() {
    const char* config = openblas_get_config();
    return config != nullptr && config[0] != '\0' ? trimmed(config) : "unknown";
}

int openblas_threads() { return openblas_get_num_threads(); }

std::string compiler() { return ICLAB_COMPILER; }

std::string build_type() { return ICLAB_BUILD_TYPE; }

// What iclab's own loops and its blocked GEMM's register tile were compiled for (-march; small_gemm.hpp picks its
// tile by the same macros): the speed of a run depends on it, its bits do not (the kernels fix every sum's order).
std::string simd_target() {
#if defined(__AVX512F__)
    return "AVX-512";
#elif defined(__AVX2__)
    return "AVX2";
#elif defined(__SSE2__)
    return "SSE2";
#else
    return "other";
#endif
}

std::string iclab_version() { return ICLAB_VERSION; }

std::string now_iso8601() {
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    ::gmtime_r(&now, &utc);  // gmtime is not thread-safe
    std::array<char, 32> text{};
    std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &utc);
    return text.data();
}

std::string hostname() {
    std::array<char, 256> name{};
    // gethostname need not NUL-terminate a truncated name: the last byte stays 0.
    if (::gethostname(name.data(), name.size() - 1) != 0 || name[0] == '\0') return "unknown";
    return name.data();
}

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) != 0) continue;
        const auto colon = line.find(':');
        if (colon == std::string::npos) break;
        std::string name = trimmed(line.substr(colon + 1));
        while (!name.empty() && name.front() == ' ') name.erase(name.begin());
        return name.empty() ? "unknown" : name;
    }
    return "unknown";
}

void write_provenance(ResultsWriter& writer) {
    writer.set_attr("git_commit", git_commit());
    writer.set_attr("git_dirty", git_dirty());
    writer.set_attr("iclab_version", iclab_version());
    writer.set_attr("compiler", compiler());
    writer.set_attr("build_type", build_type());
    writer.set_attr("simd", simd_target());
    writer.set_attr("blas_core", openblas_core());
    writer.set_attr("blas_config", openblas_config());
    writer.set_attr("blas_threads", static_cast<int64_t>(openblas_threads()));
    writer.set_attr("omp_threads", static_cast<int64_t>(omp_get_max_threads()));
    writer.set_attr("hostname", hostname());
    writer.set_attr("cpu_model", cpu_model());
    writer.set_attr("created_utc", now_iso8601());
}

}  // namespace iclab::io
