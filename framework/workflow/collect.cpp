#include "framework/workflow/collect.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/io/output_path.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

using Cell = WideTable::Cell;
using Cells = std::vector<std::pair<std::string, Cell>>;

// A YAML scalar as written by Config::to_yaml: plain numbers become numbers, everything else text.
Cell scalar_cell(const YAML::Node& node) {
    if (!node.IsScalar()) {
        YAML::Emitter emitter;
        emitter << YAML::Flow << node;
        return std::string(emitter.c_str());
    }
    const std::string& text = node.Scalar();
    if (node.Tag() == "?" && !text.empty()) {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() + text.size() && text != "true" && text != "false") return value;
    }
    return text;
}

void flatten_config(const YAML::Node& node, const std::string& prefix, Cells& cells) {
    if (node.IsMap()) {
        for (const auto& item : node)
            flatten_config(item.second, prefix.empty() ? item.first.Scalar() : prefix + "." + item.first.Scalar(), cells);
        return;
    }
    cells.emplace_back(prefix, scalar_cell(node));
}

// Names may not hold ',' (column_order) or '/' (HDF5 paths).
std::string column_safe(std::string text) {
    for (char& c : text)
        if (c == ',' || c == '/') c = ';';
    return text;
}

// The groups under `path` that are tables (have column_order), with their names relative to `path`.
void find_tables(const io::ResultsReader& reader, const std::string& path, const std::string& name,
                 std::vector<std::pair<std::string, std::string>>& out) {
    if (reader.is_table(path)) {
        out.emplace_back(name, path);
        return;
    }
    for (const auto& child : reader.list(path)) {
        const std::string child_path = path + "/" + child;
        try {
            reader.list(child_path);  // a group
        } catch (const Error&) {
            continue;  // a dataset
        }
        find_tables(reader, child_path, name.empty() ? child : name + "/" + child, out);
    }
}

void add_run(const fs::path& dir, Collection& out) {
    const io::ResultsReader reader(dir / kResultsFile);
    Cells row = {{"run_dir", fs::absolute(dir).lexically_normal().string()}};
    std::set<std::string> names = {"run_dir"};
    const auto add = [&](const std::string& name, Cell cell) {
        if (names.insert(name).second) row.emplace_back(name, std::move(cell));
    };
    Cells config;
    for (const auto& [name, value] : reader.attributes("/")) {
        if (name == "config") {
            flatten_config(YAML::Load(std::get<std::string>(value)), "", config);
        } else if (const auto* text = std::get_if<std::string>(&value)) {
            if (text->size() <= 200 && text->find('\n') == std::string::npos) add(name, *text);
        } else {
            add(name, std::holds_alternative<std::int64_t>(value) ? static_cast<double>(std::get<std::int64_t>(value))
                                                                  : std::get<double>(value));
        }
    }
    Cells ordered = {row.front()};  // run_dir, the config's keys, then the summary attributes and tables
    for (auto& c : config) ordered.push_back(c);
    for (std::size_t i = 1; i < row.size(); ++i)
        if (std::none_of(config.begin(), config.end(), [&](const auto& c) { return c.first == row[i].first; }))
            ordered.push_back(row[i]);
    row = ordered;
    names.clear();
    for (const auto& c : row) names.insert(c.first);

    std::vector<std::pair<std::string, std::string>> tables;
    if (reader.has("/tables")) find_tables(reader, "/tables", "", tables);
    for (const auto& [name, path] : tables) {
        const io::Table table = reader.read_table(path);  // lengths checked: no row past a shorter column
        const std::vector<io::Column>& columns = table.columns;
        const std::size_t rows = table.rows;
        if (rows == 0 || rows > kMaxTableRows) continue;
        // Rows named by the first string column when its values are unique, else by index.
        std::vector<std::string> keys;
        for (const auto& column : columns)
            if (const auto* text = std::get_if<std::vector<std::string>>(&column.values)) {
                if (std::set<std::string>(text->begin(), text->end()).size() == rows) keys = *text;
                break;
            }
        for (std::size_t r = 0; r < rows; ++r) {
            const std::string suffix = rows == 1 ? "" : "[" + column_safe(keys.empty() ? std::to_string(r) : keys[r]) + "]";
            for (const auto& column : columns) {
                const std::string column_name = column_safe(name) + "." + column.name + suffix;
                if (const auto* d = std::get_if<std::vector<double>>(&column.values)) add(column_name, (*d)[r]);
                else if (const auto* i = std::get_if<std::vector<std::int64_t>>(&column.values)) add(column_name, static_cast<double>((*i)[r]));
                else if (rows == 1 || keys.empty()) add(column_name, std::get<std::vector<std::string>>(column.values)[r]);
            }
        }
    }
    out.runs.add_row(row);

    std::vector<std::pair<std::string, std::string>> curves;
    if (reader.has("/curves")) find_tables(reader, "/curves", "", curves);
    for (const auto& [name, path] : curves) {
        const io::Table table = reader.read_table(path);
        const std::vector<double> steps = table.numbers("step");
        for (const auto& column : table.columns) {
            const std::string& metric = column.name;
            if (metric == "step") continue;
            const std::vector<double> values = table.numbers(metric);
            for (std::size_t r = 0; r < table.rows; ++r)
                out.curves.add_row({{"run_dir", row.front().second},
                                    {"curve", name.empty() ? std::string("curves") : "curves/" + name},
                                    {"step", steps[r]},
                                    {"metric", metric},
                                    {"value", values[r]}});
        }
    }
}

