// The shared config key groups (output, model, train) and their translation into the framework's specs.
// This is the one place where config meets model (config -> task -> model -> experiment -> results).
#include "framework/run/config_keys.hpp"

#include <filesystem>
#include <system_error>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace iclab::run {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// One item of model.decay as γ: a finite decimal number (the whole text), else NaN.
double decay_value(const std::string& text) {
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) return std::nan("");
    return value;
}

// model.decay: [] or [none] (no decay), [learned], one γ for every head, or one γ per head, each in (0, 1].
void check_decay_key(const config::Config& cfg) {
    const std::vector<std::string> items = cfg.get_string_list("model.decay");
    if (items.empty() || (items.size() == 1 && items[0] == "none")) return;
    if (cfg.get_string("model.attention") != "linear")
        cfg.fail({"model.decay", "model.attention"}, "model.decay belongs to linearized attention (model.attention: linear)");
    if (cfg.get_string("model.mask") != "causal" || cfg.get_bool("model.isolate_queries"))
        cfg.fail({"model.decay", "model.mask", "model.isolate_queries"},
                 "model.decay needs the causal mask (model.mask: causal, model.isolate_queries: false): the decayed state "
                 "S_i = gamma S_{i-1} + phi(k_i) v_i^T runs forward in time");
    if (items.size() == 1 && items[0] == "learned") return;
    const auto heads = static_cast<std::size_t>(cfg.get_int("model.heads"));
    if (items.size() != 1 && items.size() != heads)
        cfg.fail({"model.decay", "model.heads"}, "model.decay has " + std::to_string(items.size()) +
                                                     " values: give one gamma for every head or one per head (model.heads = " +
                                                     std::to_string(heads) + ")");
    for (const std::string& item : items) {
        const double gamma = decay_value(item);
        if (!(gamma > 0.0 && gamma <= 1.0))
            cfg.fail({"model.decay"}, "model.decay: '" + item + "' is not a decay gamma in (0, 1]" +
                                          (items.size() == 1 ? " (nor none or learned)" : ""));
    }
}
}  // namespace

std::size_t warmup_steps(const config::Config& cfg) {
    const double fraction = cfg.get_float("train.warmup_fraction");
    if (fraction > 0.0) return static_cast<std::size_t>(std::llround(fraction * static_cast<double>(cfg.get_int("train.steps"))));
    return static_cast<std::size_t>(cfg.get_int("train.warmup_steps"));
}

