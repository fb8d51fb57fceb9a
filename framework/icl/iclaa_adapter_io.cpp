// ICLAA adapter files (iclaa_adapter.hpp, docs/adapter_format.md): writing, and reading with every check a file iclab
// did not just write needs before its terms reach attention: the content checksum, enums, shapes, the feature maps'
// fixed constants and structure, finite values and the biases' normalization. Apart from iclaa_convert so that the
// reader links without the model (tests/fuzz/fuzz_adapter_reader.cpp).
#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::icl {

namespace {

constexpr const char* kIclaaFormat = "iclab iclaa adapter";
// 2: the root attribute content_checksum (issue 20). Version 1 files had none and are refused: re-convert them.
// 3: hybrids (keep_tokens, the recent-K cache datasets) and learned_positions (issue 22). Version 2 files are read as
// keep_tokens = 0, learned_positions = 0 (what every version 2 file was), their checksum as version 2 computed it.
constexpr std::int64_t kIclaaFormatVersion = 3;

std::string iclaa_layer_path(std::size_t l, const char* what) { return "/iclaa/blocks." + std::to_string(l) + "." + what; }

bool known_map(const std::string& map) { return map == "prf" || map == "orf" || map == "elu1" || map == "learned"; }

nn::KernelMapKind kind_of(const std::string& map) {
    return map == "elu1" ? nn::KernelMapKind::elu1 : nn::KernelMapKind::exp_linear;
}

// The input scale s and λ every map of a kind is built with (feature_fit.cpp build_feature_maps, two_sided_map).
double expected_input_scale(const std::string& map, std::size_t D) { return map == "elu1" ? 1.0 : std::pow(static_cast<double>(D), -0.25); }
double expected_lambda(const std::string& map) { return map == "learned" ? 0.0 : 1.0; }

// One layer's datasets as stored: heads concatenated (w, c only for exp-linear maps).
struct LayerArrays {
    std::vector<double> w, c, b_d, b_kv, log_b_d, log_b_kv;
    std::vector<double> cache_keys, cache_values;  // hybrid: (H, K, D)
};

LayerArrays layer_arrays(const IclaaAdapter& adapter, std::size_t l) {
    LayerArrays arrays;
    for (std::size_t h = 0; h < adapter.heads; ++h) {
        const nn::KernelFeatures<double>& map = adapter.maps[l][h];
        const nn::SoftmaxPromptHead<double>& term = adapter.terms[l][h];
        if (map.kind == nn::KernelMapKind::exp_linear) {
            arrays.w.insert(arrays.w.end(), map.w.begin(), map.w.end());
            arrays.c.insert(arrays.c.end(), map.c.begin(), map.c.end());
        }
        arrays.b_d.insert(arrays.b_d.end(), term.b_d.begin(), term.b_d.end());
        arrays.b_kv.insert(arrays.b_kv.end(), term.b_kv.begin(), term.b_kv.end());
        arrays.log_b_d.push_back(term.log_b_d);
        arrays.log_b_kv.push_back(term.log_b_kv);
        arrays.cache_keys.insert(arrays.cache_keys.end(), term.cache_keys.begin(), term.cache_keys.end());
        arrays.cache_values.insert(arrays.cache_values.end(), term.cache_values.begin(), term.cache_values.end());
    }
    return arrays;
}

// "fnv1a64:<hex>" over everything that changes what the adapter computes: the format, the feature map (kind, F, seed,
// s, λ), the RoPE convention, the model fingerprint and shapes, the prompt (tokens and text) and every value of every
// dataset, as stored (float64 / int32 bytes); from version 3 also keep_tokens, learned_positions and the hybrid's cache.
std::string content_checksum(const IclaaAdapter& adapter, double input_scale, double lambda, std::int64_t version = kIclaaFormatVersion) {
    Fnv1a64 hash;
    const auto mix_values = [&](const auto& values) {
        hash.mix_count(values.size());
        if (!values.empty()) hash.mix(values.data(), values.size() * sizeof(values[0]));
    };
    hash.mix_string(kIclaaFormat);
    hash.mix(&version, sizeof version);
    hash.mix_string(adapter.feature_map);
    hash.mix_count(adapter.features);
    hash.mix(&adapter.seed, sizeof adapter.seed);
    hash.mix_count(adapter.fit_steps);
    hash.mix(&input_scale, sizeof input_scale);
    hash.mix(&lambda, sizeof lambda);
    hash.mix_string(rope_convention_name(adapter.convention));
    hash.mix_string(adapter.model_fingerprint);
    hash.mix_count(adapter.layers);
    hash.mix_count(adapter.heads);
    hash.mix_count(adapter.head_dim);
    if (version >= 3) {
        hash.mix_count(adapter.keep_tokens);
        hash.mix_count(adapter.learned_positions ? 1 : 0);
    }
    mix_values(adapter.prompt);
    hash.mix_string(adapter.prompt_text);
    for (std::size_t l = 0; l < adapter.layers; ++l) {
        const LayerArrays arrays = layer_arrays(adapter, l);
        for (const auto* values : {&arrays.w, &arrays.c, &arrays.b_d, &arrays.b_kv, &arrays.log_b_d, &arrays.log_b_kv}) mix_values(*values);
        if (version >= 3)
            for (const auto* values : {&arrays.cache_keys, &arrays.cache_values}) mix_values(*values);
    }
    return "fnv1a64:" + hash.hex();
}

// The first value that is not finite, as "<value> at index i", or "" when all are.
std::string first_non_finite(const std::vector<double>& values) {
    for (std::size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i])) return std::to_string(values[i]) + " at index " + std::to_string(i);
    return "";
}

}  // namespace

