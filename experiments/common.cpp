#include "experiments/common.hpp"

#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "framework/io/provenance.hpp"
#include "framework/io/run_dir.hpp"
#include "experiments/registry.hpp"

namespace iclab::experiments {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

void add_model_keys(config::Schema& schema) {
    schema.add_string("model.dtype", "float32", {"float32", "float64"}, "scalar type of parameters and activations")
        .add_int("model.layers", 2, 1, 256, "number of transformer blocks L")
        .add_int("model.width", 64, 2, 65536, "model width C")
        .add_int("model.heads", 2, 1, 1024, "attention heads H (head width D = C / H)")
        .add_bool("model.mlp", true, "GELU MLP after each attention (false: attention-only blocks)")
        .add_int("model.mlp_ratio", 4, 1, 64, "MLP hidden width = mlp_ratio * C")
        .add_string("model.attention", "linear", {"linear", "softmax"},
                    "linearized attention (paper 000 Eq. 13, with model.feature_map) or exact softmax attention "
                    "(scale 1/sqrt(D))")
        .add_string("model.feature_map", "elu1", {"elu1", "identity", "relu", "performer"},
                    "feature map phi of linearized attention (paper 000 Eq. 3): elu(x)+1, identity, max(x,0), or "
                    "performer positive random features exp(W^T(s x) - |s x|^2/2)/sqrt(R) (paper 004 §5.1)")
        .add_int("model.random_features", 64, 2, 1 << 20, "R: performer random features per head (paper 004: 1200)")
        .add_bool("model.orthogonal_features", false,
                  "performer: orthogonal random directions in blocks of D with chi(D) norms (Yu et al. 2016) "
                  "instead of i.i.d. N(0, I)")
        .add_float("model.performer_input_scale", 1.0, 0.0, kInf,
                   "performer: s in phi(x) = exp(W^T(s x) - |s x|^2/2)/sqrt(R), so E[phi(q)^T phi(k)] = exp(s^2 q^T k); "
                   "1 as in paper 004; D^(-1/4) estimates the softmax kernel exp(q^T k / sqrt(D))")
        .add_string("model.normalizer", "kernel", {"kernel", "none"},
                    "kernel: divide by phi(q)^T (sum_j phi(k_j) + b_D) + eps (paper 000 Eq. 13); none: linear "
                    "attention, multiply by model.unnormalized_scale")
        .add_float("model.normalizer_eps", 1e-6, 0.0, 1.0, "eps added to the kernel normalizer (exact under ICLCA)")
        .add_float("model.unnormalized_scale", 0.0, 0.0, kInf,
                   "fixed output scale of linear attention when normalizer = none; 0 means 1/D")
        .add_bool("model.rope", true, "rotary position encoding on phi(q), phi(k) in the numerator (Definition B.1); "
                                      "on q, k for softmax attention")
        .add_string("model.mask", "causal", {"causal", "prefix", "full"},
                    "attention mask: causal (causalLM), prefix (positions of the in-context prefix see each other; "
                    "prefixLM, paper 003), full (every position sees every position)")
        .add_bool("model.isolate_queries", false,
                  "positions after the in-context prefix are queries that see only the prefix and are seen by no "
                  "other position (paper 003 E.1: several queries per sequence)")
        .add_bool("model.query_self", true, "with isolate_queries: a query also sees its own key (paper 003 Fig. 5: false)")
        .add_bool("model.layernorm", true, "pre-norm LayerNorms and the final LayerNorm (false: none, as in LSA)")
        .add_bool("model.residual", true, "residual connections around attention and MLP (paper 004's layer: false)")
        .add_bool("model.output_projection", true, "attention output projection W_o, b_o (LSA: P = W_o)")
        .add_bool("model.qkv_bias", true, "biases of the q, k, v projections")
        .add_bool("model.shared_layers", false, "the same block weights at every depth (paper 003 SL) vs unshared (UL)")
        .add_float("model.rope_base", 10000.0, 1.0, kInf, "RoPE base: theta_p = base^(-2p/D)")
        .add_bool("model.attention_bias_trainable", false,
                  "train b_KV and b_D of Eq. 13 (they always exist, initialized to zero)")
        .add_string("model.attention_bias_d", "free", {"free", "nonnegative"},
                    "trained b_D: free (Eq. 13 as written; the normalizer can cross zero) or nonnegative (projected onto "
                    ">= 0 after every optimizer step, the values real prompts give it; keeps the normalizer positive)")
        .add_float("model.init_std", 0.02, 0.0, 10.0, "std of the normal initialization of weight matrices")
        .add_string("model.attention_form", "auto", {"auto", "quadratic", "recurrent"},
                    "causal attention as the masked quadratic form (Eq. 13) or the recurrent-state form (Eq. 19); "
                    "auto: recurrent when T >= 128 (measured crossover)")
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_int("model.width") % cfg.get_int("model.heads") != 0)
                cfg.fail({"model.width", "model.heads"},
                         "model.width (" + std::to_string(cfg.get_int("model.width")) + ") must be divisible by model.heads (" +
                             std::to_string(cfg.get_int("model.heads")) + ")");
        })
        .add_rule([](const config::Config& cfg) {
            const auto heads = cfg.get_int("model.heads");
            const bool performer = cfg.get_string("model.attention") == "linear" && cfg.get_string("model.feature_map") == "performer";
            if (performer && cfg.get_bool("model.rope") && cfg.get_int("model.random_features") % 2 != 0)
                cfg.fail({"model.rope", "model.random_features"},
                         "RoPE rotates pairs of features: model.random_features must be even, got " +
                             std::to_string(cfg.get_int("model.random_features")));
            if (!performer && heads > 0 && cfg.get_bool("model.rope") && (cfg.get_int("model.width") / heads) % 2 != 0)
                cfg.fail({"model.rope", "model.width", "model.heads"},
                         "RoPE needs an even head width, but model.width / model.heads = " +
                             std::to_string(cfg.get_int("model.width") / heads));
        })
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_string("model.attention") == "linear" && cfg.get_string("model.feature_map") == "identity" &&
                cfg.get_string("model.normalizer") == "kernel")
                cfg.fail({"model.normalizer", "model.feature_map"},
                         "the kernel normalizer needs a non-negative feature map (elu1, relu, performer): with identity "
                         "features phi(q)^T sum phi(k) can be zero or negative; use model.normalizer: none");
        })
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_string("model.attention") == "softmax" && cfg.get_bool("model.attention_bias_trainable"))
                cfg.fail({"model.attention_bias_trainable", "model.attention"},
                         "softmax attention has no b_KV, b_D (they belong to linearized attention, paper 000 Eq. 13)");
        })
        .add_rule([](const config::Config& cfg) {
            const bool plain_causal = cfg.get_string("model.mask") == "causal" && !cfg.get_bool("model.isolate_queries");
            if (cfg.get_string("model.attention_form") == "recurrent" &&
                (!plain_causal || cfg.get_string("model.attention") != "linear"))
                cfg.fail({"model.attention_form", "model.mask", "model.isolate_queries", "model.attention"},
                         "the recurrent form computes causal linearized attention only (model.mask: causal, "
                         "model.isolate_queries: false, model.attention: linear)");
        });
}

