// Experiment `bias_training` (paper 000 §6.3, Figure 1): the induction-head model trained with and without
// trainable attention biases b_KV, b_D (model.attention_bias_trainable), for several seeds, each variant with the
// same seeds (so the same initialization, since b_KV = b_D = 0 at the start either way, and the same data).
//
// Every (variant, seed) is a complete induction_head run in <run folder>/runs/<variant>_seed<k>/
// (framework/run/sub_runs.hpp: resume and --stop-after work across sub-runs). The parent run copies their
// curves into one results.h5 (/curves/<variant>_seed<k>/, /steps/<variant>_seed<k>/) and writes
// /tables/runs (one row per sub-run) and /tables/summary (per variant: steps to reach each ICL-accuracy threshold,
// final loss and accuracy; mean, sample std, min and max over the seeds).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include "experiments/bias_training/claims.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/run/sub_runs.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace bias_training_cpp {


namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const char* const kRunsFolder = "runs";  // <run folder>/runs/<variant>_seed<k>/: the sub-runs (SubRuns)

struct SubRun {
    std::string variant;  // no_bias | trainable_bias | trainable_bias_nonnegative
    std::int64_t seed = 0;
    std::string name() const { return variant + "_seed" + std::to_string(seed); }
    // The induction_head run of this variant and seed: overrides on the parent's config.
    SubRunSpec spec() const {
        return {name(),
                {"seed=" + std::to_string(seed),
                 std::string("model.attention_bias_trainable=") + (variant == "no_bias" ? "false" : "true"),
                 std::string("model.attention_bias_d=") + (variant == "trainable_bias_nonnegative" ? "nonnegative" : "free")}};
    }
};

// Seed-major order: a run stopped part-way (paper-size runs span sessions) already holds every variant of its
// first seeds, i.e. complete same-seed comparisons.
std::vector<SubRun> sub_runs_of(const config::Config& cfg) {
    std::vector<SubRun> runs;
    for (auto seed : cfg.get_int_list("bias_training.seeds"))
        for (const auto& variant : cfg.get_string_list("bias_training.variants")) runs.push_back({variant, seed});
    return runs;
}

// "90" for 0.9, "99.9" for 0.999: threshold names in column names.
std::string percent_text(double threshold) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", 100.0 * threshold);
    return text;
}

// What the summary needs of one finished sub-run, read from its /curves.
struct SubRunNumbers {
    std::vector<double> steps_to;  // per threshold: the first evaluation step with icl_accuracy >= it, NaN if none
    double final_train_loss = kNaN, final_icl_accuracy = kNaN, wall_time_s = kNaN;
    double best_icl_accuracy = kNaN;          // highest evaluation: with final_icl_accuracy, shows a collapse
    double min_attention_denominator = kNaN;  // lowest over all evaluations (<= 0: the normalizer crossed zero)
};

