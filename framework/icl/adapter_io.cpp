// ICLCA adapter files (adapter_file.hpp, docs/adapter_format.md): writing and reading, apart from applying them to a model
// (adapter_file.cpp) so that the reader links without the model (tests/fuzz/fuzz_adapter_reader.cpp).
#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::icl {

namespace {

constexpr const char* kFormat = "iclab adapter";
constexpr std::int64_t kFormatVersion = 1;

std::string bias_path(std::size_t layer, const char* which) {
    return "/adapter/blocks." + std::to_string(layer) + ".attn." + which;
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
    ICLAB_INPUT_CHECK(std::filesystem::is_regular_file(path), "adapter file " << path.string() << " does not exist or is not a file");
    const io::ResultsReader reader(path);
    const std::string file = path.string();
    ICLAB_INPUT_CHECK(reader.has_attr("/", "format") && reader.read_attr_string("/", "format") == kFormat,
                      file << " is not an iclab adapter file (no root attribute format = '" << kFormat
                           << "'; adapters are written by iclab convert)");
    const auto text_attr = [&](const char* name) {
        ICLAB_INPUT_CHECK(reader.has_attr("/", name), file << ": the root attribute " << name << " is missing");
        return reader.read_attr_string("/", name);
    };
    // Counts are bounded so that no product of them overflows or allocates beyond what the file stores.
    const auto count_attr = [&](const char* name) {
        ICLAB_INPUT_CHECK(reader.has_attr("/", name), file << ": the root attribute " << name << " is missing");
        const std::int64_t value = reader.read_attr_int64("/", name);
        ICLAB_INPUT_CHECK(value >= 0 && value < (std::int64_t{1} << 24), file << ": attribute " << name << " = " << value << " is out of range");
        return static_cast<std::size_t>(value);
    };
    const std::int64_t version = reader.read_attr_int64("/", "format_version");
    ICLAB_INPUT_CHECK(version == kFormatVersion, file << " is an adapter file of format version " << version << "; this iclab reads version "
                                                      << kFormatVersion);
    Adapter adapter;
    adapter.model_fingerprint = text_attr("model_fingerprint");
    adapter.prompt_text = text_attr("prompt_text");
    adapter.source = text_attr("source");
    adapter.layers = count_attr("model_layers");
    adapter.heads = count_attr("model_heads");
    adapter.feature_dim = count_attr("feature_dim");
    adapter.head_dim = count_attr("head_dim");
    adapter.model_parameter_count = count_attr("model_parameter_count");
    const std::size_t L = adapter.layers, H = adapter.heads, F = adapter.feature_dim, D = adapter.head_dim;
    ICLAB_INPUT_CHECK(L > 0 && H > 0 && F > 0 && D > 0, file << ": model_layers, model_heads, feature_dim and head_dim must be positive");
    // /adapter holds exactly the two biases of each of the L layers: an edited model_layers is named, not a missing dataset.
    ICLAB_INPUT_CHECK(reader.has("/adapter") && reader.list("/adapter").size() == 2 * L,
                      file << ": attribute model_layers = " << L << " but /adapter holds "
                           << (reader.has("/adapter") ? reader.list("/adapter").size() : 0) << " bias datasets (2 per layer)");
    for (std::size_t l = 0; l < L; ++l) {
        for (const char* which : {"b_kv", "b_d"})
            ICLAB_INPUT_CHECK(reader.has(bias_path(l, which)), file << ": " << bias_path(l, which) << " is missing (model_layers = " << L << ")");
        auto b_kv = reader.read_tensor_double(bias_path(l, "b_kv"));
        auto b_d = reader.read_tensor_double(bias_path(l, "b_d"));
        ICLAB_INPUT_CHECK(b_kv.shape == (std::vector<std::size_t>{H, F, D}), file << ": " << bias_path(l, "b_kv") << " does not have the shape (H, F, D) = ("
                                                                               << H << ", " << F << ", " << D << ")");
        ICLAB_INPUT_CHECK(b_d.shape == (std::vector<std::size_t>{H, F}), file << ": " << bias_path(l, "b_d") << " does not have the shape (H, F) = ("
                                                                            << H << ", " << F << ")");
        for (const auto* tensor : {&b_kv, &b_d}) {
            const auto bad = std::find_if(tensor->values.begin(), tensor->values.end(), [](double x) { return !std::isfinite(x); });
            ICLAB_INPUT_CHECK(bad == tensor->values.end(), file << ": " << bias_path(l, tensor == &b_kv ? "b_kv" : "b_d") << " holds " << *bad
                                                                << " at index " << (bad - tensor->values.begin()) << " (biases must be finite)");
        }
        adapter.biases.b_kv.push_back(std::move(b_kv.values));
        adapter.biases.b_d.push_back(std::move(b_d.values));
    }
    ICLAB_INPUT_CHECK(reader.has("/prompt_tokens"), file << ": the dataset /prompt_tokens (the prompt's token ids) is missing");
    const io::TensorData<std::int32_t> prompt = reader.read_int32("/prompt_tokens");
    ICLAB_INPUT_CHECK(prompt.shape.size() == 1 && !prompt.values.empty(), file << ": /prompt_tokens is not a non-empty 1-D list of tokens");
    adapter.prompt = prompt.values;
    for (std::size_t i = 0; i < adapter.prompt.size(); ++i)
        ICLAB_INPUT_CHECK(adapter.prompt[i] >= 0, file << ": /prompt_tokens[" << i << "] = " << adapter.prompt[i] << " is not a token id");
    ICLAB_INPUT_CHECK(adapter.prompt.size() == count_attr("prompt_length"),
                      file << ": attribute prompt_length = " << count_attr("prompt_length") << " differs from the "
                           << adapter.prompt.size() << " tokens of /prompt_tokens");
    const std::size_t chain_length = count_attr("base_chain_length");
    ICLAB_INPUT_CHECK(chain_length == 0 || reader.is_table("/base_chain"),
                      file << ": attribute base_chain_length = " << chain_length << " but the table /base_chain is missing");
    if (chain_length > 0) {
        const io::Table chain = reader.read_table("/base_chain");  // every column of one length, checked
        ICLAB_INPUT_CHECK(chain.rows == chain_length,
                          file << ": /base_chain has " << chain.rows << " rows, attribute base_chain_length = " << chain_length);
        const auto& fingerprints = chain.strings("adapter_fingerprint");
        const auto lengths = chain.numbers("prompt_length");
        const auto& texts = chain.strings("prompt_text");
        const auto& files = chain.strings("file");
        for (std::size_t i = 0; i < chain_length; ++i) {
            ICLAB_INPUT_CHECK(lengths[i] >= 1 && lengths[i] < 1e9, file << ": /base_chain/prompt_length[" << i << "] = " << lengths[i] << " is out of range");
            adapter.base_chain.push_back(AdapterLink{fingerprints[i], static_cast<std::size_t>(lengths[i]), texts[i], files[i]});
        }
    }
    // adapter_fingerprint is the adapter's checksum: format, model fingerprint, base chain, prompt tokens and every bias.
    const std::string recorded = text_attr("adapter_fingerprint");
    ICLAB_INPUT_CHECK(adapter.fingerprint() == recorded,
                      file << ": its contents do not match its recorded adapter_fingerprint " << recorded << " (they give "
                           << adapter.fingerprint() << "): the file was changed after iclab convert wrote it");
    return adapter;
}

}  // namespace iclab::icl