void add_train_keys(config::Schema& schema) {
    schema.add_int("train.steps", 1000, 1, 100000000, "optimizer steps")
        .add_int("train.batch_size", 32, 1, 1 << 20, "sequences per step")
        .add_string("train.optimizer", "adamw", {"adamw", "adam", "sgd"}, "optimizer")
        .add_float("train.lr", 1e-3, 0.0, kInf, "peak learning rate")
        .add_string("train.schedule", "warmup_cosine", {"warmup_cosine", "constant"}, "learning-rate schedule")
        .add_int("train.warmup_steps", 100, 0, 100000000, "linear warmup steps (warmup_cosine)")
        .add_float("train.min_lr_ratio", 0.1, 0.0, 1.0, "final lr / peak lr of the cosine decay")
        .add_float("train.beta1", 0.9, 0.0, 1.0, "Adam beta1")
        .add_float("train.beta2", 0.99, 0.0, 1.0, "Adam beta2")
        .add_float("train.eps", 1e-8, 0.0, 1.0, "Adam epsilon")
        .add_float("train.weight_decay", 0.0, 0.0, kInf,
                   "weight decay on matrices (decoupled for adamw, L2 for adam and sgd)")
        .add_float("train.momentum", 0.0, 0.0, 1.0, "SGD momentum")
        .add_float("train.grad_clip", 1.0, 0.0, kInf, "clip the global gradient norm to this (0: off)")
        .add_int("train.checkpoint_every", 500, 0, 100000000,
                 "write <run folder>/checkpoint.h5 (parameters, optimizer and data-stream state) every N steps and "
                 "at the end, for iclab run --resume; 0: only at the end")
        .add_int("eval.every", 100, 1, 100000000, "evaluate on held-out sequences every N steps (and at the end)")
        .add_int("eval.sequences", 256, 1, 1 << 24, "held-out sequences per evaluation (the same ones every time)")
        .add_int("log.every", 50, 1, 100000000, "plain log line every N steps when stderr is not a terminal")
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_string("train.schedule") == "warmup_cosine" && cfg.get_int("train.warmup_steps") >= cfg.get_int("train.steps"))
                cfg.fail({"train.warmup_steps", "train.steps"}, "train.warmup_steps must be smaller than train.steps");
        });
}

