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

#include "experiments/iclaa/iclaa_config.hpp"
#include "experiments/iclaa/iclaa_precondition.hpp"
#include "experiments/iclaa/iclaa_report.hpp"
#include "experiments/iclaa/iclaa_stages.hpp"
#include "framework/core/check.hpp"
#include "framework/core/interrupt.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/progress.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/induction_training.hpp"
#include "framework/run/stage_store.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace iclaa_cpp {

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
    bool stopped = false;  // stopped (StageStore::stop_requested) before every learned fit was done: rows incomplete
};

// The staged units of this run (iclaa_stages.hpp) and the wall time of the ones loaded from earlier sessions.
struct Stages {
    StageStore& store;
    double earlier_seconds = 0.0;
};

Methods build_methods(const config::Config& cfg, model::Transformer<double>& net, const tasks::InductionHeadSpec& task, bool quiet,
                      RunFolder& run, Stages& stages) {
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
    if (uses("learned")) {
        const auto features = cfg.get_int_list("iclaa.learned.features");
        // fitted[s][i]: fit seed s of features[i]. The fits of one fit seed share its sequences (one data stream per fit
        // seed for every F), so those not stored yet run together (icl::fit_feature_maps_together: the frozen model's
        // forward once per step for every F; each F's maps bit for bit those of its fit alone); each is stored as it was.
        std::vector<std::vector<icl::LayerHeadMaps>> fitted(fit_seeds, std::vector<icl::LayerHeadMaps>(features.size()));
        std::vector<std::vector<icl::FeatureFitReport>> reports(fit_seeds, std::vector<icl::FeatureFitReport>(features.size()));
        std::vector<std::vector<bool>> loaded(fit_seeds, std::vector<bool>(features.size(), false));
        for (std::size_t s = 0; s < fit_seeds; ++s) {
            std::vector<std::size_t> todo;
            for (std::size_t i = 0; i < features.size(); ++i) {
                loaded[s][i] = load_fit(stages.store, static_cast<std::size_t>(features[i]), s, spec, fitted[s][i], reports[s][i]);
                if (loaded[s][i])
                    stages.earlier_seconds += reports[s][i].seconds;
                else
                    todo.push_back(i);
            }
            // in groups of at most StageStore::units_left() fits, each group from the start of the seed's data stream
            for (std::size_t next = 0; next < todo.size();) {
                if (stages.store.stop_requested()) {
                    methods.stopped = true;
                    return methods;
                }
                const std::vector<std::size_t> group(todo.begin() + static_cast<std::ptrdiff_t>(next),
                                                     todo.begin() + static_cast<std::ptrdiff_t>(std::min(todo.size(), next + stages.store.units_left())));
                next += group.size();
                // parameters from a stream per F and fit seed, sequences from one data stream per fit seed for every F
                Rng data = fit_stream(root.derive(kFitData), s);
                const icl::SequenceSource from_data = [&](std::vector<std::int32_t>& tokens, std::size_t batch) { sample(tokens, batch, data); };
                std::vector<Rng> inits;
                std::vector<icl::FeatureFitSettings> settings;
                std::string which;
                for (const std::size_t i : group) {
                    inits.push_back(fit_stream(root.derive(kFitInit).derive(static_cast<std::uint64_t>(features[i])), s));
                    settings.push_back(choice(Method::learned, static_cast<std::size_t>(features[i])).fit);
                    settings.back().features = static_cast<std::size_t>(features[i]);
                    which += (which.empty() ? "F=" : ", ") + std::to_string(features[i]);
                }
                std::vector<Rng*> streams;
                for (Rng& r : inits) streams.push_back(&r);
                Progress progress("iclaa", quiet);
                progress.stage("fitting the learned maps " + which + " (fit seed " + std::to_string(s) + ") together");
                settings[0].stop = [&stages] { return stages.store.stop_requested(); };
                settings[0].progress = [&progress](std::size_t done, std::size_t total) { progress.tick(done, total, "steps"); };
                std::vector<icl::FeatureFitReport> done;
                std::vector<icl::LayerHeadMaps> maps = icl::fit_feature_maps_together(net, from_data, T, settings, streams, &done);
                if (maps.empty()) {
                    run.log() << "learned maps " << which << " of fit seed " << s << ": abandoned after "
                              << done[0].seconds * static_cast<double>(group.size()) << " s (stopped)\n" << std::flush;
                    methods.stopped = true;
                    return methods;
                }
                for (std::size_t j = 0; j < group.size(); ++j) {
                    const std::size_t i = group[j];
                    fitted[s][i] = std::move(maps[j]);
                    reports[s][i] = done[j];
                    save_fit(stages.store, static_cast<std::size_t>(features[i]), s, fitted[s][i], reports[s][i]);
                    run.log() << "learned map F=" << features[i] << " fit seed " << s << ": fitted in " << reports[s][i].seconds << " s"
                              << (group.size() > 1 ? " (together with " + which + ")" : "") << "\n" << std::flush;
                }
            }
        }
        for (std::size_t i = 0; i < features.size(); ++i)  // the rows in their order: every fit seed of each F
            for (std::size_t s = 0; s < fit_seeds; ++s) {
                const auto F = features[i];
                const icl::FeatureFitReport& report = reports[s][i];
                methods.fits.push_back({static_cast<std::size_t>(F), s, report});
                if (loaded[s][i])
                    run.log() << "learned map F=" << F << " fit seed " << s << ": loaded from stages/ (fitted in " << report.seconds
                              << " s in an earlier session)\n" << std::flush;
                if (!quiet)
                    std::printf("%s learned feature maps F=%lld (fit seed %zu) in %.1f s%s\n", loaded[s][i] ? "loaded the" : "fitted",
                                static_cast<long long>(F), s, report.seconds, loaded[s][i] ? " (fitted in an earlier session)" : "");
                add({Method::learned, "learned F=" + std::to_string(F), static_cast<std::size_t>(F), s, icl::RopeConvention::rotate_then_map,
                     maps_of(std::move(fitted[s][i])), icl::kernel_bytes(F, D), (D * F / 2.0 + F) * kBytes});
            }
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

// Scores every row on the B pairs from `first` into `out` (its diagnostics too, when wanted); kernel rows with
// large F in smaller sub-batches (memory of the terms). False when stopped (StageStore::stop_requested) between rows.
bool score_chunk(const config::Config& cfg, model::Transformer<double>& net, const std::vector<Row>& rows,
                 const std::vector<tasks::PromptPair>& pairs, std::size_t first, std::size_t B, bool diagnose, const StageStore& store,
                 ChunkScores& out) {
    const model::ModelSpec& spec = net.spec();
    const std::size_t M = cfg.get_int("iclaa.prompt_length"), N = cfg.get_int("iclaa.input_length");
    const std::size_t V = spec.vocab, H = spec.heads, L = spec.layers, D = spec.head_dim();
    const auto chunk_start = std::chrono::steady_clock::now();
    out = ChunkScores{};
    out.rows.assign(rows.size(), {});
    out.conversion_seconds.assign(rows.size(), 0.0);
    std::vector<std::int32_t> prompts, inputs, whole;
    for (std::size_t b = 0; b < B; ++b) {
        const auto& pair = pairs[first + b];
        prompts.insert(prompts.end(), pair.prompt.begin(), pair.prompt.end());
        inputs.insert(inputs.end(), pair.input.begin(), pair.input.end());
        whole.insert(whole.end(), pair.prompt.begin(), pair.prompt.end());
        whole.insert(whole.end(), pair.input.begin(), pair.input.end());
    }
    // the reference: M_old on [X'; X] at X's positions (and its attention, for the diagnostics)
    net.capture_qkv(diagnose);
    net.forward(whole.data(), B, M + N);
    net.capture_qkv(false);
    std::vector<double> reference(B * N * V);
    for (std::size_t b = 0; b < B; ++b)
        std::copy(net.logits() + (b * (M + N) + M) * V, net.logits() + (b * (M + N) + M + N) * V, reference.begin() + b * N * V);
    if (diagnose) {
        Diagnostics diagnostics(L, H);
        accumulate_diagnostics(diagnostics, net, B, M, N);
        out.share = std::move(diagnostics.share);
        out.norm = std::move(diagnostics.norm);
    }
    const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, prompts.data(), B, M);
    for (std::size_t r = 0; r < rows.size(); ++r) {
        if (store.stop_requested()) return false;  // the chunk is abandoned; a resume scores it again
        const Row& row = rows[r];
        const double term_bytes = (row.maps ? row.size * (D + 1) : 2 * M * D) * 8.0 * L * H;
        const std::size_t sub = std::max<std::size_t>(1, std::min<std::size_t>(B, static_cast<std::size_t>(2.5e8 / term_bytes)));
        for (std::size_t s0 = 0; s0 < B; s0 += sub) {
            const std::size_t S = std::min(sub, B - s0);
            const auto start = std::chrono::steady_clock::now();
            icl::PromptTerms terms = icl::empty_prompt_terms(L, S * H);
            for (std::size_t b = 0; b < S; ++b) add_row_terms(terms, b, row, kv, s0 + b, net.rope());
            out.conversion_seconds[r] += seconds_since(start);
            const auto logits = icl::logits_with_terms(net, terms, inputs.data() + s0 * N, S, N);
            for (std::size_t b = 0; b < S; ++b)
                out.rows[r].push_back(
                    score_pair(pairs[first + s0 + b], logits.data() + b * N * V, reference.data() + (s0 + b) * N * V, N, V));
        }
    }
    out.seconds = seconds_since(chunk_start);
    return true;
}

// Scores every row on the pairs, in chunks of iclaa.batch_size, each chunk a stored unit "<pair_set>_pairs_<first>"
// (loaded when stored, else scored and stored); diagnostics (may be null) accumulates the attention statistics of
// M_old on [X'; X]. False when stopped before every chunk was scored.
bool score_rows(const config::Config& cfg, model::Transformer<double>& net, const std::vector<Row>& rows,
                const std::vector<tasks::PromptPair>& pairs, Diagnostics* diagnostics, Stages& stages, const std::string& pair_set,
                std::vector<RowScores>& scores) {
    const std::size_t P = pairs.size(), chunk = cfg.get_int("iclaa.batch_size");
    const std::size_t layer_heads = diagnostics ? diagnostics->layers * diagnostics->heads : 0;
    scores.assign(rows.size(), {});
    for (std::size_t first = 0; first < P; first += chunk) {
        if (stages.store.stop_requested()) return false;
        const std::size_t B = std::min(chunk, P - first);
        const std::string name = chunk_unit_name(pair_set, first);
        ChunkScores done;
        if (load_chunk(stages.store, name, rows, B, layer_heads, done)) {
            stages.earlier_seconds += done.seconds;
        } else {
            if (!score_chunk(cfg, net, rows, pairs, first, B, diagnostics != nullptr, stages.store, done)) return false;
            save_chunk(stages.store, name, rows, done);
        }
        for (std::size_t r = 0; r < rows.size(); ++r) {
            scores[r].pairs.insert(scores[r].pairs.end(), done.rows[r].begin(), done.rows[r].end());
            scores[r].conversion_seconds += done.conversion_seconds[r];
        }
        for (std::size_t i = 0; i < layer_heads; ++i) {
            diagnostics->share[i].insert(diagnostics->share[i].end(), done.share[i].begin(), done.share[i].end());
            diagnostics->norm[i].insert(diagnostics->norm[i].end(), done.norm[i].begin(), done.norm[i].end());
        }
    }
    return true;
}

// The ICLAA work after training, in stored units (iclaa_stages.hpp): the learned fits, then the validation and the
// test scoring in chunks; at the end the tables into run.results(). Returns "" when complete, else (stopped by a
// signal or --stop-after-units, every finished unit stored) where it stopped.
std::string evaluate(const config::Config& cfg, const config::Config& model_cfg, model::Transformer<double>& net, RunFolder& run,
                     StageStore& store, bool quiet) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<io::Claim> claims = declare_claims(cfg);  // ids and rules, before anything is measured
    const tasks::InductionHeadSpec task = induction_spec_from_config(model_cfg);
    Stages stages{store};
    const PromptPairs pairs = draw_pairs(cfg, task);
    // the precondition "the model learned the task" (iclaa_precondition.hpp), before the long work: recorded, never a
    // stop. Only a declared bar (> 0) is measured and recorded: a run without one writes exactly what it wrote before.
    const double bar = cfg.get_float("iclaa.precondition.min_icl_accuracy");
    if (bar > 0.0) {
        const io::Precondition learned_task = learned_task_precondition(
            bar, icl_accuracy_with_prompt(net, pairs.validation, cfg.get_int("iclaa.batch_size")), pairs.validation.size());
        io::write_precondition(run.results(), learned_task);
        const std::string line = "precondition " + std::string(learned_task.met() ? "met: " : "NOT met: ") + io::precondition_text(learned_task) +
                                 (learned_task.met() ? "" : "; `iclab claims` leaves this run out of its setting's claims");
        run.log() << line << "\n" << std::flush;
        if (!quiet) std::printf("%s\n", line.c_str());
    }
    Methods methods = build_methods(cfg, net, task, quiet, run, stages);
    // validation: the no-prompt row and every learned fit, on the validation pairs only (they pick the learned F)
    const auto maps = cfg.get_string_list("iclaa.feature_maps");
    const bool learned = std::find(maps.begin(), maps.end(), "learned") != maps.end();
    const std::size_t chunk = cfg.get_int("iclaa.batch_size"), fits = learned ? cfg.get_int_list("iclaa.learned.features").size() *
                                                                                     static_cast<std::size_t>(cfg.get_int("iclaa.learned.fit_seeds"))
                                                                               : 0;
    const std::size_t units = fits + (learned ? (pairs.validation.size() + chunk - 1) / chunk : 0) + (pairs.test.size() + chunk - 1) / chunk;
    const auto stopped = [&] {
        const std::string where = "with " + std::to_string(store.loaded() + store.saved()) + " of " + std::to_string(units) +
                                  " units of the ICLAA work stored in " + store.dir().string() +
                                  " (learned-map fits, then chunks of validation and test pairs)";
        run.log() << "stopped " << where << "\n" << std::flush;
        return where;
    };
    if (methods.stopped) return stopped();
    std::vector<Row> validation_rows;
    for (const Row& row : methods.rows)
        if (row.method == Method::before || row.method == Method::learned) validation_rows.push_back(row);
    LearnedSelection selection;
    if (validation_rows.size() > 1) {
        std::vector<RowScores> validation_scores;
        if (!score_rows(cfg, net, validation_rows, pairs.validation, nullptr, stages, "validation", validation_scores)) return stopped();
        selection = select_learned(validation_rows, validation_scores);
        selection.redrawn = pairs.redrawn;
        run.log() << "learned map: F=" << selection.features[selection.picked] << " picked on " << pairs.validation.size()
                  << " validation pairs\n" << std::flush;
    }
    Diagnostics diagnostics(net.spec().layers, net.spec().heads);
    std::vector<RowScores> scores;
    if (!score_rows(cfg, net, methods.rows, pairs.test, &diagnostics, stages, "test", scores)) return stopped();
    if (!pairs.validation.empty()) {  // /tables/validation_pairs: the pairs that picked the learned F (and nothing else)
        std::vector<std::string> prompt, input;
        for (const auto& pair : pairs.validation) {
            prompt.push_back(tasks::decode_tokens(std::vector<int>(pair.prompt.begin(), pair.prompt.end())));
            input.push_back(tasks::decode_tokens(std::vector<int>(pair.input.begin(), pair.input.end())));
        }
        run.results().write_columns("/tables/validation_pairs", {{"prompt", prompt}, {"input", input}});
    }
    Rng bootstrap = Rng(static_cast<std::uint64_t>(cfg.get_int("seed"))).derive(kBootstrap);
    // the work's wall time: this session's and that of the units it loaded from earlier sessions
    write_results(cfg, net.spec(), methods.rows, scores, pairs.test, diagnostics, methods.fits, selection, claims, bootstrap,
                  seconds_since(start) + stages.earlier_seconds, run, quiet);
    return "";
}