void declare_keys(config::Schema& schema) {
    schema.add_int_list("bias_training.seeds", {0, 1, 2}, 0, std::numeric_limits<std::int64_t>::max(),
                        "seeds of the sub-runs; every variant trains with each (the top-level seed is not used)")
        .add_string_list("bias_training.variants", {"no_bias", "trainable_bias"},
                         {"no_bias", "trainable_bias", "trainable_bias_nonnegative"},
                         "no_bias: b_KV = b_D = 0, not trained; trainable_bias: b_KV, b_D trained from 0 "
                         "(model.attention_bias_trainable), b_D free as in Eq. 13; trainable_bias_nonnegative: the same "
                         "with b_D kept >= 0 (model.attention_bias_d: nonnegative)")
        .add_float_list("bias_training.thresholds", {0.9, 0.99}, 0.0, 1.0,
                        "ICL accuracies whose first crossing (first evaluation at or above) the summary reports");
    schema.add_rule([](const config::Config& cfg) {
        const auto seeds = cfg.get_int_list("bias_training.seeds");
        if (seeds.empty()) cfg.fail({"bias_training.seeds"}, "give at least one seed");
        if (std::set<std::int64_t>(seeds.begin(), seeds.end()).size() != seeds.size())
            cfg.fail({"bias_training.seeds"}, "a seed is listed twice");
        const auto variants = cfg.get_string_list("bias_training.variants");
        if (variants.empty()) cfg.fail({"bias_training.variants"}, "give at least one variant");
        if (std::set<std::string>(variants.begin(), variants.end()).size() != variants.size())
            cfg.fail({"bias_training.variants"}, "a variant is listed twice");
        if (cfg.get_float_list("bias_training.thresholds").empty())
            cfg.fail({"bias_training.thresholds"}, "give at least one ICL-accuracy threshold");
    });
    schema.add_rule([](const config::Config& cfg) {
        if (cfg.get_int("seed") != 0)
            cfg.fail({"seed"}, "bias_training trains one model per seed in bias_training.seeds; the top-level seed is not used "
                               "(leave it 0)");
        if (cfg.get_bool("model.attention_bias_trainable"))
            cfg.fail({"model.attention_bias_trainable"},
                     "bias_training sets model.attention_bias_trainable per variant (bias_training.variants); leave it false");
        if (cfg.get_string("model.attention_bias_d") != "free")
            cfg.fail({"model.attention_bias_d"},
                     "bias_training sets model.attention_bias_d per variant (bias_training.variants); leave it free");
        if (cfg.get_string("model.attention") != "linear")
            cfg.fail({"model.attention"}, "b_KV and b_D belong to linearized attention (paper 000 Eq. 13)");
    });
}

