#include "experiments/iclca_exactness.hpp"

#include <sys/resource.h>

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
#include "framework/icl/iclca.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::experiments {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
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

// What is measured, one results table each.
enum class Case { table1, theorem41, theorem41_model };
const Case kCases[] = {Case::table1, Case::theorem41, Case::theorem41_model};

const char* case_name(Case which) {
    return which == Case::table1 ? "table1" : which == Case::theorem41 ? "theorem41" : "theorem41_model";
}

const char* case_title(Case which) {
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

// ---- memory and time ---------------------------------------------------------------------------------------

double peak_rss_gib() {  // getrusage: kilobytes on Linux
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) * 1024.0 / kGiB;
}

// Resets the peak resident set size (VmHWM, which getrusage's ru_maxrss reports) to the current size
// (Linux >= 4.0: "5" to /proc/self/clear_refs), so each measurement gets its own peak. False where unsupported:
// the peaks are then running maxima of the whole process.
bool reset_peak_rss() {
    std::ofstream clear_refs("/proc/self/clear_refs");
    if (!clear_refs) return false;
    clear_refs << "5";
    clear_refs.flush();
    return clear_refs.good();
}

double available_memory_gib() {  // MemAvailable of /proc/meminfo (kB); NaN when unknown
    std::ifstream meminfo("/proc/meminfo");
    std::string line, key;
    double value = 0;
    while (std::getline(meminfo, line)) {
        std::istringstream fields(line);
        if (fields >> key >> value && key == "MemAvailable:") return value * 1024.0 / kGiB;
    }
    return kNaN;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- one measurement ---------------------------------------------------------------------------------------

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

template <class T>
const char* dtype_name() {
    return sizeof(T) == 8 ? "float64" : "float32";
}

// ‖a − reference‖ / ‖reference‖ over n entries, in double.
template <class T>
double relative_error(const T* a, const std::vector<double>& reference) {
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < reference.size(); ++i) {
        const double d = static_cast<double>(a[i]) - reference[i];
        diff += d * d;
        norm += reference[i] * reference[i];
    }
    const double error = std::sqrt(diff / norm);
    ICLAB_CHECK(std::isfinite(error), "non-finite outputs or a zero reference (relative error " << error << ")");
    return error;
}

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
        std::vector<std::int32_t> joint = prompt;
        joint.insert(joint.end(), input.begin(), input.end());
        const auto pair_start = std::chrono::steady_clock::now();
        net.forward(joint.data(), 1, M + N);  // M_old on [X'; X]
        std::vector<double> reference(net.logits() + M * V, net.logits() + (M + N) * V);
        icl::write_biases(net, icl::iclca_convert(net, prompt.data(), M));  // M_new
        net.forward(input.data(), 1, N);
        m.errors.push_back(relative_error(net.logits(), reference));
        icl::write_biases(net, original);  // back to M_old
        net.forward(input.data(), 1, N);   // M_old without the prompt
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