void add_output_keys(config::Schema& schema) {
    schema.add_int("seed", 0, 0, std::numeric_limits<std::int64_t>::max(),
                   "seed of every random draw (initialization, data, evaluation set)")
        .add_string_free("output.dir", "results", "folder that receives run folders (relative to the working directory)")
        .add_string_free("output.name", "", "run folder name (empty: <experiment>_<config>[_<overrides>]_seed<k>)")
        .add_bool("output.checkpoint", true, "store the trained parameters in results.h5 /checkpoint");
}

model::ModelSpec model_spec_from_config(const config::Config& cfg, std::size_t vocab, std::size_t max_seq_len) {
    model::ModelSpec spec;
    spec.vocab = vocab;
    spec.width = static_cast<std::size_t>(cfg.get_int("model.width"));
    spec.heads = static_cast<std::size_t>(cfg.get_int("model.heads"));
    spec.layers = static_cast<std::size_t>(cfg.get_int("model.layers"));
    spec.max_seq_len = max_seq_len;
    spec.mlp = cfg.get_bool("model.mlp");
    spec.mlp_ratio = static_cast<std::size_t>(cfg.get_int("model.mlp_ratio"));
    spec.attention = cfg.get_string("model.attention") == "softmax" ? model::ModelSpec::Attention::softmax
                                                                    : model::ModelSpec::Attention::linear;
    spec.feature_map = nn::feature_map_from_name(cfg.get_string("model.feature_map"));
    spec.random_features = static_cast<std::size_t>(cfg.get_int("model.random_features"));
    spec.orthogonal_features = cfg.get_bool("model.orthogonal_features");
    spec.performer_input_scale = cfg.get_float("model.performer_input_scale");
    spec.mask = nn::mask_kind_from_name(cfg.get_string("model.mask"));
    spec.isolate_queries = cfg.get_bool("model.isolate_queries");
    spec.query_self = cfg.get_bool("model.query_self");
    spec.layernorm = cfg.get_bool("model.layernorm");
    spec.residual = cfg.get_bool("model.residual");
    spec.output_projection = cfg.get_bool("model.output_projection");
    spec.qkv_bias = cfg.get_bool("model.qkv_bias");
    spec.shared_layers = cfg.get_bool("model.shared_layers");
    spec.normalize = cfg.get_string("model.normalizer") == "kernel";
    spec.normalizer_eps = cfg.get_float("model.normalizer_eps");
    spec.unnormalized_scale = cfg.get_float("model.unnormalized_scale");
    spec.rope = cfg.get_bool("model.rope");
    spec.rope_base = cfg.get_float("model.rope_base");
    spec.attention_bias_trainable = cfg.get_bool("model.attention_bias_trainable");
    spec.attention_bias_d_nonnegative = cfg.get_string("model.attention_bias_d") == "nonnegative";
    spec.init_std = cfg.get_float("model.init_std");
    const std::string form = cfg.get_string("model.attention_form");
    spec.attention_form = form == "quadratic"   ? model::ModelSpec::AttentionForm::quadratic
                          : form == "recurrent" ? model::ModelSpec::AttentionForm::recurrent
                                                : model::ModelSpec::AttentionForm::automatic;
    return spec;
}

