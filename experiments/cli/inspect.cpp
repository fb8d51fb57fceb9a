#include "experiments/cli/inspect.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "framework/core/check.hpp"
#include "framework/io/claims_floor.hpp"
#include "framework/io/output_path.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "framework/workflow/collect.hpp"
#include "framework/workflow/sweep.hpp"
#include "experiments/registry.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::cli {

namespace fs = std::filesystem;

void collect(const std::vector<fs::path>& paths, const fs::path& out, bool overwrite) {
    ICLAB_INPUT_CHECK(!paths.empty(), "iclab collect: give at least one folder");
    const std::vector<fs::path> runs = run::find_runs(paths);
    // Before any work: never one of the runs read, nor inside one (a folder that holds runs may hold the output too).
    run::check_collection_out(out, overwrite, runs);
    ICLAB_INPUT_CHECK(!runs.empty(), "iclab collect: no finished run (config.yaml and results.h5) under the folders given");
    const run::Collection collection = run::collect_runs(runs);
    for (const auto& line : collection.skipped) std::fprintf(stderr, "iclab collect: skipped %s\n", line.c_str());
    ICLAB_INPUT_CHECK(collection.runs.rows() > 0, "iclab collect: no run could be read");
    run::write_collection(collection, out, overwrite);
    std::fprintf(stderr, "iclab collect: %zu runs, %zu columns; %zu curve rows\n", collection.runs.rows(),
                 collection.runs.columns().size(), collection.curves.rows());
    std::printf("%s\n", out.string().c_str());
}

namespace {

// io::min_values of each claim as its runs declared it, by (experiment, claim id): a seed_means claim's pooled result
// reads "unit seed, pooling values", its declaration keeps what it is (framework/io/claims_floor.hpp). Declarations of
// one id that differ between settings take the larger floor.
std::map<std::pair<std::string, std::string>, std::size_t> declared_floors(const std::vector<fs::path>& runs) {
    std::map<std::pair<std::string, std::string>, std::size_t> floors;
    for (const fs::path& dir : runs) {
        const io::ResultsReader reader(dir / run::kResultsFile);
        const std::vector<io::ClaimResult> declared = io::read_claims(reader);
        if (declared.empty()) continue;
        const std::string experiment = reader.read_attr_string("/", "experiment");
        for (const io::ClaimResult& r : declared) {
            std::size_t& floor = floors[{experiment, r.claim.id}];
            floor = std::max(floor, io::min_values(r.claim));
        }
    }
    return floors;
}

// The claims table with the column min_values (each claim's floor) after the columns of run::claims_table.
run::WideTable with_floors(const run::WideTable& table, const std::vector<std::size_t>& floors) {
    run::WideTable out;
    for (std::size_t i = 0; i < table.rows(); ++i) {
        std::vector<std::pair<std::string, run::WideTable::Cell>> cells;
        for (const std::string& column : table.columns()) cells.push_back({column, table.cell(i, column)});
        cells.push_back({"min_values", static_cast<double>(floors[i])});
        out.add_row(cells);
    }
    return out;
}

}  // namespace

void claims(const std::vector<fs::path>& paths, const fs::path& out, bool overwrite) {
    ICLAB_INPUT_CHECK(!paths.empty(), "iclab claims: give at least one folder");
    ICLAB_INPUT_CHECK(out.empty() || out.extension() == ".csv", "iclab claims: --out must end in .csv, got " << out.string());
    const std::vector<fs::path> runs = run::find_runs(paths);
    // Before pooling: never one of the runs read, nor inside one (a folder that holds runs may hold the output too).
    if (!out.empty()) io::check_output_file(out, overwrite, "iclab claims --out", runs);
    ICLAB_INPUT_CHECK(!runs.empty(), "iclab claims: no finished run (config.yaml and results.h5) under the folders given");
    auto pooled = run::pool_run_claims(runs, &experiments::catalog());
    // Issue 45: a claim about trained models, data draws or timings decides on >= 5 values, a deterministic check on one
    // (framework/io/claims_floor.hpp); what is printed and written is the verdict after this floor.
    const auto declared = declared_floors(runs);
    std::vector<std::size_t> floors;
    for (auto& p : pooled)
        for (auto& r : p.claims) {
            const auto found = declared.find({p.experiment, r.claim.id});
            floors.push_back(found != declared.end() ? found->second : io::min_values(r.claim));
            io::require_min_values(r, floors.back());
        }
    std::size_t counts[4] = {0, 0, 0, 0}, total = 0;
    for (const auto& p : pooled) {
        std::printf("%s (%s, %zu run%s%s)\n", p.setting.c_str(), p.experiment.c_str(), p.runs.size(), p.runs.size() == 1 ? "" : "s",
                    p.excluded.empty() ? "" : (", " + std::to_string(p.excluded.size()) + " excluded").c_str());
        // runs left out by their precondition (framework/io/precondition.hpp), each with the reason
        for (const auto& e : p.excluded)
            std::printf("  excluded        seed %lld (%s): %s\n", static_cast<long long>(e.seed), e.dir.string().c_str(), e.reason.c_str());
        for (const auto& r : p.claims) {
            ++total, ++counts[static_cast<int>(r.verdict)];
            char interval[96] = "";
            if (!std::isnan(r.interval.low))
                std::snprintf(interval, sizeof interval, " [%.4g, %.4g]", r.interval.low, r.interval.high);
            std::printf("  %-15s %-48s mean %.4g%s, %zu/%zu on the claimed side (%s)\n", io::verdict_name(r.verdict),
                        r.claim.id.c_str(), r.interval.mean, interval, r.on_side, r.values.size(), r.claim.rule.text().c_str());
            if ((!r.excluded.empty() || r.note.rfind("needs >= ", 0) == 0) && !r.note.empty()) std::printf("  %-15s %s\n", "", r.note.c_str());
        }
    }
    std::printf("%zu claims: %zu reproduced, %zu not reproduced, %zu inconclusive, %zu not run\n", total, counts[0], counts[1], counts[2],
                counts[3]);
    if (!out.empty()) {
        run::write_csv(with_floors(run::claims_table(pooled), floors), out);
        std::printf("%s\n", out.string().c_str());
    }
}

