// The declared lr fallback of paper 003 Part B (experiments/prefix_vs_causal/fallback.hpp).
#include "experiments/prefix_vs_causal/fallback.hpp"

#include <cstdio>
#include <filesystem>

#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/trainer.hpp"

namespace iclab::experiments::part_b {

namespace fs = std::filesystem;

namespace {

const char* const kFallbackFolder = "fallback";  // <run folder>/fallback/: the nested run at the fallback lr

}  // namespace

void declare_fallback_keys(config::Schema& schema) {
    // The defaults of the rule's parameters were fixed after seeing the cpu2 seed-0 runs of
    // experiments/prefix_vs_causal/README.md (N-LR SL-L2 prefix: loss x18 at step 1,000; LR UL-no-L2 prefix: 0.80 ->
    // 0.74 from step 500 to 1,250, then a descent) and before seeds 1-2 were run; rule none keeps every run as declared.
    const train::LossRule d;
    schema
        .add_string("prefix_vs_causal.fallback.rule", "none", {"none", "spike", "plateau", "spike_or_plateau"},
                    "the lr fallback's trigger on the recorded training loss (framework/train/loss_detector.hpp): none (never "
                    "retrain), spike, plateau or either; when it fires the run is trained again at prefix_vs_causal.fallback.lr "
                    "(same seed, init, pool, test sets) in <run>/fallback/ and both measurements are stored")
        .add_float("prefix_vs_causal.fallback.lr", 3e-4, 0.0, 1.0,
                   "the fallback's peak lr (spec paper003.md §4: 3e-4 'if the loss spikes'); everything else as declared")
        .add_int("prefix_vs_causal.fallback.window", static_cast<std::int64_t>(d.window), 1, 1 << 20,
                 "steps in the moving mean of the training loss the rules read")
        .add_float("prefix_vs_causal.fallback.spike_factor", d.spike_factor, 1.0, 1e12,
                   "spike: after the warmup, the mean loss exceeds this x its running minimum (the documented spike: x18)")
        .add_int("prefix_vs_causal.fallback.plateau_steps", static_cast<std::int64_t>(d.plateau_steps), 1, 1 << 24,
                 "plateau: a window of this many steps after the warmup ...")
        .add_float("prefix_vs_causal.fallback.plateau_improvement", d.plateau_improvement, 0.0, 1.0,
                   "... over which the mean loss improved by less than this fraction ...")
        .add_float("prefix_vs_causal.fallback.plateau_escape", d.plateau_escape, 0.0, 1.0,
                   "... and after which it fell below this x the plateau's level (a converged run, flat until the end, "
                   "does not trigger)")
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_string("prefix_vs_causal.fallback.rule") == "none") return;
            if (!(cfg.get_float("prefix_vs_causal.fallback.lr") > 0.0) ||
                cfg.get_float("prefix_vs_causal.fallback.lr") == cfg.get_float("train.lr"))
                cfg.fail({"prefix_vs_causal.fallback.lr", "train.lr"},
                         "prefix_vs_causal.fallback.lr = " + cfg.value_text("prefix_vs_causal.fallback.lr") +
                             " must be > 0 and differ from train.lr = " + cfg.value_text("train.lr") +
                             " (a fallback at the same lr retrains the same model)");
            if (cfg.get_int("prefix_vs_causal.fallback.window") >= cfg.get_int("train.steps"))
                cfg.fail({"prefix_vs_causal.fallback.window", "train.steps"},
                         "prefix_vs_causal.fallback.window = " + cfg.value_text("prefix_vs_causal.fallback.window") +
                             " must be below train.steps = " + cfg.value_text("train.steps"));
        });
}

train::LossRule loss_rule_from_config(const config::Config& cfg) {
    train::LossRule rule;
    rule.kind = train::loss_rule_kind(cfg.get_string("prefix_vs_causal.fallback.rule"));
    rule.window = static_cast<std::size_t>(cfg.get_int("prefix_vs_causal.fallback.window"));
    rule.spike_factor = cfg.get_float("prefix_vs_causal.fallback.spike_factor");
    rule.plateau_steps = static_cast<std::size_t>(cfg.get_int("prefix_vs_causal.fallback.plateau_steps"));
    rule.plateau_improvement = cfg.get_float("prefix_vs_causal.fallback.plateau_improvement");
    rule.plateau_escape = cfg.get_float("prefix_vs_causal.fallback.plateau_escape");
    return rule;
}

