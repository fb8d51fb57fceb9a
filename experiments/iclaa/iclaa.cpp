// Experiment `iclaa` (paper 000 §5, Eq. 17-18, Algorithm 2, §6.4 "16.56% → 9.17%"; spec ../shared/specs/iclaa.md):
// on a trained softmax RoPE induction-head model, how close each compression of an ICL prompt X' brings M_old on X
// to M_old on [X'; X]: kernel biases through random (PRF, ORF), fixed (elu+1) or learned feature maps (ICLAA), the
// exact prompt KV cache (the check: equal to rounding) and truncated caches (recent-k, heavy-k) at equal bytes.
// Scored per pair: relative logit error, gap closed G = 1 − after/before (the paper's 0.446 is derived from its two
// printed errors: framework/icl/iclaa_claims.hpp, whose claims on G are declared here per pair), KL, top-1
// agreement, ICL accuracy on X's first trigger occurrences. All in float64.
// Held-out selection: the learned map's F is picked on validation pairs (their own stream, disjoint from the test
// pairs); every table and claim is on the test pairs (iclaa.pairs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

#include "experiments/iclaa/iclaa_report.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/induction_training.hpp"

namespace iclab::experiments {

using namespace iclab::run;
using namespace iclab::experiments::iclaa_detail;

namespace {

// Sub-streams of the run's seed (1-3: induction training's init, data, eval). kPairs: the test pairs; kValidationPairs:
// the validation pairs (a pair equal to a test pair is drawn again). Learned fit seed 0 draws its initialization from
// kFitInit's sub-stream F and its sequences from kFitData; fit seed s > 0 from their sub-streams s (below).
enum Stream : std::uint64_t { kPairs = 4, kFeatures = 5, kFitInit = 6, kFitData = 7, kBootstrap = 8, kValidationPairs = 9 };

// Fit seed 0 is the stream itself (the fits of runs before fit seeds existed), fit seed s > 0 its sub-stream s.
Rng fit_stream(const Rng& stream, std::size_t fit_seed) { return fit_seed == 0 ? stream : stream.derive(fit_seed); }

// Bytes per layer-head of whatever stands for a prompt of M tokens, fp32: spec §3.
constexpr double kBytes = 4.0;

// Everything the rows point at (maps must outlive the rows).
struct Methods {
    std::vector<std::unique_ptr<icl::LayerHeadMaps>> maps;
    std::vector<Row> rows;
    std::vector<FitSummary> fits;
};

Methods build_methods(const config::Config& cfg, model::Transformer<double>& net, const tasks::InductionHeadSpec& task, bool quiet,
                      RunFolder& run) {
    const model::ModelSpec& spec = net.spec();
    const std::size_t D = spec.head_dim(), M = cfg.get_int("iclaa.prompt_length");
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    Methods methods;
    const auto add = [&](Row row) { methods.rows.push_back(std::move(row)); };
    add({Method::before, "no prompt (before)", 0, 0, icl::RopeConvention::rotate_then_map, nullptr, 0.0, 0.0});
    add({Method::exact_cache, "exact cache (check)", M, 0, icl::RopeConvention::rotate_then_map, nullptr, icl::cache_bytes(M, D), 0.0});
    for (const auto k : cfg.get_int_list("iclaa.keep_tokens")) {
        for (const Method m : {Method::recent, Method::heavy})
            add({m, std::string(method_name(m)) + " k=" + std::to_string(k), static_cast<std::size_t>(k), 0,
                 icl::RopeConvention::rotate_then_map, nullptr, icl::cache_bytes(k, D), 0.0});
    }
    const auto maps_of = [&](icl::LayerHeadMaps maps) {
        methods.maps.push_back(std::make_unique<icl::LayerHeadMaps>(std::move(maps)));
        return methods.maps.back().get();
    };
    const auto feature_maps = cfg.get_string_list("iclaa.feature_maps");
    const auto uses = [&](const char* name) { return std::find(feature_maps.begin(), feature_maps.end(), name) != feature_maps.end(); };
    const std::size_t T = static_cast<std::size_t>(task.seq_len);
    const icl::SequenceSampler sample = icl::induction_sequence_sampler(task);
    const auto choice = [&](Method m, std::size_t F) {
        icl::FeatureMapChoice c;
        c.map = method_name(m);
        c.features = F;
        c.fit.steps = cfg.get_int("iclaa.learned.steps");
        c.fit.lr = cfg.get_float("iclaa.learned.lr");
        c.fit.batch = cfg.get_int("iclaa.learned.batch");
        c.fit.split_min = cfg.get_int("iclaa.learned.split_min");
        c.fit.split_max = cfg.get_int("iclaa.learned.split_max");
        return c;
    };
    const Rng feature_root = root.derive(kFeatures);
    const std::size_t seeds = cfg.get_int("iclaa.feature_seeds");
    for (const Method m : {Method::prf, Method::orf}) {
        if (!uses(method_name(m))) continue;
        for (const auto F : cfg.get_int_list("iclaa.random_features"))
            for (std::size_t s = 0; s < seeds; ++s) {
                Rng rng = feature_root.derive(static_cast<std::uint64_t>(F) * 1000 + s * 10 + (m == Method::orf));
                add({m, std::string(method_name(m)) + " F=" + std::to_string(F), static_cast<std::size_t>(F), s,
                     icl::RopeConvention::rotate_then_map,
                     maps_of(icl::build_feature_maps(net, choice(m, F), sample, T, rng, nullptr)), icl::kernel_bytes(F, D), 0.0});
            }
    }
    if (uses("prf")) {  // the RoPE convention ablation (spec §5 #2-5): the largest F's first features, rotated otherwise
        const Row reference = *std::find_if(methods.rows.rbegin(), methods.rows.rend(), [](const Row& r) {
            return r.method == Method::prf && r.seed == 0;
        });
        for (const auto convention : {icl::RopeConvention::absolute_prompt_positions, icl::RopeConvention::unrotated}) {
            Row row = reference;
            row.convention = convention;
            row.label = reference.label + " (" + icl::rope_convention_name(convention) + ")";
            add(row);
        }
    }
    if (uses("elu1")) {
        Rng unused(0);
        add({Method::elu1, "elu1 F=" + std::to_string(D), D, 0, icl::RopeConvention::rotate_then_map,
             maps_of(icl::build_feature_maps(net, choice(Method::elu1, D), sample, T, unused, nullptr)), icl::kernel_bytes(D, D), 0.0});
    }
    const std::size_t fit_seeds = cfg.get_int("iclaa.learned.fit_seeds");
    if (uses("learned"))
        for (const auto F : cfg.get_int_list("iclaa.learned.features"))
            for (std::size_t s = 0; s < fit_seeds; ++s) {
                // parameters from a stream per F and fit seed, sequences from one data stream per fit seed for every F
                Rng init = fit_stream(root.derive(kFitInit).derive(static_cast<std::uint64_t>(F)), s);
                Rng data = fit_stream(root.derive(kFitData), s);
                const icl::SequenceSampler from_data = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng&) {
                    sample(tokens, batch, data);
                };
                icl::FeatureFitReport report;
                icl::LayerHeadMaps maps = icl::build_feature_maps(net, choice(Method::learned, F), from_data, T, init, &report);
                methods.fits.push_back({static_cast<std::size_t>(F), s, report});
                run.log() << "learned map F=" << F << " fit seed " << s << ": fitted in " << report.seconds << " s\n" << std::flush;
                if (!quiet)
                    std::printf("fitted learned feature maps F=%lld (fit seed %zu) in %.1f s\n", static_cast<long long>(F), s, report.seconds);
                add({Method::learned, "learned F=" + std::to_string(F), static_cast<std::size_t>(F), s, icl::RopeConvention::rotate_then_map,
                     maps_of(std::move(maps)), icl::kernel_bytes(F, D), (D * F / 2.0 + F) * kBytes});
            }
    // hybrid rows: the recent-k exact cache + the smallest learned map (each fit seed) for the older prompt tokens
    const auto smallest_learned = std::find_if(methods.rows.begin(), methods.rows.end(), [](const Row& r) { return r.method == Method::learned; });
    if (smallest_learned != methods.rows.end() && cfg.get_bool("iclaa.hybrid")) {
        const std::vector<Row> learned(smallest_learned, smallest_learned + static_cast<std::ptrdiff_t>(fit_seeds));
        for (const auto k : cfg.get_int_list("iclaa.keep_tokens"))
            for (const Row& fit : learned) {
                Row row = fit;
                row.method = Method::hybrid;
                row.label = "recent k=" + std::to_string(k) + " + " + fit.label;
                row.keep = static_cast<std::size_t>(k);
                row.bytes = icl::cache_bytes(k, D) + fit.bytes;
                add(row);
            }
    }
    return methods;
}

// The test pairs (iclaa.pairs, stream kPairs) and the validation pairs (iclaa.validation_pairs, stream
// kValidationPairs; a draw equal to a test pair, prompt and input, is drawn again, so that the two sets are disjoint).
struct PromptPairs {
    std::vector<tasks::PromptPair> test, validation;
    std::size_t redrawn = 0;  // validation draws refused as equal to a test pair
};

PromptPairs draw_pairs(const config::Config& cfg, const tasks::InductionHeadSpec& task) {
    const std::size_t M = cfg.get_int("iclaa.prompt_length"), N = cfg.get_int("iclaa.input_length");
    const tasks::PromptDesign design = tasks::parse_prompt_design(cfg.get_string("iclaa.prompt"));
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    PromptPairs pairs;
    const auto tokens = [](const tasks::PromptPair& pair) {
        std::vector<std::int32_t> t(pair.prompt);
        t.insert(t.end(), pair.input.begin(), pair.input.end());
        return t;
    };
    Rng test_rng = root.derive(kPairs), validation_rng = root.derive(kValidationPairs);
    std::set<std::vector<std::int32_t>> test_tokens;
    for (std::int64_t p = 0; p < cfg.get_int("iclaa.pairs"); ++p) {
        pairs.test.push_back(tasks::sample_prompt_pair(task, design, M, N, test_rng));
        test_tokens.insert(tokens(pairs.test.back()));
    }
    while (pairs.validation.size() < static_cast<std::size_t>(cfg.get_int("iclaa.validation_pairs"))) {
        tasks::PromptPair pair = tasks::sample_prompt_pair(task, design, M, N, validation_rng);
        if (test_tokens.count(tokens(pair))) {
            ICLAB_INPUT_CHECK(++pairs.redrawn <= 1000 + 10 * pairs.test.size(),
                              "iclaa.validation_pairs: cannot draw validation pairs apart from the test pairs (too few distinct pairs)");
            continue;
        }
        pairs.validation.push_back(std::move(pair));
    }
    return pairs;
}

// Scores every row on the pairs, in chunks; kernel rows with large F in smaller sub-batches (memory of the terms).
// diagnostics (may be null) accumulates the attention statistics of M_old on [X'; X].
std::vector<RowScores> score_rows(const config::Config& cfg, model::Transformer<double>& net, const std::vector<Row>& rows,
                                  const std::vector<tasks::PromptPair>& pairs, Diagnostics* diagnostics) {
    const model::ModelSpec& spec = net.spec();
    const std::size_t M = cfg.get_int("iclaa.prompt_length"), N = cfg.get_int("iclaa.input_length"), P = pairs.size();
    const std::size_t chunk = cfg.get_int("iclaa.batch_size"), V = spec.vocab, H = spec.heads, L = spec.layers, D = spec.head_dim();
    std::vector<RowScores> scores(rows.size());
    std::vector<std::int32_t> prompts, inputs, whole;
    for (std::size_t first = 0; first < P; first += chunk) {
        const std::size_t B = std::min(chunk, P - first);
        prompts.clear();
        inputs.clear();
        whole.clear();
        for (std::size_t b = 0; b < B; ++b) {
            const auto& pair = pairs[first + b];
            prompts.insert(prompts.end(), pair.prompt.begin(), pair.prompt.end());
            inputs.insert(inputs.end(), pair.input.begin(), pair.input.end());
            whole.insert(whole.end(), pair.prompt.begin(), pair.prompt.end());
            whole.insert(whole.end(), pair.input.begin(), pair.input.end());
        }
        // the reference: M_old on [X'; X] at X's positions (and its attention, for the diagnostics)
        net.capture_qkv(diagnostics != nullptr);
        net.forward(whole.data(), B, M + N);
        net.capture_qkv(false);
        std::vector<double> reference(B * N * V);
        for (std::size_t b = 0; b < B; ++b)
            std::copy(net.logits() + (b * (M + N) + M) * V, net.logits() + (b * (M + N) + M + N) * V, reference.begin() + b * N * V);
        if (diagnostics) accumulate_diagnostics(*diagnostics, net, B, M, N);
        const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, prompts.data(), B, M);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const Row& row = rows[r];
            const double term_bytes = (row.maps ? row.size * (D + 1) : 2 * M * D) * 8.0 * L * H;
            const std::size_t sub = std::max<std::size_t>(1, std::min<std::size_t>(B, static_cast<std::size_t>(2.5e8 / term_bytes)));
            for (std::size_t s0 = 0; s0 < B; s0 += sub) {
                const std::size_t S = std::min(sub, B - s0);
                const auto start = std::chrono::steady_clock::now();
                icl::PromptTerms terms = icl::empty_prompt_terms(L, S * H);
                for (std::size_t b = 0; b < S; ++b) add_row_terms(terms, b, row, kv, s0 + b, net.rope());
                scores[r].conversion_seconds += seconds_since(start);
                const auto logits = icl::logits_with_terms(net, terms, inputs.data() + s0 * N, S, N);
                for (std::size_t b = 0; b < S; ++b)
                    scores[r].pairs.push_back(
                        score_pair(pairs[first + s0 + b], logits.data() + b * N * V, reference.data() + (s0 + b) * N * V, N, V));
            }
        }
    }
    return scores;
}

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