double performer_scale(double configured, std::size_t head_dim) {
    return configured > 0.0 ? configured : std::pow(static_cast<double>(head_dim), -0.25);
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
        .add_float("model.performer_input_scale", 0.0, 0.0, kInf,
                   "performer: s in phi(x) = exp(W^T(s x) - |s x|^2/2)/sqrt(R), so E[phi(q)^T phi(k)] = exp(s^2 q^T k); "
                   "0 (default): D^(-1/4), which estimates the softmax kernel exp(q^T k / sqrt(D)); paper 004 uses 1 on "
                   "unnormalized inputs. Configs whose features would underflow at initialization are refused")
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
        .add_bool("model.final_layernorm", true, "with model.layernorm: the final LayerNorm before the read-out (paper 003 "
                                                 "Part B, Q9's standard pre-LN: false)")
        .add_string("model.position_embedding", "none", {"none", "learned"},
                    "learned: absolute position embeddings (max_seq_len, C) added to x_0 after the read-in (paper 003 "
                    "Part B, Q10; init N(0, model.init_std))")
        .add_bool("model.tie_embeddings", false,
                  "token models: the output matrix is the input embedding, logits = LN_f(x) wte^T with no output bias "
                  "(GPT-2); false: a separate unembedding.w (C, V)")
        .add_bool("model.residual", true, "residual connections around attention and MLP (paper 004's layer: false)")
        .add_bool("model.output_projection", true, "attention output projection W_o, b_o (LSA: P = W_o)")
        .add_bool("model.qkv_bias", true, "biases of the q, k, v projections")
        .add_bool("model.shared_layers", false, "the same block weights at every depth (paper 003 SL) vs unshared (UL)")
        .add_float("model.rope_base", 10000.0, 1.0, kInf, "RoPE base: theta_p = base^(-2p/F), F the rotated width: the head width D, or model.random_features R "
                    "for performer (RoPE rotates phi(q), phi(k) in linearized attention, q and k in softmax attention)")
        .add_bool("model.attention_bias_trainable", false,
                  "train b_KV and b_D of Eq. 13 (they always exist, initialized to zero)")
        .add_string("model.attention_bias_d", "free", {"free", "nonnegative"},
                    "trained b_D: free (Eq. 13 as written; the normalizer can cross zero) or nonnegative (projected onto "
                    ">= 0 after every optimizer step, the values real prompts give it; keeps the normalizer positive)")
        .add_float("model.init_std", 0.02, 0.0, 10.0, "std of the normal initialization of weight matrices")
        .add_string("model.attention_form", "auto", {"auto", "quadratic", "recurrent"},
                    "causal attention as the masked quadratic form (Eq. 13) or the recurrent-state form (Eq. 19); "
                    "auto: recurrent when T >= 128 (measured crossover)")
        .add_string("model.small_gemm", "blocked", {"blocked", "openblas"},
                    "kernel of the attention's per-(batch, head) products (softmax, and linear in the quadratic form): "
                    "blocked (default: iclab's register-blocked kernel, small_gemm.hpp; each element one in-order "
                    "multiply-add chain, so the same bits whatever the CPU, the thread count or OpenBLAS's core) or "
                    "openblas (the kernel of the numbers published before 2026-11-27; its bits depend on OpenBLAS's core)")
        .add_string("model.large_gemm", "blocked", {"blocked", "openblas"},
                    "kernel of the products over the whole batch (linear layers, read-in, read-out): blocked (default: the "
                    "same kernel, split into cells the threads share; same bits whatever the CPU, the thread count or "
                    "OpenBLAS's core) or openblas (the kernel of the numbers published before 2026-11-27)")
        .add_string_list_free("model.decay", {},
                              "decay of linearized attention (RetNet / GLA style, docs/decay.md): S_i = gamma S_{i-1} + "
                              "phi(k_i) v_i^T, z likewise, so query i sees key j with gamma^(i-j) and b_KV, b_D with "
                              "gamma^(i+1); one gamma in (0, 1] for every head (model.decay: 0.9), one per head "
                              "([0.9, 0.99]), or learned (per head gamma = sigmoid(theta), theta trained, initialized at "
                              "1 - 2^(-5-h)); empty or none: no decay (gamma = 1). Causal linear attention only; exact "
                              "under ICLCA")
        .scalar_as_list("model.decay")
        .add_rule(check_decay_key)
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
            // Performer features exp(w.(s x) - |s x|^2/2)/sqrt(R) with w ~ N(0, I): with LayerNorm before the
            // projection, x = W_q h has |x|^2 ~ D C init_std^2 at initialization, so a = |s x|^2/2 and the largest of
            // R features is about exp(-a + sqrt(4 a ln R)). Below e^-23 (1e-10) every phi(q)^T phi(k) vanishes
            // against normalizer_eps and attention outputs nothing (measured: s 1, init_std 0.3, C 64, D 32 gives
            // features ~1e-27). Without LayerNorm the input scale is the data's, and this estimate does not apply.
            const bool performer = cfg.get_string("model.attention") == "linear" && cfg.get_string("model.feature_map") == "performer";
            if (!performer || !cfg.get_bool("model.layernorm") || cfg.get_int("model.heads") <= 0) return;
            const double C = static_cast<double>(cfg.get_int("model.width")), D = C / static_cast<double>(cfg.get_int("model.heads"));
            const double s = performer_scale(cfg.get_float("model.performer_input_scale"), static_cast<std::size_t>(D));
            const double sigma = cfg.get_float("model.init_std"), R = static_cast<double>(cfg.get_int("model.random_features"));
            const double a = 0.5 * s * s * D * C * sigma * sigma;
            const double log_feature = -a + std::sqrt(4.0 * a * std::log(R));
            if (log_feature < -23.0) {
                char text[400];
                std::snprintf(text, sizeof text,
                              "performer features underflow at initialization: |s x|^2/2 = %.1f (s %.3g, D %.0f, C %.0f, "
                              "init_std %.3g), so the largest of R = %.0f features is about e^%.0f = %.1e and attention "
                              "outputs nothing; lower model.performer_input_scale (0: D^(-1/4) = %.3g) or model.init_std",
                              a, s, D, C, sigma, R, log_feature, std::exp(log_feature), std::pow(D, -0.25));
                cfg.fail({"model.performer_input_scale", "model.init_std", "model.width"}, text);
            }
        })
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_string("model.attention") == "linear" && cfg.get_string("model.feature_map") == "identity" &&
                cfg.get_string("model.normalizer") == "kernel")
                cfg.fail({"model.normalizer", "model.feature_map"},
                         "the kernel normalizer needs a non-negative feature map (elu1, relu, performer): with identity "
                         "features phi(q)^T sum phi(k) can be zero or negative; use model.normalizer: none");
        })
        .add_rule([](const config::Config& cfg) {
            // Softmax attention reads none of linearized attention's keys: a value other than the default would change
            // nothing, silently. (A resolved config.yaml lists every key with its default, so the value decides.)
            if (cfg.get_string("model.attention") != "softmax") return;
            for (const char* key : {"model.feature_map", "model.random_features", "model.orthogonal_features",
                                    "model.performer_input_scale", "model.normalizer", "model.normalizer_eps",
                                    "model.unnormalized_scale", "model.attention_bias_d"})
                if (!cfg.is_default(key))
                    cfg.fail({key, "model.attention"}, std::string(key) + " = " + cfg.value_text(key) +
                                                           " belongs to linearized attention; softmax attention does not read "
                                                           "it (remove it, or use model.attention: linear)");
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
        .add_float("train.warmup_fraction", 0.0, 0.0, 1.0,
                   "warmup as a fraction of train.steps (rounded), instead of train.warmup_steps, so that shortening "
                   "train.steps keeps the schedule's shape; when > 0 it replaces train.warmup_steps; 0: use train.warmup_steps")
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
        .add_int("train.perturb_init_ulps", 0, 0, 1000,
                 "a pinned perturbation of rounding (issue 45): after initialization, move every trained parameter by "
                 "this many ulps of its working precision (fp32 or fp64), up or down by its own draw from a sub-stream "
                 "of seed that no other draw uses; the run then differs from the unperturbed one by rounding-level "
                 "noise and is still the same on every CPU. `iclab claims` pools such runs as the rounding twin of "
                 "the unperturbed setting (claims column rounding); 0: off, every result bit for bit as without the key")
        .add_int("eval.every", 100, 1, 100000000, "evaluate on held-out sequences every N steps (and at the end)")
        .add_int("eval.sequences", 256, 1, 1 << 24, "held-out sequences per evaluation (the same ones every time)")
        .add_int("log.every", 50, 1, 100000000, "plain log line every N steps when stderr is not a terminal")
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_string("train.schedule") == "warmup_cosine" && warmup_steps(cfg) >= static_cast<std::size_t>(cfg.get_int("train.steps")))
                cfg.fail({"train.warmup_steps", "train.warmup_fraction", "train.steps"},
                         "the warmup (" + std::to_string(warmup_steps(cfg)) + " steps) must be shorter than train.steps");
        });
}

