// Experiment `prompt_baking` (issue 43 §2; Bhargava et al. 2024 "Prompt Baking" as the baseline): on a trained
// induction-head model, each seeded (prompt X', input X) pair's prompt is turned into something the model without it
// can carry, and the model on X is compared with M_old on [X'; X]:
//   linear models  ICLCA's exact biases (framework/icl/iclca.hpp) against baking into the same b_KV, b_D and into a
//                  LoRA on W_Q, W_K, W_V of equal bytes (framework/icl/prompt_baking.hpp);
//   softmax models ICLAA with each feature map and the hybrids (framework/icl/iclaa.hpp) against baking into a LoRA of
//                  the bytes of the elu1-sized kernel biases (F = D) and into ICLAA's own kernel biases of each map
//                  (from its closed form or from 0, same bytes), the exact prompt cache as the check.
// Measures per pair: relative logit error, KL, ICL accuracy at X's first trigger occurrences, top-1 and greedy
// generated-token agreement, and the time and memory to convert. Claims: prompt_baking_claims.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <cstdio>
#include <set>

#include "experiments/prompt_baking/prompt_baking_rows.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/icl/prompt_baking.hpp"
#include "framework/model/transformer_decode.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/induction_training.hpp"
#include "framework/run/memory_estimate.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace prompt_baking_cpp {

using namespace iclab::experiments::prompt_baking_detail;

