#pragma once
// Collecting finished runs into tables, for any experiment: one row per run with its resolved config flattened
// to dotted keys (train.lr, model.layers, ...), its summary numbers (results.h5 root attributes) and its small
// final tables (/tables/<t>: a one-row table gives columns <t>.<column>; a table of up to kMaxTableRows rows gives
// <t>.<column>[<row>], the row named by the table's first string column when its values are unique, else by its
// index), plus the curves in long form (run_dir, curve, step, metric, value). scripts/python/iclab_runs.py reads
// the same layout into pandas.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace iclab::run {

inline constexpr std::size_t kMaxTableRows = 32;

// A table built row by row: columns in order of first appearance, each cell a number or a text (or missing).
class WideTable {
public:
    using Cell = std::variant<std::monostate, double, std::string>;
    void add_row(const std::vector<std::pair<std::string, Cell>>& cells);
    const std::vector<std::string>& columns() const { return columns_; }
    std::size_t rows() const { return rows_.size(); }
    const Cell& cell(std::size_t row, const std::string& column) const;
    // A column is numeric when every present cell is a number.
    bool numeric(const std::string& column) const;

private:
    std::vector<std::string> columns_;
    std::vector<std::map<std::string, Cell>> rows_;
};

struct Collection {
    WideTable runs;    // one row per run
    WideTable curves;  // long form: run_dir, curve, step, metric, value
    std::vector<std::string> skipped;  // folders with results.h5 that could not be read, and why
};

// Every finished run (a folder with config.yaml and results.h5) at or below each path, in path order.
std::vector<std::filesystem::path> find_runs(const std::vector<std::filesystem::path>& paths);
Collection collect_runs(const std::vector<std::filesystem::path>& run_dirs);

// InputError (exit 2) unless `out` ends in .csv or .h5 and it (and for .csv <stem>_curves.csv beside it) can be written
// as a new file under the output policy (io::check_output_file; never one of `inputs`, inside one or around one): called
// before collecting, so a refused --out costs nothing and writes nothing.
void check_collection_out(const std::filesystem::path& out, bool overwrite, const std::vector<std::filesystem::path>& inputs);

// A table as CSV (RFC 4180 quoting), written under a temporary name and renamed (no partial file on failure).
void write_csv(const WideTable& table, const std::filesystem::path& path);

// runs.csv (and <stem>_curves.csv beside it, the two renamed into place together) or runs.h5 (/runs and /curves, one
// 1-D dataset per column). A failure leaves no partial file.
void write_collection(const Collection& collection, const std::filesystem::path& out, bool overwrite);

}  // namespace iclab::run
