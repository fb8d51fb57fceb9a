#include "experiments/iclaa/iclaa_config.hpp"

#include <algorithm>
#include <filesystem>

#include "framework/core/check.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/induction_training.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::experiments::iclaa_detail {

using namespace iclab::run;

void declare_keys(config::Schema& schema) {
    schema.add_string_free("source.run_dir", "",
                           "a finished induction-head run (softmax attention) whose trained model to use; its task.* and "
                           "model.* apply and nothing is trained. Empty: train the model here with the task/model/train keys")
        .add_string("iclaa.prompt", "chain", {"chain", "pairs"},
                    "ICL prompt X': chain = a sample path of the task's chain showing every trigger with its successor; "
                    "pairs = the bigrams 'trigger successor' once each among uniform non-trigger letters")
        .add_int("iclaa.prompt_length", 32, 2, 1 << 16, "M: tokens of the ICL prompt X'")
        .add_int("iclaa.input_length", 32, 1, 1 << 16, "N: tokens of the input X (M + N <= task.seq_len)")
        .add_int("iclaa.pairs", 1000, 1, 1 << 24, "test (prompt, input) pairs, from the seed's sub-stream 4: every table and claim")
        .add_int("iclaa.validation_pairs", 200, 0, 1 << 24,
                 "validation (prompt, input) pairs, from the seed's sub-stream 9 and disjoint from the test pairs: they pick "
                 "the learned map's F (the lowest mean relative logit error) and are reported nowhere else; >= 1 with learned maps")
        .add_int("iclaa.batch_size", 50, 1, 1 << 16, "pairs per forward pass")
        .add_string_list("iclaa.feature_maps", {"prf", "orf", "elu1", "learned"}, {"prf", "orf", "elu1", "learned"},
                         "kernel feature maps compared: prf / orf = Performer positive (orthogonal) random features with "
                         "the softmax kernel's scale D^-1/4 (spec §1.2 (A3)), elu1 = elu+1 of the raw q, k, learned = the "
                         "two-sided exponential map fitted by mixed-attention distillation (spec §4.1)")
        .add_int_list("iclaa.random_features", {16, 64, 256, 1024, 4096}, 2, 1 << 20, "F of the prf / orf rows")
        .add_int("iclaa.feature_seeds", 3, 1, 1000, "independent feature draws per prf / orf F (mean ± sd over them)")
        .add_int("iclaa.claim_features", 0, 0, 1 << 20, "F of the prf / orf rows the G claims judge (0: the largest random F)")
        .add_int_list("iclaa.keep_tokens", {2, 4, 8, 16}, 1, 1 << 16, "k of the truncated-cache rows (recent-k, heavy-k)")
        .add_int_list("iclaa.learned.features", {16, 64, 256}, 2, 1 << 16, "F of the learned maps (even)")
        .add_int("iclaa.learned.fit_seeds", 2, 1, 1000,
                 "independent fits per learned F (initialization and sequences; fit seed 0 is the fit of earlier runs); "
                 "each pair's error is averaged over them")
        .add_int("iclaa.learned.steps", 300, 1, 1 << 24, "Adam steps of each learned map's fit")
        .add_float("iclaa.learned.lr", 1e-2, 0.0, 10.0, "Adam learning rate of the fit")
        .add_int("iclaa.learned.batch", 32, 1, 1 << 16, "task sequences per fit step (never a test prompt)")
        .add_int("iclaa.learned.split_min", 8, 1, 1 << 16, "smallest pseudo-prompt length of the fit's splits")
        .add_int("iclaa.learned.split_max", 48, 1, 1 << 16, "largest pseudo-prompt length (< task.seq_len)")
        .add_int("iclaa.bootstrap", 1000, 0, 1 << 20, "bootstrap resamples of the 95% interval of the mean error")
        .add_float("iclaa.precondition.min_icl_accuracy", 0.0, 0.0, 1.0,
                   "run-level precondition 'the model learned the task' (issue 46), declared before the runs: the trained "
                   "model's ICL accuracy with the prompt on the validation pairs must reach this bar, else `iclab claims` "
                   "leaves the run out of its setting's claims and lists it with the reason; 0: no precondition")
        .add_bool("iclaa.hybrid", true,
                  "hybrid rows: the exact cache of the k most recent prompt tokens (each iclaa.keep_tokens) plus the "
                  "smallest learned map for the older tokens (LoLCATs' window + linear attention, spec §2.3)");
    schema.add_rule([](const config::Config& cfg) {
        for (const auto F : cfg.get_int_list("iclaa.learned.features"))
            if (F % 2 != 0) cfg.fail({"iclaa.learned.features"}, "learned maps need an even F, got " + std::to_string(F));
        const auto M = cfg.get_int("iclaa.prompt_length");
        for (const auto k : cfg.get_int_list("iclaa.keep_tokens"))
            if (k >= M)  // k = M keeps the whole prompt: the exact cache's row, not a truncation
                cfg.fail({"iclaa.keep_tokens", "iclaa.prompt_length"}, "iclaa.keep_tokens: " + std::to_string(k) +
                                                                           " tokens do not truncate the prompt, iclaa.prompt_length = " +
                                                                           std::to_string(M) + " (each k must be smaller)");
        const auto claim_F = cfg.get_int("iclaa.claim_features");
        const auto random = cfg.get_int_list("iclaa.random_features");
        if (claim_F != 0 && std::find(random.begin(), random.end(), claim_F) == random.end())
            cfg.fail({"iclaa.claim_features", "iclaa.random_features"}, "iclaa.claim_features is not one of iclaa.random_features");
        const auto maps = cfg.get_string_list("iclaa.feature_maps");
        if (std::find(maps.begin(), maps.end(), "learned") != maps.end() && cfg.get_int("iclaa.validation_pairs") < 1)
            cfg.fail({"iclaa.validation_pairs", "iclaa.feature_maps"},
                     "iclaa.validation_pairs must be >= 1 with learned maps: their F is picked on the validation pairs");
        if (cfg.get_float("iclaa.precondition.min_icl_accuracy") > 0.0 && cfg.get_int("iclaa.validation_pairs") < 1)
            cfg.fail({"iclaa.precondition.min_icl_accuracy", "iclaa.validation_pairs"},
                     "iclaa.precondition.min_icl_accuracy is measured on the validation pairs: iclaa.validation_pairs must be >= 1");
        if (cfg.get_int("iclaa.learned.split_min") > cfg.get_int("iclaa.learned.split_max"))
            cfg.fail({"iclaa.learned.split_min", "iclaa.learned.split_max"}, "split_min must not exceed split_max");
        if (!cfg.get_string("source.run_dir").empty()) return;
        const auto T = cfg.get_int("task.seq_len");
        if (cfg.get_int("iclaa.prompt_length") + cfg.get_int("iclaa.input_length") > T)
            cfg.fail({"iclaa.prompt_length", "iclaa.input_length", "task.seq_len"},
                     "prompt_length + input_length exceeds the training length task.seq_len = " + std::to_string(T) +
                         " (RoPE offsets the model never saw)");
        if (cfg.get_int("iclaa.learned.split_max") >= T)
            cfg.fail({"iclaa.learned.split_max", "task.seq_len"}, "split_max must be below task.seq_len");
        try {
            icl::check_iclaa_assumptions(model_spec_from_config(cfg, tasks::kInductionVocab, T));
        } catch (const InputError& error) {
            cfg.fail({"model.attention", "model.mask", "model.isolate_queries"}, error.what());
        }
    });
    schema.add_rule([](const config::Config& cfg) {
        const std::string dir = cfg.get_string("source.run_dir");
        if (!dir.empty() && !std::filesystem::exists(std::filesystem::path(dir) / kResultsFile))
            cfg.fail({"source.run_dir"}, "'" + dir + "' holds no finished run (no " + kResultsFile + ")");
    });
}