// Eq. 9 per head, LinAttn(Q, K, V, b) = Q (KᵀV + b), over `time` rows of x (time, C): every row sees every row
// (no mask), identity features, no normalizer and no output scale, no RoPE. out (time, C).
template <class T>
void eq9_attention(std::vector<T>& out, const T* x, std::size_t time, const std::vector<T>& w_qkv, const std::vector<T>& b_kv,
                   std::size_t C, std::size_t H) {
    std::vector<T> qkv(time * 3 * C);  // (time, 3C): [q | k | v] = x W
    nn::gemm<T>(nn::matrix(qkv.data(), time, 3 * C), nn::matrix<const T>(x, time, C), nn::matrix<const T>(w_qkv.data(), C, 3 * C),
                false, false);
    nn::AttentionShape shape;
    shape.batch = 1;
    shape.time = time;
    shape.heads = H;
    shape.head_dim = C / H;
    nn::LinearAttentionOptions options;
    options.feature_map = nn::FeatureMap::identity;
    options.normalize = false;
    options.unnormalized_scale = 1.0;
    options.mask.kind = nn::MaskKind::full;
    const std::vector<T> b_d(H * shape.head_dim, T(0));  // unused without the normalizer
    nn::LinearAttentionCache<T> cache;
    out.assign(time * C, T(0));
    nn::linear_attention_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), static_cast<const T*>(nullptr), shape,
                                 options);
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
    std::vector<T> x((M + N) * C), out_joint, out_input, prompt_qkv(M * 3 * C), k_head(M * D), v_head(M * D);
    for (std::size_t p = 0; p < s.direct_pairs; ++p) {
        Rng pair_rng = root.derive(kDirectPairs).derive(size_index).derive(p);
        for (auto& value : x) value = static_cast<T>(pair_rng.normal(0.0, 1.0));  // rows [0, M): X'; [M, M+N): X
        const T* input = x.data() + M * C;
        const auto pair_start = std::chrono::steady_clock::now();
        eq9_attention(out_joint, x.data(), M + N, w_qkv, b_kv, C, H);  // left side of Eq. 10
        std::vector<double> reference(out_joint.begin() + M * C, out_joint.end());
        // Eq. 11 per head h: b'_h = b_h + (X' W_K,h)ᵀ (X' W_V,h)
        nn::gemm<T>(nn::matrix(prompt_qkv.data(), M, 3 * C), nn::matrix<const T>(x.data(), M, C),
                    nn::matrix<const T>(w_qkv.data(), C, 3 * C), false, false);
        std::vector<T> b_converted = b_kv;
        for (std::size_t h = 0; h < H; ++h) {
            for (std::size_t t = 0; t < M; ++t) {
                const T* row = prompt_qkv.data() + t * 3 * C;
                std::copy(row + C + h * D, row + C + h * D + D, k_head.data() + t * D);
                std::copy(row + 2 * C + h * D, row + 2 * C + h * D + D, v_head.data() + t * D);
            }
            nn::gemm<T>(nn::matrix(b_converted.data() + h * D * D, D, D), nn::matrix<const T>(k_head.data(), M, D),
                        nn::matrix<const T>(v_head.data(), M, D), true, false, T(1), T(1));
        }
        eq9_attention(out_input, input, N, w_qkv, b_converted, C, H);  // right side of Eq. 10
        m.errors.push_back(relative_error(out_input.data(), reference));
        eq9_attention(out_input, input, N, w_qkv, b_kv, C, H);  // the layer without the prompt
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

// ---- summary -----------------------------------------------------------------------------------------------

double mean_of(const std::vector<double>& v) {
    if (v.empty()) return kNaN;
    double sum = 0.0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
}

double max_of(const std::vector<double>& v) { return v.empty() ? kNaN : *std::max_element(v.begin(), v.end()); }

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

std::string format_number(double x, const char* format = "%.2e") {
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
                     {"note", notes}});
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

}  // namespace

config::Schema iclca_exactness_schema() {
    constexpr double kInf = std::numeric_limits<double>::infinity();
    config::Schema schema;
    schema.add_string("experiment", "iclca_exactness", {"iclca_exactness"}, "which experiment this config runs");
    add_output_keys(schema);
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
    return schema;
}

RunOutcome run_iclca_exactness(const config::Config& cfg, const RunOptions& options) {
    const Settings s = settings_from_config(cfg, options);
    RunFolder run(cfg, options);
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    Progress progress(s.quiet);
    const bool peak_resets = reset_peak_rss();
    const auto start = std::chrono::steady_clock::now();
    const bool want32 = std::count(s.dtypes.begin(), s.dtypes.end(), "float32") > 0;
    const bool want64 = std::count(s.dtypes.begin(), s.dtypes.end(), "float64") > 0;

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
        std::printf("\ntotal wall time %.1f s, peak resident memory %.2f GiB\n", wall, peak);
    }
    return {run.path(), true, 0, 0};
}

}  // namespace iclab::experiments
