#include "framework/run/lm_training.hpp"

#include <cmath>
#include <filesystem>
#include <optional>

#include "framework/core/check.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/run/trainer.hpp"
#include "framework/text/bpe.hpp"
#include "framework/text/token_file.hpp"

namespace iclab::run {

namespace {
enum LmStream : std::uint64_t { kLmInitStream = 1, kLmTrainDataStream = 2, kLmEvalDataStream = 3 };

// Inputs and targets (B, T) of windows starting at `starts` of `tokens`.
void fill_windows(std::vector<std::int32_t>& inputs, std::vector<std::int32_t>& targets, const std::vector<std::int32_t>& tokens,
                  const std::size_t* starts, std::size_t count, std::size_t seq_len) {
    inputs.resize(count * seq_len);
    targets.resize(count * seq_len);
    for (std::size_t b = 0; b < count; ++b)
        for (std::size_t t = 0; t < seq_len; ++t) {
            inputs[b * seq_len + t] = tokens[starts[b] + t];
            targets[b * seq_len + t] = tokens[starts[b] + t + 1];
        }
}

std::filesystem::path resolve(const config::Config& cfg, const std::string& key) {
    return std::filesystem::path(cfg.get_string(key));
}
}  // namespace

void add_lm_training_keys(config::Schema& schema) {
    schema.add_string_free("data.tokens", "", "token file to train on (scripts/text/prepare_kjv.sh writes one): /train, /heldout")
        .add_string_free("data.tokenizer", "", "tokenizer folder (encoder.json + vocab.bpe) copied into RUN_DIR/tokenizer for "
                                               "text input; must be the token file's tokenizer (\"\": none)")
        .add_int("task.seq_len", 0, 0, 1 << 20, "tokens per training window (0: task.context_length)");
}

std::vector<std::size_t> sample_window_starts(std::size_t split_size, std::size_t seq_len, std::size_t count, Rng& rng,
                                              const std::string& name) {
    ICLAB_INPUT_CHECK(split_size >= seq_len + 1, name << " holds " << split_size << " tokens, fewer than a window of task.seq_len + 1 = "
                                                      << seq_len + 1);
    std::vector<std::size_t> starts(count);
    for (auto& s : starts) s = static_cast<std::size_t>(rng.uniform_int(split_size - seq_len));  // [0, size − seq_len − 1]
    return starts;
}

void check_lm_data_files(const config::Config& cfg) {
    const std::string tokens = cfg.get_string("data.tokens");
    if (tokens.empty()) {
        const std::string why = "data.tokens is required to train: a token file (iclab tokenize --out, scripts/text/prepare_kjv.sh)";
        if (cfg.origin("data.tokens") == "default") throw InputError("config error: " + cfg.source_path() + ": " + why + "; it is not set");
        cfg.fail({"data.tokens"}, why);
    }
    try {
        text::check_token_file_header(tokens);
    } catch (const InputError& error) {
        cfg.fail({"data.tokens"}, std::string("data.tokens: ") + error.what());
    }
    const std::string tokenizer = cfg.get_string("data.tokenizer");
    if (tokenizer.empty()) return;
    try {
        text::Bpe::files(tokenizer);
    } catch (const InputError& error) {
        cfg.fail({"data.tokenizer"}, std::string("data.tokenizer: ") + error.what());
    }
}

void check_lm_training_inputs(const config::Config& cfg) {
    const std::filesystem::path token_path = resolve(cfg, "data.tokens");
    ICLAB_INPUT_CHECK(!token_path.empty(), cfg.source_path() << ": data.tokens is required to train (a token file, "
                                                                "scripts/text/prepare_kjv.sh)");
    const text::TokenFile data = text::read_token_file(token_path);
    const model::ModelSpec spec = lm_model_spec(cfg);
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(data.vocab_size) <= spec.vocab,
                      token_path.string() << " has a vocabulary of " << data.vocab_size << ", the model (task.vocab_size) " << spec.vocab);
    const std::size_t seq_len = cfg.get_int("task.seq_len") > 0 ? cfg.get_int("task.seq_len") : spec.max_seq_len;
    ICLAB_INPUT_CHECK(seq_len <= spec.max_seq_len,
                      "task.seq_len " << seq_len << " is longer than the model's context task.context_length " << spec.max_seq_len);
    const std::filesystem::path tokenizer = resolve(cfg, "data.tokenizer");
    if (!tokenizer.empty()) text::check_token_file_tokenizer(data, text::Bpe::load(tokenizer), token_path);
}