// Work (issue 21: the estimate before counted the kernel features of the random and learned rows and F-proportional
// fits at the nominal rate, 6e13 FLOP = 20 min for configs/paper/iclaa.yaml, which takes 2-3 h on one thread):
//   training (without source.run_dir): estimate_training;
//   the learned fits, per step: the frozen model's fp64 forward of `batch` sequences of T tokens once per fit seed (its F
//     run together), and for each F per layer-head
//     and sequence with split s (uniform in split_min..split_max) the distillation sample (the exact causal softmax
//     over every key, 4 D per query-key pair, and the exps) and the loss with its gradient (features 4 T D F, the
//     kernel and its products (T − s) s (6 F + 4 D), T F exps): icl::distillation_sample_work;
//   the scoring, per pair (test and validation): the reference forward of [X'; X] and the prompt's forward, then per
//     row the model's fp64 forward of X with the prompt's terms, and per kernel row (prf, orf with the two RoPE
//     ablation rows at the largest F, elu1, learned, hybrid) the features of M + N tokens per layer-head, 4 D F + F
//     exps each (icl::kernel_feature_work).
// Everything after training runs as fp64 loops over small per-head blocks: counted at kFp64LoopWeight nominal FLOPs.
// An exp counts icl::kEstimateExpFlops. The model size comes from this config's model keys (with source.run_dir: the source's,
// assumed alike). Memory: the feature maps of every prf / orf row held at once (a (D, F) draw per layer and head,
// feature_seeds draws per F) plus one sub-batch's prompt terms (F (D + 1) per layer and head).
RunEstimate estimate(const config::Config& cfg) {
    const bool trains = cfg.get_string("source.run_dir").empty();
    RunEstimate e = trains ? estimate_training(cfg) : RunEstimate{};
    const double L = static_cast<double>(cfg.get_int("model.layers")), H = static_cast<double>(cfg.get_int("model.heads"));
    const double D = static_cast<double>(cfg.get_int("model.width")) / H, LH = L * H, V = tasks::kInductionVocab;
    const double T = static_cast<double>(cfg.get_int("task.seq_len"));
    const double M = static_cast<double>(cfg.get_int("iclaa.prompt_length")), N = static_cast<double>(cfg.get_int("iclaa.input_length"));
    const double pairs = static_cast<double>(cfg.get_int("iclaa.pairs")), seeds = static_cast<double>(cfg.get_int("iclaa.feature_seeds"));
    const double validation = static_cast<double>(cfg.get_int("iclaa.validation_pairs"));
    const auto maps = cfg.get_string_list("iclaa.feature_maps");
    const auto uses = [&](const char* name) { return std::count(maps.begin(), maps.end(), name) > 0; };
    const double random_kinds = static_cast<double>(uses("prf") + uses("orf")), keeps = static_cast<double>(cfg.get_int_list("iclaa.keep_tokens").size());
    double random_features = 0, largest_random = 0, largest = D;
    for (const auto F : cfg.get_int_list("iclaa.random_features")) {
        random_features += random_kinds * seeds * static_cast<double>(F);
        largest_random = std::max(largest_random, static_cast<double>(F));
    }
    largest = std::max(largest, largest_random);
    const double fit_seeds = static_cast<double>(cfg.get_int("iclaa.learned.fit_seeds"));
    double learned_features = 0, learned_rows = 0, smallest_learned = 0, fit_work = 0;
    double forwards = 0;  // of the work after training, the model forwards: products through nn::gemm (gemm_flops)
    if (uses("learned")) {
        const double steps = static_cast<double>(cfg.get_int("iclaa.learned.steps")), batch = static_cast<double>(cfg.get_int("iclaa.learned.batch"));
        const std::int64_t split_min = cfg.get_int("iclaa.learned.split_min"), split_max = cfg.get_int("iclaa.learned.split_max");
        for (const auto F_int : cfg.get_int_list("iclaa.learned.features")) {
            const double F = static_cast<double>(F_int);
            learned_features += fit_seeds * F, learned_rows += fit_seeds, largest = std::max(largest, F);
            smallest_learned = smallest_learned == 0 ? F : std::min(smallest_learned, F);
            // mean over the splits of one sequence's work in one layer-head: the exact softmax, the loss and gradient
            const icl::FitSampleWork sample = icl::distillation_sample_work(T, D, F, split_min, split_max);
            const double per_sample = sample.products + sample.loops;
            fit_work += fit_seeds * steps * batch * LH * per_sample;
        }
        // the F of one fit seed run together (icl::fit_feature_maps_together): one forward per step and fit seed
        if (!cfg.get_int_list("iclaa.learned.features").empty()) {
            fit_work += fit_seeds * steps * batch * transformer_forward_flops(cfg, T, V);
            forwards += fit_seeds * steps * batch * transformer_forward_flops(cfg, T, V);
        }
    }
    // kernel features per pair (every layer-head, M + N tokens): the RoPE ablation rows, elu1, the hybrid rows
    const double ablation = uses("prf") ? 2.0 * largest_random : 0.0, elu1 = uses("elu1") ? D : 0.0;
    const double hybrid = cfg.get_bool("iclaa.hybrid") && smallest_learned > 0 ? keeps * fit_seeds * smallest_learned : 0.0;
    const double kernel_rows = random_kinds * seeds * static_cast<double>(cfg.get_int_list("iclaa.random_features").size()) +
                               (uses("prf") ? 2.0 : 0.0) + (uses("elu1") ? 1.0 : 0.0) + learned_rows +
                               (hybrid > 0 ? keeps * fit_seeds : 0.0);
    const double rows = 2.0 + 2.0 * keeps + kernel_rows;
    const double per_feature = (M + N) * LH * icl::kernel_feature_work(D);
    const double test_pair = transformer_forward_flops(cfg, M + N, V) + transformer_forward_flops(cfg, M, V) +
                             rows * transformer_forward_flops(cfg, N, V) +
                             (random_features + ablation + elu1 + learned_features + hybrid) * per_feature;
    const double validation_pair = learned_rows > 0 ? transformer_forward_flops(cfg, M + N, V) + transformer_forward_flops(cfg, M, V) +
                                                          (1.0 + learned_rows) * transformer_forward_flops(cfg, N, V) +
                                                          learned_features * per_feature
                                                    : 0.0;
    e.flops += kFp64LoopWeight * (fit_work + pairs * test_pair + validation * validation_pair);
    forwards += pairs * (transformer_forward_flops(cfg, M + N, V) + transformer_forward_flops(cfg, M, V) + rows * transformer_forward_flops(cfg, N, V));
    if (learned_rows > 0)
        forwards += validation * (transformer_forward_flops(cfg, M + N, V) + transformer_forward_flops(cfg, M, V) +
                                  (1.0 + learned_rows) * transformer_forward_flops(cfg, N, V));
    e.gemm_flops += forwards;  // unweighted: what ICLAB_COUNT_WORK counts
    const double gib = 1024.0 * 1024.0 * 1024.0;
    e.memory_gib = std::max(e.memory_gib, ((random_features + learned_features) * LH * D + largest * (D + 1) * LH) * 8.0 / gib +
                                              static_cast<double>(cfg.get_int("iclaa.batch_size")) * (M + N) * 60.0 * L * D * H * 8.0 / gib);
    e.keys = {"iclaa.random_features", "iclaa.feature_seeds", "iclaa.pairs", "iclaa.learned.fit_seeds", "model.width", "train.steps"};
    return e;
}

}  // namespace iclab::experiments::iclaa_detail
