#pragma once
// Provenance: what produced a results file. OpenBLAS results change with the CPU kernel
// (CONVENTIONS.md), so the kernel is recorded next to the source commit and the compiler.
#include <string>

namespace iclab::io {

class ResultsWriter;

std::string git_commit();       // the commit the binary was built from (HEAD at build time), or "unknown" outside git
std::string git_dirty();        // "true" (uncommitted or untracked files at build time), "false", or "unknown"
std::string openblas_core();    // kernel OpenBLAS chose for this CPU, e.g. "SkylakeX"
std::string openblas_config();  // build options, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY ..."
int openblas_threads();
std::string compiler();         // ICLAB_COMPILER, else the compiler's own version string
std::string build_type();       // ICLAB_BUILD_TYPE, else "unknown"
std::string simd_target();      // the widest x86 vector set the build targets: "AVX-512", "AVX2", "SSE2" or "other"
std::string iclab_version();    // ICLAB_VERSION, else "unknown"
std::string now_iso8601();      // UTC to the second, e.g. "2024-05-01T12:34:56Z"
std::string hostname();
std::string cpu_model();        // /proc/cpuinfo's first "model name" ("Intel(R) Xeon(R) Processor"), else "unknown"

// Sets root attributes git_commit, git_dirty, iclab_version, compiler, build_type, simd, blas_core,
// blas_config, blas_threads (int64), hostname, cpu_model and created_utc (now_iso8601(): when the
// provenance was recorded, normally at the start of the run).
void write_provenance(ResultsWriter& writer);

}  // namespace iclab::io
