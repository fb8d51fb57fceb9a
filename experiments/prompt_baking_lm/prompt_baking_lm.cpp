// Experiment `prompt_baking_lm` (issue 43 §2; Bhargava et al. 2024 "Prompt Baking" as the baseline; README.md): the
// comparison of experiment prompt_baking on the KJV language models (configs/quick/lm_kjv*.yaml) instead of the
// induction head. The model is trained here as iclaa_lm does (train_lm; or source.run_dir names a finished lm run);
// on P held-out windows (X' of M tokens, X the N tokens after it, framework/text/heldout_windows.hpp) each prompt is
// turned into what the model without it can carry, and the model on X is compared with M_old on [X'; X]:
//   linear models  ICLCA's exact b_KV, b_D (paper 000 Algorithm 1, framework/icl/iclca.hpp) against baking into the
//                  same b_KV, b_D and into a LoRA on W_Q, W_K, W_V of equal bytes (framework/icl/prompt_baking.hpp);
//   softmax models ICLAA kernel biases with each feature map (iclaa_lm's path: framework/icl/iclaa.hpp, the learned
//                  map fitted on /train windows), a hybrid and the exact cache (the check) against baking into a LoRA
//                  of the bytes of F = D kernel biases.
// Measures per window: relative logit error, KL, next-token accuracy and perplexity on X, greedy generated-token
// agreement, time and memory to convert (prompt_baking_lm_claims.cpp, prompt_baking_lm_report.cpp).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include <malloc.h>

#include "experiments/prompt_baking_lm/prompt_baking_lm_rows.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/progress.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/icl/logit_comparison.hpp"
#include "framework/icl/prompt_baking.hpp"
#include "framework/model/transformer_decode.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/run/lm_training.hpp"
#include "framework/text/heldout_windows.hpp"
#include "framework/text/token_file.hpp"

