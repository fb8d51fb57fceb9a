#include "framework/run/gpt2_checkpoint.hpp"

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/progress.hpp"
#include "framework/io/json.hpp"
#include "framework/io/output_path.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/io/safetensors.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/text/tokenizer_files.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxConfigJson = 1 << 20;
constexpr double kGpt2LayerNormEps = 1e-5;  // what ModelSpec::layernorm_eps is (not a config key)

// One tensor in both namings. transpose: the HF tensor is the transpose of iclab's (untied lm_head.weight only).
struct TensorName {
    std::string hf, iclab;
    std::vector<std::size_t> hf_shape;
    bool transpose = false;
};

std::vector<TensorName> gpt2_tensor_names(const Gpt2Config& g) {
    const std::size_t C = g.width;
    std::vector<TensorName> names{{"wte.weight", "embedding.wte", {g.vocab, C}}, {"wpe.weight", "position_embedding", {g.positions, C}}};
    for (std::size_t l = 0; l < g.layers; ++l) {
        const std::string h = "h." + std::to_string(l) + ".", b = "blocks." + std::to_string(l) + ".";
        const std::vector<TensorName> block{
            {h + "ln_1.weight", b + "ln1.gamma", {C}},          {h + "ln_1.bias", b + "ln1.beta", {C}},
            {h + "attn.c_attn.weight", b + "attn.w_qkv", {C, 3 * C}}, {h + "attn.c_attn.bias", b + "attn.b_qkv", {3 * C}},
            {h + "attn.c_proj.weight", b + "attn.w_o", {C, C}}, {h + "attn.c_proj.bias", b + "attn.b_o", {C}},
            {h + "ln_2.weight", b + "ln2.gamma", {C}},          {h + "ln_2.bias", b + "ln2.beta", {C}},
            {h + "mlp.c_fc.weight", b + "mlp.w_fc", {C, 4 * C}}, {h + "mlp.c_fc.bias", b + "mlp.b_fc", {4 * C}},
            {h + "mlp.c_proj.weight", b + "mlp.w_proj", {4 * C, C}}, {h + "mlp.c_proj.bias", b + "mlp.b_proj", {C}}};
        names.insert(names.end(), block.begin(), block.end());
    }
    names.push_back({"ln_f.weight", "final_norm.gamma", {C}});
    names.push_back({"ln_f.bias", "final_norm.beta", {C}});
    if (!g.tie) names.push_back({"lm_head.weight", "unembedding.w", {g.vocab, C}, true});
    return names;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
    std::string text;
    for (std::size_t extent : shape) text += (text.empty() ? "" : ", ") + std::to_string(extent);
    return "[" + text + "]";
}

std::size_t positive_key(const io::JsonValue& root, const std::string& key, std::int64_t max, const std::string& what) {
    const std::int64_t value = root.at(key, what).as_int(what + "." + key);
    ICLAB_INPUT_CHECK(value >= 1 && value <= max, what << ": " << key << " is " << value << " (must be in [1, " << max << "])");
    return static_cast<std::size_t>(value);
}

// Refuses `key` when present with another value than the one iclab implements.
void refuse_bool(const io::JsonValue& root, const std::string& key, bool implemented, const std::string& what) {
    const io::JsonValue* value = root.find(key);
    if (value == nullptr || value->is_null()) return;
    ICLAB_INPUT_CHECK(value->as_bool(what + "." + key) == implemented,
                      what << ": " << key << ": " << (implemented ? "false" : "true") << " is not implemented (iclab's GPT-2 has "
                           << key << ": " << (implemented ? "true" : "false") << ")");
}

void write_text(const fs::path& path, const std::string& text) {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << text;
    ICLAB_CHECK(file.good(), "cannot write " << path.string());
}