std::string csv_field(const Cell& cell) {
    if (std::holds_alternative<std::monostate>(cell)) return "";
    if (const auto* d = std::get_if<double>(&cell)) {
        if (std::isnan(*d)) return "nan";
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", *d);
        return text;
    }
    const std::string& text = std::get<std::string>(cell);
    if (text.find_first_of(",\"\n") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

// Writes the table to a temporary file of its own beside `path` and returns its name; removes it and throws on failure.
fs::path write_csv_partial(const WideTable& table, const fs::path& path) {
    std::random_device entropy;
    const fs::path partial = path.string() + ".partial." + std::to_string(::getpid()) + "." + std::to_string(entropy());
    bool written = false;
    {
        std::ofstream out(partial);
        if (out) {
            for (std::size_t c = 0; c < table.columns().size(); ++c) out << (c ? "," : "") << csv_field(table.columns()[c]);
            out << "\n";
            for (std::size_t r = 0; r < table.rows(); ++r) {
                for (std::size_t c = 0; c < table.columns().size(); ++c) out << (c ? "," : "") << csv_field(table.cell(r, table.columns()[c]));
                out << "\n";
            }
            out.flush();
            written = out.good();
        }
    }
    if (!written) {
        std::error_code ignored;
        fs::remove(partial, ignored);
        throw Error("cannot write " + path.string());
    }
    return partial;
}

// runs.csv and runs_curves.csv appear together or not at all: both are written in full first, then renamed.
void write_csv_pair(const WideTable& runs, const fs::path& runs_path, const WideTable& curves, const fs::path& curves_path) {
    const fs::path runs_partial = write_csv_partial(runs, runs_path);
    fs::path curves_partial;
    try {
        curves_partial = write_csv_partial(curves, curves_path);
    } catch (...) {
        std::error_code ignored;
        fs::remove(runs_partial, ignored);
        throw;
    }
    std::error_code error;
    fs::rename(curves_partial, curves_path, error);
    if (!error) fs::rename(runs_partial, runs_path, error);
    if (error) {
        std::error_code ignored;
        fs::remove(runs_partial, ignored);
        fs::remove(curves_partial, ignored);
        throw Error("cannot write " + runs_path.string() + " and " + curves_path.string() + ": " + error.message());
    }
}

std::vector<io::Column> hdf5_columns(const WideTable& table) {
    std::vector<io::Column> columns;
    for (const auto& name : table.columns()) {
        if (table.numeric(name)) {
            std::vector<double> values;
            for (std::size_t r = 0; r < table.rows(); ++r) {
                const Cell& cell = table.cell(r, name);
                values.push_back(std::holds_alternative<double>(cell) ? std::get<double>(cell) : std::nan(""));
            }
            columns.push_back({name, values});
        } else {
            std::vector<std::string> values;
            for (std::size_t r = 0; r < table.rows(); ++r) {
                const Cell& cell = table.cell(r, name);
                values.push_back(std::holds_alternative<std::string>(cell) ? std::get<std::string>(cell) : csv_field(cell));
            }
            columns.push_back({name, values});
        }
    }
    return columns;
}

}  // namespace

void WideTable::add_row(const std::vector<std::pair<std::string, Cell>>& cells) {
    std::map<std::string, Cell> row;
    for (const auto& [name, cell] : cells) {
        if (std::find(columns_.begin(), columns_.end(), name) == columns_.end()) columns_.push_back(name);
        row[name] = cell;
    }
    rows_.push_back(std::move(row));
}

const WideTable::Cell& WideTable::cell(std::size_t row, const std::string& column) const {
    static const Cell missing;
    const auto found = rows_.at(row).find(column);
    return found == rows_[row].end() ? missing : found->second;
}

bool WideTable::numeric(const std::string& column) const {
    for (std::size_t r = 0; r < rows_.size(); ++r)
        if (std::holds_alternative<std::string>(cell(r, column))) return false;
    return true;
}

std::vector<fs::path> find_runs(const std::vector<fs::path>& paths) {
    std::vector<fs::path> runs;
    for (const auto& path : paths) {
        ICLAB_INPUT_CHECK(fs::is_directory(path), "iclab collect: " << path.string() << " is not a folder");
        std::vector<fs::path> found;
        if (fs::exists(path / kResultsFile) && fs::exists(path / kConfigFile)) found.push_back(path);
        for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied);
             it != fs::recursive_directory_iterator(); ++it)
            if (it->is_directory() && fs::exists(it->path() / kResultsFile) && fs::exists(it->path() / kConfigFile))
                found.push_back(it->path());
        std::sort(found.begin(), found.end());
        runs.insert(runs.end(), found.begin(), found.end());
    }
    return runs;
}

