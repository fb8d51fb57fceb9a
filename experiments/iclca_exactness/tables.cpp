// Tables of the iclca_exactness experiment: stdout and results.h5.
#include <cmath>
#include <cstdio>

#include "experiments/iclca_exactness/exactness.hpp"
#include "framework/core/measure.hpp"

namespace iclab::experiments::exactness {

void finish_row(Row& row) {
    if (row.fp32.ran && row.fp64.ran && row.fp32.references.size() == row.fp64.references.size()) {
        std::vector<double> differences;
        for (std::size_t p = 0; p < row.fp32.references.size(); ++p)
            differences.push_back(relative_error(row.fp32.references[p].data(), row.fp64.references[p]));
        row.fp32_vs_fp64 = mean_of(differences);
    }
    for (const Measurement* m : {&row.fp32, &row.fp64})
        if (!m->note.empty()) row.note += std::string(row.note.empty() ? "" : "; ") + (m == &row.fp32 ? "float32 " : "float64 ") + m->note;
    row.fp32.references.clear();
    row.fp64.references.clear();
}

std::string format_count(std::size_t n) {  // 1980546048 -> 1,980,546,048
    std::string digits = std::to_string(n), text;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
        text += digits[i];
    }
    return text;
}

std::string format_number(double x, const char* format) {
    if (!std::isfinite(x)) return "n/a";
    char text[32];
    std::snprintf(text, sizeof text, format, x);
    return text;
}

void print_table(Case which, const std::vector<Row>& rows, const Settings& s) {
    std::printf("\n%s; M = %zu, N = %zu\n", case_title(which), s.prompt_length, s.input_length);
    std::printf("%-8s %15s %3s %5s %3s %5s | %9s %9s | %9s %9s | %8s | %12s %13s\n", "size", "parameters", "L", "C", "H", "pairs",
                "fp32 mean", "fp32 max", "fp64 mean", "fp64 max", "paper", "fp32 vs fp64", "prompt effect");
    for (const Row& r : rows)
        std::printf("%-8s %15s %3zu %5zu %3zu %5zu | %9s %9s | %9s %9s | %8s | %12s %13s%s\n", r.size->name.c_str(),
                    format_count(r.parameters).c_str(), r.layers, r.size->width, r.size->heads, r.pairs,
                    format_number(mean_of(r.fp32.errors)).c_str(), format_number(max_of(r.fp32.errors)).c_str(),
                    format_number(mean_of(r.fp64.errors)).c_str(), format_number(max_of(r.fp64.errors)).c_str(),
                    format_number(r.paper, "%.1e").c_str(), format_number(r.fp32_vs_fp64).c_str(),
                    format_number(mean_of(r.fp64.ran ? r.fp64.prompt_effects : r.fp32.prompt_effects)).c_str(),
                    r.note.empty() ? "" : ("  (" + r.note + ")").c_str());
}

void print_costs(const std::vector<std::vector<Row>>& tables) {
    std::printf("\nwall time and peak resident memory (getrusage, reset before each model)\n");
    std::printf("%-16s %-8s %-8s %9s %10s %8s %10s\n", "table", "size", "dtype", "init s", "total s", "s/pair", "peak GiB");
    for (std::size_t c = 0; c < tables.size(); ++c)
        for (const Row& r : tables[c])
            for (const Measurement* m : {&r.fp32, &r.fp64}) {
                if (!m->ran) continue;
                std::printf("%-16s %-8s %-8s %9.2f %10.2f %8.3f %10.3f\n", case_name(kCases[c]), r.size->name.c_str(),
                            m == &r.fp32 ? "float32" : "float64", m->init_s, m->wall_s, mean_of(m->seconds), m->peak_rss_gib);
            }
}

