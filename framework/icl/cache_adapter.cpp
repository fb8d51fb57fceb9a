#include "framework/icl/cache_adapter.hpp"

#include <cmath>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::icl {

namespace {

constexpr const char* kCacheFormat = "iclab prompt cache adapter";
constexpr std::int64_t kCacheFormatVersion = 1;

bool known_selection(const std::string& s) { return s == "exact" || s == "recent" || s == "heavy"; }

std::string cache_layer_path(std::size_t l, const char* what) { return "/cache/blocks." + std::to_string(l) + "." + what; }

// One layer's keys or values as stored: (H, K, D), heads concatenated.
std::vector<double> layer_array(const CacheAdapter& adapter, std::size_t l, bool values) {
    std::vector<double> out;
    for (const auto& head : adapter.terms[l]) {
        const auto& x = values ? head.cache_values : head.cache_keys;
        out.insert(out.end(), x.begin(), x.end());
    }
    return out;
}

// "fnv1a64:<hex>" over the format, every attribute that changes what the adapter computes and every stored value.
std::string content_checksum(const CacheAdapter& a) {
    Fnv1a64 hash;
    const auto mix_values = [&](const auto& values) {
        hash.mix_count(values.size());
        if (!values.empty()) hash.mix(values.data(), values.size() * sizeof(values[0]));
    };
    hash.mix_string(kCacheFormat);
    hash.mix(&kCacheFormatVersion, sizeof kCacheFormatVersion);
    hash.mix_string(a.selection);
    hash.mix_count(a.keep);
    hash.mix_string(a.model_fingerprint);
    hash.mix_count(a.layers);
    hash.mix_count(a.heads);
    hash.mix_count(a.head_dim);
    hash.mix_count(a.learned_positions ? 1 : 0);
    mix_values(a.prompt);
    hash.mix_string(a.prompt_text);
    for (std::size_t l = 0; l < a.layers; ++l) {
        mix_values(layer_array(a, l, false));
        mix_values(layer_array(a, l, true));
    }
    return "fnv1a64:" + hash.hex();
}

}  // namespace

CacheAdapter cache_convert(model::Transformer<double>& model, const std::vector<std::int32_t>& prompt, std::string prompt_text,
                           const std::string& selection, std::size_t keep) {
    check_iclaa_assumptions(model.spec());
    ICLAB_INPUT_CHECK(known_selection(selection), "a prompt cache is exact, recent or heavy, not '" << selection << "'");
    const std::size_t M = prompt.size();
    ICLAB_INPUT_CHECK(M > 0, "the prompt is empty");
    if (selection == "exact") keep = M;
    ICLAB_INPUT_CHECK(keep >= 1 && keep <= M, "--keep-tokens " << keep << " must lie in [1, " << M << "] (the prompt's tokens)");
    const model::ModelSpec& spec = model.spec();
    CacheAdapter a;
    a.selection = selection;
    a.keep = keep;
    a.prompt = prompt;
    a.prompt_text = std::move(prompt_text);
    a.model_fingerprint = model_fingerprint(model);
    a.layers = spec.layers;
    a.heads = spec.heads;
    a.head_dim = spec.head_dim();
    a.learned_positions = spec.positions == model::ModelSpec::Positions::learned;
    const PromptKeysValues kv = capture_prompt_keys_values(model, prompt.data(), 1, M);
    a.terms = empty_prompt_terms(spec.layers, spec.heads);
    const CacheSelection which = selection == "exact" ? CacheSelection::all : selection == "recent" ? CacheSelection::recent : CacheSelection::heavy;
    add_cache_terms(a.terms, 0, kv, 0, which, keep, model.rope());
    return a;
}

bool is_cache_adapter_file(const std::filesystem::path& path) {
    if (!std::filesystem::is_regular_file(path)) return false;
    try {
        const io::ResultsReader reader(path);
        return reader.has_attr("/", "format") && reader.read_attr_string("/", "format") == kCacheFormat;
    } catch (const Error&) {
        return false;
    }
}

