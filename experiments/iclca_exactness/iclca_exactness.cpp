// Experiment `iclca_exactness` (paper 000 Table 1 and Theorem 4.1): ICLCA's exactness on random-weight models
// of several sizes, in fp32 and fp64. Per size: Table 1's linear-RoPE model (elu+1 kernel attention, MLP,
// LayerNorm) converted by Algorithm 1; Theorem 4.1's identity directly on one layer (Eq. 10-11); and Theorem
// 4.1's attention inside the whole model. The measure is the relative error of the logits at X's positions.
#include "experiments/iclca_exactness/exactness.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/icl/theorem41.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace iclca_exactness_cpp {

using namespace iclab::experiments::exactness;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Independent sub-streams of the seed, each derived further by the size's index (and the pair's). The same
// size index gives the same weights in fp32 and fp64 (drawn in double, rounded for fp32) and the same (X', X)
// pairs in every case and dtype, so the fp32 and fp64 columns measure one model on the same inputs.
enum Stream : std::uint64_t {
    kModelInit = 1,
    kModelBiases = 2,
    kPairs = 3,
    kTheorem41ModelInit = 4,
    kTheorem41ModelBiases = 5,
    kDirectWeights = 6,
    kDirectPairs = 7,
};

// Paper 000 Table 1 ("Relative error of logits. The relative error is computed on the average of 100 randomly
// generated ICL prompts and input prompts"), by the model size the paper names.
struct PaperEntry {
    double parameters;
    double relative_error;
};
constexpr PaperEntry kPaperTable1[] = {{205e3, 2.9e-7}, {1.99e6, 4.4e-7}, {19.8e6, 8.3e-7}, {198e6, 1.7e-6}, {1.98e9, 4.3e-6}};

// The paper's number for a model whose parameter count rounds (3 significant figures) to the size the paper
// names; NaN for any other size. The paper reports nothing for Theorem 4.1 ("The proof is trivial by definition").
double paper_relative_error(std::size_t parameters) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", static_cast<double>(parameters));
    const double rounded = std::strtod(text, nullptr);
    for (const auto& entry : kPaperTable1)
        if (rounded == entry.parameters) return entry.relative_error;
    return kNaN;
}

Settings settings_from_config(const config::Config& cfg, const RunOptions& options) {
    Settings s;
    s.vocab = static_cast<std::size_t>(cfg.get_int("task.vocab"));
    s.prompt_length = static_cast<std::size_t>(cfg.get_int("task.prompt_length"));
    s.input_length = static_cast<std::size_t>(cfg.get_int("task.input_length"));
    s.dtypes = cfg.get_string_list("task.dtypes");
    s.direct_pairs = static_cast<std::size_t>(cfg.get_int("theorem41.direct_pairs"));
    const auto names = cfg.get_string_list("sizes.names");
    const auto layers = cfg.get_int_list("sizes.layers"), widths = cfg.get_int_list("sizes.widths");
    const auto heads = cfg.get_int_list("sizes.heads"), pairs = cfg.get_int_list("sizes.pairs");
    const auto model_pairs = cfg.get_int_list("sizes.theorem41_model_pairs");
    for (std::size_t i = 0; i < names.size(); ++i)
        s.sizes.push_back({names[i], static_cast<std::size_t>(layers[i]), static_cast<std::size_t>(widths[i]),
                           static_cast<std::size_t>(heads[i]), static_cast<std::size_t>(pairs[i]),
                           static_cast<std::size_t>(model_pairs[i])});
    s.mlp = cfg.get_bool("model.mlp");
    s.mlp_ratio = static_cast<std::size_t>(cfg.get_int("model.mlp_ratio"));
    s.feature_map = nn::feature_map_from_name(cfg.get_string("model.feature_map"));
    s.normalizer_eps = cfg.get_float("model.normalizer_eps");
    s.rope_base = cfg.get_float("model.rope_base");
    s.init_std = cfg.get_float("model.init_std");
    const std::string form = cfg.get_string("model.attention_form");
    s.attention_form = form == "quadratic"   ? model::ModelSpec::AttentionForm::quadratic
                       : form == "recurrent" ? model::ModelSpec::AttentionForm::recurrent
                                             : model::ModelSpec::AttentionForm::automatic;
    s.kv_std = cfg.get_float("biases.kv_std");
    s.d_max = cfg.get_float("biases.d_max");
    s.quiet = options.quiet;
    return s;
}