train::OptimizerSpec optimizer_spec_from_config(const config::Config& cfg) {
    train::OptimizerSpec spec;
    spec.kind = train::optimizer_from_name(cfg.get_string("train.optimizer"));
    spec.beta1 = cfg.get_float("train.beta1");
    spec.beta2 = cfg.get_float("train.beta2");
    spec.eps = cfg.get_float("train.eps");
    spec.weight_decay = cfg.get_float("train.weight_decay");
    spec.momentum = cfg.get_float("train.momentum");
    return spec;
}

train::ScheduleSpec schedule_spec_from_config(const config::Config& cfg) {
    train::ScheduleSpec spec;
    spec.kind = train::schedule_from_name(cfg.get_string("train.schedule"));
    spec.base_lr = cfg.get_float("train.lr");
    spec.warmup_steps = static_cast<std::size_t>(cfg.get_int("train.warmup_steps"));
    spec.total_steps = static_cast<std::size_t>(cfg.get_int("train.steps"));
    spec.min_lr_ratio = cfg.get_float("train.min_lr_ratio");
    return spec;
}

std::string run_name(const config::Config& cfg) {
    if (!cfg.get_string("output.name").empty()) return cfg.get_string("output.name");
    // "<folder>_<config stem>", e.g. "quick_induction_head", prefixed by the experiment when the stem
    // does not already name it; then the overrides (but seed and output.*) and the seed.
    const std::filesystem::path source(cfg.source_path());
    const std::string experiment = cfg.get_string("experiment"), stem = source.stem().string();
    const std::string folder = source.parent_path().filename().string();
    std::string name = (folder.empty() ? "" : folder + "_") + stem;
    if (stem.find(experiment) == std::string::npos) name = experiment + "_" + name;
    for (const auto& override_text : cfg.overrides()) {
        if (override_text.rfind("seed=", 0) == 0 || override_text.rfind("output.", 0) == 0) continue;
        name += "_" + override_text;
    }
    return name + "_seed" + std::to_string(cfg.get_int("seed"));
}

std::string config_fingerprint(const std::string& config_text) {
    std::uint64_t hash = 0xcbf29ce484222325ULL;  // FNV-1a 64
    for (unsigned char c : config_text) {
        hash ^= c;
        hash *= 0x100000001b3ULL;
    }
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
    return text;
}

namespace {

// "line N: 'a' (config.yaml) vs 'b' (checkpoint)" for the first line where two texts differ.
std::string first_difference(const std::string& now, const std::string& then) {
    std::istringstream a(now), b(then);
    std::string line_a, line_b;
    for (int line = 1;; ++line) {
        const bool more_a = static_cast<bool>(std::getline(a, line_a)), more_b = static_cast<bool>(std::getline(b, line_b));
        if (!more_a && !more_b) return "no line differs";
        if (!more_a) line_a = "<end>";
        if (!more_b) line_b = "<end>";
        if (line_a != line_b)
            return "line " + std::to_string(line) + ": '" + line_a + "' now, '" + line_b + "' in the checkpoint";
    }
}

// The checkpoint must have been written with exactly this resolved config.
void check_checkpoint_config(const io::ResultsReader& checkpoint, const config::Config& cfg) {
    const std::string stored = checkpoint.read_attr_string("/", "config");
    const std::string stored_fingerprint = checkpoint.read_attr_string("/", "config_fingerprint");
    ICLAB_INPUT_CHECK(config_fingerprint(stored) == stored_fingerprint,
                      checkpoint.path().string() << " is damaged: its config does not match its config_fingerprint");
    const std::string now = cfg.to_yaml();
    ICLAB_INPUT_CHECK(config_fingerprint(now) == stored_fingerprint,
                      "cannot resume: the config (" << cfg.source_path() << ", fingerprint " << config_fingerprint(now)
                          << ") is not the one " << checkpoint.path().string() << " was written with (fingerprint "
                          << stored_fingerprint << "); " << first_difference(now, stored)
                          << ". A resumed run continues with the config it started with: restore config.yaml "
                             "(the checkpoint's root attribute 'config' holds it)");
}

}  // namespace

