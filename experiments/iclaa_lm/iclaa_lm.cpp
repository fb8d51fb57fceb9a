// Experiment `iclaa_lm` (paper 000 §6.4, Tables 3-5, App. E; issue 22; experiments/iclaa_lm/README.md): ICLAA on a
// GPT-2-shaped softmax language model — the KJV model trained here, or a real GPT-2 imported with `iclab import gpt2`.
// Prompts X' and continuations X are contiguous windows of the token file's held-out split. Per window, the relative
// logit error on X of M_old without the prompt and of every compression of X' (ICLAA with PRF / ORF features as the
// paper, iclab's learned maps, the exact prompt cache and truncated / hybrid caches) against M_old on [X'; X]; the gap
// closed G = 1 − err_new / err_old beside the paper's 1 − 9.17 / 16.56 = 0.446; bytes per method; greedy generations
// of the three models as Tables 3-5. All in float64.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "experiments/iclaa_lm/iclaa_lm_report.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/progress.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/run/lm_training.hpp"
#include "framework/text/token_file.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace iclaa_lm_cpp {

using namespace iclab::experiments::iclaa_lm_detail;

namespace {

// Sub-streams of the run's seed (1-3: lm training's initialization, training windows, held-out windows).
enum Stream : std::uint64_t { kFeatures = 5, kFitInit = 6, kFitData = 7 };

struct Methods {
    std::vector<std::unique_ptr<icl::LayerHeadMaps>> maps;
    std::vector<Row> rows;
    std::vector<FitSummary> fits;
};

Methods build_methods(const config::Config& cfg, model::Transformer<double>& net, const std::vector<std::int32_t>& train_tokens,
                      bool quiet, RunFolder& run, Progress& progress) {
    const model::ModelSpec& spec = net.spec();
    const std::size_t D = spec.head_dim(), M = cfg.get_int("iclaa_lm.prompt_length"), N = cfg.get_int("iclaa_lm.continuation_length");
    const bool learned_positions = spec.positions == model::ModelSpec::Positions::learned;
    const bool shift = learned_positions && cfg.get_string("iclaa_lm.input_positions") == "after_prompt";
    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    Methods methods;
    const auto add = [&](Row row) {
        row.shifted = shift && row.method != Method::no_prompt;
        methods.rows.push_back(std::move(row));
    };
    add({Method::no_prompt, "no prompt", 0, 0, 0, nullptr, 0.0});
    if (shift) add({Method::no_prompt_shifted, "no prompt (X at positions M..)", 0, 0, 0, nullptr, 0.0});
    add({Method::exact_cache, "exact cache", M, 0, 0, nullptr, icl::cache_bytes(M, D)});
    for (const auto k : cfg.get_int_list("iclaa_lm.keep_tokens"))
        for (const Method m : {Method::recent, Method::heavy})
            add({m, std::string(method_name(m)) + " k=" + std::to_string(k), static_cast<std::size_t>(k), 0, 0, nullptr,
                 icl::cache_bytes(static_cast<std::size_t>(k), D)});
    const auto keep_maps = [&](icl::LayerHeadMaps maps) {
        methods.maps.push_back(std::make_unique<icl::LayerHeadMaps>(std::move(maps)));
        return methods.maps.back().get();
    };
    const auto feature_maps = cfg.get_string_list("iclaa_lm.feature_maps");
    const auto uses = [&](const char* name) { return std::find(feature_maps.begin(), feature_maps.end(), name) != feature_maps.end(); };
    // sequences for the learned fit: windows of the training split only (never a held-out prompt)
    const std::size_t fit_time = std::min<std::size_t>(M + N, spec.max_seq_len);
    const icl::SequenceSampler from_train = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng& rng) {
        const auto starts = sample_window_starts(train_tokens.size(), fit_time, batch, rng, "data.tokens /train");
        tokens.clear();
        for (const auto s : starts)
            tokens.insert(tokens.end(), train_tokens.begin() + static_cast<std::ptrdiff_t>(s),
                          train_tokens.begin() + static_cast<std::ptrdiff_t>(s + fit_time));
    };
    icl::FeatureMapChoice choice;
    choice.fit.steps = cfg.get_int("iclaa_lm.learned.steps");
    choice.fit.lr = cfg.get_float("iclaa_lm.learned.lr");
    choice.fit.batch = cfg.get_int("iclaa_lm.learned.batch");
    choice.fit.split_min = cfg.get_int("iclaa_lm.learned.split_min");
    choice.fit.split_max = cfg.get_int("iclaa_lm.learned.split_max");
    const Rng feature_root = root.derive(kFeatures);
    for (const Method m : {Method::prf, Method::orf}) {
        if (!uses(method_name(m))) continue;
        for (const auto F : cfg.get_int_list("iclaa_lm.random_features"))
            for (std::size_t s = 0; s < static_cast<std::size_t>(cfg.get_int("iclaa_lm.feature_seeds")); ++s) {
                Rng rng = feature_root.derive(static_cast<std::uint64_t>(F) * 1000 + s * 10 + (m == Method::orf));
                choice.map = method_name(m);
                choice.features = static_cast<std::size_t>(F);
                add({m, std::string(method_name(m)) + " F=" + std::to_string(F), static_cast<std::size_t>(F), s, 0,
                     keep_maps(icl::build_feature_maps(net, choice, from_train, fit_time, rng, nullptr)),
                     icl::kernel_bytes(static_cast<std::size_t>(F), D)});
            }
    }
    if (uses("learned")) {
        // Every F on the same sequences (one data stream), so the fits run together (icl::fit_feature_maps_together: the
        // frozen model's forward once per step for every F; each F's maps bit for bit those of its fit alone).
        const auto features = cfg.get_int_list("iclaa_lm.learned.features");
        Rng data = root.derive(kFitData);
        const icl::SequenceSource same_data = [&](std::vector<std::int32_t>& tokens, std::size_t batch) { from_train(tokens, batch, data); };
        std::vector<Rng> inits;
        std::vector<icl::FeatureFitSettings> settings;
        for (const auto F : features) {
            inits.push_back(root.derive(kFitInit).derive(static_cast<std::uint64_t>(F)));
            settings.push_back(choice.fit);
            settings.back().features = static_cast<std::size_t>(F);
        }
        std::vector<Rng*> streams;
        for (Rng& r : inits) streams.push_back(&r);
        std::string which;
        for (const auto F : features) which += (which.empty() ? "F=" : ", ") + std::to_string(F);
        progress.stage("fitting the learned maps " + which + " together");
        settings[0].progress = [&progress](std::size_t done, std::size_t total) { progress.tick(done, total, "steps"); };
        std::vector<icl::FeatureFitReport> reports;
        std::vector<icl::LayerHeadMaps> fitted = features.empty() ? std::vector<icl::LayerHeadMaps>{}
                                                                  : icl::fit_feature_maps_together(net, same_data, fit_time, settings, streams, &reports);
        for (std::size_t i = 0; i < features.size(); ++i) {
            const auto F = features[i];
            methods.fits.push_back({static_cast<std::size_t>(F), reports[i]});
            run.log() << "learned map F=" << F << ": fitted in " << reports[i].seconds << " s (with the other F)\n" << std::flush;
            if (!quiet) std::printf("fitted learned feature maps F=%lld in %.1f s\n", static_cast<long long>(F), reports[i].seconds);
            add({Method::learned, "learned F=" + std::to_string(F), static_cast<std::size_t>(F), 0, 0, keep_maps(std::move(fitted[i])),
                 icl::kernel_bytes(static_cast<std::size_t>(F), D)});
        }
    }
    if (cfg.get_bool("iclaa_lm.hybrid")) {  // recent-k exact + the first kernel row (learned if any, else prf/orf) for the rest
        const auto kernel = std::find_if(methods.rows.begin(), methods.rows.end(), [](const Row& r) { return r.method == Method::learned; });
        const auto any = kernel != methods.rows.end() ? kernel : std::find_if(methods.rows.begin(), methods.rows.end(), [](const Row& r) {
            return r.maps != nullptr && r.seed == 0;
        });
        if (any != methods.rows.end()) {
            const Row base = *any;
            for (const auto k : cfg.get_int_list("iclaa_lm.keep_tokens"))
                add({Method::hybrid, "recent k=" + std::to_string(k) + " + " + base.label, base.size, 0, static_cast<std::size_t>(k),
                     base.maps, icl::cache_bytes(static_cast<std::size_t>(k), D) + base.bytes});
        }
    }
    return methods;
}