namespace {

// Sub-streams of the run's seed (1-3: induction training's init, data, eval).
enum Stream : std::uint64_t { kPairs = 4, kFeatures = 5, kFitInit = 6, kFitData = 7, kContinuations = 8, kLoraInit = 9 };

// A baking target's refusals (icl::check_baking_assumptions, or check_kernel_baking_assumptions for kernel).
void check_target(const model::ModelSpec& spec, const std::string& target) {
    if (target == "kernel")
        icl::check_kernel_baking_assumptions(spec);
    else
        icl::check_baking_assumptions(spec, icl::parse_bake_target(target));
}

void check_kernel_keys(const config::Config& cfg);

void declare_keys(config::Schema& schema) {
    schema.add_string_free("source.run_dir", "",
                           "a finished induction_head / iclca_induction / iclaa / prompt_baking run whose trained model to use (its "
                           "task.* and model.* apply; keys set here must agree) and nothing is trained. Empty: train here")
        .add_string("prompt_baking.prompt", "chain", {"chain", "pairs"}, "ICL prompt design (as iclca.prompt: tasks::PromptDesign)")
        .add_int("prompt_baking.prompt_length", 32, 2, 1 << 16, "M: tokens of the prompt X'")
        .add_int("prompt_baking.input_length", 16, 1, 1 << 16, "N: tokens of the input X (and of each baking continuation)")
        .add_int("prompt_baking.generate", 16, 0, 1 << 16,
                 "G: greedy tokens generated after X (and after [X'; X] for the reference); M + N + G <= task.seq_len")
        .add_int("prompt_baking.pairs", 16, 1, 1 << 20, "(X', X) pairs, from the seed's sub-stream 4; every method on the same pairs")
        .add_string_list("prompt_baking.targets", {"biases", "lora"}, {"biases", "lora", "kernel"},
                         "what baking learns: biases = b_KV, b_D of every layer (linear attention only; ICLCA's parameters), "
                         "lora = rank-r A B added to W_Q, W_K, W_V of every layer, kernel = ICLAA's kernel biases b_KV (F, D), "
                         "b_D (F) of every layer and head (softmax only; one row per prompt_baking.kernel_maps x kernel_starts)")
        .add_string_list("prompt_baking.kernel_maps", {"prf", "orf", "elu1", "learned"}, {"prf", "orf", "elu1", "learned"},
                         "target kernel: the feature maps whose kernel biases (F = D) baking learns; each must be among "
                         "prompt_baking.iclaa.feature_maps (the same map object as that closed-form row)")
        .add_string_list("prompt_baking.kernel_starts", {"closed_form"}, {"closed_form", "zero"},
                         "target kernel: start at ICLAA's closed-form biases of the map, or at b_KV = b_D = 0 (the closed "
                         "form's log scales kept)")
        .add_int("prompt_baking.lora_rank", 0, 0, 1 << 16, "r of the LoRA; 0: the largest r whose 6·C·r·L values fit in the bias adapter's L·H·F·(D+1)")
        .add_string("prompt_baking.continuations", "teacher", {"teacher", "task"},
                    "the continuations x baking averages the KL over: teacher = sampled from the model with the prompt, "
                    "x ~ p(. | X') (Bhargava et al.); task = the task's chain continuing X' with its commitments (as X is drawn)")
        .add_int("prompt_baking.samples", 64, 1, 1 << 20, "continuations per prompt, drawn once (sub-stream 8), then cycled in batches")
        .add_float("prompt_baking.temperature", 1.0, 1e-3, 100.0, "teacher sampling temperature")
        .add_int("prompt_baking.steps", 150, 0, 1 << 24, "optimizer steps per prompt")
        .add_int("prompt_baking.batch", 16, 1, 1 << 16, "continuations per step")
        .add_string("prompt_baking.optimizer", "adam", {"adam", "sgd"}, "optimizer of the delta (framework/train/optimizer.hpp), constant lr")
        .add_float("prompt_baking.lr", 1e-2, 1e-8, 1e3, "learning rate of the delta")
        .add_float("prompt_baking.lora_init_std", 0.02, 0.0, 10.0, "LoRA A ~ N(0, s^2) (B = 0: the delta starts at 0)")
        .add_string("prompt_baking.bias_d", "nonnegative", {"nonnegative", "free"},
                    "biases target: b_D projected onto >= 0 after every step (the values a prompt gives with non-negative "
                    "features; keeps the normalizer positive) or free")
        .add_string("prompt_baking.precision", "float64", {"float64", "float32"}, "precision of the baking (evaluation is float64)")
        .add_string_list("prompt_baking.iclaa.feature_maps", {"prf", "orf", "elu1", "learned"}, {"prf", "orf", "elu1", "learned"},
                         "softmax models: ICLAA's maps; prf, orf, learned at F = D (the bytes of the bias adapter) and prf also "
                         "at each of iclaa.random_features")
        .add_int_list("prompt_baking.iclaa.random_features", {256}, 2, 1 << 16, "softmax models: further PRF sizes F (more bytes)")
        .add_int_list("prompt_baking.iclaa.keep_tokens", {4}, 1, 1 << 16,
                      "softmax models: hybrid rows, the k most recent prompt tokens exact + the learned map (needs learned)")
        .add_int("prompt_baking.iclaa.learned_steps", 300, 1, 1 << 20, "learned map fit: Adam steps (framework/icl/feature_fit.hpp)")
        .add_float("prompt_baking.iclaa.learned_lr", 1e-2, 1e-8, 1e3, "learned map fit: lr")
        .add_int("prompt_baking.iclaa.learned_batch", 32, 1, 1 << 16, "learned map fit: sequences per step");
    schema.add_rule(check_kernel_keys);
    schema.add_rule([](const config::Config& cfg) {
        const std::string dir = cfg.get_string("source.run_dir");
        if (!dir.empty() && !std::filesystem::exists(std::filesystem::path(dir) / kResultsFile))
            cfg.fail({"source.run_dir"}, "'" + dir + "' holds no finished run (no " + kResultsFile + ")");
    });
    schema.add_rule([](const config::Config& cfg) {
        const auto M = cfg.get_int("prompt_baking.prompt_length"), N = cfg.get_int("prompt_baking.input_length"),
                   G = cfg.get_int("prompt_baking.generate");
        const auto targets = cfg.get_string_list("prompt_baking.targets");
        if (targets.empty()) cfg.fail({"prompt_baking.targets"}, "give at least one baking target");
        if (std::set<std::string>(targets.begin(), targets.end()).size() != targets.size())
            cfg.fail({"prompt_baking.targets"}, "a target is listed twice");
        if (!cfg.get_string("source.run_dir").empty()) return;  // the source's model and task: checked when it is loaded
        if (M + N + G > cfg.get_int("task.seq_len"))
            cfg.fail({"prompt_baking.prompt_length", "prompt_baking.input_length", "prompt_baking.generate", "task.seq_len"},
                     "prompt + input + generated tokens = " + std::to_string(M + N + G) + " exceed the training length task.seq_len = " +
                         std::to_string(cfg.get_int("task.seq_len")) + " (RoPE offsets the model never saw)");
        if (M < 2 * static_cast<std::int64_t>(cfg.get_string_list("task.triggers").size()))
            cfg.fail({"prompt_baking.prompt_length", "task.triggers"}, "the prompt cannot show every trigger with its successor");
        const bool linear = cfg.get_string("model.attention") == "linear";
        for (const auto& target : targets)
            try {
                check_target(model_spec_from_config(cfg, tasks::kInductionVocab, cfg.get_int("task.seq_len")), target);
            } catch (const InputError& error) {
                cfg.fail({"prompt_baking.targets", "model.attention"}, error.what());
            }
        if (linear) {
            try {
                icl::check_iclca_assumptions(model_spec_from_config(cfg, tasks::kInductionVocab, cfg.get_int("task.seq_len")));
            } catch (const InputError& error) {
                cfg.fail({"model.attention", "model.mask", "model.shared_layers"}, error.what());
            }
        }
    });
}

void check_kernel_keys(const config::Config& cfg) {
    const auto targets = cfg.get_string_list("prompt_baking.targets");
    if (std::find(targets.begin(), targets.end(), "kernel") == targets.end()) return;
    const auto maps = cfg.get_string_list("prompt_baking.iclaa.feature_maps");
    for (const auto& m : cfg.get_string_list("prompt_baking.kernel_maps"))
        if (std::find(maps.begin(), maps.end(), m) == maps.end())
            cfg.fail({"prompt_baking.kernel_maps", "prompt_baking.iclaa.feature_maps"},
                     "kernel baking of the " + m + " map needs its closed-form row: add " + m + " to prompt_baking.iclaa.feature_maps");
    if (cfg.get_string_list("prompt_baking.kernel_maps").empty() || cfg.get_string_list("prompt_baking.kernel_starts").empty())
        cfg.fail({"prompt_baking.kernel_maps", "prompt_baking.kernel_starts"}, "target kernel needs a map and a start");
}

// Bake rows per target: 1 for biases and lora, maps x starts for kernel.
double bake_rows(const config::Config& cfg) {
    double rows = 0.0;
    for (const auto& target : cfg.get_string_list("prompt_baking.targets"))
        rows += target == "kernel" ? static_cast<double>(cfg.get_string_list("prompt_baking.kernel_maps").size() *
                                                         cfg.get_string_list("prompt_baking.kernel_starts").size())
                                   : 1.0;
    return rows;
}

// Work (issue 44: the estimate counted every kernel row as one LoRA bake and nothing of the ICLAA rows, 2.19x short of
// the softmax short run's counted GEMMs). f(T): the model's forward of one sequence of T tokens (transformer_forward_flops,
// V = 52); each term is a product through nn::gemm (gemm_flops, what ICLAB_COUNT_WORK counts) unless said otherwise:
//   training (without source.run_dir): estimate_training;
//   the learned map's fit (softmax, learned among prompt_baking.iclaa.feature_maps): per step `learned_batch` frozen
//     forwards f(T) of task.seq_len tokens, and per sequence and layer-head the distillation's products
//     (icl::distillation_sample_work, splits 8 .. T − 16 as evaluate sets them); its softmax and exps are loops;
//   per pair: the reference [X'; X] (a forward f(M + N) and the greedy decoder's prefill of the same, then G − 1 one-token
//     steps f(1));
//   per row (every method): its logits on X (f(N)) and its greedy continuation (prefill f(N), G − 1 steps f(1));
//   per row that reads X' alone (iclca, cache, kernel, hybrid, bake kernel): the prompt's keys and values, f(M);
//   per bake row (biases, lora, each kernel map x start): the teacher's probabilities on S continuations (S f(M + N);
//     with continuations teacher also their sampling, S prefills f(M) and N − 1 steps f(1) each), the objective on
//     all S before and after (2 S f(N)), and steps x batch student forwards + backwards (3 f(N) each);
//   loops (flops only, at kFp64LoopWeight): the bakes' V-wide softmax and KL loops (icl::bake_work), the fit's
//     distillation samples and the kernel features, F per token and
//     layer-head (icl::kernel_feature_work) of the M + N tokens of every kernel and hybrid row, and of the N tokens of
//     every forward of a kernel bake (F = D).
RunEstimate estimate(const config::Config& cfg) {
    RunEstimate e = cfg.get_string("source.run_dir").empty() ? estimate_training(cfg) : RunEstimate{};
    const auto f = [&](double tokens) { return transformer_forward_flops(cfg, tokens, tasks::kInductionVocab); };
    const auto count = [](const std::vector<std::string>& list, const char* name) {
        return static_cast<double>(std::count(list.begin(), list.end(), name));
    };
    const double M = static_cast<double>(cfg.get_int("prompt_baking.prompt_length")), N = static_cast<double>(cfg.get_int("prompt_baking.input_length"));
    const double P = static_cast<double>(cfg.get_int("prompt_baking.pairs")), S = static_cast<double>(cfg.get_int("prompt_baking.samples"));
    const double steps = static_cast<double>(cfg.get_int("prompt_baking.steps") * cfg.get_int("prompt_baking.batch"));
    const double decode_steps = std::max(0.0, static_cast<double>(cfg.get_int("prompt_baking.generate")) - 1.0);
    const double T = static_cast<double>(cfg.get_int("task.seq_len")), H = static_cast<double>(cfg.get_int("model.heads"));
    const double LH = static_cast<double>(cfg.get_int("model.layers")) * H, D = static_cast<double>(cfg.get_int("model.width")) / H;
    const bool linear = cfg.get_string("model.attention") == "linear";
    // The rows of evaluate: before; iclca (linear) or the cache and ICLAA's kernel and hybrid rows (softmax); the bakes.
    const auto maps = cfg.get_string_list("prompt_baking.iclaa.feature_maps");
    const bool learned = !linear && count(maps, "learned") > 0;
    double kernel_rows = 0.0, kernel_features = 0.0;  // closed-form kernel and hybrid rows, and their F summed
    if (!linear) {
        kernel_rows = count(maps, "prf") + count(maps, "orf") + count(maps, "elu1") + count(maps, "learned");
        kernel_features = kernel_rows * D;
        if (count(maps, "prf") > 0)
            for (const auto F : cfg.get_int_list("prompt_baking.iclaa.random_features"))
                if (static_cast<double>(F) != D) kernel_rows += 1.0, kernel_features += static_cast<double>(F);
        if (learned) {
            const double keeps = static_cast<double>(cfg.get_int_list("prompt_baking.iclaa.keep_tokens").size());
            kernel_rows += keeps, kernel_features += keeps * D;
        }
    }
    const double bakes = bake_rows(cfg);
    const double kernel_bakes = count(cfg.get_string_list("prompt_baking.targets"), "kernel") *
                                static_cast<double>(cfg.get_string_list("prompt_baking.kernel_maps").size() *
                                                    cfg.get_string_list("prompt_baking.kernel_starts").size());
    const double rows = 1.0 + (linear ? 1.0 : 1.0 + kernel_rows) + bakes;
    const double prompt_reads = (linear ? 1.0 : 1.0 + kernel_rows) + kernel_bakes;
    const bool teacher = cfg.get_string("prompt_baking.continuations") == "teacher";
    const icl::BakeWork bake = icl::bake_work(f, S, M, N, steps, teacher, tasks::kInductionVocab);
    const double per_bake = bake.products + bake.decode;
    const double per_pair = 2.0 * f(M + N) + decode_steps * f(1.0) + rows * (2.0 * f(N) + decode_steps * f(1.0)) + prompt_reads * f(M) +
                            bakes * per_bake;
    double fit_products = 0.0, fit_loops = 0.0;
    if (learned) {
        const double fit_sequences = static_cast<double>(cfg.get_int("prompt_baking.iclaa.learned_steps") * cfg.get_int("prompt_baking.iclaa.learned_batch"));
        const std::int64_t split_max = cfg.get_int("task.seq_len") - 16;  // evaluate's fit.split_min, split_max
        const icl::FitSampleWork sample = icl::distillation_sample_work(T, D, D, 8, std::max<std::int64_t>(split_max, 8));
        fit_products = fit_sequences * (f(T) + LH * sample.products);
        fit_loops = fit_sequences * LH * sample.loops;
    }
    const double feature_loops = P * LH * icl::kernel_feature_work(D) * (kernel_features * (M + N) + kernel_bakes * D * (2.0 * S + 3.0 * steps) * N);
    e.gemm_flops += fit_products + P * per_pair;
    e.flops += fit_products + P * per_pair + kFp64LoopWeight * (fit_loops + feature_loops + P * bakes * bake.loops);
    e.keys = {"prompt_baking.pairs", "prompt_baking.steps", "prompt_baking.samples", "train.steps"};
    return e;
}

// Greedy tokens after `context` (incremental decoding; `terms`: ICLAA / cache prompt terms, may be null).
std::vector<std::int32_t> greedy(const model::Transformer<double>& net, const icl::PromptTerms* terms, const std::vector<std::int32_t>& context,
                                 std::size_t G) {
    model::TransformerDecoder<double> decoder(net, terms);
    decoder.append(context.data(), context.size());
    std::vector<std::int32_t> out;
    const std::size_t V = net.spec().vocab;
    for (std::size_t g = 0; g < G; ++g) {
        const double* z = decoder.last_logits();
        out.push_back(static_cast<std::int32_t>(std::max_element(z, z + V) - z));
        if (g + 1 < G) decoder.append(&out.back(), 1);
    }
    return out;
}

// Every row on one pair: its logits on X, its greedy continuation, the conversion's time and memory.
std::vector<PairScore> score_pair(const config::Config& cfg, model::Transformer<double>& net, const std::vector<Row>& rows,
                                  const tasks::PromptPair& pair, std::size_t pair_index) {
    const std::size_t M = pair.prompt.size(), N = pair.input.size(), V = net.spec().vocab, G = cfg.get_int("prompt_baking.generate");
    const std::size_t L = net.spec().layers, H = net.spec().heads;
    const std::vector<double> base = net.params;
    std::vector<std::int32_t> whole(pair.prompt);
    whole.insert(whole.end(), pair.input.begin(), pair.input.end());
    net.forward(whole.data(), 1, M + N);
    const std::vector<double> reference(net.logits() + M * V, net.logits() + (M + N) * V);
    const std::vector<std::int32_t> reference_tokens = greedy(net, nullptr, whole, G);
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    std::vector<PairScore> out;
    for (const Row& row : rows) {
        reset_peak_rss();
        const double rss_before = peak_rss_gib(), heap_before = heap_in_use_mib();
        double heap_mib = 0.0;
        const auto start = std::chrono::steady_clock::now();
        icl::PromptTerms terms;
        const icl::PromptTerms* use_terms = nullptr;
        Baked baked;
        switch (row.kind) {  // the conversion: what stands for X'
            case Kind::before: break;
            case Kind::iclca: {
                const icl::AttentionBiases<double> biases = icl::iclca_convert(net, pair.prompt.data(), M);
                heap_mib = heap_in_use_mib() - heap_before;
                icl::write_biases(net, biases);
                break;
            }
            case Kind::bake_kernel: {  // the map's closed form (the start, or its log scales), then baking from it
                const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, pair.prompt.data(), 1, M);
                icl::PromptTerms start = icl::empty_prompt_terms(L, H);
                icl::add_kernel_terms(start, 0, kv, 0, *row.maps, net.rope(), icl::RopeConvention::rotate_then_map);
                const double closed_form_mib = heap_in_use_mib() - heap_before;
                const Rng continuation_rng = root.derive(kContinuations).derive(pair_index);
                const Rng lora_rng = root.derive(kLoraInit).derive(pair_index);
                baked = bake_row(cfg, net, pair, icl::BakeTarget::lora, continuation_rng, lora_rng, &row, &start);
                heap_mib = closed_form_mib + baked.heap_mib;
                terms = baked.terms;
                use_terms = &terms;
                break;
            }
            case Kind::cache:
            case Kind::kernel:
            case Kind::hybrid: {
                const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, pair.prompt.data(), 1, M);
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
                const Rng continuation_rng = root.derive(kContinuations).derive(pair_index);
                const Rng lora_rng = root.derive(kLoraInit).derive(pair_index);
                baked = bake_row(cfg, net, pair, target, continuation_rng, lora_rng);
                heap_mib = baked.heap_mib;
                if (target == icl::BakeTarget::biases)
                    icl::write_biases(net, baked.biases);
                else
                    icl::apply_lora(net, base, baked.lora);
                break;
            }
        }
        PairScore s;
        s.convert_seconds = seconds_since(start);
        s.convert_peak_rss_mib = (peak_rss_gib() - rss_before) * 1024.0;
        s.convert_heap_mib = std::max(heap_mib, 0.0);
        const std::vector<double> logits = use_terms ? icl::logits_with_terms(net, terms, pair.input.data(), 1, N)
                                                     : (net.forward(pair.input.data(), 1, N),
                                                        std::vector<double>(net.logits(), net.logits() + N * V));
        const PairScore scores = score_logits(pair, logits.data(), reference.data(), N, V);
        s.relative_error = scores.relative_error;
        s.centered_error = scores.centered_error;
        s.kl = scores.kl;
        s.top1 = scores.top1;
        s.scored = scores.scored;
        s.correct = scores.correct;
        const std::vector<std::int32_t> tokens = greedy(net, use_terms, pair.input, G);
        std::size_t same = 0;
        for (std::size_t g = 0; g < G; ++g) same += tokens[g] == reference_tokens[g];
        s.generated_agreement = G ? static_cast<double>(same) / static_cast<double>(G) : std::nan("");
        s.bake_initial_kl = baked.initial_kl;
        s.bake_final_kl = baked.final_kl;
        out.push_back(s);
        net.params = base;  // M_old again
    }
    return out;
}

