#include "framework/icl/adapter_file.hpp"

#include <cstdio>
#include <cstring>
#include <sstream>

#include "framework/core/check.hpp"

namespace iclab::icl {

namespace {

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
    for (std::size_t i = 0; i < adapter.prompt.size(); ++i)
        ICLAB_INPUT_CHECK(adapter.prompt[i] >= 0 && static_cast<std::size_t>(adapter.prompt[i]) < spec.vocab,
                          "adapter " << name << ": /prompt_tokens[" << i << "] = " << adapter.prompt[i]
                                     << " is outside the model's vocabulary (V = " << spec.vocab << ")");
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