namespace iclab::experiments {

using namespace iclab::run;
// This file's own names (unity build, CMakeLists.txt ICLAB_UNITY_BATCH; docs/adding_an_experiment.md).
namespace prompt_baking_lm_cpp {
using namespace iclab::experiments::prompt_baking_lm_detail;

namespace {

// Sub-streams of the run's seed (1-3: lm training's initialization, training windows, held-out windows).
enum Stream : std::uint64_t { kFeatures = 5, kFitInit = 6, kFitData = 7, kContinuations = 8, kLoraInit = 9 };

const char* const kKeys = "prompt_baking_lm.";
std::string key(const char* name) { return std::string(kKeys) + name; }

void declare_keys(config::Schema& schema) {
    add_lm_task_keys(schema);
    add_lm_training_keys(schema);
    schema.add_string_free("source.run_dir", "",
                           "a finished lm run whose model to use (its task.* and model.* apply; keys set here must agree) and "
                           "nothing is trained. Empty: train the model here with the lm keys (data.tokens, model.*, train.*)")
        .add_int(key("windows"), 8, 1, 1 << 16, "P: held-out windows (X' then X, contiguous), evenly spaced in /heldout")
        .add_int(key("prompt_length"), 32, 2, 1 << 16, "M: tokens of the prompt X'")
        .add_int(key("input_length"), 16, 2, 1 << 16, "N: tokens of the input X (and of each baking continuation)")
        .add_int(key("generate"), 16, 0, 1 << 16, "G: greedy tokens generated after X (and after [X'; X]); M + N + G <= task.seq_len")
        .add_string_list(key("targets"), {"biases", "lora"}, {"biases", "lora"},
                         "what baking learns: biases = b_KV, b_D of every layer (linear attention only: ICLCA's parameters), "
                         "lora = rank-r A B added to W_Q, W_K, W_V of every layer")
        .add_int(key("lora_rank"), 0, 0, 1 << 16, "r of the LoRA; 0: the largest r whose 6·C·r·L values fit in the bias adapter's L·H·F·(D+1)")
        .add_string(key("continuations"), "teacher", {"teacher", "train"},
                    "the continuations x baking averages the KL over: teacher = sampled from the model with the prompt, "
                    "x ~ p(. | X') (Bhargava et al.); train = random windows of N tokens of /train (never held-out text)")
        .add_int(key("samples"), 32, 1, 1 << 20, "S: continuations per prompt, drawn once (sub-stream 8), then cycled in batches")
        .add_float(key("temperature"), 1.0, 1e-3, 100.0, "teacher sampling temperature")
        .add_int(key("steps"), 60, 0, 1 << 24, "optimizer steps per prompt")
        .add_int(key("batch"), 8, 1, 1 << 16, "continuations per step")
        .add_string(key("optimizer"), "adam", {"adam", "sgd"}, "optimizer of the delta (framework/train/optimizer.hpp), constant lr")
        .add_float(key("lr"), 1e-2, 1e-8, 1e3, "learning rate of the delta")
        .add_float(key("lora_init_std"), 0.02, 0.0, 10.0, "LoRA A ~ N(0, s^2) (B = 0: the delta starts at 0)")
        .add_string(key("bias_d"), "nonnegative", {"nonnegative", "free"},
                    "biases target: b_D projected onto >= 0 after every step (the values a prompt gives with non-negative features) or free")
        .add_string(key("precision"), "float32", {"float64", "float32"}, "precision of the baking (evaluation is float64)")
        .add_string_list(key("iclaa.feature_maps"), {"prf", "orf", "elu1", "learned"}, {"prf", "orf", "elu1", "learned"},
                         "softmax models: ICLAA's maps at F = D (the bytes of the bias adapter); prf also at each of iclaa.random_features")
        .add_int_list(key("iclaa.random_features"), {256}, 2, 1 << 16, "softmax models: further PRF sizes F (more bytes)")
        .add_int_list(key("iclaa.keep_tokens"), {8}, 1, 1 << 16,
                      "softmax models: hybrid rows, the k most recent prompt tokens exact + the learned map (needs learned)")
        .add_int(key("iclaa.learned.steps"), 100, 1, 1 << 24, "learned map fit: Adam steps (framework/icl/feature_fit.hpp)")
        .add_float(key("iclaa.learned.lr"), 1e-2, 1e-8, 1e3, "learned map fit: lr")
        .add_int(key("iclaa.learned.batch"), 4, 1, 1 << 16, "learned map fit: /train windows of M + N tokens per step")
        .add_int(key("iclaa.learned.split_min"), 8, 1, 1 << 16, "learned map fit: smallest pseudo-prompt length")
        .add_int(key("iclaa.learned.split_max"), 40, 1, 1 << 16, "learned map fit: largest pseudo-prompt length (< M + N)");
    schema.add_rule([](const config::Config& cfg) {
        const std::string dir = cfg.get_string("source.run_dir");
        if (!dir.empty() && !std::filesystem::exists(std::filesystem::path(dir) / kResultsFile))
            cfg.fail({"source.run_dir"}, "'" + dir + "' holds no finished run (no " + kResultsFile + ")");
        if (cfg.get_string("data.tokens").empty())
            cfg.fail({"data.tokens"}, "prompt_baking_lm needs data.tokens: prompts and inputs come from its /heldout split");
        const auto targets = cfg.get_string_list(key("targets"));
        if (targets.empty()) cfg.fail({key("targets")}, "give at least one baking target");
        if (std::set<std::string>(targets.begin(), targets.end()).size() != targets.size()) cfg.fail({key("targets")}, "a target is listed twice");
        const auto M = cfg.get_int(key("prompt_length")), N = cfg.get_int(key("input_length"));
        const bool iclaa = !dir.empty() || cfg.get_string("model.attention") == "softmax";  // the learned fit runs
        if (iclaa && (cfg.get_int(key("iclaa.learned.split_min")) > cfg.get_int(key("iclaa.learned.split_max")) ||
                      cfg.get_int(key("iclaa.learned.split_max")) >= M + N))
            cfg.fail({key("iclaa.learned.split_max"), key("iclaa.learned.split_min")},
                     "prompt_baking_lm.iclaa.learned.split_min <= split_max < prompt_length + input_length must hold");
        for (const auto k : cfg.get_int_list(key("iclaa.keep_tokens")))
            if (k >= M) cfg.fail({key("iclaa.keep_tokens"), key("prompt_length")}, "a hybrid's k must be smaller than the prompt");
        if (!dir.empty()) return;  // the source's model: checked when it is loaded
        const auto G = cfg.get_int(key("generate"));
        if (M + N + G > cfg.get_int("task.seq_len"))
            cfg.fail({key("prompt_length"), key("input_length"), key("generate"), "task.seq_len"},
                     "prompt + input + generated tokens = " + std::to_string(M + N + G) + " exceed the training length task.seq_len = " +
                         std::to_string(cfg.get_int("task.seq_len")) + " (positions the model never saw)");
        const model::ModelSpec spec = lm_model_spec(cfg);
        for (const auto& target : targets) try {
                icl::check_baking_assumptions(spec, icl::parse_bake_target(target));
            } catch (const InputError& error) {
                cfg.fail({key("targets"), "model.attention"}, error.what());
            }
    });
}

// Work (issue 44: the first estimate counted a bake's GEMMs only, ~2x short of the measured seed). f(T): the model's
// forward of T tokens (transformer_forward_flops, V the vocabulary); a term is a product through nn::gemm unless said:
//   training (without source.run_dir): estimate_lm_training;
//   the learned map's fit (softmax, learned among iclaa.feature_maps): per sequence a frozen forward f(M + N) and per
//     layer-head the distillation's products and loops (icl::distillation_sample_work over the config's splits);
//   per window: the reference [X'; X] (f(M + N)) and its greedy continuation (prefill f(M + N), G - 1 one-token steps);
//     per row its logits on X (f(N)) and greedy continuation (prefill f(N), G - 1 steps); per row that reads X' alone
//     (iclca, cache, kernel, hybrid) f(M); per bake icl::bake_work (sampling, teacher, objective, steps);
//   one-token steps (sampling and greedy) at kStreamingWeight: each reads every weight, the V x C read-out above all;
//   loops at kFp64LoopWeight: a bake's V-wide softmax and KL loops, the fit's, the kernel rows' features.
// Memory: the teacher's probabilities S N V and a step's logits and their gradient (6 batch N V), in fp64.
RunEstimate estimate(const config::Config& cfg) {
    RunEstimate e = cfg.get_string("source.run_dir").empty() ? estimate_lm_training(cfg) : RunEstimate{};
    const double V = static_cast<double>(cfg.get_int("task.vocab_size"));
    const auto f = [&](double tokens) { return transformer_forward_flops(cfg, tokens, V); };
    const auto count = [](const std::vector<std::string>& list, const char* name) {
        return static_cast<double>(std::count(list.begin(), list.end(), name));
    };
    const double M = static_cast<double>(cfg.get_int(key("prompt_length"))), N = static_cast<double>(cfg.get_int(key("input_length")));
    const double P = static_cast<double>(cfg.get_int(key("windows"))), S = static_cast<double>(cfg.get_int(key("samples")));
    const double batch = static_cast<double>(cfg.get_int(key("batch"))), steps = static_cast<double>(cfg.get_int(key("steps"))) * batch;
    const double decode_steps = std::max(0.0, static_cast<double>(cfg.get_int(key("generate"))) - 1.0);
    const double H = static_cast<double>(cfg.get_int("model.heads")), LH = static_cast<double>(cfg.get_int("model.layers")) * H;
    const double D = static_cast<double>(cfg.get_int("model.width")) / H;
    const bool linear = cfg.get_string("model.attention") == "linear";
    const auto maps = cfg.get_string_list(key("iclaa.feature_maps"));
    const bool learned = !linear && count(maps, "learned") > 0;
    double kernel_rows = 0.0, kernel_features = 0.0;  // as rows() builds them: one per map, prf also per extra F, hybrids
    if (!linear) {
        kernel_rows = count(maps, "prf") + count(maps, "orf") + count(maps, "elu1") + count(maps, "learned");
        kernel_features = kernel_rows * D;
        if (count(maps, "prf") > 0)
            for (const auto F : cfg.get_int_list(key("iclaa.random_features")))
                if (static_cast<double>(F) != D) kernel_rows += 1.0, kernel_features += static_cast<double>(F);
        if (learned) {
            const double keeps = static_cast<double>(cfg.get_int_list(key("iclaa.keep_tokens")).size());
            kernel_rows += keeps, kernel_features += keeps * D;
        }
    }
    const double bakes = static_cast<double>(cfg.get_string_list(key("targets")).size());
    const double prompt_reads = 1.0 + kernel_rows;  // iclca, or the cache and the kernel rows
    const double rows = 2.0 + prompt_reads + bakes;  // before, the reference's own row, those, the bakes
    const icl::BakeWork bake = icl::bake_work(f, S, M, N, steps, cfg.get_string(key("continuations")) == "teacher", V);
    const double products = P * (2.0 * f(M + N) + rows * 2.0 * f(N) + prompt_reads * f(M) + bakes * bake.products);
    const double decode = P * ((1.0 + rows) * decode_steps * f(1.0) + bakes * bake.decode);
    double fit_products = 0.0, fit_loops = 0.0;
    if (learned) {
        const double sequences = static_cast<double>(cfg.get_int(key("iclaa.learned.steps")) * cfg.get_int(key("iclaa.learned.batch")));
        const icl::FitSampleWork sample = icl::distillation_sample_work(M + N, D, D, cfg.get_int(key("iclaa.learned.split_min")),
                                                                        cfg.get_int(key("iclaa.learned.split_max")));
        fit_products = sequences * (f(M + N) + LH * sample.products);
        fit_loops = sequences * LH * sample.loops;
    }
    const double loops = P * bakes * bake.loops + fit_loops + P * LH * icl::kernel_feature_work(D) * kernel_features * (M + N);
    e.gemm_flops += fit_products + products + decode;
    e.flops += fit_products + products + kStreamingWeight * decode + kFp64LoopWeight * loops;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    e.memory_gib = std::max(e.memory_gib, (S * N * V * 8.0 + 6.0 * batch * N * V * 8.0) / gib);
    e.keys = {key("windows"), key("samples"), key("steps"), "train.steps"};
    return e;
}

// Bytes the heap holds in use (glibc mallinfo2), MiB: the working set of a conversion is the rise of this number while
// its objects are alive (the peak RSS rarely rises: iclab keeps freed memory for reuse; as experiment prompt_baking).
double heap_in_use_mib() {
    const struct mallinfo2 info = mallinfo2();
    return static_cast<double>(info.uordblks + info.hblkhd) / (1024.0 * 1024.0);
}

// Greedy tokens after `context` (incremental decoding; terms: ICLAA prompt terms or null; start: learned position of
// the context's first token).
std::vector<std::int32_t> greedy(const model::Transformer<double>& net, const icl::PromptTerms* terms, const std::vector<std::int32_t>& context,
                                 std::size_t G, std::size_t start) {
    model::TransformerDecoder<double> decoder(net, terms, start);
    decoder.append(context.data(), context.size());
    std::vector<std::int32_t> out;
    const std::size_t V = net.spec().vocab;
    for (std::size_t g = 0; g < G; ++g) {
        out.push_back(static_cast<std::int32_t>(icl::argmax_of(decoder.last_logits(), V)));
        if (g + 1 < G) decoder.append(&out.back(), 1);
    }
    return out;
}

// What the evaluation needs of the model and data.
struct Setting {
    const config::Config* cfg = nullptr;
    const std::vector<std::int32_t>* train = nullptr;  // /train tokens: continuations (train) and the learned fit
    std::size_t M = 0, N = 0, G = 0;
    bool learned_positions = false;  // X at positions M.. in every converted model (where it sat behind the prompt)
};

struct Baked {
    icl::AttentionBiases<double> biases;
    icl::LoraDelta<double> lora;
    double initial_kl = 0.0, final_kl = 0.0, heap_mib = 0.0;
};

template <class T>
Baked bake(const Setting& s, const model::Transformer<double>& net, const text::HeldoutWindow& window, icl::BakeTarget target,
           Rng continuation_rng, Rng lora_rng) {
    const config::Config& cfg = *s.cfg;
    const double heap_before = heap_in_use_mib();
    model::Transformer<T> student(net.spec(), model::Transformer<T>::Mode::training);
    for (std::size_t i = 0; i < net.params.size(); ++i) student.params[i] = static_cast<T>(net.params[i]);
    const std::size_t S = cfg.get_int(key("samples"));
    std::vector<std::int32_t> x;
    if (cfg.get_string(key("continuations")) == "teacher") {
        x = icl::sample_teacher_continuations(student, window.prompt.data(), s.M, S, s.N, cfg.get_float(key("temperature")), continuation_rng);
    } else {
        for (const auto start : sample_window_starts(s.train->size(), s.N - 1, S, continuation_rng, "data.tokens /train"))
            x.insert(x.end(), s.train->begin() + static_cast<std::ptrdiff_t>(start), s.train->begin() + static_cast<std::ptrdiff_t>(start + s.N));
    }
    const icl::BakingData<T> data = icl::make_baking_data(student, window.prompt.data(), s.M, std::move(x), S, s.N, 8);
    if (s.learned_positions) student.set_learned_position_start(s.M);  // the student reads x where it sat behind X'
    icl::BakingSettings settings;
    settings.target = target;
    settings.rank = cfg.get_int(key("lora_rank"));
    settings.steps = cfg.get_int(key("steps"));
    settings.batch = cfg.get_int(key("batch"));
    settings.lr = cfg.get_float(key("lr"));
    settings.optimizer.kind = train::optimizer_from_name(cfg.get_string(key("optimizer")));
    settings.lora_init_std = cfg.get_float(key("lora_init_std"));
    settings.bias_d_nonnegative = cfg.get_string(key("bias_d")) == "nonnegative";
    const icl::BakeResult<T> result = icl::bake_prompt(student, data, settings, lora_rng);
    Baked out;
    out.heap_mib = heap_in_use_mib() - heap_before;  // the student (parameters, gradients, activations), the data, δ
    out.initial_kl = result.initial_kl;
    out.final_kl = result.final_kl;
    for (const auto& v : result.biases.b_kv) out.biases.b_kv.emplace_back(v.begin(), v.end());
    for (const auto& v : result.biases.b_d) out.biases.b_d.emplace_back(v.begin(), v.end());
    if (target == icl::BakeTarget::lora) {
        out.lora = icl::make_lora<double>(net.spec(), result.lora.rank);
        std::copy(result.lora.values.begin(), result.lora.values.end(), out.lora.values.begin());
    }
    return out;
}

// Every row on one window: its logits on X, its greedy continuation, the conversion's time and memory.
std::vector<WindowScore> score_window(const Setting& s, model::Transformer<double>& net, const std::vector<Row>& rows,
                                      const text::HeldoutWindow& window, std::size_t index) {
    const config::Config& cfg = *s.cfg;
    const std::size_t M = s.M, N = s.N, G = s.G, V = net.spec().vocab, L = net.spec().layers, H = net.spec().heads;
    const std::vector<double> base = net.params;
    std::vector<std::int32_t> whole(window.prompt);
    whole.insert(whole.end(), window.continuation.begin(), window.continuation.end());
    net.forward(whole.data(), 1, M + N);
    const std::vector<double> reference(net.logits() + M * V, net.logits() + (M + N) * V);
    const std::vector<std::int32_t> reference_tokens = greedy(net, nullptr, whole, G, 0);
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    std::vector<WindowScore> out;
    for (const Row& row : rows) {
        reset_peak_rss();
        const double rss_before = peak_rss_gib(), heap_before = heap_in_use_mib();
        double heap_mib = 0.0;
        const auto start = std::chrono::steady_clock::now();
        icl::PromptTerms terms;
        const icl::PromptTerms* use_terms = nullptr;
        Baked baked;
        switch (row.kind) {  // the conversion: what stands for X'
            case Kind::before:
            case Kind::reference: break;
            case Kind::iclca: {  // ICLCA, Algorithm 1, paper 000 §4.5
                const icl::AttentionBiases<double> biases = icl::iclca_convert(net, window.prompt.data(), M);
                heap_mib = heap_in_use_mib() - heap_before;
                icl::write_biases(net, biases);
                break;
            }
            case Kind::cache:
            case Kind::kernel:
            case Kind::hybrid: {  // ICLAA (paper 000 §5, Eq. 17-18), as iclaa_lm: rotate-then-map
                const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, window.prompt.data(), 1, M);
                terms = icl::empty_prompt_terms(L, H);
                if (row.kind == Kind::cache) icl::add_cache_terms(terms, 0, kv, 0, icl::CacheSelection::all, 0, net.rope());
                if (row.kind == Kind::hybrid) icl::add_cache_terms(terms, 0, kv, 0, icl::CacheSelection::recent, row.keep, net.rope());
                if (row.kind != Kind::cache)
                    icl::add_kernel_terms(terms, 0, kv, 0, *row.maps, net.rope(), icl::RopeConvention::rotate_then_map, row.keep);
                use_terms = &terms;
                heap_mib = heap_in_use_mib() - heap_before;  // the prompt's keys and values and the terms
                break;
            }
            case Kind::bake_biases:
            case Kind::bake_lora: {
                const icl::BakeTarget target = row.kind == Kind::bake_biases ? icl::BakeTarget::biases : icl::BakeTarget::lora;
                const Rng continuation_rng = root.derive(kContinuations).derive(index);
                const Rng lora_rng = root.derive(kLoraInit).derive(index);
                baked = cfg.get_string(key("precision")) == "float32" ? bake<float>(s, net, window, target, continuation_rng, lora_rng)
                                                                      : bake<double>(s, net, window, target, continuation_rng, lora_rng);
                heap_mib = baked.heap_mib;
                if (target == icl::BakeTarget::biases)
                    icl::write_biases(net, baked.biases);
                else
                    icl::apply_lora(net, base, baked.lora);
                break;
            }
        }
        WindowScore w;
        w.convert_seconds = seconds_since(start);
        w.convert_peak_rss_mib = (peak_rss_gib() - rss_before) * 1024.0;
        w.convert_heap_mib = std::max(heap_mib, 0.0);
        // X where it sat behind the prompt (learned positions), except M_old without the prompt; the reference's own
        const std::size_t position = s.learned_positions && row.kind != Kind::before ? M : 0;
        std::vector<double> logits;
        if (row.kind == Kind::reference) {
            logits = reference;
        } else {
            net.set_learned_position_start(position);
            logits = use_terms ? icl::logits_with_terms(net, terms, window.continuation.data(), 1, N)
                               : (net.forward(window.continuation.data(), 1, N), std::vector<double>(net.logits(), net.logits() + N * V));
            net.set_learned_position_start(0);
        }
        const icl::LogitComparison compared = icl::compare_logits(logits.data(), reference.data(), N, V);
        w.relative_error = compared.relative_error;
        w.centered_error = compared.centered_error;
        w.kl = compared.kl;
        w.top1 = compared.top1;
        for (std::size_t t = 0; t + 1 < N; ++t) {  // next-token prediction inside X
            const double* z = logits.data() + t * V;
            const std::int32_t target = window.continuation[t + 1];
            w.nll_sum += icl::log_sum_exp_of(z, V) - z[target];
            w.correct += static_cast<std::int32_t>(icl::argmax_of(z, V)) == target;
            ++w.predicted;
        }
        const std::vector<std::int32_t> tokens =
            row.kind == Kind::reference ? reference_tokens : greedy(net, use_terms, window.continuation, G, position);
        std::size_t same = 0;
        for (std::size_t g = 0; g < G; ++g) same += tokens[g] == reference_tokens[g];
        w.generated_agreement = G ? static_cast<double>(same) / static_cast<double>(G) : std::nan("");
        w.bake_initial_kl = baked.initial_kl;
        w.bake_final_kl = baked.final_kl;
        out.push_back(w);
        net.params = base;  // M_old again
    }
    return out;
}

// The rows: before, reference, then ICLCA (linear) or ICLAA (softmax), then baking. maps holds the feature maps.
std::vector<Row> build_rows(const Setting& s, model::Transformer<double>& net, std::vector<std::unique_ptr<icl::LayerHeadMaps>>& maps) {
    const config::Config& cfg = *s.cfg;
    const model::ModelSpec& spec = net.spec();
    const bool linear = spec.attention == model::ModelSpec::Attention::linear;
    const std::size_t D = spec.head_dim(), L = spec.layers, H = spec.heads;
    const double bias_bytes = 4.0 * static_cast<double>(icl::bias_value_count(spec));
    std::vector<Row> rows;
    rows.push_back({Kind::before, kBeforeLabel, 0.0});
    rows.push_back({Kind::reference, kReferenceLabel, 0.0});
    if (linear) rows.push_back({Kind::iclca, kIclcaLabel, bias_bytes});
    if (!linear) {
        rows.push_back({Kind::cache, kCacheLabel, icl::cache_bytes(s.M, D) * L * H});
        const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
        const std::size_t fit_time = std::min<std::size_t>(s.M + s.N, spec.max_seq_len);
        // sequences for the learned fit: windows of the training split only (never a held-out prompt), as iclaa_lm
        const icl::SequenceSampler from_train = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng& rng) {
            const auto starts = sample_window_starts(s.train->size(), fit_time, batch, rng, "data.tokens /train");
            tokens.clear();
            for (const auto first : starts)
                tokens.insert(tokens.end(), s.train->begin() + static_cast<std::ptrdiff_t>(first),
                              s.train->begin() + static_cast<std::ptrdiff_t>(first + fit_time));
        };
        icl::FeatureMapChoice choice;
        choice.fit.steps = cfg.get_int(key("iclaa.learned.steps"));
        choice.fit.lr = cfg.get_float(key("iclaa.learned.lr"));
        choice.fit.batch = cfg.get_int(key("iclaa.learned.batch"));
        choice.fit.split_min = cfg.get_int(key("iclaa.learned.split_min"));
        choice.fit.split_max = cfg.get_int(key("iclaa.learned.split_max"));
        const auto add_map = [&](const std::string& map, std::size_t F, Rng rng, const icl::SequenceSampler& sample) {
            choice.map = map;
            choice.features = F;
            const auto start = std::chrono::steady_clock::now();
            maps.push_back(std::make_unique<icl::LayerHeadMaps>(icl::build_feature_maps(net, choice, sample, fit_time, rng, nullptr)));
            rows.push_back({Kind::kernel, kernel_label(map, F), icl::kernel_bytes(F, D) * L * H, maps.back().get(), 0, seconds_since(start)});
        };
        for (const auto& map : cfg.get_string_list(key("iclaa.feature_maps"))) {
            if (map == "learned") {
                Rng data = root.derive(kFitData);
                const icl::SequenceSampler same_data = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng&) { from_train(tokens, batch, data); };
                add_map(map, D, root.derive(kFitInit).derive(D), same_data);
                const Row learned = rows.back();
                for (const auto k : cfg.get_int_list(key("iclaa.keep_tokens")))
                    rows.push_back({Kind::hybrid, "recent k=" + std::to_string(k) + " + " + learned.label,
                                    learned.bytes + icl::cache_bytes(static_cast<std::size_t>(k), D) * L * H, learned.maps,
                                    static_cast<std::size_t>(k), learned.map_seconds});
                continue;
            }
            add_map(map, D, root.derive(kFeatures).derive(D * 10 + (map == "orf")), from_train);
            if (map == "prf")
                for (const auto F : cfg.get_int_list(key("iclaa.random_features")))
                    if (static_cast<std::size_t>(F) != D) add_map(map, F, root.derive(kFeatures).derive(F * 10), from_train);
        }
    }
    for (const auto& target : cfg.get_string_list(key("targets"))) {
        if (target == "biases") {
            rows.push_back({Kind::bake_biases, kBakeBiasesLabel, bias_bytes});
        } else {
            const std::size_t rank = cfg.get_int(key("lora_rank")) ? cfg.get_int(key("lora_rank")) : icl::lora_rank_for_equal_bytes(spec);
            ICLAB_INPUT_CHECK(rank >= 1, "config error: prompt_baking_lm.lora_rank: no rank fits in the bias adapter's bytes");
            rows.push_back({Kind::bake_lora, lora_label(rank), 4.0 * static_cast<double>(icl::lora_value_count(spec, rank))});
        }
    }
    return rows;
}