// Table 1's model: causal linear-RoPE transformer with elu+1 (or ReLU) kernel attention; with `theorem41`,
// Eq. 9's attention instead: identity features, no normalizer (the fixed scale 1/D), no RoPE.
model::ModelSpec exactness_spec(const Settings& s, const SizeSpec& size, bool theorem41) {
    model::ModelSpec spec;
    spec.vocab = s.vocab;
    spec.width = size.width;
    spec.heads = size.heads;
    spec.layers = size.layers;
    spec.max_seq_len = s.prompt_length + s.input_length;
    spec.mlp = s.mlp;
    spec.mlp_ratio = s.mlp_ratio;
    spec.mask = nn::MaskKind::causal;  // ICLCA's Assumption 4.2
    spec.feature_map = theorem41 ? nn::FeatureMap::identity : s.feature_map;
    spec.normalize = !theorem41;
    spec.rope = !theorem41;
    spec.normalizer_eps = s.normalizer_eps;
    spec.rope_base = s.rope_base;
    spec.init_std = s.init_std;
    spec.attention_form = s.attention_form;
    return spec;
}

// ---- one measurement ---------------------------------------------------------------------------------------

std::vector<std::int32_t> random_tokens(std::size_t n, std::size_t vocab, Rng& rng) {
    std::vector<std::int32_t> tokens(n);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(vocab));
    return tokens;
}

// Refuses (with a note) a model whose parameters would not fit in the memory available now, rather than
// letting the kernel kill the run (and perhaps someone else's) halfway.
bool fits_in_memory(double parameter_gib, Measurement& m) {
    const double available = available_memory_gib(), needed = parameter_gib + 0.5;
    if (!std::isfinite(available) || needed <= available) return true;
    std::ostringstream note;
    note.precision(3);
    note << "not run: needs " << needed << " GiB, " << available << " GiB available";
    m.note = note.str();
    return false;
}