ResumePoint load_resume_config(const std::filesystem::path& run_dir) {
    namespace fs = std::filesystem;
    ICLAB_INPUT_CHECK(fs::is_directory(run_dir), "iclab run --resume: " << run_dir.string() << " is not a folder");
    const fs::path config_path = run_dir / kConfigFile, checkpoint_path = run_dir / kCheckpointFile;
    ICLAB_INPUT_CHECK(fs::exists(config_path), "iclab run --resume: " << run_dir.string() << " is not a run folder (no "
                                                                      << kConfigFile << ")");
    ICLAB_INPUT_CHECK(!fs::exists(run_dir / kResultsFile),
                      "iclab run --resume: the run in " << run_dir.string() << " is already complete ("
                                                        << kResultsFile << " exists): nothing to resume");
    const config::Config cfg = load_experiment_config(config_path.string(), {});
    ICLAB_INPUT_CHECK(fs::exists(checkpoint_path),
                      "iclab run --resume: " << run_dir.string() << " has no " << kCheckpointFile
                                             << ": the run stopped before its first checkpoint (train.checkpoint_every = "
                                             << cfg.get_int("train.checkpoint_every") << "); start it again");
    std::unique_ptr<io::ResultsReader> checkpoint;
    try {
        checkpoint = std::make_unique<io::ResultsReader>(checkpoint_path);
    } catch (const InputError&) {
        throw;
    } catch (const Error& error) {
        throw InputError(std::string("iclab run --resume: cannot read the checkpoint: ") + error.what());
    }
    check_checkpoint_config(*checkpoint, cfg);
    ResumePoint point;
    point.config = cfg;
    point.step = static_cast<std::size_t>(checkpoint->read_attr_int64("/", "next_step"));
    // The checkpoint's own count: train.steps for a training run, the sub-runs of an experiment made of several
    // (bias_training).
    point.total_steps = static_cast<std::size_t>(checkpoint->read_attr_int64("/", "total_steps"));
    return point;
}

RunFolder::RunFolder(const config::Config& cfg, const RunOptions& options) {
    identity_.experiment = cfg.get_string("experiment");
    identity_.config_text = cfg.to_yaml();
    identity_.seed = cfg.get_int("seed");
    if (!options.resume_dir.empty()) {
        // Reopen the folder: the identity is the run's original one, kept in its checkpoint.
        resumed_ = true;
        path_ = options.resume_dir;
        io::ResultsReader checkpoint(checkpoint_path());
        check_checkpoint_config(checkpoint, cfg);
        identity_.config_source = checkpoint.read_attr_string("/", "config_source");
        identity_.overrides = checkpoint.read_attr_string("/", "overrides");
        identity_.start_time = checkpoint.read_attr_string("/", "start_time");
        const std::string earlier = checkpoint.read_attr_string("/", "resumed_at");
        identity_.resumed_at = (earlier.empty() ? "" : earlier + "; ") + "step " +
                               std::to_string(checkpoint.read_attr_int64("/", "next_step")) + " at " + io::now_iso8601();
        log_.open(path_ / kLogFile, std::ios::out | std::ios::app);
        ICLAB_CHECK(log_.good(), "cannot write " << (path_ / kLogFile));
        log_ << "resumed " << io::now_iso8601() << " from " << kCheckpointFile << " at step "
             << checkpoint.read_attr_int64("/", "next_step") << "\n" << std::flush;
    } else {
        path_ = io::make_run_dir(cfg.get_string("output.dir"), run_name(cfg), options.overwrite);
        identity_.config_source = cfg.source_path();
        for (const auto& o : cfg.overrides()) identity_.overrides += (identity_.overrides.empty() ? "" : " ") + o;
        identity_.start_time = io::now_iso8601();
        // Only an --overwrite run reuses a folder: a checkpoint of the run it replaces must not be resumed.
        std::filesystem::remove(checkpoint_path());
        std::filesystem::remove(path_ / (std::string(kCheckpointFile) + ".partial"));
        {
            std::ofstream config_file(path_ / kConfigFile);
            config_file << identity_.config_text;
            ICLAB_CHECK(config_file.good(), "cannot write " << (path_ / kConfigFile));
        }
        log_.open(path_ / kLogFile, std::ios::out | std::ios::trunc);
        ICLAB_CHECK(log_.good(), "cannot write " << (path_ / kLogFile));
        log_ << "run " << path_.string() << "\nstarted " << identity_.start_time << "\n" << std::flush;
    }
    writer_ = std::make_unique<io::ResultsWriter>(path_ / kResultsFile, options.overwrite);
    io::ResultsWriter& w = *writer_;
    w.set_attr("experiment", identity_.experiment);
    w.set_attr("config", identity_.config_text);
    w.set_attr("config_source", identity_.config_source);
    w.set_attr("overrides", identity_.overrides);
    w.set_attr("seed", identity_.seed);
    w.set_attr("start_time", identity_.start_time);
    if (resumed_) w.set_attr("resumed_at", identity_.resumed_at);
    io::write_provenance(w);
}