void evaluate(const config::Config& cfg, model::Transformer<double>& net, RunFolder& run, bool quiet) {
    const model::ModelSpec& spec = net.spec();
    const bool linear = spec.attention == model::ModelSpec::Attention::linear;
    for (const auto& target : cfg.get_string_list(key("targets"))) icl::check_baking_assumptions(spec, icl::parse_bake_target(target));
    if (linear)
        icl::check_iclca_assumptions(spec);
    else
        icl::check_iclaa_assumptions(spec);
    Setting s;
    s.cfg = &cfg;
    s.M = cfg.get_int(key("prompt_length"));
    s.N = cfg.get_int(key("input_length"));
    s.G = cfg.get_int(key("generate"));
    s.learned_positions = spec.positions == model::ModelSpec::Positions::learned;
    check_fits_context(s.M + s.N + s.G, spec, "prompt_baking_lm.prompt_length + input_length + generate");
    const std::filesystem::path token_path = cfg.get_string("data.tokens");
    const text::TokenFile data = text::read_token_file(token_path);
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(data.vocab_size) <= spec.vocab,
                      token_path.string() << " has a vocabulary of " << data.vocab_size << ", the model " << spec.vocab << " (data.tokens)");
    s.train = &data.train;
    const std::vector<text::HeldoutWindow> windows =
        text::heldout_windows(data.heldout, static_cast<std::int32_t>(data.end_of_text), s.M, s.N, cfg.get_int(key("windows")),
                              token_path.string() + " /heldout", "prompt_baking_lm.windows", "prompt_baking_lm.prompt_length + input_length");
    ClaimSetting claim_setting;
    claim_setting.linear = linear;
    claim_setting.head_dim = spec.head_dim();
    claim_setting.lora_rank = cfg.get_int(key("lora_rank")) ? cfg.get_int(key("lora_rank")) : icl::lora_rank_for_equal_bytes(spec);
    const std::vector<io::Claim> claims = declare_claims(cfg, claim_setting);  // before anything is measured
    Progress progress("prompt_baking_lm", quiet, &run.log());
    progress.stage(linear ? "the rows: ICLCA and baking" : "the rows: ICLAA feature maps (learned: fitted on /train) and baking");
    std::vector<std::unique_ptr<icl::LayerHeadMaps>> maps;
    const std::vector<Row> rows = build_rows(s, net, maps);
    progress.stage("converting and scoring " + std::to_string(rows.size()) + " rows on " + std::to_string(windows.size()) + " held-out windows");
    std::vector<std::vector<WindowScore>> scores(rows.size());
    std::vector<std::size_t> starts;
    for (std::size_t w = 0; w < windows.size(); ++w) {
        const std::vector<WindowScore> window_scores = score_window(s, net, rows, windows[w], w);
        for (std::size_t r = 0; r < rows.size(); ++r) scores[r].push_back(window_scores[r]);
        starts.push_back(windows[w].start);
        progress.tick(w + 1, windows.size(), "windows");
    }
    const std::vector<io::ClaimResult> results = evaluate_claims(cfg, claim_setting, claims, rows, scores);
    write_results(cfg, rows, scores, starts, results, run, quiet);
}