// Copies every GPT-2 tensor of the file into the model, after checking names and shapes against config.json
// (before anything large is allocated). Tensor names may carry the "transformer." prefix.
void load_gpt2_tensors(io::SafetensorsReader& reader, const Gpt2Config& g, model::Transformer<float>* model) {
    const std::string what = reader.path().string();
    std::map<std::string, std::string> file_name;  // unprefixed -> name in the file
    std::map<std::string, bool> buffers;
    for (std::size_t l = 0; l < g.layers; ++l)
        for (const char* suffix : {".attn.bias", ".attn.masked_bias"}) buffers["h." + std::to_string(l) + suffix] = true;
    const auto names = gpt2_tensor_names(g);
    std::map<std::string, const TensorName*> by_hf;
    for (const auto& name : names) by_hf[name.hf] = &name;
    for (const auto& tensor : reader.index().tensors) {
        const std::string prefix = "transformer.";
        const std::string key = tensor.name.rfind(prefix, 0) == 0 ? tensor.name.substr(prefix.size()) : tensor.name;
        ICLAB_INPUT_CHECK(file_name.emplace(key, tensor.name).second,
                          what << ": tensor '" << tensor.name << "' appears twice (with and without the transformer. prefix)");
        if (buffers.count(key) || (key == "lm_head.weight" && g.tie)) continue;
        ICLAB_INPUT_CHECK(by_hf.count(key), what << ": tensor '" << tensor.name << "' is not part of GPT-2 with n_layer " << g.layers
                                                 << " (config.json)");
    }
    const auto checked = [&](const std::string& hf, const std::vector<std::size_t>& shape) -> const io::SafetensorsTensor& {
        ICLAB_INPUT_CHECK(file_name.count(hf), what << ": no tensor '" << hf << "' (config.json: n_layer " << g.layers
                                                    << (g.tie ? "" : ", tie_word_embeddings false") << ")");
        const io::SafetensorsTensor& tensor = *reader.index().find(file_name.at(hf));
        ICLAB_INPUT_CHECK(tensor.shape == shape, what << ": tensor '" << tensor.name << "' has shape " << shape_text(tensor.shape)
                                                      << " but config.json (n_embd " << g.width << ", n_positions " << g.positions
                                                      << ", vocab_size " << g.vocab << ") needs " << shape_text(shape));
        return tensor;
    };
    for (const auto& name : names) (void)checked(name.hf, name.hf_shape);
    if (g.tie && file_name.count("lm_head.weight")) (void)checked("lm_head.weight", {g.vocab, g.width});
    if (model == nullptr) return;
    for (const auto& name : names) {
        const std::vector<float> values = reader.read(file_name.at(name.hf));
        float* target = model->param(name.iclab);
        if (!name.transpose) {
            std::copy(values.begin(), values.end(), target);
        } else {  // lm_head.weight (V, C) -> unembedding.w (C, V)
            const std::size_t V = name.hf_shape[0], C = name.hf_shape[1];
            for (std::size_t v = 0; v < V; ++v)
                for (std::size_t c = 0; c < C; ++c) target[c * V + v] = values[v * C + c];
        }
    }
    if (g.tie && file_name.count("lm_head.weight")) {
        const std::vector<float> head = reader.read(file_name.at("lm_head.weight"));
        const float* wte = model->param("embedding.wte");
        for (std::size_t i = 0; i < head.size(); ++i)
            ICLAB_INPUT_CHECK(head[i] == wte[i], what << ": tensor '" << file_name.at("lm_head.weight") << "' differs from wte.weight (at "
                                                      << i << ": " << head[i] << " vs " << wte[i]
                                                      << ") though tie_word_embeddings is true");
    }
}

}  // namespace

