#pragma once
// `iclab collect DIR... --out runs.csv|runs.h5` and `iclab show RUN_DIR`: reading finished runs back, for any
// experiment (framework/workflow/collect.hpp).
#include <filesystem>
#include <vector>

namespace iclab::cli {

// Collects every finished run under the paths into one table (and the curves into a second); prints a summary.
void collect(const std::vector<std::filesystem::path>& paths, const std::filesystem::path& out, bool overwrite);
// `iclab claims DIR... [--out claims.csv] [--overwrite]`: the declared claims of every finished run under the folders,
// pooled over the seeds of each setting (framework/workflow/claims_pool.hpp), printed; with --out also written as CSV.
void claims(const std::vector<std::filesystem::path>& paths, const std::filesystem::path& out, bool overwrite);

// Prints a run's summary numbers and every table of its results.h5 (a column paper_* stands beside ours).
void show(const std::filesystem::path& run_dir);

}  // namespace iclab::cli