// Training (without source.run_dir); the feature maps of every prf / orf row held at once (a (D, F) draw per layer and
// head, feature_seeds draws per F) plus one sub-batch's prompt terms (F (D + 1) per layer and head); per pair and row
// the prompt's and the input's features and state products (4 D F per token, layer and head); the learned fits.
// The model size comes from this config's model keys (with source.run_dir: the source's, assumed alike).
RunEstimate estimate(const config::Config& cfg) {
    const bool trains = cfg.get_string("source.run_dir").empty();
    RunEstimate e = trains ? estimate_training(cfg) : RunEstimate{};
    const double L = static_cast<double>(cfg.get_int("model.layers")), H = static_cast<double>(cfg.get_int("model.heads"));
    const double D = static_cast<double>(cfg.get_int("model.width")) / H;
    const double M = static_cast<double>(cfg.get_int("iclaa.prompt_length")), N = static_cast<double>(cfg.get_int("iclaa.input_length"));
    const double pairs = static_cast<double>(cfg.get_int("iclaa.pairs")), seeds = static_cast<double>(cfg.get_int("iclaa.feature_seeds"));
    const auto maps = cfg.get_string_list("iclaa.feature_maps");
    const double random_kinds = static_cast<double>(std::count(maps.begin(), maps.end(), "prf") + std::count(maps.begin(), maps.end(), "orf"));
    double features = 0, largest = D;
    for (const auto F : cfg.get_int_list("iclaa.random_features"))
        features += random_kinds * seeds * static_cast<double>(F), largest = std::max(largest, static_cast<double>(F));
    const double fit_seeds = static_cast<double>(cfg.get_int("iclaa.learned.fit_seeds"));
    double learned_features = 0;
    if (std::count(maps.begin(), maps.end(), "learned"))
        for (const auto F : cfg.get_int_list("iclaa.learned.features")) {
            learned_features += fit_seeds * static_cast<double>(F), largest = std::max(largest, static_cast<double>(F));
            e.flops += fit_seeds * static_cast<double>(cfg.get_int("iclaa.learned.steps") * cfg.get_int("iclaa.learned.batch")) *
                       static_cast<double>(cfg.get_int("task.seq_len")) * L * H * 12.0 * D * static_cast<double>(F);
        }
    features += learned_features;
    const double gib = 1024.0 * 1024.0 * 1024.0;
    e.memory_gib = std::max(e.memory_gib, (features * L * H * D + largest * (D + 1) * L * H) * 8.0 / gib +
                                              static_cast<double>(cfg.get_int("iclaa.batch_size")) * (M + N) * 60.0 * L * D * H * 8.0 / gib);
    e.flops += pairs * (M + N) * L * H * 4.0 * D * features;
    e.flops += static_cast<double>(cfg.get_int("iclaa.validation_pairs")) * (M + N) * L * H * 4.0 * D * learned_features;
    e.keys = {"iclaa.random_features", "iclaa.feature_seeds", "iclaa.pairs", "iclaa.learned.fit_seeds", "model.width", "train.steps"};
    return e;
}