Gpt2Config read_gpt2_config(const fs::path& config_json) {
    const std::string what = config_json.string();
    ICLAB_INPUT_CHECK(fs::exists(config_json), what << ": no such file (a Hugging Face GPT-2 folder has config.json)");
    const io::JsonValue root = io::read_json_file(what, kMaxConfigJson);
    (void)root.as_object(what);
    if (const io::JsonValue* type = root.find("model_type"))
        ICLAB_INPUT_CHECK(type->as_string(what + ".model_type") == "gpt2",
                          what << ": model_type is '" << type->as_string(what) << "', not gpt2");
    Gpt2Config g;
    g.layers = positive_key(root, "n_layer", 256, what);
    g.width = positive_key(root, "n_embd", 65536, what);
    g.heads = positive_key(root, "n_head", 1024, what);
    g.positions = positive_key(root, "n_positions", 1 << 20, what);
    g.vocab = positive_key(root, "vocab_size", 1 << 24, what);
    ICLAB_INPUT_CHECK(g.width % g.heads == 0, what << ": n_embd " << g.width << " is not divisible by n_head " << g.heads);
    if (const io::JsonValue* n_ctx = root.find("n_ctx"))
        ICLAB_INPUT_CHECK(n_ctx->is_null() || n_ctx->as_int(what + ".n_ctx") == static_cast<std::int64_t>(g.positions),
                          what << ": n_ctx differs from n_positions " << g.positions << " (not implemented)");
    if (const io::JsonValue* activation = root.find("activation_function"))
        ICLAB_INPUT_CHECK(activation->as_string(what + ".activation_function") == "gelu_new",
                          what << ": activation_function '" << activation->as_string(what)
                               << "' is not implemented (iclab's GELU is the tanh form, gelu_new)");
    if (const io::JsonValue* eps = root.find("layer_norm_epsilon"))
        ICLAB_INPUT_CHECK(eps->as_double(what + ".layer_norm_epsilon") == kGpt2LayerNormEps,
                          what << ": layer_norm_epsilon " << eps->as_double(what) << " is not implemented (iclab uses 1e-5)");
    if (const io::JsonValue* inner = root.find("n_inner"))
        ICLAB_INPUT_CHECK(inner->is_null() || inner->as_int(what + ".n_inner") == static_cast<std::int64_t>(4 * g.width),
                          what << ": n_inner other than 4 n_embd (" << 4 * g.width << ") is not implemented");
    if (const io::JsonValue* tie = root.find("tie_word_embeddings")) g.tie = tie->as_bool(what + ".tie_word_embeddings");
    refuse_bool(root, "scale_attn_weights", true, what);
    refuse_bool(root, "scale_attn_by_inverse_layer_idx", false, what);
    refuse_bool(root, "reorder_and_upcast_attn", false, what);
    refuse_bool(root, "add_cross_attention", false, what);
    return g;
}

std::string gpt2_lm_config_yaml(const Gpt2Config& g) {
    std::ostringstream yaml;
    yaml << "experiment: lm\ntask:\n  vocab_size: " << g.vocab << "\n  context_length: " << g.positions << "\nmodel:\n"
         << "  dtype: float32\n  layers: " << g.layers << "\n  width: " << g.width << "\n  heads: " << g.heads
         << "\n  mlp: true\n  mlp_ratio: 4\n  attention: softmax\n  rope: false\n  mask: causal\n"
         << "  position_embedding: learned\n  layernorm: true\n  final_layernorm: true\n  residual: true\n"
         << "  output_projection: true\n  qkv_bias: true\n  shared_layers: false\n  tie_embeddings: " << (g.tie ? "true" : "false")
         << "\n";
    return yaml.str();
}