RunOutcome run_iclaa(const RunContext& context) {
    const config::Config& cfg = context.config;
    const RunOptions& options = context.options;
    const std::string source_dir = cfg.get_string("source.run_dir");
    // SIGINT/SIGTERM/SIGHUP: training stops at its next step with a checkpoint, the fits and the scoring at their next
    // step or row with every finished unit stored; the command exits with 128 + the signal and `--resume` continues.
    InterruptScope interruptible;
    if (source_dir.empty()) {
        RunFolder run(cfg, options);
        const InductionTraining training = train_induction_model(cfg, options, run);
        if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
        if (!options.quiet) print_final_evaluation(training, cfg);
        model::Transformer<double> net(model_spec_from_config(cfg, tasks::kInductionVocab, cfg.get_int("task.seq_len")),
                                       model::Transformer<double>::Mode::inference);
        ICLAB_CHECK(net.params.size() == training.parameters.size(), "trained parameters do not fit the model");
        std::copy(training.parameters.begin(), training.parameters.end(), net.params.begin());
        // checkpoint.h5 holds the trained model (its final checkpoint): a resume trains no step and continues here
        StageStore store(run, options, parameter_fingerprint(net.params), "trained here, " + std::to_string(training.steps_total) + " steps");
        const std::string stopped = evaluate(cfg, cfg, net, run, store, options.quiet);
        if (!stopped.empty()) return {run.path(), false, training.steps_total, training.steps_total};
        run.commit();
        store.remove_all();
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
    StageStore store(run, options, parameter_fingerprint(loaded.model->params),
                     "the trained parameters of " + std::filesystem::absolute(source_dir).string());
    const std::string stopped = evaluate(cfg, loaded.config, *loaded.model, run, store, options.quiet);
    if (!stopped.empty()) {
        // Nothing is trained here, so no checkpoint exists: a marker checkpoint (0 of 0 steps) makes the folder one
        // that `iclab run --resume` (and a sweep) continues; it is removed once the run is complete.
        const auto marker = run.open_checkpoint();
        marker->set_attr("kind", "iclaa on source.run_dir: nothing trained; its finished units are in stages/");
        marker->set_attr("next_step", std::int64_t{0});
        marker->set_attr("total_steps", std::int64_t{0});
        marker->commit();
        return {run.path(), false, 0, 0};
    }
    run.commit();
    std::filesystem::remove(run.checkpoint_path());
    store.remove_all();
    return {run.path(), true, 0, 0};
}

}  // namespace
}  // namespace iclaa_cpp

Experiment iclaa() {
    using namespace iclaa_cpp;
    return {"iclaa",
            "ICLAA: a prompt as kernel biases of a softmax model (random, elu+1 and learned feature maps) against the exact "
            "and truncated prompt caches (paper 000 §5, §6.4)",
            {KeyGroup::output, KeyGroup::induction_task, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_iclaa,
            estimate};
}

}  // namespace iclab::experiments