FallbackRun run_fallback(const run::RunContext& context, run::RunFolder& parent, const std::vector<double>& step_losses,
                         std::size_t warmup_steps) {
    const config::Config& cfg = context.config;
    FallbackRun out;
    out.lr = cfg.get_float("prefix_vs_causal.fallback.lr");
    out.detection = train::detect_loss_event(step_losses, warmup_steps, loss_rule_from_config(cfg));
    parent.log() << "fallback detector (" << cfg.get_string("prefix_vs_causal.fallback.rule") << "): " << out.detection.reason << "\n"
                 << std::flush;
    const fs::path dir = parent.path() / kFallbackFolder;
    if (!parent.resumed()) fs::remove_all(dir);  // an --overwrite run's old fallback goes with it
    if (!out.detection.triggered) return out;

    // The nested run: the parent's config with the fallback lr; no detector, no claims and no probes of its own.
    const std::string name = cfg.get_string("experiment");
    const config::Config sub_cfg = config::derive_config(
        cfg, context.catalog.find(name).schema(),
        {"train.lr=" + cfg.value_text("prefix_vs_causal.fallback.lr"), "prefix_vs_causal.fallback.rule=none",
         "prefix_vs_causal.claims=false", "prefix_vs_causal.probes=false", config::string_override("output.dir", parent.path().string()),
         config::string_override("output.name", kFallbackFolder)});
    if (!context.options.quiet)
        std::fprintf(stderr, "iclab: %s: fallback triggered (%s); training again at lr %s in %s\n", name.c_str(),
                     out.detection.reason.c_str(), cfg.value_text("prefix_vs_causal.fallback.lr").c_str(), dir.string().c_str());
    if (!fs::exists(dir / run::kResultsFile)) {  // else: finished before the parent was interrupted
        run::RunOptions options = context.options;
        options.resume_dir.clear();
        options.overwrite = false;
        config::Config run_cfg = sub_cfg;
        if (fs::exists(dir / run::kCheckpointFile)) {
            const run::ResumePoint point = run::load_resume_config(dir, context.catalog);
            ICLAB_INPUT_CHECK(point.config.to_yaml() == sub_cfg.to_yaml(),
                              dir.string() << "/" << run::kConfigFile << " is not the config this run gives its fallback");
            options.resume_dir = dir;
            run_cfg = point.config;
        } else {
            options.overwrite = fs::exists(dir);
        }
        const run::RunOutcome outcome = context.catalog.run(run_cfg, options);
        ICLAB_CHECK(outcome.run_dir == dir, "the fallback run went to " << outcome.run_dir << ", not " << dir);
        if (!outcome.completed) {
            parent.log() << "the fallback run stopped after step " << outcome.steps_done << "; resume this run to continue it\n"
                         << std::flush;
            out.completed = false, out.steps_done = outcome.steps_done;
            return out;
        }
    }
    const io::ResultsReader reader(dir / run::kResultsFile);
    const std::string table = "/tables/prefix_vs_causal/";
    out.set = reader.read_column_string(table + "set");
    out.examples = reader.read_column_int64(table + "examples");
    out.sequences = reader.read_column_int64(table + "sequences");
    out.query_mse = reader.read_column_double(table + "query_mse");
    out.zero_mse = reader.read_column_double(table + "zero_predictor_mse");
    out.relative = reader.read_column_double(table + "relative_query_mse");
    out.error_pct = reader.read_column_double(table + "error_pct");
    const std::size_t n = out.set.size();
    ICLAB_INPUT_CHECK(n > 0 && out.set[0] == "test" && out.examples.size() == n && out.sequences.size() == n &&
                          out.query_mse.size() == n && out.zero_mse.size() == n && out.relative.size() == n && out.error_pct.size() == n,
                      dir.string() << "/" << run::kResultsFile << ": /tables/prefix_vs_causal is not a prefix_vs_causal table");
    return out;
}

void write_fallback(io::ResultsWriter& writer, const config::Config& cfg, const FallbackRun& fallback) {
    const train::LossRule rule = loss_rule_from_config(cfg);
    const train::LossDetection& d = fallback.detection;
    writer.write_columns("/fallback/detector",
                         {{"triggered", std::vector<std::int64_t>{d.triggered ? 1 : 0}},
                          {"step", std::vector<std::int64_t>{static_cast<std::int64_t>(d.step)}},
                          {"smoothed_loss", std::vector<double>{d.smoothed_loss}},
                          {"reference_loss", std::vector<double>{d.reference_loss}},
                          {"ratio", std::vector<double>{d.ratio}},
                          {"window", std::vector<std::int64_t>{static_cast<std::int64_t>(rule.window)}},
                          {"spike_factor", std::vector<double>{rule.spike_factor}},
                          {"plateau_steps", std::vector<std::int64_t>{static_cast<std::int64_t>(rule.plateau_steps)}},
                          {"plateau_improvement", std::vector<double>{rule.plateau_improvement}},
                          {"plateau_escape", std::vector<double>{rule.plateau_escape}},
                          {"fallback_lr", std::vector<double>{fallback.lr}}},
                         {{"rule", train::loss_rule_name(rule.kind)}, {"kind", d.kind}, {"reason", d.reason}});
    writer.set_attr("fallback_rule", train::loss_rule_name(rule.kind));
    writer.set_attr("fallback_triggered", d.triggered ? "true" : "false");
    writer.set_attr("fallback_step", static_cast<std::int64_t>(d.step));
    if (!d.triggered) return;
    const std::vector<double> lr(fallback.set.size(), fallback.lr);
    writer.write_columns("/tables/prefix_vs_causal_fallback",
                         {{"set", fallback.set}, {"examples", fallback.examples}, {"sequences", fallback.sequences},
                          {"query_mse", fallback.query_mse}, {"zero_predictor_mse", fallback.zero_mse},
                          {"relative_query_mse", fallback.relative}, {"error_pct", fallback.error_pct}, {"lr", lr}},
                         {{"setting", "the fallback run (train.lr = prefix_vs_causal.fallback.lr, everything else as declared), "
                                      "triggered by " + d.reason + "; /tables/prefix_vs_causal holds the declared run's numbers"}});
}

}  // namespace iclab::experiments::part_b