void declare_keys(config::Schema& schema) {
    add_lm_task_keys(schema);
    add_lm_training_keys(schema);
    schema.add_string_free("source.run_dir", "",
                           "a finished lm run (trained here, or `iclab import gpt2`) whose model to probe; its task.* and model.* "
                           "apply and nothing is trained. Empty: train the model here with the lm keys (data.tokens, model.*, train.*)")
        .add_int("iclaa_lm.prompts", 20, 2, 1 << 16, "P: held-out windows (prompt X' + continuation X), evenly spaced in /heldout")
        .add_int("iclaa_lm.prompt_length", 64, 2, 1 << 16, "M: tokens of the ICL prompt X'")
        .add_int("iclaa_lm.continuation_length", 32, 1, 1 << 16, "N: tokens of the continuation X scored (M + N <= the context)")
        .add_int("iclaa_lm.batch_size", 4, 1, 1 << 16, "windows per forward pass (the logits are batch·N·V doubles)")
        .add_string("iclaa_lm.input_positions", "after_prompt", {"after_prompt", "from_zero"},
                    "learned absolute positions (GPT-2): where X sits in the converted model, at M..M+N-1 as behind the prompt "
                    "(the exact cache is then exact) or at 0..N-1 (Eq. 17 read literally); RoPE models ignore it")
        .add_string_list("iclaa_lm.feature_maps", {"prf", "orf"}, {"prf", "orf", "learned"},
                         "ICLAA feature maps: prf / orf = Performer positive (orthogonal) random features, input scale D^-1/4 "
                         "(the paper's method); learned = iclab's two-sided exponential map fitted on /train windows")
        .add_int_list("iclaa_lm.random_features", {256}, 2, 1 << 20, "F of the prf / orf rows")
        .add_int("iclaa_lm.feature_seeds", 2, 1, 1000, "independent feature draws per prf / orf F")
        .add_int("iclaa_lm.claim_features", 0, 0, 1 << 20, "F of the rows the G claims judge (0: the largest random F)")
        .add_int_list("iclaa_lm.keep_tokens", {8, 16}, 1, 1 << 16, "k of the truncated-cache rows (recent-k, heavy-k) and hybrids")
        .add_bool("iclaa_lm.hybrid", true, "hybrid rows: recent-k exact cache + the first kernel map (learned if any) for older tokens")
        .add_int_list("iclaa_lm.learned.features", {16}, 2, 1 << 16, "F of the learned maps (even)")
        .add_int("iclaa_lm.learned.steps", 100, 1, 1 << 24, "Adam steps of each learned map's fit")
        .add_float("iclaa_lm.learned.lr", 1e-2, 0.0, 10.0, "Adam learning rate of the fit")
        .add_int("iclaa_lm.learned.batch", 4, 1, 1 << 16, "/train windows per fit step")
        .add_int("iclaa_lm.learned.split_min", 8, 1, 1 << 16, "smallest pseudo-prompt length of the fit's splits")
        .add_int("iclaa_lm.learned.split_max", 48, 1, 1 << 16, "largest pseudo-prompt length (< M + N)")
        .add_int("iclaa_lm.generation.examples", 3, 0, 1 << 10, "windows whose greedy continuations are shown (Tables 3-5)")
        .add_int("iclaa_lm.generation.input_tokens", 8, 1, 1 << 16, "X_in: the first tokens of the continuation given as input")
        .add_int("iclaa_lm.generation.new_tokens", 24, 1, 1 << 16, "tokens generated greedily");
    schema.add_rule([](const config::Config& cfg) {
        const auto M = cfg.get_int("iclaa_lm.prompt_length"), N = cfg.get_int("iclaa_lm.continuation_length");
        for (const auto k : cfg.get_int_list("iclaa_lm.keep_tokens"))
            if (k >= M)
                cfg.fail({"iclaa_lm.keep_tokens", "iclaa_lm.prompt_length"},
                         "iclaa_lm.keep_tokens: " + std::to_string(k) + " tokens do not truncate a prompt of iclaa_lm.prompt_length = " +
                             std::to_string(M) + " (each k must be smaller)");
        for (const auto F : cfg.get_int_list("iclaa_lm.learned.features"))
            if (F % 2 != 0) cfg.fail({"iclaa_lm.learned.features"}, "learned maps need an even F, got " + std::to_string(F));
        if (cfg.get_int("iclaa_lm.learned.split_min") > cfg.get_int("iclaa_lm.learned.split_max") ||
            cfg.get_int("iclaa_lm.learned.split_max") >= M + N)
            cfg.fail({"iclaa_lm.learned.split_max", "iclaa_lm.learned.split_min"},
                     "iclaa_lm.learned.split_min <= split_max < prompt_length + continuation_length must hold");
        if (cfg.get_int("iclaa_lm.generation.input_tokens") > N)
            cfg.fail({"iclaa_lm.generation.input_tokens", "iclaa_lm.continuation_length"},
                     "iclaa_lm.generation.input_tokens exceeds the continuation (iclaa_lm.continuation_length)");
        const auto F = cfg.get_int("iclaa_lm.claim_features");
        const auto random = cfg.get_int_list("iclaa_lm.random_features");
        if (F != 0 && std::find(random.begin(), random.end(), F) == random.end())
            cfg.fail({"iclaa_lm.claim_features", "iclaa_lm.random_features"}, "iclaa_lm.claim_features is not one of iclaa_lm.random_features");
        const std::string dir = cfg.get_string("source.run_dir");
        if (!dir.empty() && !std::filesystem::exists(std::filesystem::path(dir) / kResultsFile))
            cfg.fail({"source.run_dir"}, "'" + dir + "' holds no finished run (no " + kResultsFile + ")");
        if (cfg.get_string("data.tokens").empty())
            cfg.fail({"data.tokens"}, "iclaa_lm needs data.tokens: prompts and continuations come from its /heldout split");
        if (dir.empty() && cfg.get_string("model.attention") != "softmax")
            cfg.fail({"model.attention"}, "iclaa_lm approximates softmax attention (a linear model converts exactly: ICLCA, experiment lm)");
    });
}