namespace {
// output.dir must be a folder or creatable as one: its nearest existing ancestor is a folder (checked here, so that a
// regular file in the way is refused before any run folder is made).
void check_output_dir(const config::Config& cfg) {
    namespace fs = std::filesystem;
    const std::string dir = cfg.get_string("output.dir");
    if (dir.empty()) cfg.fail({"output.dir"}, "output.dir is empty (use . for the working directory)");
    for (char c : dir)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            cfg.fail({"output.dir"}, "output.dir holds a control character (code " + std::to_string(static_cast<int>(c)) + ")");
    if (dir.size() > 4096) cfg.fail({"output.dir"}, "output.dir is longer than 4096 characters");
    fs::path existing = fs::path(dir).lexically_normal();
    while (true) {
        std::error_code error;
        const fs::file_status status = fs::status(existing, error);
        if (fs::exists(status)) {
            if (!fs::is_directory(status))
                cfg.fail({"output.dir"}, "output.dir '" + dir + "': " + existing.string() + " exists and is not a folder");
            return;
        }
        if (error && error != std::errc::no_such_file_or_directory)
            cfg.fail({"output.dir"}, "output.dir '" + dir + "': " + existing.string() + ": " + error.message());
        if (!existing.has_relative_path() || existing.parent_path() == existing) return;  // nothing exists up to the root
        existing = existing.parent_path();
        if (existing.empty()) existing = ".";
    }
}
}  // namespace