void write_cache_adapter(const std::filesystem::path& path, const CacheAdapter& a, bool overwrite) {
    ICLAB_CHECK(known_selection(a.selection) && a.layers > 0 && a.terms.size() == a.layers && !a.prompt.empty() && a.keep > 0,
                "an incomplete prompt-cache adapter");
    io::ResultsWriter writer(path, overwrite);  // refuses an existing file unless overwrite
    const std::size_t H = a.heads, K = a.keep, D = a.head_dim;
    for (std::size_t l = 0; l < a.layers; ++l) {
        ICLAB_CHECK(a.terms[l].size() == H, "a prompt-cache adapter layer without one term per head");
        for (const auto& head : a.terms[l]) ICLAB_CHECK(head.cache_length == K && head.features == nullptr, "a cache term of another size");
        writer.write_tensor(cache_layer_path(l, "keys"), layer_array(a, l, false).data(), {H, K, D},
                            {{"layout", "(H, K, D): stored prompt keys, pre-RoPE keys rotated to their offset p - M (RoPE models)"}});
        writer.write_tensor(cache_layer_path(l, "values"), layer_array(a, l, true).data(), {H, K, D}, {{"layout", "(H, K, D): their values"}});
    }
    writer.write_tensor("/prompt_tokens", a.prompt.data(), {a.prompt.size()}, {{"layout", "(M): the prompt's token ids"}});
    writer.set_attr("format", kCacheFormat);
    writer.set_attr("format_version", kCacheFormatVersion);
    writer.set_attr("content_checksum", content_checksum(a));
    writer.set_attr("exact", a.selection == "exact" ? "true" : "false");
    writer.set_attr("selection", a.selection);
    writer.set_attr("keep_tokens", a.keep);
    writer.set_attr("prompt_length", a.prompt.size());
    writer.set_attr("prompt_text", a.prompt_text);
    writer.set_attr("model_fingerprint", a.model_fingerprint);
    writer.set_attr("model_layers", a.layers);
    writer.set_attr("model_heads", a.heads);
    writer.set_attr("head_dim", a.head_dim);
    writer.set_attr("learned_positions", static_cast<std::int64_t>(a.learned_positions ? 1 : 0));
    writer.set_attr("cache_bytes_fp32", a.bytes());
    io::write_provenance(writer);
    writer.commit();
}