namespace {

template <class T>
LmTraining train_lm_typed(const config::Config& cfg, const RunOptions& options, RunFolder& run) {
    const std::filesystem::path token_path = resolve(cfg, "data.tokens");
    ICLAB_INPUT_CHECK(!token_path.empty(), cfg.source_path() << ": data.tokens is required to train (a token file, "
                                                                "scripts/text/prepare_kjv.sh)");
    const text::TokenFile data = text::read_token_file(token_path);
    const model::ModelSpec spec = lm_model_spec(cfg);
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(data.vocab_size) <= spec.vocab,
                      token_path.string() << " has a vocabulary of " << data.vocab_size << ", the model (task.vocab_size) " << spec.vocab);
    const std::size_t seq_len = cfg.get_int("task.seq_len") > 0 ? cfg.get_int("task.seq_len") : spec.max_seq_len;
    ICLAB_INPUT_CHECK(seq_len <= spec.max_seq_len,
                      "task.seq_len " << seq_len << " is longer than the model's context task.context_length " << spec.max_seq_len);
    const std::filesystem::path tokenizer = resolve(cfg, "data.tokenizer");
    if (!tokenizer.empty()) {  // the tokenizer goes with the run, checked against the token file
        const text::Bpe bpe = text::Bpe::load(tokenizer);
        text::check_token_file_tokenizer(data, bpe, token_path);
        const auto out = run.path() / kTokenizerFolder;
        std::filesystem::create_directories(out);
        for (const char* name : {"encoder.json", "vocab.bpe", "vocab.json", "merges.txt"})
            if (std::filesystem::exists(tokenizer / name))
                std::filesystem::copy_file(tokenizer / name, out / name, std::filesystem::copy_options::overwrite_existing);
    }
    const TrainerSettings settings = trainer_settings_from_config(cfg);
    const std::size_t batch_size = cfg.get_int("train.batch_size"), eval_count = cfg.get_int("eval.sequences");
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    Rng init_rng = root.derive(kLmInitStream), data_rng = root.derive(kLmTrainDataStream), eval_rng = root.derive(kLmEvalDataStream);
    const std::vector<std::size_t> eval_starts = sample_window_starts(data.heldout.size(), seq_len, eval_count, eval_rng,
                                                                      token_path.string() + " /heldout");
    sample_window_starts(data.train.size(), seq_len, 1, eval_rng, token_path.string() + " /train");  // refuses a short split now

    model::Transformer<T> model(spec);
    model.init(init_rng);  // a resumed run replaces the parameters with the checkpoint's
    run.log() << "model: " << model.parameter_count() << " parameters, " << spec.layers << " layers, width " << spec.width << ", "
              << spec.heads << " heads, context " << spec.max_seq_len << "; data: " << data.train.size() << " train and "
              << data.heldout.size() << " held-out tokens from " << token_path.string() << "\n";

    const std::size_t N = batch_size * seq_len;
    std::vector<T> weights(N, static_cast<T>(1.0 / static_cast<double>(N)));
    std::vector<std::int32_t> inputs, targets;
    std::optional<double> last_loss;
    TrainingTask training;
    training.train_step = [&](Rng& rng) {
        const std::vector<std::size_t> starts = sample_window_starts(data.train.size(), seq_len, batch_size, rng, "/train");
        fill_windows(inputs, targets, data.train, starts.data(), batch_size, seq_len);
        model.forward(inputs.data(), batch_size, seq_len);
        const double loss = model.loss(targets.data(), weights.data());  // mean next-token cross-entropy (nats)
        model.zero_grad();
        model.backward(targets.data(), weights.data());
        return loss;
    };
    training.evaluate = [&]() {  // mean over the held-out windows' positions, in chunks of batch_size windows
        double total = 0.0;
        std::vector<std::int32_t> eval_inputs, eval_targets;
        for (std::size_t first = 0; first < eval_count; first += batch_size) {
            const std::size_t count = std::min(batch_size, eval_count - first);
            fill_windows(eval_inputs, eval_targets, data.heldout, eval_starts.data() + first, count, seq_len);
            model.forward(eval_inputs.data(), count, seq_len);
            const std::vector<T> unit(count * seq_len, T(1));
            total += model.loss(eval_targets.data(), unit.data());
        }
        last_loss = total / static_cast<double>(eval_count * seq_len);
        return Metrics{{"eval_loss", *last_loss}, {"eval_perplexity", std::exp(*last_loss)}};
    };
    training.tokens_per_step = N;
    training.progress_metric = "eval_perplexity";