void add_output_keys(config::Schema& schema) {
    schema.add_int("seed", 0, 0, std::numeric_limits<std::int64_t>::max(),
                   "seed of every random draw (initialization, data, evaluation set)")
        .add_string_free("output.dir", "results", "folder that receives run folders (relative to the working directory)")
        .add_string_free("output.name", "", "run folder name (empty: <experiment>_<config>[_<overrides>]_seed<k>)")
        .add_bool("output.checkpoint", true, "store the trained parameters in results.h5 /checkpoint")
        .add_rule(check_output_dir);
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
    spec.performer_input_scale = performer_scale(cfg.get_float("model.performer_input_scale"), spec.head_dim());
    spec.mask = nn::mask_kind_from_name(cfg.get_string("model.mask"));
    spec.isolate_queries = cfg.get_bool("model.isolate_queries");
    spec.query_self = cfg.get_bool("model.query_self");
    spec.layernorm = cfg.get_bool("model.layernorm");
    spec.final_layernorm = cfg.get_bool("model.final_layernorm");
    spec.positions = cfg.get_string("model.position_embedding") == "learned" ? model::ModelSpec::Positions::learned
                                                                              : model::ModelSpec::Positions::none;
    spec.tie_embeddings = cfg.get_bool("model.tie_embeddings");
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
    spec.small_gemm = cfg.get_string("model.small_gemm") == "blocked" ? nn::SmallGemm::blocked : nn::SmallGemm::openblas;
    spec.large_gemm = cfg.get_string("model.large_gemm") == "blocked" ? nn::SmallGemm::blocked : nn::SmallGemm::openblas;
    const std::vector<std::string> decay = cfg.get_string_list("model.decay");  // checked by check_decay_key
    if (decay.size() == 1 && decay[0] == "learned") {
        spec.decay = model::ModelSpec::Decay::learned;
    } else if (!decay.empty() && decay[0] != "none") {
        for (const std::string& item : decay) spec.decay_gamma.push_back(decay_value(item));
        if (spec.decay_gamma.size() == 1) spec.decay_gamma.assign(spec.heads, spec.decay_gamma[0]);
        spec.decay = model::ModelSpec::Decay::fixed;
        if (!spec.decayed()) {  // γ = 1 in every head: no decay (the model, its fingerprint and its bits as without the key)
            spec.decay = model::ModelSpec::Decay::none;
            spec.decay_gamma.clear();
        }
    }
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
    spec.warmup_steps = warmup_steps(cfg);
    spec.total_steps = static_cast<std::size_t>(cfg.get_int("train.steps"));
    spec.min_lr_ratio = cfg.get_float("train.min_lr_ratio");
    return spec;
}

}  // namespace iclab::run
