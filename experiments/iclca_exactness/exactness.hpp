#pragma once
// Internal to the iclca_exactness experiment: what one measurement holds and how the tables are written.
#include <limits>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/model/transformer.hpp"

namespace iclab::experiments::exactness {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// What is measured, one results table each.
enum class Case { table1, theorem41, theorem41_model };
inline const Case kCases[] = {Case::table1, Case::theorem41, Case::theorem41_model};

inline const char* case_name(Case which) {
    return which == Case::table1 ? "table1" : which == Case::theorem41 ? "theorem41" : "theorem41_model";
}

inline const char* case_title(Case which) {
    switch (which) {
        case Case::table1:
            return "ICLCA exactness, paper 000 Table 1: linear-RoPE model (elu+1 kernel attention, MLP, LayerNorm), "
                   "rel. error of logits(M_new, X) vs logits(M_old, [X'; X])";
        case Case::theorem41:
            return "Theorem 4.1 (Eq. 10-11) directly: one linear attention layer Q(K^T V + b), no mask, no RoPE, "
                   "b' = b + W_K^T X'^T X' W_V; rel. error of its outputs at X's rows";
        case Case::theorem41_model:
            return "Theorem 4.1's attention in the whole model (identity features, no normalizer, no RoPE; causal "
                   "mask as ICLCA needs), converted by iclca_convert; rel. error of logits";
    }
    return "";
}

struct SizeSpec {
    std::string name;
    std::size_t layers = 0, width = 0, heads = 0;
    std::size_t pairs = 0;                  // Table 1 pairs
    std::size_t theorem41_model_pairs = 0;  // pairs of the Theorem 4.1 model (0: not run)
};

struct Settings {
    std::size_t vocab = 0, prompt_length = 0, input_length = 0, direct_pairs = 0;
    std::vector<std::string> dtypes;
    std::vector<SizeSpec> sizes;
    bool mlp = true;
    std::size_t mlp_ratio = 4;
    nn::FeatureMap feature_map = nn::FeatureMap::elu1;
    double normalizer_eps = 1e-6, rope_base = 10000.0, init_std = 0.02;
    model::ModelSpec::AttentionForm attention_form = model::ModelSpec::AttentionForm::automatic;
    double kv_std = 0.0, d_max = 0.0;
    bool quiet = false;
};

// One (case, size, dtype): the per-pair errors and what the run cost.
struct Measurement {
    bool ran = false;
    std::string note;  // why it did not run
    std::vector<double> errors;          // per pair: relative error of the converted model
    std::vector<double> prompt_effects;  // per pair: the same measure for M_old without the prompt
    std::vector<double> seconds;         // per pair
    std::vector<std::vector<double>> references;  // per pair: M_old's outputs on [X'; X] at X's positions
    double init_s = kNaN, wall_s = kNaN, peak_rss_gib = kNaN;
};

// One row of a case's table: a size with its fp32 and fp64 measurements.
struct Row {
    const SizeSpec* size = nullptr;
    std::size_t parameters = 0, layers = 0, pairs = 0;
    Measurement fp32, fp64;
    double paper = kNaN;
    // Mean over pairs of ‖M_old's fp32 outputs − its fp64 outputs‖ / ‖fp64 outputs‖ on [X'; X]: the size of fp32
    // rounding in the same model, against which the fp32 conversion error can be read.
    double fp32_vs_fp64 = kNaN;
    std::string note;
};

// The fp32-vs-fp64 column and the notes; drops the stored reference outputs.
void finish_row(Row& row);
// 1980546048 -> 1,980,546,048
std::string format_count(std::size_t n);
std::string format_number(double x, const char* format = "%.2e");
void print_table(Case which, const std::vector<Row>& rows, const Settings& s);
void print_costs(const std::vector<std::vector<Row>>& tables);
// /tables/<case>: one row per size.
void write_table(io::ResultsWriter& w, Case which, const std::vector<Row>& rows);
// /pairs: every pair of every measurement: case, size, dtype, pair, rel_error, prompt_effect, seconds.
void write_pairs(io::ResultsWriter& w, const std::vector<std::vector<Row>>& tables);

// The reproduction claims of a run (claims.cpp), declared from the settings before anything is measured: per case,
// size and dtype measured, "ICLCA is exact" (own check, per pair x <= the bar of framework/icl/exactness_bars.hpp),
// and for each Table 1 size the paper prints, the fp32 mean against the printed number (factor-3 band).
struct DeclaredClaim {
    io::Claim claim;
    Case which = Case::table1;
    std::size_t size = 0;  // index into Settings::sizes
    bool fp64 = false;
};
// paper[i]: the paper's Table 1 value for size i (NaN where it prints none).
std::vector<DeclaredClaim> declare_claims(const Settings& s, const std::vector<double>& paper);
// Each claim on its measurement's per-pair errors (units: pair index); a measurement that did not run gives no
// values (inconclusive). tables[c] are the rows of kCases[c].
std::vector<io::ClaimResult> evaluate_claims(const std::vector<DeclaredClaim>& claims, const std::vector<std::vector<Row>>& tables);

}  // namespace iclab::experiments::exactness