RunOutcome run_bias_training(const RunContext& context) {
    namespace fs = std::filesystem;
    const config::Config& cfg = context.config;
    const RunOptions& options = context.options;
    const std::vector<SubRun> subs = sub_runs_of(cfg);
    const std::vector<double> thresholds = cfg.get_float_list("bias_training.thresholds");
    RunFolder run(cfg, options);
    std::vector<SubRunSpec> specs;
    for (const SubRun& sub : subs) specs.push_back(sub.spec());
    SubRuns sub_runs(context, run, "induction_head", specs);

    std::vector<SubRunNumbers> numbers;
    std::vector<std::string> sub_dirs;
    for (std::size_t i = 0; i < subs.size(); ++i) {
        const SubRun& sub = subs[i];
        const fs::path sub_dir = sub_runs.dir(i);
        const RunOutcome outcome = sub_runs.run(i);
        if (!outcome.completed) return {run.path(), false, outcome.steps_done, outcome.steps_total};

        // Copy the sub-run's curves and per-step losses; read what the summary needs.
        const io::ResultsReader reader(sub_dir / kResultsFile);
        std::vector<io::Column> curves;
        std::vector<double> steps, accuracy, train_loss, denominator;
        const io::Table curve_table = reader.read_table("/curves");  // columns of one length, checked
        for (const auto& stored : curve_table.columns) {
            const std::string& name = stored.name;
            std::vector<double> column = curve_table.numbers(name);
            if (name == "step") steps = column;
            if (name == "icl_accuracy") accuracy = column;
            if (name == "train_loss") train_loss = column;
            if (name == "min_attention_denominator") denominator = column;
            curves.push_back({name, std::move(column)});
        }
        ICLAB_CHECK(!steps.empty() && accuracy.size() == steps.size() && train_loss.size() == steps.size(),
                    sub_dir.string() << ": /curves lacks step, train_loss or icl_accuracy rows");
        io::ResultsWriter& w = run.results();
        w.write_columns("/curves/" + sub.name(), curves);
        const io::Table step_table = reader.read_table("/steps");
        w.write_columns("/steps/" + sub.name(), {{"step", step_table.integers("step")},
                                                 {"loss", step_table.numbers("loss")},
                                                 {"lr", step_table.numbers("lr")},
                                                 {"grad_norm", step_table.numbers("grad_norm")}});
        SubRunNumbers n;
        for (double threshold : thresholds) {
            // the first evaluation at or above the threshold; NaN when never reached or after a NaN evaluation (issue 45)
            const double first = first_index_reaching(accuracy, threshold);
            n.steps_to.push_back(std::isnan(first) ? kNaN : steps[static_cast<std::size_t>(first)]);
        }
        n.final_train_loss = train_loss.back();
        n.final_icl_accuracy = accuracy.back();
        n.best_icl_accuracy = max_of(accuracy);  // NaN when an evaluation is NaN
        for (double den : denominator)
            if (!std::isnan(den) && !(den >= n.min_attention_denominator)) n.min_attention_denominator = den;
        n.wall_time_s = reader.read_attr_double("/", "wall_time_s");
        numbers.push_back(n);
        sub_dirs.push_back((fs::path(kRunsFolder) / sub.name()).string());
    }

    // /tables/runs: one row per sub-run.
    io::ResultsWriter& w = run.results();
    {
        std::vector<std::string> variant, run_dir;
        std::vector<std::int64_t> seed;
        std::vector<double> loss, accuracy, best, denominator, wall;
        std::vector<std::vector<double>> steps_to(thresholds.size());
        for (std::size_t i = 0; i < subs.size(); ++i) {
            variant.push_back(subs[i].variant);
            seed.push_back(subs[i].seed);
            for (std::size_t k = 0; k < thresholds.size(); ++k) steps_to[k].push_back(numbers[i].steps_to[k]);
            loss.push_back(numbers[i].final_train_loss);
            accuracy.push_back(numbers[i].final_icl_accuracy);
            best.push_back(numbers[i].best_icl_accuracy);
            denominator.push_back(numbers[i].min_attention_denominator);
            wall.push_back(numbers[i].wall_time_s);
            run_dir.push_back(sub_dirs[i]);
        }
        std::vector<io::Column> columns = {{"variant", variant}, {"seed", seed}};
        for (std::size_t k = 0; k < thresholds.size(); ++k)
            columns.push_back({"steps_to_" + percent_text(thresholds[k]) + "pct", steps_to[k]});
        columns.push_back({"final_train_loss", loss});
        columns.push_back({"final_icl_accuracy", accuracy});
        columns.push_back({"best_icl_accuracy", best});
        columns.push_back({"min_attention_denominator", denominator});
        columns.push_back({"wall_time_s", wall});
        columns.push_back({"run_dir", run_dir});
        w.write_columns("/tables/runs", columns);
    }

    // /tables/summary: per variant, over its seeds.
    const auto variants = cfg.get_string_list("bias_training.variants");
    std::vector<std::string> names;
    std::vector<std::int64_t> seed_count;
    std::vector<std::vector<std::int64_t>> reached(thresholds.size());
    std::vector<std::vector<Spread>> steps_spread(thresholds.size());
    std::vector<Spread> loss_spread, accuracy_spread;
    for (const auto& variant : variants) {
        std::vector<std::vector<double>> steps_to(thresholds.size());
        std::vector<double> loss, accuracy;
        for (std::size_t i = 0; i < subs.size(); ++i) {
            if (subs[i].variant != variant) continue;
            for (std::size_t k = 0; k < thresholds.size(); ++k) steps_to[k].push_back(numbers[i].steps_to[k]);
            loss.push_back(numbers[i].final_train_loss);
            accuracy.push_back(numbers[i].final_icl_accuracy);
        }
        names.push_back(variant);
        seed_count.push_back(static_cast<std::int64_t>(loss.size()));
        for (std::size_t k = 0; k < thresholds.size(); ++k) {
            steps_spread[k].push_back(spread_of(steps_to[k]));
            reached[k].push_back(std::count_if(steps_to[k].begin(), steps_to[k].end(), [](double v) { return !std::isnan(v); }));
        }
        loss_spread.push_back(spread_of(loss));
        accuracy_spread.push_back(spread_of(accuracy));
    }
    std::vector<io::Column> summary = {{"variant", names}, {"seeds", seed_count}};
    const auto add_spread = [&](const std::string& prefix, const std::vector<Spread>& spreads) {
        std::vector<double> mean, std, min, max;
        for (const auto& s : spreads) {
            mean.push_back(s.mean);
            std.push_back(s.std);
            min.push_back(s.min);
            max.push_back(s.max);
        }
        summary.push_back({prefix + "_mean", mean});
        summary.push_back({prefix + "_std", std});
        summary.push_back({prefix + "_min", min});
        summary.push_back({prefix + "_max", max});
    };
    for (std::size_t k = 0; k < thresholds.size(); ++k) {
        const std::string prefix = "steps_to_" + percent_text(thresholds[k]) + "pct";
        add_spread(prefix, steps_spread[k]);
        summary.push_back({"reached_" + percent_text(thresholds[k]) + "pct", reached[k]});
    }
    add_spread("final_train_loss", loss_spread);
    add_spread("final_icl_accuracy", accuracy_spread);
    w.write_columns("/tables/summary", summary);
    // Paper 000 Figure 1's claims (claims.hpp), on the first threshold's steps and the final training loss
    std::vector<bias_claims::BiasRun> pairs;
    for (std::size_t i = 0; i < subs.size(); ++i)
        pairs.push_back({subs[i].variant, subs[i].seed, numbers[i].steps_to.front(), numbers[i].final_train_loss});
    io::write_claims(w, bias_claims::claims_of(pairs, thresholds.front()));
    w.set_attr("sub_runs", static_cast<std::int64_t>(subs.size()));
    w.set_attr("spread", "over seeds: mean, sample std (n - 1), min, max; NaN when a seed never reached the threshold");
    run.commit();
    fs::remove(run.checkpoint_path());  // the parent's marker has done its job; the sub-runs keep theirs

    if (!options.quiet) {
        std::printf("\nbias training (paper 000 Figure 1): %zu seeds per variant, %lld steps each; mean ± sample std [min, max] "
                    "over seeds\n",
                    cfg.get_int_list("bias_training.seeds").size(), static_cast<long long>(cfg.get_int("train.steps")));
        std::printf("  %-26s", "variant");
        for (double threshold : thresholds) std::printf("  %-30s", ("steps to ICL acc. " + percent_text(threshold) + "%").c_str());
        std::printf("  %-32s  %s\n", "final train loss", "final ICL accuracy");
        for (std::size_t v = 0; v < names.size(); ++v) {
            std::printf("  %-26s", names[v].c_str());
            for (std::size_t k = 0; k < thresholds.size(); ++k) {
                const Spread& s = steps_spread[k][v];
                char cell[96];
                std::snprintf(cell, sizeof cell, "%.0f ± %.0f [%.0f, %.0f] (%lld/%lld)", s.mean, s.std, s.min, s.max,
                              static_cast<long long>(reached[k][v]), static_cast<long long>(seed_count[v]));
                std::printf("  %-30s", cell);
            }
            char loss_cell[96];
            std::snprintf(loss_cell, sizeof loss_cell, "%.4f ± %.4f [%.4f, %.4f]", loss_spread[v].mean, loss_spread[v].std,
                          loss_spread[v].min, loss_spread[v].max);
            std::printf("  %-32s  %.4f [%.4f, %.4f]\n", loss_cell, accuracy_spread[v].mean, accuracy_spread[v].min,
                        accuracy_spread[v].max);
        }
        std::printf("\n  per run: %-26s %5s  %14s  %14s  %s\n", "variant", "seed", "final ICL acc.", "best ICL acc.",
                    "min attention normalizer over evaluations");
        for (std::size_t i = 0; i < subs.size(); ++i)
            std::printf("           %-26s %5lld  %14.4f  %14.4f  %.4g\n", subs[i].variant.c_str(),
                        static_cast<long long>(subs[i].seed), numbers[i].final_icl_accuracy, numbers[i].best_icl_accuracy,
                        numbers[i].min_attention_denominator);
    }
    return {run.path(), true, subs.size(), subs.size()};
}

}  // namespace
}  // namespace bias_training_cpp

Experiment bias_training() {
    using namespace bias_training_cpp;
    return {"bias_training",
            "the induction-head model trained with and without trainable b_KV, b_D over several seeds: curves and steps "
            "to ICL accuracy (paper 000 Figure 1)",
            {KeyGroup::output, KeyGroup::induction_task, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_bias_training,
            [](const config::Config& cfg) {  // one training per seed and variant, one after the other
                RunEstimate e = estimate_training(cfg);
                e.flops *= static_cast<double>(cfg.get_int_list("bias_training.seeds").size() *
                                               cfg.get_string_list("bias_training.variants").size());
                e.gemm_flops = e.flops;  // all transformer layers
                return e;
            }};
}

}  // namespace iclab::experiments