CacheAdapter read_cache_adapter(const std::filesystem::path& path) {
    const std::string file = path.string();
    ICLAB_INPUT_CHECK(is_cache_adapter_file(path), file << " is not a prompt-cache adapter (iclab convert --method exact|recent|heavy)");
    const io::ResultsReader reader(path);
    const auto present = [&](const char* name) {
        ICLAB_INPUT_CHECK(reader.has_attr("/", name), file << ": the root attribute " << name << " is missing");
        return name;
    };
    const std::int64_t version = reader.read_attr_int64("/", present("format_version"));
    ICLAB_INPUT_CHECK(version == kCacheFormatVersion, file << ": prompt-cache adapter format version " << version << ", this iclab reads " << kCacheFormatVersion);
    const auto count = [&](const char* name) {
        const std::int64_t v = reader.read_attr_int64("/", present(name));
        ICLAB_INPUT_CHECK(v > 0 && v < (1 << 24), file << ": attribute " << name << " = " << v << " is out of range");
        return static_cast<std::size_t>(v);
    };
    CacheAdapter a;
    a.selection = reader.read_attr_string("/", present("selection"));
    ICLAB_INPUT_CHECK(known_selection(a.selection), file << ": attribute selection = '" << a.selection << "' is not exact, recent or heavy");
    a.keep = count("keep_tokens");
    a.layers = count("model_layers");
    a.heads = count("model_heads");
    a.head_dim = count("head_dim");
    a.model_fingerprint = reader.read_attr_string("/", present("model_fingerprint"));
    a.prompt_text = reader.read_attr_string("/", present("prompt_text"));
    const std::int64_t learned = reader.read_attr_int64("/", present("learned_positions"));
    ICLAB_INPUT_CHECK(learned == 0 || learned == 1, file << ": attribute learned_positions = " << learned << " is not 0 or 1");
    a.learned_positions = learned == 1;
    ICLAB_INPUT_CHECK(reader.has("/prompt_tokens"), file << ": the dataset /prompt_tokens (the prompt's token ids) is missing");
    const io::TensorData<std::int32_t> prompt = reader.read_int32("/prompt_tokens");
    ICLAB_INPUT_CHECK(prompt.shape.size() == 1 && !prompt.values.empty(), file << ": /prompt_tokens is not a non-empty 1-D list of tokens");
    a.prompt = prompt.values;
    for (std::size_t i = 0; i < a.prompt.size(); ++i)
        ICLAB_INPUT_CHECK(a.prompt[i] >= 0, file << ": /prompt_tokens[" << i << "] = " << a.prompt[i] << " is not a token id");
    const std::size_t M = a.prompt.size();
    ICLAB_INPUT_CHECK(count("prompt_length") == M, file << ": attribute prompt_length differs from the " << M << " tokens of /prompt_tokens");
    ICLAB_INPUT_CHECK(a.keep <= M && (a.selection != "exact" || a.keep == M),
                      file << ": attribute keep_tokens = " << a.keep << " does not fit a " << a.selection << " cache of a " << M << "-token prompt");
    const std::size_t L = a.layers, H = a.heads, K = a.keep, D = a.head_dim;
    ICLAB_INPUT_CHECK(reader.has("/cache") && reader.list("/cache").size() == 2 * L,
                      file << ": attribute model_layers = " << L << " but /cache holds "
                           << (reader.has("/cache") ? reader.list("/cache").size() : 0) << " datasets, not 2 per layer");
    a.terms = empty_prompt_terms(L, H);
    for (std::size_t l = 0; l < L; ++l) {
        std::vector<double> parts[2];
        for (int which = 0; which < 2; ++which) {
            const std::string name = cache_layer_path(l, which == 0 ? "keys" : "values");
            ICLAB_INPUT_CHECK(reader.has(name), file << ": " << name << " is missing (model_layers = " << L << ")");
            auto t = reader.read_tensor_double(name);
            ICLAB_INPUT_CHECK(t.shape == (std::vector<std::size_t>{H, K, D}), file << ": " << name << " does not have the shape (model_heads, keep_tokens, head_dim)");
            for (std::size_t i = 0; i < t.values.size(); ++i)
                ICLAB_INPUT_CHECK(std::isfinite(t.values[i]), file << ": " << name << " holds " << t.values[i] << " at index " << i << " (values must be finite)");
            parts[which] = std::move(t.values);
        }
        for (std::size_t h = 0; h < H; ++h) {
            nn::SoftmaxPromptHead<double>& head = a.terms[l][h];
            head.cache_length = K;
            head.cache_keys.assign(parts[0].begin() + static_cast<std::ptrdiff_t>(h * K * D), parts[0].begin() + static_cast<std::ptrdiff_t>((h + 1) * K * D));
            head.cache_values.assign(parts[1].begin() + static_cast<std::ptrdiff_t>(h * K * D), parts[1].begin() + static_cast<std::ptrdiff_t>((h + 1) * K * D));
        }
    }
    const std::string recorded = reader.read_attr_string("/", present("content_checksum"));
    const std::string computed = content_checksum(a);
    ICLAB_INPUT_CHECK(recorded == computed, file << ": its contents do not match its recorded content_checksum " << recorded << " (they give "
                                                 << computed << "): the file was changed after iclab convert wrote it");
    return a;
}

void check_cache_adapter(const model::Transformer<double>& model, const CacheAdapter& adapter, const std::string& name) {
    try {
        check_iclaa_assumptions(model.spec());
    } catch (const InputError& error) {
        throw InputError(name + " is a prompt-cache adapter, which needs a softmax model: " + error.what());
    }
    ICLAB_INPUT_CHECK(adapter.model_fingerprint == model_fingerprint(model),
                      name << " was made for the model with fingerprint " << adapter.model_fingerprint << ", this model's is " << model_fingerprint(model));
    const model::ModelSpec& spec = model.spec();
    ICLAB_INPUT_CHECK(adapter.layers == spec.layers && adapter.heads == spec.heads && adapter.head_dim == spec.head_dim() &&
                          adapter.learned_positions == (spec.positions == model::ModelSpec::Positions::learned),
                      name << " has the shapes of another model");
    ICLAB_INPUT_CHECK(adapter.input_position_start() < spec.max_seq_len,
                      name << ": its prompt of " << adapter.prompt.size() << " tokens fills the model's context of " << spec.max_seq_len);
    for (std::size_t i = 0; i < adapter.prompt.size(); ++i)
        ICLAB_INPUT_CHECK(static_cast<std::size_t>(adapter.prompt[i]) < spec.vocab,
                          name << ": /prompt_tokens[" << i << "] = " << adapter.prompt[i] << " is outside the model's vocabulary (V = " << spec.vocab << ")");
}

}  // namespace iclab::icl
