#include "framework/icl/adapter_file.hpp"

#include <cstdio>
#include <cstring>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::icl {

namespace {

constexpr const char* kFormat = "iclab adapter";
constexpr std::int64_t kFormatVersion = 1;

std::string bias_path(std::size_t layer, const char* which) {
    return "/adapter/blocks." + std::to_string(layer) + ".attn." + which;
}

// "[] " or "[0123abcd... (M 5), ...]": a chain as shown in error messages.
std::string chain_text(const std::vector<AdapterLink>& chain) {
    if (chain.empty()) return "[] (no adapter)";
    std::ostringstream os;
    os << "[";
    for (std::size_t i = 0; i < chain.size(); ++i) {
        os << (i ? ", " : "") << chain[i].fingerprint << " (M " << chain[i].prompt_length;
        if (!chain[i].file.empty()) os << ", " << chain[i].file;
        os << ")";
    }
    os << "]";
    return os.str();
}

bool same_chain(const std::vector<AdapterLink>& a, const std::vector<AdapterLink>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i].fingerprint != b[i].fingerprint) return false;
    return true;
}

}  // namespace

double Adapter::size_percent() const {
    return model_parameter_count == 0 ? 0.0 : 100.0 * static_cast<double>(parameter_count()) / static_cast<double>(model_parameter_count);
}

std::string Adapter::fingerprint() const {
    Fnv1a64 hash;
    const auto mix = [&](const void* data, std::size_t bytes) { hash.mix(data, bytes); };
    const auto mix_string = [&](const std::string& text) { hash.mix_string(text); };
    const auto mix_count = [&](std::size_t count) { hash.mix_count(count); };
    mix_string(kFormat);
    mix(&kFormatVersion, sizeof kFormatVersion);
    mix_string(model_fingerprint);
    mix_count(base_chain.size());
    for (const auto& link : base_chain) mix_string(link.fingerprint);
    mix_count(prompt.size());
    mix(prompt.data(), prompt.size() * sizeof(std::int32_t));
    mix_count(biases.b_kv.size());
    for (std::size_t l = 0; l < biases.b_kv.size(); ++l) {
        mix_count(biases.b_kv[l].size());
        mix(biases.b_kv[l].data(), biases.b_kv[l].size() * sizeof(double));
        mix_count(biases.b_d[l].size());
        mix(biases.b_d[l].data(), biases.b_d[l].size() * sizeof(double));
    }
    return hash.hex();
}

AdapterLink Adapter::link(const std::string& file) const {
    return AdapterLink{fingerprint(), prompt.size(), prompt_text, file};
}

template <class T>
Adapter make_adapter(const model::Transformer<T>& model, const AttentionBiases<T>& biases, std::vector<std::int32_t> prompt,
                     std::string prompt_text, std::vector<AdapterLink> base_chain) {
    const model::ModelSpec& spec = model.spec();
    ICLAB_CHECK(biases.b_kv.size() == spec.layers && biases.b_d.size() == spec.layers,
                "biases for " << biases.b_kv.size() << " layers, the model has " << spec.layers);
    Adapter adapter;
    for (std::size_t l = 0; l < spec.layers; ++l) {  // a float model's biases are stored exactly as double
        ICLAB_CHECK(biases.b_kv[l].size() == spec.heads * spec.feature_dim() * spec.head_dim() &&
                        biases.b_d[l].size() == spec.heads * spec.feature_dim(),
                    "bias shapes differ from the model's in layer " << l);
        adapter.biases.b_kv.emplace_back(biases.b_kv[l].begin(), biases.b_kv[l].end());
        adapter.biases.b_d.emplace_back(biases.b_d[l].begin(), biases.b_d[l].end());
    }
    adapter.prompt = std::move(prompt);
    adapter.prompt_text = std::move(prompt_text);
    adapter.model_fingerprint = icl::model_fingerprint(model);
    adapter.base_chain = std::move(base_chain);
    adapter.layers = spec.layers;
    adapter.heads = spec.heads;
    adapter.feature_dim = spec.feature_dim();
    adapter.head_dim = spec.head_dim();
    adapter.model_parameter_count = model.parameter_count();
    return adapter;
}