void evaluate(const config::Config& cfg, const config::Config& model_cfg, model::Transformer<double>& net, RunFolder& run, bool quiet) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<io::Claim> claims = declare_claims(cfg);  // ids and rules, before anything is measured
    const tasks::InductionHeadSpec task = induction_spec_from_config(model_cfg);
    Methods methods = build_methods(cfg, net, task, quiet, run);
    const PromptPairs pairs = draw_pairs(cfg, task);
    // validation: the no-prompt row and every learned fit, on the validation pairs only (they pick the learned F)
    std::vector<Row> validation_rows;
    for (const Row& row : methods.rows)
        if (row.method == Method::before || row.method == Method::learned) validation_rows.push_back(row);
    LearnedSelection selection;
    if (validation_rows.size() > 1) {
        selection = select_learned(validation_rows, score_rows(cfg, net, validation_rows, pairs.validation, nullptr));
        selection.redrawn = pairs.redrawn;
        run.log() << "learned map: F=" << selection.features[selection.picked] << " picked on " << pairs.validation.size()
                  << " validation pairs\n" << std::flush;
    }
    if (!pairs.validation.empty()) {  // /tables/validation_pairs: the pairs that picked the learned F (and nothing else)
        std::vector<std::string> prompt, input;
        for (const auto& pair : pairs.validation) {
            prompt.push_back(tasks::decode_tokens(std::vector<int>(pair.prompt.begin(), pair.prompt.end())));
            input.push_back(tasks::decode_tokens(std::vector<int>(pair.input.begin(), pair.input.end())));
        }
        run.results().write_columns("/tables/validation_pairs", {{"prompt", prompt}, {"input", input}});
    }
    Diagnostics diagnostics(net.spec().layers, net.spec().heads);
    const std::vector<RowScores> scores = score_rows(cfg, net, methods.rows, pairs.test, &diagnostics);
    Rng bootstrap = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBootstrap);
    write_results(cfg, net.spec(), methods.rows, scores, pairs.test, diagnostics, methods.fits, selection, claims, bootstrap,
                  seconds_since(start), run, quiet);
}

