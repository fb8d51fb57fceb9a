#include "experiments/cli/work_count.hpp"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>

#include "framework/core/measure.hpp"
#include "framework/nn/gemm.hpp"

namespace iclab::cli {

bool work_count_requested() {
    const char* value = std::getenv("ICLAB_COUNT_WORK");
    return value != nullptr && (std::strcmp(value, "1") == 0 || std::strcmp(value, "shapes") == 0);
}

void work_count_start() {
    nn::gemm_counter.reset();
    nn::gemm_counter.enabled = true;
}

void work_count_report(const run::RunEstimate& estimate, std::ostream& out) {
    nn::gemm_counter.enabled = false;
    const nn::GemmTally total = nn::gemm_counter.total();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);  // every thread of the process
    const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                       1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    char line[400];
    std::snprintf(line, sizeof line,
                  "iclab work: gemm_flops=%.6e gemm_calls=%zu estimate_gemm_flops=%.6e estimate_flops=%.6e estimate_gib=%.6e "
                  "peak_rss_gib=%.6e cpu_seconds=%.3f\n",
                  total.flops, total.calls, estimate.gemm_flops, estimate.flops, estimate.memory_gib, peak_rss_gib(), cpu);
    out << line;
    const char* value = std::getenv("ICLAB_COUNT_WORK");
    if (value != nullptr && std::strcmp(value, "shapes") == 0)  // where the counted work went, largest first
        for (const auto& [key, tally] : nn::gemm_counter.shapes) {
            std::snprintf(line, sizeof line, "iclab work shape: m=%zu n=%zu k=%zu ta=%d tb=%d calls=%zu flops=%.6e\n", key.m,
                          key.n, key.k, key.transpose_a ? 1 : 0, key.transpose_b ? 1 : 0, tally.calls, tally.flops);
            out << line;
        }
    out << std::flush;
    nn::gemm_counter.reset();
}

}  // namespace iclab::cli