void write_adapter_file(const std::filesystem::path& path, const Adapter& adapter, bool overwrite) {
    ICLAB_CHECK(adapter.biases.b_kv.size() == adapter.layers && adapter.biases.b_d.size() == adapter.layers,
                "adapter with " << adapter.biases.b_kv.size() << " layers of biases, " << adapter.layers << " declared");
    ICLAB_CHECK(!adapter.prompt.empty(), "an adapter without prompt");
    io::ResultsWriter writer(path, overwrite);  // refuses an existing file unless overwrite
    const std::size_t H = adapter.heads, F = adapter.feature_dim, D = adapter.head_dim;
    for (std::size_t l = 0; l < adapter.layers; ++l) {
        ICLAB_CHECK(adapter.biases.b_kv[l].size() == H * F * D && adapter.biases.b_d[l].size() == H * F,
                    "adapter bias shapes differ from (H, F, D) = (" << H << ", " << F << ", " << D << ") in layer " << l);
        writer.write_tensor(bias_path(l, "b_kv"), adapter.biases.b_kv[l].data(), {H, F, D},
                            {{"layout", "(H, F, D): b_KV of paper 000 Eq. 13 per head, the converted b'_KV of Eq. 14"}});
        writer.write_tensor(bias_path(l, "b_d"), adapter.biases.b_d[l].data(), {H, F},
                            {{"layout", "(H, F): b_D of paper 000 Eq. 13 per head, the converted b'_D of Eq. 15"}});
    }
    writer.write_tensor("/prompt_tokens", adapter.prompt.data(), {adapter.prompt.size()},
                        {{"layout", "(M): the prompt's token ids"}});
    std::vector<std::string> fingerprints, texts, files;
    std::vector<std::int64_t> lengths;
    for (const auto& link : adapter.base_chain) {
        fingerprints.push_back(link.fingerprint);
        lengths.push_back(static_cast<std::int64_t>(link.prompt_length));
        texts.push_back(link.prompt_text);
        files.push_back(link.file);
    }
    if (!adapter.base_chain.empty())
        writer.write_columns("/base_chain", {{"adapter_fingerprint", fingerprints},
                                             {"prompt_length", lengths},
                                             {"prompt_text", texts},
                                             {"file", files}});
    writer.set_attr("format", kFormat);
    writer.set_attr("format_version", kFormatVersion);
    writer.set_attr("adapter_fingerprint", adapter.fingerprint());
    writer.set_attr("model_fingerprint", adapter.model_fingerprint);
    writer.set_attr("base_chain_length", adapter.base_chain.size());
    writer.set_attr("prompt_length", adapter.prompt.size());
    writer.set_attr("prompt_text", adapter.prompt_text);
    writer.set_attr("model_layers", adapter.layers);
    writer.set_attr("model_heads", adapter.heads);
    writer.set_attr("feature_dim", adapter.feature_dim);
    writer.set_attr("head_dim", adapter.head_dim);
    writer.set_attr("adapter_parameter_count", adapter.parameter_count());
    writer.set_attr("model_parameter_count", adapter.model_parameter_count);
    writer.set_attr("adapter_percent", adapter.size_percent());
    writer.set_attr("source", adapter.source);
    io::write_provenance(writer);
    writer.commit();
}

Adapter read_adapter_file(const std::filesystem::path& path) {
    ICLAB_INPUT_CHECK(std::filesystem::is_regular_file(path), "adapter file " << path.string() << " does not exist");
    const io::ResultsReader reader(path);
    const auto text_attr = [&](const char* name) { return reader.read_attr_string("/", name); };
    const auto count_attr = [&](const char* name) {
        const std::int64_t value = reader.read_attr_int64("/", name);
        ICLAB_INPUT_CHECK(value >= 0, path.string() << ": attribute " << name << " is negative");
        return static_cast<std::size_t>(value);
    };
    bool is_adapter = false;
    try {
        is_adapter = text_attr("format") == kFormat;
    } catch (const Error&) {
    }
    ICLAB_INPUT_CHECK(is_adapter, path.string() << " is not an iclab adapter file (no root attribute format = '" << kFormat
                                                << "'; adapters are written by iclab convert)");
    const std::int64_t version = reader.read_attr_int64("/", "format_version");
    ICLAB_INPUT_CHECK(version == kFormatVersion, path.string() << " is an adapter file of format version " << version
                                                               << "; this iclab reads version " << kFormatVersion);
    Adapter adapter;
    adapter.model_fingerprint = text_attr("model_fingerprint");
    adapter.prompt_text = text_attr("prompt_text");
    adapter.source = text_attr("source");
    adapter.layers = count_attr("model_layers");
    adapter.heads = count_attr("model_heads");
    adapter.feature_dim = count_attr("feature_dim");
    adapter.head_dim = count_attr("head_dim");
    adapter.model_parameter_count = count_attr("model_parameter_count");
    const std::size_t H = adapter.heads, F = adapter.feature_dim, D = adapter.head_dim;
    for (std::size_t l = 0; l < adapter.layers; ++l) {
        auto b_kv = reader.read_tensor_double(bias_path(l, "b_kv"));
        auto b_d = reader.read_tensor_double(bias_path(l, "b_d"));
        ICLAB_INPUT_CHECK(b_kv.shape == (std::vector<std::size_t>{H, F, D}) && b_d.shape == (std::vector<std::size_t>{H, F}),
                          path.string() << ": the biases of layer " << l << " do not have the shapes (H, F, D) = (" << H
                                        << ", " << F << ", " << D << ") and (H, F)");
        adapter.biases.b_kv.push_back(std::move(b_kv.values));
        adapter.biases.b_d.push_back(std::move(b_d.values));
    }
    adapter.prompt = reader.read_int32("/prompt_tokens").values;
    ICLAB_INPUT_CHECK(adapter.prompt.size() == count_attr("prompt_length"),
                      path.string() << ": prompt_length differs from the number of prompt tokens");
    const std::size_t chain_length = count_attr("base_chain_length");
    if (chain_length > 0) {
        const auto fingerprints = reader.read_column_string("/base_chain/adapter_fingerprint");
        const auto lengths = reader.read_column_int64("/base_chain/prompt_length");
        const auto texts = reader.read_column_string("/base_chain/prompt_text");
        const auto files = reader.read_column_string("/base_chain/file");
        ICLAB_INPUT_CHECK(fingerprints.size() == chain_length && lengths.size() == chain_length && texts.size() == chain_length &&
                              files.size() == chain_length,
                          path.string() << ": /base_chain does not have base_chain_length = " << chain_length << " rows");
        for (std::size_t i = 0; i < chain_length; ++i)
            adapter.base_chain.push_back(AdapterLink{fingerprints[i], static_cast<std::size_t>(lengths[i]), texts[i], files[i]});
    }
    const std::string recorded = text_attr("adapter_fingerprint");
    ICLAB_INPUT_CHECK(adapter.fingerprint() == recorded,
                      path.string() << ": its contents do not match its recorded adapter_fingerprint " << recorded << " (they give "
                                    << adapter.fingerprint() << "): the file was changed after iclab convert wrote it");
    return adapter;
}