RunOutcome run_iclaa(const RunContext& context) {
    const config::Config& cfg = context.config;
    const RunOptions& options = context.options;
    const std::string source_dir = cfg.get_string("source.run_dir");
    if (source_dir.empty()) {
        RunFolder run(cfg, options);
        const InductionTraining training = train_induction_model(cfg, options, run);
        if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
        if (!options.quiet) print_final_evaluation(training, cfg);
        model::Transformer<double> net(model_spec_from_config(cfg, tasks::kInductionVocab, cfg.get_int("task.seq_len")),
                                       model::Transformer<double>::Mode::inference);
        ICLAB_CHECK(net.params.size() == training.parameters.size(), "trained parameters do not fit the model");
        std::copy(training.parameters.begin(), training.parameters.end(), net.params.begin());
        evaluate(cfg, cfg, net, run, options.quiet);
        run.commit();
        return {run.path(), true, training.steps_total, training.steps_total};
    }
    ICLAB_INPUT_CHECK(options.stop_after == 0, "--stop-after stops training, and with source.run_dir nothing is trained");
    InductionRun loaded = load_induction_run(source_dir, context.catalog, 0, "source.run_dir", model::Transformer<double>::Mode::inference);
    check_model_keys_agree(cfg, loaded.config, (std::filesystem::path(source_dir) / kConfigFile).string());
    icl::check_iclaa_assumptions(loaded.model->spec());
    const auto M = cfg.get_int("iclaa.prompt_length"), N = cfg.get_int("iclaa.input_length"), T = loaded.config.get_int("task.seq_len");
    ICLAB_INPUT_CHECK(M + N <= T, "config error: iclaa.prompt_length + iclaa.input_length = " << M + N
                                                                                           << " exceeds the source model's task.seq_len = " << T);
    ICLAB_INPUT_CHECK(cfg.get_int("iclaa.learned.split_max") < T, "config error: iclaa.learned.split_max must be below the source's task.seq_len");
    RunFolder run(cfg, options);
    run.log() << "model: the trained parameters of " << source_dir << " (no training here)\n";
    run.results().set_attr("source_run_dir", std::filesystem::absolute(source_dir).string());
    run.results().set_attr("source_config", loaded.config.to_yaml());
    evaluate(cfg, loaded.config, *loaded.model, run, options.quiet);
    run.commit();
    return {run.path(), true, 0, 0};
}

}  // namespace

Experiment iclaa() {
    return {"iclaa",
            "ICLAA: a prompt as kernel biases of a softmax model (random, elu+1 and learned feature maps) against the exact "
            "and truncated prompt caches (paper 000 §5, §6.4)",
            {KeyGroup::output, KeyGroup::induction_task, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_iclaa,
            estimate};
}

}  // namespace iclab::experiments