// The comparison on the trained model `net` (task and model keys of model_cfg) into run.results().
void evaluate(const config::Config& cfg, const config::Config& model_cfg, model::Transformer<double>& net, RunFolder& run, bool quiet) {
    const model::ModelSpec& spec = net.spec();
    const bool linear = spec.attention == model::ModelSpec::Attention::linear;
    const std::size_t D = spec.head_dim(), L = spec.layers, H = spec.heads;
    const std::vector<io::Claim> claims = declare_claims(cfg, linear, D);  // before anything is measured

    // The rows.
    std::vector<std::unique_ptr<icl::LayerHeadMaps>> maps;
    std::vector<Row> rows;
    const double bias_bytes = 4.0 * static_cast<double>(icl::bias_value_count(spec));
    rows.push_back({Kind::before, kBeforeLabel, 0.0});
    if (linear) rows.push_back({Kind::iclca, kIclcaLabel, bias_bytes});
    const tasks::InductionHeadSpec task = induction_spec_from_config(model_cfg);
    if (!linear) {
        rows.push_back({Kind::cache, "exact cache (check)", icl::cache_bytes(cfg.get_int("prompt_baking.prompt_length"), D) * L * H});
        const icl::SequenceSampler sample = icl::induction_sequence_sampler(task);
        const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
        const auto add_map = [&](const std::string& map, std::size_t F, Rng rng) {
            icl::FeatureMapChoice choice;
            choice.map = map;
            choice.features = F;
            choice.fit.steps = cfg.get_int("prompt_baking.iclaa.learned_steps");
            choice.fit.lr = cfg.get_float("prompt_baking.iclaa.learned_lr");
            choice.fit.batch = cfg.get_int("prompt_baking.iclaa.learned_batch");
            choice.fit.split_min = 8;
            choice.fit.split_max = static_cast<std::size_t>(task.seq_len) - 16;
            const auto start = std::chrono::steady_clock::now();
            maps.push_back(std::make_unique<icl::LayerHeadMaps>(icl::build_feature_maps(net, choice, sample, task.seq_len, rng, nullptr)));
            rows.push_back({Kind::kernel, map + " F=" + std::to_string(F), icl::kernel_bytes(F, D) * L * H, maps.back().get(), 0,
                            seconds_since(start)});
        };
        for (const auto& map : cfg.get_string_list("prompt_baking.iclaa.feature_maps")) {
            if (map == "learned") {
                Rng data = root.derive(kFitData);
                const icl::SequenceSampler from_data = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng&) { sample(tokens, batch, data); };
                icl::FeatureMapChoice choice;
                const auto start = std::chrono::steady_clock::now();
                choice.map = "learned";
                choice.features = D;
                choice.fit.steps = cfg.get_int("prompt_baking.iclaa.learned_steps");
                choice.fit.lr = cfg.get_float("prompt_baking.iclaa.learned_lr");
                choice.fit.batch = cfg.get_int("prompt_baking.iclaa.learned_batch");
                choice.fit.split_min = 8;
                choice.fit.split_max = static_cast<std::size_t>(task.seq_len) - 16;
                Rng init = root.derive(kFitInit);
                maps.push_back(std::make_unique<icl::LayerHeadMaps>(icl::build_feature_maps(net, choice, from_data, task.seq_len, init, nullptr)));
                rows.push_back({Kind::kernel, learned_equal_label(D), icl::kernel_bytes(D, D) * L * H, maps.back().get(), 0, seconds_since(start)});
                for (const auto k : cfg.get_int_list("prompt_baking.iclaa.keep_tokens"))
                    rows.push_back({Kind::hybrid, "recent k=" + std::to_string(k) + " + " + learned_equal_label(D),
                                    (icl::kernel_bytes(D, D) + icl::cache_bytes(k, D)) * L * H, maps.back().get(), static_cast<std::size_t>(k),
                                    rows.back().map_seconds});
                continue;
            }
            add_map(map, D, root.derive(kFeatures).derive(D * 10 + (map == "orf")));
            if (map == "prf")
                for (const auto F : cfg.get_int_list("prompt_baking.iclaa.random_features"))
                    if (static_cast<std::size_t>(F) != D) add_map(map, F, root.derive(kFeatures).derive(F * 10));
        }
    }
    for (const auto& target : cfg.get_string_list("prompt_baking.targets")) {
        if (target == "kernel") {  // per map and start, on the closed-form row's map object (same bytes)
            for (const auto& m : cfg.get_string_list("prompt_baking.kernel_maps"))
                for (const auto& start : cfg.get_string_list("prompt_baking.kernel_starts")) {
                    const std::string closed = m + " F=" + std::to_string(D);
                    const auto found = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.kind == Kind::kernel && r.label == closed; });
                    ICLAB_CHECK(found != rows.end(), "no closed-form row " << closed << " for kernel baking");
                    Row row{Kind::bake_kernel, bake_kernel_label(closed, start == "zero"), found->bytes, found->maps, 0, found->map_seconds};
                    row.zero_start = start == "zero";
                    rows.push_back(row);
                }
        } else if (target == "biases") {
            rows.push_back({Kind::bake_biases, kBakeBiasesLabel, bias_bytes});
        } else {
            const std::size_t rank = cfg.get_int("prompt_baking.lora_rank") ? cfg.get_int("prompt_baking.lora_rank") : icl::lora_rank_for_equal_bytes(spec);
            ICLAB_INPUT_CHECK(rank >= 1, "config error: prompt_baking.lora_rank: no rank fits in the bias adapter's bytes");
            rows.push_back({Kind::bake_lora, lora_label(rank), 4.0 * static_cast<double>(icl::lora_value_count(spec, rank))});
        }
    }

    // The pairs, every row on each.
    const std::size_t M = cfg.get_int("prompt_baking.prompt_length"), N = cfg.get_int("prompt_baking.input_length");
    const tasks::PromptDesign design = tasks::parse_prompt_design(cfg.get_string("prompt_baking.prompt"));
    Rng pair_rng = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kPairs);
    std::vector<std::vector<PairScore>> scores(rows.size());
    for (std::int64_t p = 0; p < cfg.get_int("prompt_baking.pairs"); ++p) {
        const tasks::PromptPair pair = tasks::sample_prompt_pair(task, design, M, N, pair_rng);
        const std::vector<PairScore> pair_scores = score_pair(cfg, net, rows, pair, static_cast<std::size_t>(p));
        for (std::size_t r = 0; r < rows.size(); ++r) scores[r].push_back(pair_scores[r]);
        run.log() << "pair " << p << " scored\n" << std::flush;
    }
    const std::vector<io::ClaimResult> results = evaluate_claims(claims, rows, scores, cfg.get_int("seed"));
    write_results(cfg, rows, scores, results, run, quiet);
}