template <class T>
void apply_adapter(model::Transformer<T>& model, const Adapter& adapter, const std::vector<AdapterLink>& applied_before,
                   const std::string& name) {
    check_iclca_assumptions(model.spec());
    const std::string model_print = icl::model_fingerprint(model);
    ICLAB_INPUT_CHECK(adapter.model_fingerprint == model_print,
                      "adapter " << name << " was made for the model with fingerprint " << adapter.model_fingerprint
                                 << ", but this model's fingerprint is " << model_print
                                 << (adapter.source.empty() ? "" : " (the adapter was converted from " + adapter.source + ")")
                                 << ": an adapter applies only to the model it was converted on");
    ICLAB_INPUT_CHECK(same_chain(adapter.base_chain, applied_before),
                      "adapter " << name << " (fingerprint " << adapter.fingerprint() << ") was converted on top of the adapters "
                                 << chain_text(adapter.base_chain) << ", but it would be applied after "
                                 << chain_text(applied_before)
                                 << ": give its base adapters first, in the order they were applied when converting");
    const model::ModelSpec& spec = model.spec();
    ICLAB_INPUT_CHECK(adapter.layers == spec.layers && adapter.heads == spec.heads && adapter.feature_dim == spec.feature_dim() &&
                          adapter.head_dim == spec.head_dim(),
                      "adapter " << name << " has the shapes of a model with " << adapter.layers << " layers, " << adapter.heads
                                 << " heads, F " << adapter.feature_dim << ", D " << adapter.head_dim << "; this model has "
                                 << spec.layers << ", " << spec.heads << ", " << spec.feature_dim() << ", " << spec.head_dim());
    AttentionBiases<T> biases;  // a float model takes the double values rounded
    for (std::size_t l = 0; l < adapter.layers; ++l) {
        biases.b_kv.emplace_back(adapter.biases.b_kv[l].begin(), adapter.biases.b_kv[l].end());
        biases.b_d.emplace_back(adapter.biases.b_d[l].begin(), adapter.biases.b_d[l].end());
    }
    write_biases(model, biases);
}

template <class T>
AppliedAdapters apply_adapter_files(model::Transformer<T>& model, const std::vector<std::filesystem::path>& files) {
    AppliedAdapters applied;
    for (const auto& file : files) {
        const Adapter adapter = read_adapter_file(file);
        apply_adapter(model, adapter, applied.chain, file.string());
        applied.chain.push_back(adapter.link(file.string()));
        applied.context.insert(applied.context.end(), adapter.prompt.begin(), adapter.prompt.end());
    }
    return applied;
}

template Adapter make_adapter(const model::Transformer<float>&, const AttentionBiases<float>&, std::vector<std::int32_t>,
                              std::string, std::vector<AdapterLink>);
template Adapter make_adapter(const model::Transformer<double>&, const AttentionBiases<double>&, std::vector<std::int32_t>,
                              std::string, std::vector<AdapterLink>);
template void apply_adapter(model::Transformer<float>&, const Adapter&, const std::vector<AdapterLink>&, const std::string&);
template void apply_adapter(model::Transformer<double>&, const Adapter&, const std::vector<AdapterLink>&, const std::string&);
template AppliedAdapters apply_adapter_files(model::Transformer<float>&, const std::vector<std::filesystem::path>&);
template AppliedAdapters apply_adapter_files(model::Transformer<double>&, const std::vector<std::filesystem::path>&);

}  // namespace iclab::icl