RunOutcome run_prompt_baking_lm(const RunContext& context) {
    const config::Config& cfg = context.config;
    const RunOptions& options = context.options;
    const std::string source_dir = cfg.get_string("source.run_dir");
    if (source_dir.empty()) {  // train the model first, as iclaa_lm does (checkpoints, --resume)
        check_lm_training_inputs(cfg);  // a refused run makes no folder
        RunFolder run(cfg, options);
        const LmTraining training = train_lm(cfg, options, run);
        if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
        model::Transformer<double> net(lm_model_spec(cfg), model::Transformer<double>::Mode::inference);
        ICLAB_CHECK(net.params.size() == training.parameters.size(), "trained parameters do not fit the model");
        std::copy(training.parameters.begin(), training.parameters.end(), net.params.begin());
        if (!options.quiet) std::printf("trained: held-out perplexity %.2f\n", training.final_eval_perplexity);
        evaluate(cfg, net, run, options.quiet);
        run.commit();
        return {run.path(), true, training.steps_total, training.steps_total};
    }
    ICLAB_INPUT_CHECK(options.stop_after == 0, "--stop-after stops training, and with source.run_dir nothing is trained");
    LmRun<double> loaded = load_lm_run<double>(source_dir, context.catalog, "source.run_dir");
    check_model_keys_agree(cfg, loaded.config, (std::filesystem::path(source_dir) / kConfigFile).string());
    const auto M = cfg.get_int(key("prompt_length")), N = cfg.get_int(key("input_length")), G = cfg.get_int(key("generate")),
               T = loaded.config.get_int("task.seq_len");
    ICLAB_INPUT_CHECK(M + N + G <= T, "config error: prompt_baking_lm.prompt_length + input_length + generate = "
                                          << M + N + G << " exceeds the source model's task.seq_len = " << T);
    RunFolder run(cfg, options);
    run.log() << "model: the parameters of " << source_dir << " (no training here)\n";
    run.results().set_attr("source_run_dir", std::filesystem::absolute(source_dir).string());
    run.results().set_attr("source_config", loaded.config.to_yaml());
    evaluate(cfg, *loaded.model, run, options.quiet);
    run.commit();
    return {run.path(), true, 0, 0};
}

}  // namespace
}  // namespace prompt_baking_lm_cpp

Experiment prompt_baking_lm() {
    using namespace prompt_baking_lm_cpp;
    Experiment e{"prompt_baking_lm",
                 "prompt baking (Bhargava et al. 2024) into b_KV, b_D or a LoRA of equal bytes against ICLCA (linear) and ICLAA "
                 "(softmax) on held-out KJV windows of the quick language models (issue 43)",
                 {KeyGroup::output, KeyGroup::model, KeyGroup::train},
                 declare_keys,
                 run_prompt_baking_lm,
                 estimate};
    e.check_inputs = check_lm_data_files;
    return e;
}

}  // namespace iclab::experiments