Gpt2Config gpt2_config_of(const model::ModelSpec& s) {
    const auto need = [](bool ok, const char* key, const char* gpt2) {
        ICLAB_INPUT_CHECK(ok, "not a GPT-2-shaped model: " << key << " must be " << gpt2 << " to export as GPT-2");
    };
    need(s.input == model::ModelSpec::Input::tokens, "the input", "tokens");
    need(s.attention == model::ModelSpec::Attention::softmax, "model.attention", "softmax");
    need(!s.rope, "model.rope", "false");
    need(s.positions == model::ModelSpec::Positions::learned, "model.position_embedding", "learned");
    need(s.mask == nn::MaskKind::causal && !s.isolate_queries, "model.mask (model.isolate_queries)", "causal (false)");
    need(s.layernorm && s.final_layernorm, "model.layernorm and model.final_layernorm", "true");
    need(s.layernorm_eps == kGpt2LayerNormEps, "the LayerNorm eps", "1e-5");
    need(s.residual && s.output_projection && s.qkv_bias, "model.residual, model.output_projection and model.qkv_bias", "true");
    need(s.mlp && s.mlp_ratio == 4, "model.mlp (model.mlp_ratio)", "true (4)");
    need(!s.shared_layers, "model.shared_layers", "false");
    Gpt2Config g;
    g.layers = s.layers;
    g.width = s.width;
    g.heads = s.heads;
    g.positions = s.max_seq_len;
    g.vocab = s.vocab;
    g.tie = s.tie_embeddings;
    return g;
}

void import_gpt2(const fs::path& dir, const fs::path& run_dir, const Catalog& catalog, bool overwrite, bool quiet) {
    const std::string who = "iclab import gpt2";
    ICLAB_INPUT_CHECK(fs::is_directory(dir), who << ": " << dir.string() << " is not a folder");
    const io::OutputTarget target = io::check_output(run_dir, io::OutputKind::folder, overwrite, who + " --out", {dir});
    const Gpt2Config g = read_gpt2_config(dir / "config.json");
    const std::vector<text::TokenizerFile> tokenizer = text::read_tokenizer_files(dir, who);  // parsed before anything is written
    const fs::path weights = dir / "model.safetensors";
    ICLAB_INPUT_CHECK(fs::exists(weights), who << ": " << weights.string() << " does not exist"
                                               << (fs::exists(dir / "pytorch_model.bin") ? " (pytorch_model.bin is a pickle: iclab does not load pickles; "
                                                                                           "convert it to safetensors)"
                                                                                         : ""));
    io::SafetensorsReader reader(weights);
    load_gpt2_tensors(reader, g, nullptr);  // names and shapes, before the model is allocated
    {
        io::StagedFolder staged(target, "a run imported from a GPT-2 folder (iclab import gpt2)");
        const fs::path& staging = staged.path();
        const fs::path config_path = staging / kConfigFile;
        write_text(config_path, gpt2_lm_config_yaml(g));
        const config::Config cfg = catalog.load_config(config_path.string(), {});
        const std::string resolved = cfg.to_yaml();
        write_text(config_path, resolved);
        Progress progress(who, quiet, nullptr, Progress::lazy);  // a stage that lasts > 3 s says so (issue 44)
        progress.stage("reading " + weights.string());
        model::Transformer<float> model(lm_model_spec(cfg), model::Transformer<float>::Mode::inference);
        load_gpt2_tensors(reader, g, &model);
        progress.stage("writing the run's checkpoint (" + std::to_string(model.parameter_count()) + " parameters, with checksums)");
        const std::string now = io::now_iso8601();
        io::ResultsWriter writer(staging / kResultsFile);
        writer.set_attr("experiment", "lm");
        writer.set_attr("config", resolved);
        writer.set_attr("config_source", fs::absolute(dir / "config.json").string());
        writer.set_attr("overrides", "");
        writer.set_attr("seed", static_cast<std::int64_t>(0));
        writer.set_attr("start_time", now);
        writer.set_attr("end_time", now);
        writer.set_attr("imported_from", fs::absolute(dir).string());
        writer.set_attr("parameter_count", model.parameter_count());
        io::write_provenance(writer);
        write_checkpoint(writer, model);
        writer.commit();
        write_text(staging / kLogFile, "run " + run_dir.string() + "\nimported " + now + " from " + fs::absolute(dir).string() +
                                           " (iclab import gpt2)\n");
        text::write_tokenizer_files(tokenizer, staging / kTokenizerFolder);
        progress.stage("");  // done: nothing more to announce
        if (!quiet)
            std::printf("imported GPT-2 (%zu layers, width %zu, %zu heads, %zu positions, vocabulary %zu, %s embeddings): "
                        "%zu parameters; tokenizer: %s\n",
                        g.layers, g.width, g.heads, g.positions, g.vocab, g.tie ? "tied" : "untied", model.parameter_count(),
                        tokenizer.empty() ? "none in the folder" : (tokenizer[0].name + " + " + tokenizer[1].name).c_str());
        staged.commit();
    }
    if (!quiet) std::printf("wrote %s\n", run_dir.string().c_str());
}