namespace {

std::string cell_text(const io::Column& column, std::size_t row) {
    if (const auto* text = std::get_if<std::vector<std::string>>(&column.values)) return (*text)[row];
    if (const auto* integers = std::get_if<std::vector<std::int64_t>>(&column.values)) return std::to_string((*integers)[row]);
    const double value = std::get<std::vector<double>>(column.values)[row];
    if (std::isnan(value)) return "n/a";
    char text[32];
    const double magnitude = std::fabs(value);
    std::snprintf(text, sizeof text, magnitude != 0 && (magnitude < 1e-3 || magnitude >= 1e6) ? "%.3e" : "%.4g", value);
    return text;
}

void print_table(const io::ResultsReader& reader, const std::string& path) {
    const io::Table table = reader.read_table(path);  // every column checked to have table.rows values
    const std::vector<io::Column>& columns = table.columns;
    // Each paper_<x> column right after <x> (or after the last column when there is no <x>).
    std::vector<io::Column> arranged;
    for (const auto& column : columns) {
        if (column.name.rfind("paper", 0) == 0) continue;
        arranged.push_back(column);
        for (const auto& paper : columns)
            if (paper.name.rfind("paper", 0) == 0 && (paper.name == "paper_" + column.name || paper.name == "paper"))
                arranged.push_back(paper);
    }
    for (const auto& paper : columns)
        if (paper.name.rfind("paper", 0) == 0 &&
            std::none_of(arranged.begin(), arranged.end(), [&](const io::Column& c) { return c.name == paper.name; }))
            arranged.push_back(paper);
    const std::size_t rows = table.rows;
    std::vector<std::size_t> widths;
    for (const auto& column : arranged) {
        std::size_t width = column.name.size();
        for (std::size_t r = 0; r < std::min<std::size_t>(rows, 40); ++r) width = std::max(width, cell_text(column, r).size());
        widths.push_back(std::min<std::size_t>(width, 48));
    }
    const std::size_t shown = rows <= 40 ? rows : 10;  // a per-pair table is summarized by its first rows
    std::printf("\n%s (%zu rows%s)\n", path.c_str(), rows, shown < rows ? "; the first 10 shown" : "");
    for (std::size_t c = 0; c < arranged.size(); ++c) std::printf("  %-*s", static_cast<int>(widths[c]), arranged[c].name.c_str());
    std::printf("\n");
    for (std::size_t r = 0; r < shown; ++r) {
        for (std::size_t c = 0; c < arranged.size(); ++c) {
            std::string text = cell_text(arranged[c], r);
            if (text.size() > 48) text = text.substr(0, 45) + "...";
            std::printf("  %-*s", static_cast<int>(widths[c]), text.c_str());
        }
        std::printf("\n");
    }
}

void print_tables_below(const io::ResultsReader& reader, const std::string& path) {
    if (reader.is_table(path)) {
        print_table(reader, path);
        return;
    }
    for (const auto& child : reader.list(path)) {
        try {
            reader.list(path + "/" + child);
        } catch (const Error&) {
            continue;
        }
        print_tables_below(reader, path + "/" + child);
    }
}

}  // namespace

void show(const fs::path& run_dir) {
    const fs::path results = run_dir / run::kResultsFile;
    ICLAB_INPUT_CHECK(fs::is_directory(run_dir), "iclab show: " << run_dir.string() << " is not a folder");
    ICLAB_INPUT_CHECK(fs::exists(results), "iclab show: " << run_dir.string() << " has no " << run::kResultsFile
                                                          << " (not a run folder, or the run did not finish)");
    const io::ResultsReader reader(results);
    std::printf("%s\n", run_dir.string().c_str());
    for (const auto& [name, value] : reader.attributes("/")) {
        if (name == "config" || name == "source_config") continue;
        std::string text;
        if (const auto* s = std::get_if<std::string>(&value)) {
            text = *s;
            if (text.find('\n') != std::string::npos) text = text.substr(0, text.find('\n')) + " ...";
        } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
            text = std::to_string(*i);
        } else {
            char buffer[32];
            std::snprintf(buffer, sizeof buffer, "%.6g", std::get<double>(value));
            text = buffer;
        }
        std::printf("  %-28s %s\n", name.c_str(), text.c_str());
    }
    if (reader.has("/tables")) print_tables_below(reader, "/tables");
}

}  // namespace iclab::cli