double IclaaAdapter::map_bytes() const {
    // random maps are one (D, F) draw per layer (or a seed); learned maps W₀ (D, F/2) and c (F) per head
    if (feature_map == "elu1") return 0.0;
    if (feature_map == "learned") return (head_dim * features / 2.0 + features) * 4.0 * layers * heads;
    return head_dim * static_cast<double>(features) * 4.0 * layers;
}

void IclaaAdapter::point_terms_at_maps() {
    for (std::size_t l = 0; l < terms.size(); ++l)
        for (std::size_t h = 0; h < terms[l].size(); ++h) terms[l][h].features = &maps[l][h];
}

bool is_iclaa_adapter_file(const std::filesystem::path& path) {
    if (!std::filesystem::is_regular_file(path)) return false;
    try {
        const io::ResultsReader reader(path);
        return reader.has_attr("/", "format") && reader.read_attr_string("/", "format") == kIclaaFormat;
    } catch (const Error&) {
        return false;
    }
}

void write_iclaa_adapter(const std::filesystem::path& path, const IclaaAdapter& adapter, bool overwrite) {
    ICLAB_CHECK(known_map(adapter.feature_map) && adapter.layers > 0 && adapter.maps.size() == adapter.layers &&
                    adapter.terms.size() == adapter.layers && !adapter.prompt.empty() && adapter.keep_tokens <= adapter.prompt.size(),
                "an incomplete ICLAA adapter");
    io::ResultsWriter writer(path, overwrite);  // refuses an existing file unless overwrite
    const std::size_t H = adapter.heads, D = adapter.head_dim, F = adapter.features, K = adapter.keep_tokens;
    const double input_scale = adapter.maps[0][0].input_scale, lambda = adapter.maps[0][0].lambda;
    for (std::size_t l = 0; l < adapter.layers; ++l) {
        for (const auto& map : adapter.maps[l])
            ICLAB_CHECK(map.input_scale == input_scale && map.lambda == lambda && map.features == F && map.dim == D,
                        "the maps of one ICLAA adapter differ in s, lambda, F or D");
        const LayerArrays a = layer_arrays(adapter, l);
        if (!a.w.empty()) {
            writer.write_tensor(iclaa_layer_path(l, "w"), a.w.data(), {H, D, F}, {{"layout", "(H, D, F): column r of head h is w_r; log phi_r(x) = w_r.(s x) + c_r - lambda |s x|^2 / 2"}});
            writer.write_tensor(iclaa_layer_path(l, "c"), a.c.data(), {H, F}, {{"layout", "(H, F): c_r"}});
        }
        writer.write_tensor(iclaa_layer_path(l, "b_d"), a.b_d.data(), {H, F}, {{"layout", "(H, F): b_D = exp(log_b_d) * b_d, max 1"}});
        writer.write_tensor(iclaa_layer_path(l, "b_kv"), a.b_kv.data(), {H, F, D}, {{"layout", "(H, F, D): b_KV = exp(log_b_kv) * b_kv, max |.| 1"}});
        writer.write_tensor(iclaa_layer_path(l, "log_b_d"), a.log_b_d.data(), {H}, {{"layout", "(H)"}});
        writer.write_tensor(iclaa_layer_path(l, "log_b_kv"), a.log_b_kv.data(), {H}, {{"layout", "(H)"}});
        if (K > 0) {
            for (const auto& term : adapter.terms[l]) ICLAB_CHECK(term.cache_length == K, "a hybrid cache term of another size");
            writer.write_tensor(iclaa_layer_path(l, "cache_keys"), a.cache_keys.data(), {H, K, D},
                                {{"layout", "(H, K, D): the last K prompt keys, pre-RoPE keys rotated to their offset p - M (RoPE models)"}});
            writer.write_tensor(iclaa_layer_path(l, "cache_values"), a.cache_values.data(), {H, K, D}, {{"layout", "(H, K, D): their values"}});
        }
    }
    writer.write_tensor("/prompt_tokens", adapter.prompt.data(), {adapter.prompt.size()}, {{"layout", "(M): the prompt's token ids"}});
    writer.set_attr("format", kIclaaFormat);
    writer.set_attr("format_version", kIclaaFormatVersion);
    writer.set_attr("content_checksum", content_checksum(adapter, input_scale, lambda));
    writer.set_attr("exact", K == adapter.prompt.size() ? "true" : "false");  // a hybrid keeping all M tokens is the exact cache
    writer.set_attr("keep_tokens", K);
    writer.set_attr("learned_positions", static_cast<std::int64_t>(adapter.learned_positions ? 1 : 0));
    writer.set_attr("feature_map", adapter.feature_map);
    writer.set_attr("features", adapter.features);
    writer.set_attr("seed", static_cast<std::int64_t>(adapter.seed));
    writer.set_attr("fit_steps", adapter.fit_steps);
    writer.set_attr("rope_convention", rope_convention_name(adapter.convention));
    writer.set_attr("input_scale", input_scale);
    writer.set_attr("lambda", lambda);
    writer.set_attr("model_fingerprint", adapter.model_fingerprint);
    writer.set_attr("prompt_length", adapter.prompt.size());
    writer.set_attr("prompt_text", adapter.prompt_text);
    writer.set_attr("model_layers", adapter.layers);
    writer.set_attr("model_heads", adapter.heads);
    writer.set_attr("head_dim", adapter.head_dim);
    writer.set_attr("bias_bytes_fp32", adapter.bias_bytes());
    writer.set_attr("map_bytes_fp32", adapter.map_bytes());
    writer.set_attr("exact_cache_bytes_fp32", adapter.exact_cache_bytes());
    writer.set_attr("cache_bytes_fp32", adapter.kept_cache_bytes());
    io::write_provenance(writer);
    writer.commit();
}