Collection collect_runs(const std::vector<fs::path>& run_dirs) {
    Collection collection;
    for (const auto& dir : run_dirs) {
        try {
            add_run(dir, collection);
        } catch (const std::exception& error) {
            collection.skipped.push_back(dir.string() + ": " + error.what());
        }
    }
    return collection;
}

void write_csv(const WideTable& table, const fs::path& path) {
    const fs::path partial = write_csv_partial(table, path);
    std::error_code error;
    fs::rename(partial, path, error);
    if (error) {
        std::error_code ignored;
        fs::remove(partial, ignored);
        throw Error("cannot write " + path.string() + ": " + error.message());
    }
}

fs::path curves_csv_path(const fs::path& out) { return out.parent_path() / (out.stem().string() + "_curves.csv"); }

void check_collection_out(const fs::path& out, bool overwrite, const std::vector<fs::path>& inputs) {
    const std::string extension = out.extension().string();
    ICLAB_INPUT_CHECK(extension == ".csv" || extension == ".h5", "iclab collect: --out must end in .csv or .h5, got " << out.string());
    io::check_output_file(out, overwrite, "iclab collect --out", inputs);
    if (extension == ".csv") io::check_output_file(curves_csv_path(out), overwrite, "iclab collect --out (its curves file)", inputs);
}

void write_collection(const Collection& collection, const fs::path& out, bool overwrite) {
    check_collection_out(out, overwrite, {});
    if (out.extension() == ".csv") {
        write_csv_pair(collection.runs, out, collection.curves, curves_csv_path(out));
        return;
    }
    io::ResultsWriter writer(out, overwrite);
    writer.set_attr("format", "iclab collection");  // iclab's own file: --overwrite may replace it (output_path.hpp)
    writer.write_columns("/runs", hdf5_columns(collection.runs));
    writer.write_columns("/curves", hdf5_columns(collection.curves));
    writer.set_attr("runs", static_cast<std::int64_t>(collection.runs.rows()));
    writer.commit();
}

}  // namespace iclab::run