void write_table(io::ResultsWriter& w, Case which, const std::vector<Row>& rows) {
    std::vector<std::string> names, notes;
    std::vector<std::int64_t> parameters, layers, widths, heads, head_dims, pairs;
    std::vector<double> mean32, max32, mean64, max64, paper, fp32_vs_fp64, effect, init32, wall32, peak32, init64, wall64, peak64;
    for (const Row& r : rows) {
        names.push_back(r.size->name);
        parameters.push_back(static_cast<std::int64_t>(r.parameters));
        layers.push_back(static_cast<std::int64_t>(r.layers));
        widths.push_back(static_cast<std::int64_t>(r.size->width));
        heads.push_back(static_cast<std::int64_t>(r.size->heads));
        head_dims.push_back(static_cast<std::int64_t>(r.size->width / r.size->heads));
        pairs.push_back(static_cast<std::int64_t>(r.pairs));
        mean32.push_back(mean_of(r.fp32.errors));
        max32.push_back(max_of(r.fp32.errors));
        mean64.push_back(mean_of(r.fp64.errors));
        max64.push_back(max_of(r.fp64.errors));
        paper.push_back(r.paper);
        fp32_vs_fp64.push_back(r.fp32_vs_fp64);
        effect.push_back(mean_of(r.fp64.ran ? r.fp64.prompt_effects : r.fp32.prompt_effects));
        init32.push_back(r.fp32.init_s);
        wall32.push_back(r.fp32.wall_s);
        peak32.push_back(r.fp32.peak_rss_gib);
        init64.push_back(r.fp64.init_s);
        wall64.push_back(r.fp64.wall_s);
        peak64.push_back(r.fp64.peak_rss_gib);
        notes.push_back(r.note);
    }
    w.write_columns(std::string("/tables/") + case_name(which),
                    {{"size", names},
                     {"parameters", parameters},
                     {"layers", layers},
                     {"width", widths},
                     {"heads", heads},
                     {"head_dim", head_dims},
                     {"pairs", pairs},
                     {"mean_rel_error_fp32", mean32},
                     {"max_rel_error_fp32", max32},
                     {"mean_rel_error_fp64", mean64},
                     {"max_rel_error_fp64", max64},
                     {"paper_rel_error", paper},
                     {"fp32_vs_fp64", fp32_vs_fp64},
                     {"prompt_effect", effect},
                     {"init_s_fp32", init32},
                     {"wall_s_fp32", wall32},
                     {"peak_rss_gib_fp32", peak32},
                     {"init_s_fp64", init64},
                     {"wall_s_fp64", wall64},
                     {"peak_rss_gib_fp64", peak64},
                     {"note", notes}});  // ours against paper_rel_error: the declared claims (claims.cpp), not a table band
}

// Every pair of every measurement: case, size, dtype, pair, rel_error, prompt_effect, seconds.
void write_pairs(io::ResultsWriter& w, const std::vector<std::vector<Row>>& tables) {
    std::vector<std::string> cases, sizes, dtypes;
    std::vector<std::int64_t> pair;
    std::vector<double> errors, effects, seconds;
    for (std::size_t c = 0; c < tables.size(); ++c)
        for (const Row& r : tables[c])
            for (const Measurement* m : {&r.fp32, &r.fp64})
                for (std::size_t p = 0; p < m->errors.size(); ++p) {
                    cases.push_back(case_name(kCases[c]));
                    sizes.push_back(r.size->name);
                    dtypes.push_back(m == &r.fp32 ? "float32" : "float64");
                    pair.push_back(static_cast<std::int64_t>(p));
                    errors.push_back(m->errors[p]);
                    effects.push_back(m->prompt_effects[p]);
                    seconds.push_back(m->seconds[p]);
                }
    w.write_columns("/pairs", {{"case", cases},
                               {"size", sizes},
                               {"dtype", dtypes},
                               {"pair", pair},
                               {"rel_error", errors},
                               {"prompt_effect", effects},
                               {"seconds", seconds}});
}

}  // namespace iclab::experiments::exactness