// Training (without source.run_dir: estimate_lm_training) and the probe: per window and row a forward of N tokens
// (2 per multiply-add of the trunk and the V·C read-out), the reference forward of M + N, the learned fits (a forward
// of batch windows per step, once for every F: they run together); memory: the model in fp64 and three (batch, N, V) logit buffers. Issue 41: the kernel
// rows were not counted, so iclaa_lm.random_features=[1048576] started and ran out of memory: every prf / orf row's
// map (w (D, F) and c (F) per layer and head) is held for the whole run (build_methods), one row's prompt terms
// (b_KV (F, D), b_D (F) per window of a batch, layer and head) and the prompt's features (M F per head) at a time; the
// features of the M prompt tokens per window, row, layer and head (2 D F and F exps each) are fp64 loops
// (kFp64LoopWeight).
RunEstimate estimate(const config::Config& cfg) {
    const bool trains = cfg.get_string("source.run_dir").empty();
    RunEstimate e = trains ? estimate_lm_training(cfg) : RunEstimate{};
    const double V = static_cast<double>(cfg.get_int("task.vocab_size")), C = static_cast<double>(cfg.get_int("model.width"));
    const double L = static_cast<double>(cfg.get_int("model.layers")), ctx = static_cast<double>(cfg.get_int("task.context_length"));
    const double M = static_cast<double>(cfg.get_int("iclaa_lm.prompt_length")), N = static_cast<double>(cfg.get_int("iclaa_lm.continuation_length"));
    const double P = static_cast<double>(cfg.get_int("iclaa_lm.prompts")), B = static_cast<double>(cfg.get_int("iclaa_lm.batch_size"));
    const auto maps = cfg.get_string_list("iclaa_lm.feature_maps");
    const double kinds = static_cast<double>(std::count(maps.begin(), maps.end(), "prf") + std::count(maps.begin(), maps.end(), "orf"));
    const double keeps = static_cast<double>(cfg.get_int_list("iclaa_lm.keep_tokens").size());
    const double learned = std::count(maps.begin(), maps.end(), "learned") ? static_cast<double>(cfg.get_int_list("iclaa_lm.learned.features").size()) : 0.0;
    const double rows = 3.0 + 2.0 * keeps + kinds * static_cast<double>(cfg.get_int_list("iclaa_lm.random_features").size() * cfg.get_int("iclaa_lm.feature_seeds")) +
                        learned + (cfg.get_bool("iclaa_lm.hybrid") ? keeps : 0.0);
    const double per_token = 2.0 * (L * 12.0 * C * C + V * C);
    const double generated = static_cast<double>(cfg.get_int("iclaa_lm.generation.examples") * cfg.get_int("iclaa_lm.generation.new_tokens"));
    e.flops += P * (rows * N + 2.0 * (M + N)) * per_token + generated * (rows + 1.0) * per_token +
               (learned > 0 ? 1.0 : 0.0) * static_cast<double>(cfg.get_int("iclaa_lm.learned.steps") * cfg.get_int("iclaa_lm.learned.batch")) *
                   (M + N) * per_token;  // every F fitted together: one forward per step
    e.gemm_flops = e.flops;  // training and the model's forwards; the kernel features below are loops
    const double gib = 1024.0 * 1024.0 * 1024.0;
    const double H = static_cast<double>(cfg.get_int("model.heads")), D = C / H, seeds = static_cast<double>(cfg.get_int("iclaa_lm.feature_seeds"));
    double random_features = 0, largest = 0;
    for (const auto F : cfg.get_int_list("iclaa_lm.random_features"))
        random_features += kinds * seeds * static_cast<double>(F), largest = std::max(largest, kinds > 0 ? static_cast<double>(F) : 0.0);
    e.flops += kFp64LoopWeight * P * random_features * M * L * H * (2.0 * D + 20.0);
    const double parameters = V * C + ctx * C + L * 12.0 * C * C;
    const double kernel_rows = random_features * L * H * (D + 1.0) + largest * L * H * ((D + 1.0) * B + M);
    e.memory_gib = std::max(e.memory_gib, (parameters + 3.0 * B * (M + N) * V + kernel_rows) * 8.0 / gib);
    e.keys = {"iclaa_lm.random_features", "iclaa_lm.feature_seeds", "iclaa_lm.prompts", "iclaa_lm.batch_size", "model.width", "train.steps"};
    return e;
}