void export_gpt2(const fs::path& run_dir, const fs::path& out_dir, const Catalog& catalog, bool overwrite, bool quiet) {
    const std::string who = "iclab export";
    Progress progress(who, quiet, nullptr, Progress::lazy);  // a stage that lasts > 3 s says so (issue 44)
    progress.stage("loading the parameters of " + run_dir.string());
    LmRun<float> run = load_lm_run<float>(run_dir, catalog, who);
    const io::OutputTarget target = io::check_output(out_dir, io::OutputKind::folder, overwrite, who + " --out", {run_dir, run.tokenizer_dir()});
    const model::Transformer<float>& model = *run.model;
    Gpt2Config g;
    try {
        g = gpt2_config_of(model.spec());
    } catch (const InputError& error) {
        throw InputError(who + ": " + run_dir.string() + " is " + error.what());
    }
    const fs::path tokenizer_dir = run.tokenizer_dir();
    const std::vector<text::TokenizerFile> tokenizer =
        tokenizer_dir.empty() ? std::vector<text::TokenizerFile>{} : text::read_tokenizer_files(tokenizer_dir, who);
    {
        io::StagedFolder staged(target, "a Hugging Face GPT-2 folder (iclab export)");
        const fs::path& staging = staged.path();
        std::ostringstream json;
        json << "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n  \"n_layer\": " << g.layers
             << ",\n  \"n_embd\": " << g.width << ",\n  \"n_head\": " << g.heads << ",\n  \"n_positions\": " << g.positions
             << ",\n  \"n_ctx\": " << g.positions << ",\n  \"vocab_size\": " << g.vocab
             << ",\n  \"n_inner\": null,\n  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
             << "  \"tie_word_embeddings\": " << (g.tie ? "true" : "false")
             << ",\n  \"scale_attn_weights\": true,\n  \"scale_attn_by_inverse_layer_idx\": false,\n"
             << "  \"reorder_and_upcast_attn\": false,\n  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
             << "  \"bos_token_id\": " << g.vocab - 1 << ",\n  \"eos_token_id\": " << g.vocab - 1 << "\n}\n";
        write_text(staging / "config.json", json.str());
        std::vector<io::SafetensorsOutput> tensors;
        std::vector<float> head;  // untied: lm_head.weight (V, C) = unembedding.wᵀ
        for (const auto& name : gpt2_tensor_names(g)) {
            const float* values = model.param(name.iclab);
            if (name.transpose) {
                const std::size_t V = name.hf_shape[0], C = name.hf_shape[1];
                head.resize(V * C);
                for (std::size_t v = 0; v < V; ++v)
                    for (std::size_t c = 0; c < C; ++c) head[v * C + c] = values[c * V + v];
                values = head.data();
            }
            tensors.push_back({name.hf, name.hf_shape, values});
        }
        progress.stage("writing " + (out_dir / "model.safetensors").string());
        io::write_safetensors(staging / "model.safetensors", tensors, {{"format", "pt"}});
        text::write_tokenizer_files(tokenizer, staging);
        staged.commit();
    }
    if (!quiet)
        std::printf("wrote %s: config.json, model.safetensors (%zu tensors, F32)%s\n", out_dir.string().c_str(),
                    gpt2_tensor_names(g).size(), tokenizer.empty() ? "" : (", " + tokenizer[0].name + ", " + tokenizer[1].name).c_str());
}

}  // namespace iclab::run