void RunFolder::commit() {
    writer_->set_attr("end_time", io::now_iso8601());
    writer_->commit();
    log_ << "finished " << io::now_iso8601() << "\n" << std::flush;
}

template <class T>
void write_parameter_tensors(io::ResultsWriter& writer, const std::string& group, const model::ParameterLayout& layout,
                             const std::vector<T>& buffer) {
    ICLAB_CHECK(buffer.size() == layout.total(), "buffer of " << buffer.size() << " values for a layout of " << layout.total());
    for (const auto& entry : layout.entries())
        writer.write_tensor(group + "/" + entry.name, buffer.data() + entry.offset, entry.shape,
                            {{"layout", entry.layout}, {"trainable", entry.trainable ? "true" : "false"}});
}

template <class T>
void read_parameter_tensors(const io::ResultsReader& reader, const std::string& group, const model::ParameterLayout& layout,
                            std::vector<T>& buffer) {
    buffer.resize(layout.total());
    for (const auto& entry : layout.entries()) {
        const std::string path = group + "/" + entry.name;
        ICLAB_INPUT_CHECK(reader.has(path), reader.path().string() << ": " << group << " has no tensor " << entry.name
                                                                   << " (was it written by another model?)");
        // Read in the stored precision's own type: float32 values come back exactly either way.
        const auto tensor = reader.read_tensor_double(path);
        ICLAB_INPUT_CHECK(tensor.shape == entry.shape, reader.path().string() << ": " << path
                                                                              << " has another shape than the model's");
        for (std::size_t i = 0; i < entry.size; ++i) buffer[entry.offset + i] = static_cast<T>(tensor.values[i]);
    }
}

template void write_parameter_tensors<float>(io::ResultsWriter&, const std::string&, const model::ParameterLayout&,
                                             const std::vector<float>&);
template void write_parameter_tensors<double>(io::ResultsWriter&, const std::string&, const model::ParameterLayout&,
                                              const std::vector<double>&);
template void read_parameter_tensors<float>(const io::ResultsReader&, const std::string&, const model::ParameterLayout&,
                                            std::vector<float>&);
template void read_parameter_tensors<double>(const io::ResultsReader&, const std::string&, const model::ParameterLayout&,
                                             std::vector<double>&);

template <class T>
void write_checkpoint(io::ResultsWriter& writer, const model::Transformer<T>& model) {
    write_parameter_tensors(writer, "/checkpoint", model.layout(), model.params);
}

template <class T>
void read_checkpoint(const io::ResultsReader& reader, model::Transformer<T>& model) {
    read_parameter_tensors(reader, "/checkpoint", model.layout(), model.params);
}

template void write_checkpoint<float>(io::ResultsWriter&, const model::Transformer<float>&);
template void write_checkpoint<double>(io::ResultsWriter&, const model::Transformer<double>&);
template void read_checkpoint<float>(const io::ResultsReader&, model::Transformer<float>&);
template void read_checkpoint<double>(const io::ResultsReader&, model::Transformer<double>&);

}  // namespace iclab::experiments