void evaluate(const config::Config& cfg, model::Transformer<double>& net, const std::filesystem::path& tokenizer, RunFolder& run,
              bool quiet) {
    const auto start = std::chrono::steady_clock::now();
    const model::ModelSpec& spec = net.spec();
    icl::check_iclaa_assumptions(spec);
    const std::size_t M = cfg.get_int("iclaa_lm.prompt_length"), N = cfg.get_int("iclaa_lm.continuation_length");
    const std::size_t generation_length = M + cfg.get_int("iclaa_lm.generation.input_tokens") + cfg.get_int("iclaa_lm.generation.new_tokens");
    check_fits_context(M + N, spec, "iclaa_lm.prompt_length + iclaa_lm.continuation_length");
    check_fits_context(generation_length, spec, "iclaa_lm.prompt_length + generation.input_tokens + generation.new_tokens");
    const std::filesystem::path token_path = cfg.get_string("data.tokens");
    const text::TokenFile data = text::read_token_file(token_path);
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(data.vocab_size) <= spec.vocab,
                      token_path.string() << " has a vocabulary of " << data.vocab_size << ", the model " << spec.vocab << " (data.tokens)");
    const std::vector<Window> windows = heldout_windows(data.heldout, static_cast<std::int32_t>(data.end_of_text), M, N,
                                                        cfg.get_int("iclaa_lm.prompts"), token_path.string() + " /heldout");
    // the claims are declared (ids, rules) before anything is measured
    const std::vector<io::Claim> claims = declare_claims(cfg);
    // Issue 44: each stage says when it starts (stderr unless --quiet, and the run's log), since a stage can take
    // minutes and printed nothing before; scoring reports its windows as it goes.
    Progress progress("iclaa_lm", quiet, &run.log());
    const auto stage = [&](const std::string& what) { progress.stage(what); };
    stage("building the compressions of the prompt: random and learned feature maps, caches");
    Methods methods = build_methods(cfg, net, data.train, quiet, run, progress);
    stage("scoring " + std::to_string(methods.rows.size()) + " rows on " + std::to_string(windows.size()) + " held-out windows");
    const Scores scores = score_rows(net, methods.rows, windows, cfg.get_int("iclaa_lm.batch_size"), &progress);
    stage("greedy generations of " + std::to_string(cfg.get_int("iclaa_lm.generation.examples")) + " examples");
    std::vector<const Row*> shown;  // Tables 3-5: M_old without the prompt, the exact cache, each kernel kind's first row
    for (const Row& row : methods.rows)
        if (row.method == Method::no_prompt || row.method == Method::exact_cache ||
            (row.maps != nullptr && row.seed == 0 && row.method != Method::hybrid &&
             std::none_of(shown.begin(), shown.end(), [&](const Row* r) { return r->method == row.method; })))
            shown.push_back(&row);
    const std::vector<Generation> generations =
        generate_examples(net, shown, windows, cfg.get_int("iclaa_lm.generation.examples"), cfg.get_int("iclaa_lm.generation.input_tokens"),
                          cfg.get_int("iclaa_lm.generation.new_tokens"), static_cast<std::int32_t>(data.end_of_text));
    stage("writing the results");
    write_results(cfg, spec, methods.rows, scores, windows, generations, claims, methods.fits, tokenizer, seconds_since(start), run, quiet);
}