// Progress lines on stderr: each measurement's start and end, and a pair line at most every 10 s.
class Progress {
public:
    explicit Progress(bool quiet) : quiet_(quiet) {}
    void line(const std::string& text) {
        if (!quiet_) std::fprintf(stderr, "%s\n", text.c_str());
        last_ = std::chrono::steady_clock::now();
    }
    void pair(const std::string& text) {
        if (seconds_since(last_) >= 10.0) line(text);
    }

private:
    bool quiet_;
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// Random nonzero starting biases: b_KV ~ N(0, kv_std²) and b_D ~ U(0, d_max) (b_D ≥ 0 keeps the kernel
// normalizer positive), so Eq. 14's R_{-M} b_KV and Eq. 15's b_D + Σφ(k) are both exercised.
template <class T>
void randomize_attention_biases(model::Transformer<T>& net, Rng& rng, double kv_std, double d_max) {
    for (const auto& entry : net.layout().entries()) {
        T* p = net.params.data() + entry.offset;
        if (entry.name.find("attn.b_kv") != std::string::npos)
            for (std::size_t i = 0; i < entry.size; ++i) p[i] = static_cast<T>(rng.normal(0.0, kv_std));
        if (entry.name.find("attn.b_d") != std::string::npos)
            for (std::size_t i = 0; i < entry.size; ++i) p[i] = static_cast<T>(rng.uniform(0.0, d_max));
    }
}

// Table 1 (and the Theorem 4.1 model): per pair, M_old on [X'; X]; M_new = M_old with iclca_convert's biases on
// X; M_old on X alone (how much the prompt matters); then the original biases are written back.
template <class T>
Measurement measure_model(const Settings& s, const SizeSpec& size, std::size_t size_index, bool theorem41,
                          const Rng& root, Progress& progress) {
    Measurement m;
    const model::ModelSpec spec = exactness_spec(s, size, theorem41);
    const std::size_t parameters = model::build_parameter_layout(spec).total();
    if (!fits_in_memory(static_cast<double>(parameters) * sizeof(T) / kGiB, m)) return m;
    const std::size_t pairs = theorem41 ? size.theorem41_model_pairs : size.pairs;
    const std::size_t M = s.prompt_length, N = s.input_length, V = spec.vocab;
    reset_peak_rss();
    const auto start = std::chrono::steady_clock::now();
    model::Transformer<T> net(spec, model::Transformer<T>::Mode::inference);
    Rng init_rng = root.derive(theorem41 ? kTheorem41ModelInit : kModelInit).derive(size_index);
    net.init(init_rng);
    Rng bias_rng = root.derive(theorem41 ? kTheorem41ModelBiases : kModelBiases).derive(size_index);
    randomize_attention_biases(net, bias_rng, s.kv_std, s.d_max);
    m.init_s = seconds_since(start);
    const icl::AttentionBiases<T> original = icl::read_biases(net);
    for (std::size_t p = 0; p < pairs; ++p) {
        Rng pair_rng = root.derive(kPairs).derive(size_index).derive(p);
        const auto prompt = random_tokens(M, V, pair_rng), input = random_tokens(N, V, pair_rng);
        const auto pair_start = std::chrono::steady_clock::now();
        std::vector<double> reference = icl::logits_with_prompt(net, prompt.data(), M, input.data(), N);  // M_old on [X'; X]
        m.errors.push_back(relative_error(icl::converted_logits(net, prompt.data(), M, input.data(), N, original).data(), reference));
        net.forward(input.data(), 1, N);  // M_old without the prompt
        m.prompt_effects.push_back(relative_error(net.logits(), reference));
        m.seconds.push_back(seconds_since(pair_start));
        m.references.push_back(std::move(reference));
        progress.pair("  pair " + std::to_string(p + 1) + "/" + std::to_string(pairs) + ": " +
                      std::to_string(m.seconds.back()) + " s");
    }
    m.wall_s = seconds_since(start);
    m.peak_rss_gib = peak_rss_gib();
    m.ran = true;
    return m;
}

// Theorem 4.1, Eq. 10-11, on one layer at the size's width and heads: W_Q, W_K, W_V ~ N(0, 1/C) (unit-variance
// q, k, v for x ~ N(0, I)), b ~ N(0, kv_std²), X', X ~ N(0, I). Per pair, LinAttn([X'; X] W, b) at X's rows
// against LinAttn(X W, b') with b' = b + W_Kᵀ X'ᵀ X' W_V (Eq. 11) from the weights — evaluated per head as
// (X' W_K)ᵀ (X' W_V), the same matrix by associativity, without ICLCA and without any attention state.
template <class T>
Measurement measure_direct(const Settings& s, const SizeSpec& size, std::size_t size_index, const Rng& root, Progress& progress) {
    Measurement m;
    const std::size_t C = size.width, H = size.heads, D = C / H, M = s.prompt_length, N = s.input_length;
    reset_peak_rss();
    const auto start = std::chrono::steady_clock::now();
    Rng weight_rng = root.derive(kDirectWeights).derive(size_index);
    std::vector<T> w_qkv(C * 3 * C), b_kv(H * D * D);  // (C, 3C) columns [W_Q | W_K | W_V]; (H, D, D)
    const double w_std = 1.0 / std::sqrt(static_cast<double>(C));
    for (auto& w : w_qkv) w = static_cast<T>(weight_rng.normal(0.0, w_std));
    for (auto& b : b_kv) b = static_cast<T>(weight_rng.normal(0.0, s.kv_std));
    m.init_s = seconds_since(start);
    std::vector<T> x((M + N) * C), out_joint, out_input;
    for (std::size_t p = 0; p < s.direct_pairs; ++p) {
        Rng pair_rng = root.derive(kDirectPairs).derive(size_index).derive(p);
        for (auto& value : x) value = static_cast<T>(pair_rng.normal(0.0, 1.0));  // rows [0, M): X'; [M, M+N): X
        const T* input = x.data() + M * C;
        const auto pair_start = std::chrono::steady_clock::now();
        icl::eq9_attention(out_joint, x.data(), M + N, w_qkv, b_kv, C, H);  // left side of Eq. 10
        std::vector<double> reference(out_joint.begin() + M * C, out_joint.end());
        const std::vector<T> b_converted = icl::eq11_converted_bias(x.data(), M, w_qkv, b_kv, C, H);  // Eq. 11
        icl::eq9_attention(out_input, input, N, w_qkv, b_converted, C, H);  // right side of Eq. 10
        m.errors.push_back(relative_error(out_input.data(), reference));
        icl::eq9_attention(out_input, input, N, w_qkv, b_kv, C, H);  // the layer without the prompt
        m.prompt_effects.push_back(relative_error(out_input.data(), reference));
        m.seconds.push_back(seconds_since(pair_start));
        m.references.push_back(std::move(reference));
        progress.pair("  pair " + std::to_string(p + 1) + "/" + std::to_string(s.direct_pairs));
    }
    m.wall_s = seconds_since(start);
    m.peak_rss_gib = peak_rss_gib();
    m.ran = true;
    return m;
}

std::size_t case_parameters(const Settings& s, const SizeSpec& size, Case which) {
    if (which == Case::theorem41) return 3 * size.width * size.width + size.width * (size.width / size.heads);  // W_qkv, b
    return model::build_parameter_layout(exactness_spec(s, size, which == Case::theorem41_model)).total();
}

std::size_t case_pairs(const Settings& s, const SizeSpec& size, Case which) {
    return which == Case::table1 ? size.pairs : which == Case::theorem41 ? s.direct_pairs : size.theorem41_model_pairs;
}

template <class T>
Measurement measure(const Settings& s, const SizeSpec& size, std::size_t size_index, Case which, const Rng& root,
                    Progress& progress) {
    if (which == Case::theorem41) return measure_direct<T>(s, size, size_index, root, progress);
    return measure_model<T>(s, size, size_index, which == Case::theorem41_model, root, progress);
}

void declare_keys(config::Schema& schema) {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    schema.add_int("task.vocab", 52, 2, 1 << 20, "vocabulary V of the random tokens (52: the induction-head letters)")
        .add_int("task.prompt_length", 64, 1, 1 << 16, "M: tokens of each random ICL prompt X'")
        .add_int("task.input_length", 32, 1, 1 << 16, "N: tokens of each random input X (errors are over its positions)")
        .add_string_list("task.dtypes", {"float32", "float64"}, {"float32", "float64"},
                         "scalar types measured, one model in memory at a time")
        .add_string_list_free("sizes.names", {"205K", "1.99M"}, "a name per model size (the table's first column)")
        .add_int_list("sizes.layers", {3, 17}, 1, 256, "blocks L per size")
        .add_int_list("sizes.widths", {72, 96}, 2, 65536, "width C per size")
        .add_int_list("sizes.heads", {2, 2}, 1, 1024, "heads H per size (head width C / H, even for RoPE)")
        .add_int_list("sizes.pairs", {100, 100}, 1, 1000000, "random (X', X) pairs per size for Table 1")
        .add_int_list("sizes.theorem41_model_pairs", {100, 100}, 0, 1000000,
                      "pairs per size for the Theorem 4.1 model (identity features, no normalizer, no RoPE); 0: not run")
        .add_int("theorem41.direct_pairs", 100, 0, 1000000,
                 "pairs per size for the direct check of Eq. 10-11 on one non-causal layer of the size's width and "
                 "heads; 0: not run")
        .add_bool("model.mlp", true, "GELU MLP after each attention")
        .add_int("model.mlp_ratio", 4, 1, 64, "MLP hidden width = mlp_ratio * C")
        .add_string("model.feature_map", "elu1", {"elu1", "relu"}, "feature map of Table 1's kernel attention")
        .add_float("model.normalizer_eps", 1e-6, 0.0, 1.0, "eps added to the kernel normalizer")
        .add_float("model.rope_base", 10000.0, 1.0, kInf, "RoPE base")
        .add_float("model.init_std", 0.02, 0.0, 10.0, "std of the normal initialization of weight matrices (GPT-2)")
        .add_string("model.attention_form", "auto", {"auto", "quadratic", "recurrent"},
                    "causal attention as the masked quadratic form or the recurrent form (auto: recurrent from T = 128)")
        .add_float("biases.kv_std", 0.5, 0.0, kInf, "starting b_KV ~ N(0, kv_std^2) (also b of the direct Theorem 4.1 layer)")
        .add_float("biases.d_max", 2.0, 0.0, kInf, "starting b_D ~ U(0, d_max) (non-negative: the normalizer stays positive)")
        .add_rule([](const config::Config& cfg) {
            const std::size_t n = cfg.get_string_list("sizes.names").size();
            for (const char* key : {"sizes.layers", "sizes.widths", "sizes.heads", "sizes.pairs", "sizes.theorem41_model_pairs"})
                if (cfg.get_int_list(key).size() != n)
                    cfg.fail({key, "sizes.names"}, std::string(key) + " has " + std::to_string(cfg.get_int_list(key).size()) +
                                                       " entries, sizes.names " + std::to_string(n) + ": one per size");
            if (n == 0) cfg.fail({"sizes.names"}, "at least one size is needed");
        })
        .add_rule([](const config::Config& cfg) {
            const auto widths = cfg.get_int_list("sizes.widths"), heads = cfg.get_int_list("sizes.heads");
            const auto names = cfg.get_string_list("sizes.names");
            for (std::size_t i = 0; i < std::min(widths.size(), heads.size()); ++i) {
                if (widths[i] % heads[i] != 0)
                    cfg.fail({"sizes.widths", "sizes.heads"}, "size " + names[i] + ": width " + std::to_string(widths[i]) +
                                                                  " is not divisible by heads " + std::to_string(heads[i]));
                if ((widths[i] / heads[i]) % 2 != 0)
                    cfg.fail({"sizes.widths", "sizes.heads"}, "size " + names[i] + ": RoPE needs an even head width, got " +
                                                                  std::to_string(widths[i] / heads[i]));
            }
        })
        .add_rule([](const config::Config& cfg) {
            const auto dtypes = cfg.get_string_list("task.dtypes");
            if (dtypes.empty() || std::set<std::string>(dtypes.begin(), dtypes.end()).size() != dtypes.size())
                cfg.fail({"task.dtypes"}, "task.dtypes must list float32 and/or float64, each once");
        });
}

// Per size and dtype, per pair: M_old on [X'; X], the conversion of X' and M_new on X (3 forwards of 2 P flops per
// token, P the size's parameters), for Table 1's and the Theorem 4.1 model's pairs. Memory: a size whose parameters do
// not fit is skipped with a note (fits_in_memory), so the run needs only the smallest size's model in fp64, twice.
RunEstimate estimate(const config::Config& cfg) {
    const auto layers = cfg.get_int_list("sizes.layers"), widths = cfg.get_int_list("sizes.widths");
    const auto pairs = cfg.get_int_list("sizes.pairs"), t41 = cfg.get_int_list("sizes.theorem41_model_pairs");
    const double V = static_cast<double>(cfg.get_int("task.vocab")), M = static_cast<double>(cfg.get_int("task.prompt_length"));
    const double N = static_cast<double>(cfg.get_int("task.input_length"));
    const double mlp = cfg.get_bool("model.mlp") ? static_cast<double>(cfg.get_int("model.mlp_ratio")) : 0.0;
    const double dtypes = static_cast<double>(cfg.get_string_list("task.dtypes").size());
    RunEstimate e;
    double smallest = -1;
    for (std::size_t i = 0; i < layers.size() && i < widths.size() && i < pairs.size() && i < t41.size(); ++i) {
        const double L = static_cast<double>(layers[i]), C = static_cast<double>(widths[i]);
        const double P = L * (4.0 + 2.0 * mlp) * C * C + 2.0 * V * C;
        e.flops += dtypes * static_cast<double>(pairs[i] + t41[i]) * 2.0 * P * (2.0 * (M + N) + N) +
                   static_cast<double>(cfg.get_int("theorem41.direct_pairs")) * 2.0 * (M + N) * 8.0 * C * C;
        const double gib = 2.0 * P * 8.0 / (1024.0 * 1024.0 * 1024.0);
        smallest = smallest < 0 ? gib : std::min(smallest, gib);
    }
    e.memory_gib = std::max(0.0, smallest);
    e.gemm_flops = e.flops;  // all transformer forwards (the direct pairs' products too)
    e.keys = {"sizes.widths", "sizes.layers", "sizes.pairs"};
    return e;
}

RunOutcome run_iclca_exactness(const RunContext& context) {
    const config::Config& cfg = context.config;
    const RunOptions& options = context.options;
    const Settings s = settings_from_config(cfg, options);
    RunFolder run(cfg, options);
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    Progress progress(s.quiet);
    const bool peak_resets = reset_peak_rss();
    const auto start = std::chrono::steady_clock::now();
    const bool want32 = std::count(s.dtypes.begin(), s.dtypes.end(), "float32") > 0;
    const bool want64 = std::count(s.dtypes.begin(), s.dtypes.end(), "float64") > 0;
    std::vector<double> paper;  // Table 1's printed value per size (NaN where the paper has none)
    for (const SizeSpec& size : s.sizes) paper.push_back(paper_relative_error(case_parameters(s, size, Case::table1)));
    const std::vector<DeclaredClaim> claims = declare_claims(s, paper);  // before anything is measured

    std::vector<std::vector<Row>> tables;
    double peak = 0.0;
    for (Case which : kCases) {
        std::vector<Row> rows;
        for (std::size_t i = 0; i < s.sizes.size(); ++i) {
            const SizeSpec& size = s.sizes[i];
            Row row;
            row.size = &size;
            row.parameters = case_parameters(s, size, which);
            row.layers = which == Case::theorem41 ? 1 : size.layers;
            row.pairs = case_pairs(s, size, which);
            if (which == Case::table1) row.paper = paper_relative_error(row.parameters);
            if (row.pairs == 0) {
                row.note = which == Case::theorem41 ? "not run (theorem41.direct_pairs = 0)" : "not run (sizes.theorem41_model_pairs = 0)";
                rows.push_back(std::move(row));
                continue;
            }
            // One model at a time: float32 first, then float64 (the order of task.dtypes does not matter).
            for (const char* dtype : {"float32", "float64"}) {
                const bool is64 = std::string(dtype) == "float64";
                if (!(is64 ? want64 : want32)) continue;
                progress.line(std::string("[") + case_name(which) + "] " + size.name + " " + dtype + ": " +
                              format_count(row.parameters) + " parameters, " + std::to_string(row.pairs) + " pairs");
                Measurement m = is64 ? measure<double>(s, size, i, which, root, progress)
                                     : measure<float>(s, size, i, which, root, progress);
                std::ostringstream line;
                line << "[" << case_name(which) << "] " << size.name << " " << dtype << ": ";
                if (m.ran)
                    line << "mean rel. error " << format_number(mean_of(m.errors)) << ", max " << format_number(max_of(m.errors))
                         << ", prompt effect " << format_number(mean_of(m.prompt_effects)) << "; init " << m.init_s << " s, total "
                         << m.wall_s << " s, peak RSS " << m.peak_rss_gib << " GiB";
                else
                    line << m.note;
                progress.line(line.str());
                run.log() << line.str() << "\n" << std::flush;
                if (m.ran) peak = std::max(peak, m.peak_rss_gib);
                (is64 ? row.fp64 : row.fp32) = std::move(m);
            }
            finish_row(row);
            rows.push_back(std::move(row));
        }
        tables.push_back(std::move(rows));
    }
    const double wall = seconds_since(start);

    io::ResultsWriter& w = run.results();
    for (std::size_t c = 0; c < tables.size(); ++c) write_table(w, kCases[c], tables[c]);
    write_pairs(w, tables);
    const std::vector<io::ClaimResult> verdicts = evaluate_claims(claims, tables);
    io::write_claims(w, verdicts);
    w.set_attr("prompt_length", s.prompt_length);
    w.set_attr("input_length", s.input_length);
    w.set_attr("wall_time_s", wall);
    w.set_attr("peak_rss_gib", peak);
    w.set_attr("peak_rss_per_model", peak_resets ? "true: VmHWM reset before each model (/proc/self/clear_refs)"
                                                 : "false: running maximum of the process");
    w.set_attr("relative_error",
               "||out(M_new, X) - out(M_old, [X'; X])|| / ||out(M_old, [X'; X])|| over X's positions (Frobenius); "
               "prompt_effect: the same with M_old on X alone; fp32_vs_fp64: M_old's fp32 vs fp64 outputs on [X'; X]");
    run.commit();
    if (!s.quiet) {
        for (std::size_t c = 0; c < tables.size(); ++c) print_table(kCases[c], tables[c], s);
        print_costs(tables);
        std::printf("\ntotal wall time %.1f s, peak resident memory %.2f GiB\n\n", wall, peak);
        for (const io::ClaimResult& r : verdicts)
            std::printf("claim %-42s %s: mean %s, max %s over %zu pairs%s\n", r.claim.id.c_str(), io::verdict_name(r.verdict),
                        format_number(r.interval.mean).c_str(), format_number(r.values.empty() ? kNaN : max_of(r.values)).c_str(),
                        r.values.size(), r.note.empty() ? "" : ("; " + r.note).c_str());
    }
    return {run.path(), true, 0, 0};
}

}  // namespace
}  // namespace iclca_exactness_cpp

Experiment iclca_exactness() {
    using namespace iclca_exactness_cpp;
    return {"iclca_exactness",
            "ICLCA exactness on random-weight models of several sizes, fp32 and fp64 (paper 000 Table 1, Theorem 4.1)",
            {KeyGroup::output},
            declare_keys,
            run_iclca_exactness,
            estimate};
}

}  // namespace iclab::experiments