IclaaAdapter read_iclaa_adapter(const std::filesystem::path& path) {
    const std::string file = path.string();
    ICLAB_INPUT_CHECK(is_iclaa_adapter_file(path), file << " is not an ICLAA adapter file (written by iclab convert --method iclaa)");
    const io::ResultsReader reader(path);
    const auto present = [&](const char* name) {
        ICLAB_INPUT_CHECK(reader.has_attr("/", name), file << ": the root attribute " << name << " is missing");
        return name;
    };
    const std::int64_t version = reader.read_attr_int64("/", present("format_version"));
    ICLAB_INPUT_CHECK(version != 1, file << " is an ICLAA adapter of format version 1, written before adapters carried a content checksum: "
                                            "re-convert its prompt with iclab convert (this iclab reads version " << kIclaaFormatVersion << ")");
    ICLAB_INPUT_CHECK(version == 2 || version == kIclaaFormatVersion,
                      file << ": ICLAA adapter format version " << version << ", this iclab reads 2 and " << kIclaaFormatVersion);
    IclaaAdapter a;
    const auto count = [&](const char* name) {
        const std::int64_t v = reader.read_attr_int64("/", present(name));
        ICLAB_INPUT_CHECK(v > 0 && v < (1 << 24), file << ": attribute " << name << " = " << v << " is out of range");
        return static_cast<std::size_t>(v);
    };
    const auto text = [&](const char* name) { return reader.read_attr_string("/", present(name)); };
    a.feature_map = text("feature_map");
    ICLAB_INPUT_CHECK(known_map(a.feature_map), file << ": attribute feature_map = '" << a.feature_map << "' is not one of prf, orf, elu1, learned");
    const std::string convention = text("rope_convention");
    try {
        a.convention = parse_rope_convention(convention);
    } catch (const InputError& error) {
        throw InputError(file + ": attribute rope_convention: " + error.what());
    }
    a.features = count("features");
    a.seed = static_cast<std::uint64_t>(reader.read_attr_int64("/", present("seed")));
    const std::int64_t fit_steps = reader.read_attr_int64("/", present("fit_steps"));
    ICLAB_INPUT_CHECK(fit_steps >= 0 && fit_steps <= (1 << 24), file << ": attribute fit_steps = " << fit_steps << " is out of range");
    a.fit_steps = static_cast<std::size_t>(fit_steps);
    a.model_fingerprint = text("model_fingerprint");
    a.prompt_text = text("prompt_text");
    a.layers = count("model_layers");
    a.heads = count("model_heads");
    a.head_dim = count("head_dim");
    const std::size_t L = a.layers, H = a.heads, D = a.head_dim, F = a.features;
    const bool exp_linear = kind_of(a.feature_map) == nn::KernelMapKind::exp_linear;
    if (version >= 3) {
        const std::int64_t keep = reader.read_attr_int64("/", present("keep_tokens"));
        ICLAB_INPUT_CHECK(keep >= 0 && keep < (1 << 24), file << ": attribute keep_tokens = " << keep << " is out of range");
        a.keep_tokens = static_cast<std::size_t>(keep);
        const std::int64_t learned = reader.read_attr_int64("/", present("learned_positions"));
        ICLAB_INPUT_CHECK(learned == 0 || learned == 1, file << ": attribute learned_positions = " << learned << " is not 0 or 1");
        a.learned_positions = learned == 1;
    }
    const std::size_t K = a.keep_tokens;
    // The map's shape by its kind: elu1 has F = D features and no stored W, c (an edited feature_map never reaches attention
    // with buffers of another size); a learned map pairs its columns, so F is even.
    ICLAB_INPUT_CHECK(exp_linear || F == D, file << ": attribute features = " << F << " but an elu1 map has F = head_dim = " << D);
    ICLAB_INPUT_CHECK(a.feature_map != "learned" || F % 2 == 0, file << ": attribute features = " << F << " is odd, a learned map's F is even");
    const double input_scale = reader.read_attr_double("/", present("input_scale"));
    const double lambda = reader.read_attr_double("/", present("lambda"));
    ICLAB_INPUT_CHECK(input_scale == expected_input_scale(a.feature_map, D),
                      file << ": attribute input_scale = " << input_scale << ", but a " << a.feature_map << " map with head_dim " << D
                           << " has s = " << expected_input_scale(a.feature_map, D) << (exp_linear ? " (D^-1/4)" : ""));
    ICLAB_INPUT_CHECK(lambda == expected_lambda(a.feature_map),
                      file << ": attribute lambda = " << lambda << ", but a " << a.feature_map << " map has lambda = " << expected_lambda(a.feature_map));
    ICLAB_INPUT_CHECK(reader.has("/prompt_tokens"), file << ": the dataset /prompt_tokens (the prompt's token ids) is missing");
    const io::TensorData<std::int32_t> prompt = reader.read_int32("/prompt_tokens");
    ICLAB_INPUT_CHECK(prompt.shape.size() == 1 && !prompt.values.empty(), file << ": /prompt_tokens is not a non-empty 1-D list of tokens");
    a.prompt = prompt.values;
    for (std::size_t i = 0; i < a.prompt.size(); ++i)
        ICLAB_INPUT_CHECK(a.prompt[i] >= 0, file << ": /prompt_tokens[" << i << "] = " << a.prompt[i] << " is not a token id");
    ICLAB_INPUT_CHECK(a.prompt.size() == count("prompt_length"),
                      file << ": attribute prompt_length = " << count("prompt_length") << " differs from the " << a.prompt.size()
                           << " tokens of /prompt_tokens");
    ICLAB_INPUT_CHECK(K <= a.prompt.size(), file << ": attribute keep_tokens = " << K << " exceeds the prompt's " << a.prompt.size() << " tokens");
    const std::size_t per_layer = (exp_linear ? 6 : 4) + (K > 0 ? 2 : 0);
    ICLAB_INPUT_CHECK(reader.has("/iclaa") && reader.list("/iclaa").size() == L * per_layer,
                      file << ": attribute model_layers = " << L << " (feature_map " << a.feature_map << ", keep_tokens " << K << ") but /iclaa holds "
                           << (reader.has("/iclaa") ? reader.list("/iclaa").size() : 0) << " datasets, not " << per_layer << " per layer");

    // H is bounded by what the file stores before L·H maps are allocated (layer 0's log_b_d has H values).
    const std::string first_scales = iclaa_layer_path(0, "log_b_d");
    ICLAB_INPUT_CHECK(reader.has(first_scales) && reader.read_tensor_double(first_scales).shape == std::vector<std::size_t>{H},
                      file << ": " << first_scales << " is missing or does not hold model_heads = " << H << " values");
    a.maps.assign(L, std::vector<nn::KernelFeatures<double>>(H));
    a.terms = PromptTerms(L, std::vector<nn::SoftmaxPromptHead<double>>(H));
    const auto shaped = [&](std::size_t l, const char* what, std::vector<std::size_t> shape) {
        const std::string name = iclaa_layer_path(l, what);
        ICLAB_INPUT_CHECK(reader.has(name), file << ": " << name << " is missing (model_layers = " << L << ", feature_map " << a.feature_map << ")");
        auto t = reader.read_tensor_double(name);
        ICLAB_INPUT_CHECK(t.shape == shape, file << ": " << name << " does not have the adapter's shape");
        const std::string bad = first_non_finite(t.values);
        ICLAB_INPUT_CHECK(bad.empty() || what == std::string("log_b_d") || what == std::string("log_b_kv"),
                          file << ": " << name << " holds " << bad << " (values must be finite)");
        return t.values;
    };
    const double log_c = -0.5 * std::log(static_cast<double>(F));  // PRF / ORF: c_r = −½ ln F (kernel_features.hpp)
    for (std::size_t l = 0; l < L; ++l) {
        const std::vector<double> w = exp_linear ? shaped(l, "w", {H, D, F}) : std::vector<double>{};
        const std::vector<double> c = exp_linear ? shaped(l, "c", {H, F}) : std::vector<double>{};
        const auto b_d = shaped(l, "b_d", {H, F}), b_kv = shaped(l, "b_kv", {H, F, D});
        const auto log_b_d = shaped(l, "log_b_d", {H}), log_b_kv = shaped(l, "log_b_kv", {H});
        const std::vector<double> cache_keys = K > 0 ? shaped(l, "cache_keys", {H, K, D}) : std::vector<double>{};
        const std::vector<double> cache_values = K > 0 ? shaped(l, "cache_values", {H, K, D}) : std::vector<double>{};
        for (std::size_t h = 0; h < H; ++h) {
            nn::KernelFeatures<double>& map = a.maps[l][h];
            map.kind = kind_of(a.feature_map);
            map.dim = D;
            map.features = F;
            map.input_scale = input_scale;
            map.lambda = lambda;
            if (exp_linear) {
                map.w.assign(w.begin() + h * D * F, w.begin() + (h + 1) * D * F);
                map.c.assign(c.begin() + h * F, c.begin() + (h + 1) * F);
            }
            if (a.feature_map == "prf" || a.feature_map == "orf")
                for (std::size_t r = 0; r < F; ++r)
                    ICLAB_INPUT_CHECK(map.c[r] == log_c, file << ": " << iclaa_layer_path(l, "c") << "[" << h << ", " << r << "] = " << map.c[r]
                                                              << ", but a " << a.feature_map << " map has c = -ln(F)/2 = " << log_c);
            if (a.feature_map == "learned")  // columns [W0 | -W0] (two_sided_map)
                for (std::size_t d = 0; d < D; ++d)
                    for (std::size_t r = 0; r < F / 2; ++r)
                        ICLAB_INPUT_CHECK(map.w[d * F + F / 2 + r] == -map.w[d * F + r],
                                          file << ": " << iclaa_layer_path(l, "w") << " of head " << h << " is not two-sided (columns [W0 | -W0])");
            nn::SoftmaxPromptHead<double>& term = a.terms[l][h];
            term.b_d.assign(b_d.begin() + h * F, b_d.begin() + (h + 1) * F);
            term.b_kv.assign(b_kv.begin() + h * F * D, b_kv.begin() + (h + 1) * F * D);
            term.log_b_d = log_b_d[h];
            term.log_b_kv = log_b_kv[h];
            term.rotate_query = a.convention != RopeConvention::unrotated;
            term.cache_length = K;
            if (K > 0) {
                term.cache_keys.assign(cache_keys.begin() + h * K * D, cache_keys.begin() + (h + 1) * K * D);
                term.cache_values.assign(cache_values.begin() + h * K * D, cache_values.begin() + (h + 1) * K * D);
            }
            // Normalized as add_kernel_terms leaves them: b_d >= 0 with max 1 and |b_kv| max 1, the scale in a finite log;
            // or all zero with log = -inf (a prompt that contributes nothing).
            const auto check_scaled = [&](const std::vector<double>& values, double log, const char* what, bool nonnegative) {
                double top = 0.0;
                for (double x : values) {
                    ICLAB_INPUT_CHECK(!nonnegative || x >= 0.0, file << ": " << iclaa_layer_path(l, what) << " of head " << h << " holds " << x << " < 0");
                    top = std::max(top, std::abs(x));
                }
                const bool zero = top == 0.0 && log == -std::numeric_limits<double>::infinity();
                ICLAB_INPUT_CHECK(zero || (top == 1.0 && std::isfinite(log)),
                                  file << ": " << iclaa_layer_path(l, what) << " of head " << h << " has max |.| " << top << " and " << iclaa_layer_path(l, "log_")
                                       << what << " " << log << " (stored normalized: max 1 with a finite log scale, or all 0 with -inf)");
            };
            check_scaled(term.b_d, term.log_b_d, "b_d", true);
            check_scaled(term.b_kv, term.log_b_kv, "b_kv", false);
        }
    }
    a.point_terms_at_maps();
    const std::string recorded = text("content_checksum");
    const std::string computed = content_checksum(a, input_scale, lambda, version);
    ICLAB_INPUT_CHECK(recorded == computed, file << ": its contents do not match its recorded content_checksum " << recorded << " (they give "
                                                 << computed << "): the file was changed after iclab convert wrote it");
    return a;
}

}  // namespace iclab::icl