    LmTraining result;
    result.steps_total = settings.steps;
    result.parameter_count = model.parameter_count();
    result.train_tokens = data.train.size();
    result.heldout_tokens = data.heldout.size();
    Trainer<T> trainer(settings, model.layout(), model.params, model.grads, training, run, options);
    if (!trainer.train(data_rng)) {
        result.steps_done = trainer.steps_done();
        return result;
    }
    if (!last_loss) training.evaluate();  // resumed from the final checkpoint: no step trained here
    io::ResultsWriter& w = run.results();
    trainer.write_tables(w);
    w.set_attr("final_eval_loss", *last_loss);
    w.set_attr("final_eval_perplexity", std::exp(*last_loss));
    w.set_attr("eval_windows", static_cast<std::int64_t>(eval_count));
    w.set_attr("seq_len", static_cast<std::int64_t>(seq_len));
    w.set_attr("train_tokens", static_cast<std::int64_t>(data.train.size()));
    w.set_attr("heldout_tokens", static_cast<std::int64_t>(data.heldout.size()));
    w.set_attr("tokens_file", std::filesystem::absolute(token_path).string());
    w.set_attr("tokenizer_fingerprint", data.tokenizer_fingerprint);
    w.set_attr("parameter_count", static_cast<std::int64_t>(model.parameter_count()));
    w.set_attr("wall_time_s", trainer.elapsed_seconds());
    if (cfg.get_bool("output.checkpoint")) write_checkpoint(w, model);
    result.completed = true;
    result.steps_done = settings.steps;
    result.final_eval_loss = *last_loss;
    result.final_eval_perplexity = std::exp(*last_loss);
    result.wall_time_s = trainer.elapsed_seconds();
    result.parameters.assign(model.params.begin(), model.params.end());
    return result;
}

}  // namespace

LmTraining train_lm(const config::Config& cfg, const RunOptions& options, RunFolder& run) {
    return with_model_dtype(cfg, [&](auto zero) { return train_lm_typed<decltype(zero)>(cfg, options, run); });
}

// Memory and work of an lm run (framework/run/memory_estimate.hpp); without data.tokens, of the model alone. The real vocabulary dominates small models:
// embeddings (and the untied unembedding) in parameters, gradients and both Adam moments, and the (B, T, V) logits,
// probabilities and their gradient; the trunk is 12 C^2 + 13 C parameters a layer, and softmax attention keeps
// (B, H, T, T) scores. FLOPs: forward + backward = 3 forwards of 2 per multiply-add, per step and per evaluation.
RunEstimate estimate_lm_training(const config::Config& cfg) {
    const double V = static_cast<double>(cfg.get_int("task.vocab_size")), ctx = static_cast<double>(cfg.get_int("task.context_length"));
    const double T = cfg.get_int("task.seq_len") > 0 ? static_cast<double>(cfg.get_int("task.seq_len")) : ctx;
    const double L = static_cast<double>(cfg.get_int("model.layers")), C = static_cast<double>(cfg.get_int("model.width"));
    const double H = static_cast<double>(cfg.get_int("model.heads"));
    const double B = static_cast<double>(cfg.get_int("train.batch_size")), steps = static_cast<double>(cfg.get_int("train.steps"));
    const double bytes = cfg.get_string("model.dtype") == "float64" ? 8.0 : 4.0;
    const double tied = cfg.get_bool("model.tie_embeddings") ? 1.0 : 2.0;
    const double trunk = L * (12.0 * C * C + 13.0 * C);
    const double parameters = tied * V * C + ctx * C + trunk;
    RunEstimate e;
    if (cfg.get_string("data.tokens").empty()) {
        // nothing is trained (a training run without data.tokens is refused): the config only describes a model, as
        // `iclab import gpt2` writes it. Its parameters, for the commands that load it.
        e.memory_gib = parameters * bytes / (1024.0 * 1024.0 * 1024.0);
        e.keys = {"model.width", "model.layers", "task.vocab_size"};
        return e;
    }
    e.memory_gib = (4.0 * parameters + B * T * (L * (16.0 * C + H * T) + 3.0 * V)) * bytes / (1024.0 * 1024.0 * 1024.0);
    // matrices, logits, attention (over T keys; the recurrent form of linear attention: 4 C D, memory_estimate.hpp)
    const double attention = recurrent_attention(cfg, T) ? 4.0 * L * C * C / H : 4.0 * L * T * C;
    const double forward_per_token = 2.0 * (trunk + V * C) + attention;
    const double evaluations = std::floor(steps / static_cast<double>(cfg.get_int("eval.every"))) + 1.0;
    e.flops = 3.0 * forward_per_token * B * T * steps + forward_per_token * static_cast<double>(cfg.get_int("eval.sequences")) * T * evaluations;
    e.gemm_flops = e.flops;
    e.keys = {"model.width", "model.layers", "task.vocab_size", "train.batch_size", "task.seq_len", "train.steps"};
    return e;
}

}  // namespace iclab::run