RunOutcome run_iclaa_lm(const RunContext& context) {
    const config::Config& cfg = context.config;
    const RunOptions& options = context.options;
    const std::string source_dir = cfg.get_string("source.run_dir");
    if (source_dir.empty()) {
        check_lm_training_inputs(cfg);  // a refused run makes no folder
        RunFolder run(cfg, options);
        const LmTraining training = train_lm(cfg, options, run);
        if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
        model::Transformer<double> net(lm_model_spec(cfg), model::Transformer<double>::Mode::inference);
        ICLAB_CHECK(net.params.size() == training.parameters.size(), "trained parameters do not fit the model");
        std::copy(training.parameters.begin(), training.parameters.end(), net.params.begin());
        if (!options.quiet) std::printf("trained: held-out perplexity %.2f\n", training.final_eval_perplexity);
        const std::filesystem::path tokenizer = run.path() / kTokenizerFolder;
        evaluate(cfg, net, std::filesystem::is_directory(tokenizer) ? tokenizer : std::filesystem::path(), run, options.quiet);
        run.commit();
        return {run.path(), true, training.steps_total, training.steps_total};
    }
    ICLAB_INPUT_CHECK(options.stop_after == 0, "--stop-after stops training, and with source.run_dir nothing is trained");
    LmRun<double> loaded = load_lm_run<double>(source_dir, context.catalog, "source.run_dir");
    check_model_keys_agree(cfg, loaded.config, (std::filesystem::path(source_dir) / kConfigFile).string());
    icl::check_iclaa_assumptions(loaded.model->spec());
    std::filesystem::path tokenizer = loaded.tokenizer_dir();
    if (tokenizer.empty() && !cfg.get_string("data.tokenizer").empty()) tokenizer = cfg.get_string("data.tokenizer");
    RunFolder run(cfg, options);
    run.log() << "model: the parameters of " << source_dir << " (no training here)\n";
    run.results().set_attr("source_run_dir", std::filesystem::absolute(source_dir).string());
    run.results().set_attr("source_config", loaded.config.to_yaml());
    evaluate(cfg, *loaded.model, tokenizer, run, options.quiet);
    run.commit();
    return {run.path(), true, 0, 0};
}

}  // namespace
}  // namespace iclaa_lm_cpp

Experiment iclaa_lm() {
    using namespace iclaa_lm_cpp;
    return {"iclaa_lm",
            "ICLAA on a GPT-2-shaped language model: a held-out prompt as kernel biases (PRF, ORF, learned) against the exact "
            "and truncated caches, gap closed G and greedy generations (paper 000 §6.4, Tables 3-5)",
            {KeyGroup::output, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_iclaa_lm,
            estimate};
}

}  // namespace iclab::experiments
