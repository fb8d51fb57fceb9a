#include "framework/icl/iclaa_adapter.hpp"

#include "framework/core/check.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::icl {

namespace {

constexpr const char* kFormat = "iclab iclaa adapter";
constexpr std::int64_t kFormatVersion = 1;

std::string layer_path(std::size_t l, const char* what) { return "/iclaa/blocks." + std::to_string(l) + "." + what; }

nn::KernelMapKind kind_of(const std::string& map) {
    return map == "elu1" ? nn::KernelMapKind::elu1 : nn::KernelMapKind::exp_linear;
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

IclaaAdapter iclaa_convert(model::Transformer<double>& model, const std::vector<std::int32_t>& prompt, std::string prompt_text,
                           LayerHeadMaps maps, const std::string& feature_map, std::uint64_t seed, RopeConvention convention) {
    const model::ModelSpec& spec = model.spec();
    check_iclaa_assumptions(spec);
    ICLAB_INPUT_CHECK(!prompt.empty(), "the ICL prompt is empty");
    ICLAB_CHECK(maps.size() == spec.layers && !maps[0].empty(), "feature maps for " << maps.size() << " layers, the model has " << spec.layers);
    IclaaAdapter adapter;
    adapter.feature_map = feature_map;
    adapter.features = maps[0][0].features;
    adapter.seed = seed;
    adapter.convention = convention;
    adapter.maps = std::move(maps);
    adapter.prompt = prompt;
    adapter.prompt_text = std::move(prompt_text);
    adapter.model_fingerprint = model_fingerprint(model);
    adapter.layers = spec.layers;
    adapter.heads = spec.heads;
    adapter.head_dim = spec.head_dim();
    const PromptKeysValues kv = capture_prompt_keys_values(model, prompt.data(), 1, prompt.size());
    adapter.terms = empty_prompt_terms(spec.layers, spec.heads);
    add_kernel_terms(adapter.terms, 0, kv, 0, adapter.maps, model.rope(), convention);
    adapter.point_terms_at_maps();
    return adapter;
}

bool is_iclaa_adapter_file(const std::filesystem::path& path) {
    if (!std::filesystem::is_regular_file(path)) return false;
    try {
        const io::ResultsReader reader(path);
        return reader.has_attr("/", "format") && reader.read_attr_string("/", "format") == kFormat;
    } catch (const Error&) {
        return false;
    }
}

void write_iclaa_adapter(const std::filesystem::path& path, const IclaaAdapter& adapter, bool overwrite) {
    io::ResultsWriter writer(path, overwrite);  // refuses an existing file unless overwrite
    const std::size_t H = adapter.heads, D = adapter.head_dim, F = adapter.features;
    for (std::size_t l = 0; l < adapter.layers; ++l) {
        std::vector<double> w, c, b_d, b_kv, log_b_d, log_b_kv;
        for (std::size_t h = 0; h < H; ++h) {
            const nn::KernelFeatures<double>& map = adapter.maps[l][h];
            const nn::SoftmaxPromptHead<double>& term = adapter.terms[l][h];
            if (map.kind == nn::KernelMapKind::exp_linear) {
                w.insert(w.end(), map.w.begin(), map.w.end());
                c.insert(c.end(), map.c.begin(), map.c.end());
            }
            b_d.insert(b_d.end(), term.b_d.begin(), term.b_d.end());
            b_kv.insert(b_kv.end(), term.b_kv.begin(), term.b_kv.end());
            log_b_d.push_back(term.log_b_d);
            log_b_kv.push_back(term.log_b_kv);
        }
        if (!w.empty()) {
            writer.write_tensor(layer_path(l, "w"), w.data(), {H, D, F}, {{"layout", "(H, D, F): column r of head h is w_r; log phi_r(x) = w_r.(s x) + c_r - lambda |s x|^2 / 2"}});
            writer.write_tensor(layer_path(l, "c"), c.data(), {H, F}, {{"layout", "(H, F): c_r"}});
        }
        writer.write_tensor(layer_path(l, "b_d"), b_d.data(), {H, F}, {{"layout", "(H, F): b_D = exp(log_b_d) * b_d, max 1"}});
        writer.write_tensor(layer_path(l, "b_kv"), b_kv.data(), {H, F, D}, {{"layout", "(H, F, D): b_KV = exp(log_b_kv) * b_kv, max |.| 1"}});
        writer.write_tensor(layer_path(l, "log_b_d"), log_b_d.data(), {H}, {{"layout", "(H)"}});
        writer.write_tensor(layer_path(l, "log_b_kv"), log_b_kv.data(), {H}, {{"layout", "(H)"}});
    }
    writer.write_tensor("/prompt_tokens", adapter.prompt.data(), {adapter.prompt.size()}, {{"layout", "(M): the prompt's token ids"}});
    writer.set_attr("format", kFormat);
    writer.set_attr("format_version", kFormatVersion);
    writer.set_attr("exact", "false");
    writer.set_attr("feature_map", adapter.feature_map);
    writer.set_attr("features", adapter.features);
    writer.set_attr("seed", static_cast<std::int64_t>(adapter.seed));
    writer.set_attr("rope_convention", rope_convention_name(adapter.convention));
    writer.set_attr("input_scale", adapter.maps[0][0].input_scale);
    writer.set_attr("lambda", adapter.maps[0][0].lambda);
    writer.set_attr("model_fingerprint", adapter.model_fingerprint);
    writer.set_attr("prompt_length", adapter.prompt.size());
    writer.set_attr("prompt_text", adapter.prompt_text);
    writer.set_attr("model_layers", adapter.layers);
    writer.set_attr("model_heads", adapter.heads);
    writer.set_attr("head_dim", adapter.head_dim);
    writer.set_attr("bias_bytes_fp32", adapter.bias_bytes());
    writer.set_attr("map_bytes_fp32", adapter.map_bytes());
    writer.set_attr("exact_cache_bytes_fp32", adapter.exact_cache_bytes());
    io::write_provenance(writer);
    writer.commit();
}

IclaaAdapter read_iclaa_adapter(const std::filesystem::path& path) {
    ICLAB_INPUT_CHECK(is_iclaa_adapter_file(path), path.string() << " is not an ICLAA adapter file (written by iclab convert --method iclaa)");
    const io::ResultsReader reader(path);
    ICLAB_INPUT_CHECK(reader.read_attr_int64("/", "format_version") == kFormatVersion,
                      path.string() << ": ICLAA adapter format version " << reader.read_attr_int64("/", "format_version")
                                    << ", this iclab reads " << kFormatVersion);
    IclaaAdapter a;
    const auto count = [&](const char* name) {
        const std::int64_t v = reader.read_attr_int64("/", name);
        ICLAB_INPUT_CHECK(v > 0 && v < (1 << 24), path.string() << ": attribute " << name << " = " << v << " is out of range");
        return static_cast<std::size_t>(v);
    };
    a.feature_map = reader.read_attr_string("/", "feature_map");
    a.features = count("features");
    a.seed = static_cast<std::uint64_t>(reader.read_attr_int64("/", "seed"));
    a.convention = parse_rope_convention(reader.read_attr_string("/", "rope_convention"));
    a.model_fingerprint = reader.read_attr_string("/", "model_fingerprint");
    a.prompt_text = reader.read_attr_string("/", "prompt_text");
    a.layers = count("model_layers");
    a.heads = count("model_heads");
    a.head_dim = count("head_dim");
    a.prompt = reader.read_int32("/prompt_tokens").values;
    const std::size_t H = a.heads, D = a.head_dim, F = a.features;
    const double input_scale = reader.read_attr_double("/", "input_scale"), lambda = reader.read_attr_double("/", "lambda");
    a.maps.assign(a.layers, std::vector<nn::KernelFeatures<double>>(H));
    a.terms = empty_prompt_terms(a.layers, H);
    const auto shaped = [&](const std::string& name, std::vector<std::size_t> shape) {
        auto t = reader.read_tensor_double(name);
        ICLAB_INPUT_CHECK(t.shape == shape, path.string() << ": " << name << " does not have the adapter's shape");
        return t.values;
    };
    for (std::size_t l = 0; l < a.layers; ++l) {
        const bool exp_linear = kind_of(a.feature_map) == nn::KernelMapKind::exp_linear;
        const std::vector<double> w = exp_linear ? shaped(layer_path(l, "w"), {H, D, F}) : std::vector<double>{};
        const std::vector<double> c = exp_linear ? shaped(layer_path(l, "c"), {H, F}) : std::vector<double>{};
        const auto b_d = shaped(layer_path(l, "b_d"), {H, F}), b_kv = shaped(layer_path(l, "b_kv"), {H, F, D});
        const auto log_b_d = shaped(layer_path(l, "log_b_d"), {H}), log_b_kv = shaped(layer_path(l, "log_b_kv"), {H});
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
            nn::SoftmaxPromptHead<double>& term = a.terms[l][h];
            term.b_d.assign(b_d.begin() + h * F, b_d.begin() + (h + 1) * F);
            term.b_kv.assign(b_kv.begin() + h * F * D, b_kv.begin() + (h + 1) * F * D);
            term.log_b_d = log_b_d[h];
            term.log_b_kv = log_b_kv[h];
            term.rotate_query = a.convention != RopeConvention::unrotated;
        }
    }
    a.point_terms_at_maps();
    return a;
}

void check_iclaa_adapter(const model::Transformer<double>& model, const IclaaAdapter& adapter, const std::string& name) {
    try {
        check_iclaa_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError(name + " is an ICLAA adapter, which needs a softmax model: " + error.what());
    }
    ICLAB_INPUT_CHECK(adapter.model_fingerprint == model_fingerprint(model),
                      name << " was made for the model with fingerprint " << adapter.model_fingerprint << ", this model's is "
                           << model_fingerprint(model));
    ICLAB_INPUT_CHECK(adapter.layers == model.spec().layers && adapter.heads == model.spec().heads &&
                          adapter.head_dim == model.spec().head_dim(),
                      name << " has the shapes of another model");
}

}  // namespace iclab::icl