RunOutcome run_prompt_baking(const RunContext& context) {
    const config::Config& cfg = context.config;
    const std::string source_dir = cfg.get_string("source.run_dir");
    if (source_dir.empty()) {  // train the model first, as induction_head does (checkpoints, --resume)
        RunFolder run(cfg, context.options);
        const InductionTraining training = train_induction_model(cfg, context.options, run);
        if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
        if (!context.options.quiet) print_final_evaluation(training, cfg);
        model::Transformer<double> net(model_spec_from_config(cfg, tasks::kInductionVocab, cfg.get_int("task.seq_len")),
                                       model::Transformer<double>::Mode::inference);
        ICLAB_CHECK(net.params.size() == training.parameters.size(), "trained parameters do not fit the model");
        std::copy(training.parameters.begin(), training.parameters.end(), net.params.begin());
        evaluate(cfg, cfg, net, run, context.options.quiet);
        run.commit();
        return {run.path(), true, training.steps_total, training.steps_total};
    }
    ICLAB_INPUT_CHECK(context.options.stop_after == 0, "--stop-after stops training, and with source.run_dir nothing is trained");
    InductionRun loaded = load_induction_run(source_dir, context.catalog, 0, "source.run_dir", model::Transformer<double>::Mode::inference);
    check_model_keys_agree(cfg, loaded.config, (std::filesystem::path(source_dir) / kConfigFile).string());
    const auto M = cfg.get_int("prompt_baking.prompt_length"), N = cfg.get_int("prompt_baking.input_length"),
               G = cfg.get_int("prompt_baking.generate"), T = loaded.config.get_int("task.seq_len");
    ICLAB_INPUT_CHECK(M + N + G <= T, "config error: prompt_baking.prompt_length + input_length + generate = " << M + N + G
                                                                                                           << " exceeds the source model's task.seq_len = " << T);
    for (const auto& target : cfg.get_string_list("prompt_baking.targets")) check_target(loaded.model->spec(), target);
    if (loaded.model->spec().attention == model::ModelSpec::Attention::linear) icl::check_iclca_assumptions(loaded.model->spec());
    RunFolder run(cfg, context.options);
    run.log() << "model: the trained parameters of " << source_dir << " (no training here)\n";
    run.results().set_attr("source_run_dir", std::filesystem::absolute(source_dir).string());
    run.results().set_attr("source_config", loaded.config.to_yaml());
    evaluate(cfg, loaded.config, *loaded.model, run, context.options.quiet);
    run.commit();
    return {run.path(), true, 0, 0};
}

}  // namespace
}  // namespace prompt_baking_cpp

Experiment prompt_baking() {
    using namespace prompt_baking_cpp;
    return {"prompt_baking",
            "prompt baking (Bhargava et al. 2024) into b_KV, b_D or a LoRA of equal bytes against ICLCA (linear) and ICLAA "
            "(softmax) on the same prompts (issue 43)",
            {KeyGroup::output, KeyGroup::induction_task, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_prompt_baking,
            estimate};
}

}  // namespace iclab::experiments
