#include "framework/run/induction_training.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/trainer.hpp"
#include "framework/core/check.hpp"

namespace iclab::run {

namespace {

// Sub-streams of the run's seed: each consumer has its own generator, so changing how much one of
// them draws (e.g. eval.sequences) never changes another's numbers.
enum Stream : std::uint64_t { kInitStream = 1, kTrainDataStream = 2, kEvalDataStream = 3 };

}  // namespace

void add_induction_task_keys(config::Schema& schema) {
    schema.add_int("task.seq_len", 64, 2, 1 << 20, "T: model inputs per sequence (T + 1 tokens are drawn)")
        .add_string_list_free("task.triggers", {"a", "b", "c", "d", "e"},
                         "trigger letters (paper 000 §6.2: a, b, c, d, e)")
        .set_items("task.triggers", 0)  // empty: the task's own rule says "at least one trigger"
        .add_string("task.successors", "non_trigger", {"non_trigger", "any"},
                    "draw committed successors from the non-trigger letters (default: avoids loops like "
                    "'aaaa') or from the whole vocabulary (the paper's literal wording)")
        .add_string("task.loss_positions", "all", {"all", "icl", "icl_plus_all"},
                    "train on the next-token loss at all positions (language modelling), only at positions holding "
                    "an already-seen trigger, or icl_plus_all: the mean loss over those positions plus the mean over "
                    "all positions (every logit calibrated, as a language model's, with the induction signal kept "
                    "strong; ICLAA's default, spec iclaa.md §2.1)");
    schema.add_rule([](const config::Config& cfg) {
        for (const auto& letter : cfg.get_string_list("task.triggers")) {
            const bool ok = letter.size() == 1 && std::isalpha(static_cast<unsigned char>(letter[0]));
            if (!ok) cfg.fail({"task.triggers"}, "every trigger must be a single letter a-z or A-Z, got '" + letter + "'");
        }
    });
}

void add_induction_model_rules(config::Schema& schema) {
    schema.add_rule([](const config::Config& cfg) {
        // Every task rule runs at validation, before a run folder exists (tasks::validate_induction_spec);
        // triggers that are not single letters are reported by add_induction_task_keys' rule.
        for (const auto& letter : cfg.get_string_list("task.triggers"))
            if (letter.size() != 1 || !std::isalpha(static_cast<unsigned char>(letter[0]))) return;
        try {
            induction_spec_from_config(cfg);
        } catch (const InputError& error) {
            cfg.fail({"task.triggers", "task.successors", "task.seq_len"}, error.what());
        }
    });
    schema.add_rule([](const config::Config& cfg) {
        const std::string mask = cfg.get_string("model.mask");
        if (mask == "prefix")
            cfg.fail({"model.mask"}, "the induction-head task has no in-context prefix (its prefix length is 0), so "
                                     "model.mask: prefix would silently be causal; use model.mask: causal");
        if (mask == "full")
            cfg.fail({"model.mask"}, "with model.mask: full every position sees the next input, which is its own target "
                                     "on the induction-head task; use model.mask: causal");
        if (cfg.get_bool("model.isolate_queries"))
            cfg.fail({"model.isolate_queries"}, "the induction-head task has no query positions: with "
                                                "model.isolate_queries no position sees the context, so the model "
                                                "cannot learn in context; set it false");
    });
}

tasks::InductionHeadSpec induction_spec_from_config(const config::Config& cfg) {
    tasks::InductionHeadSpec spec;
    spec.seq_len = static_cast<int>(cfg.get_int("task.seq_len"));
    spec.triggers.clear();
    for (const auto& letter : cfg.get_string_list("task.triggers")) spec.triggers.push_back(tasks::letter_to_token(letter[0]));
    spec.successors = tasks::parse_successors(cfg.get_string("task.successors"));
    tasks::validate_induction_spec(spec);
    return spec;
}

template <class T>
InductionEvaluation evaluate_induction(model::Transformer<T>& model, const tasks::TokenBatch& data,
                                       std::size_t chunk_size) {
    InductionEvaluation result;
    const std::size_t B = data.inputs.shape()[0], TT = data.inputs.shape()[1], V = model.spec().vocab;
    std::vector<T> no_weights;
    for (std::size_t first = 0; first < B; first += chunk_size) {
        const std::size_t rows = std::min(chunk_size, B - first);
        const std::int32_t* inputs = data.inputs.data() + first * TT;
        const std::int32_t* targets = data.targets.data() + first * TT;
        const std::uint8_t* kinds = data.kinds.data() + first * TT;
        model.forward(inputs, rows, TT);
        no_weights.assign(rows * TT, T(0));
        model.loss(targets, no_weights.data());  // fills probabilities and per-position losses
        for (double den : model.min_attention_denominator())
            if (!std::isnan(den) && !(den >= result.min_attention_denominator)) result.min_attention_denominator = den;
        const T* losses = model.position_losses();
        const T* logits = model.logits();
        for (std::size_t n = 0; n < rows * TT; ++n) {
            const T* z = logits + n * V;
            std::size_t best = 0;
            bool nan_logit = std::isnan(z[0]);
            for (std::size_t v = 1; v < V; ++v) {
                if (z[v] > z[best]) best = v;
                nan_logit = nan_logit || std::isnan(z[v]);
            }
            const bool correct = static_cast<std::int32_t>(best) == targets[n];
            for (KindMetrics* m : {&result.kinds[kinds[n]], &result.all}) {
                ++m->positions;
                m->loss_sum += losses[n];
                m->correct += correct ? 1 : 0;
                m->undefined = m->undefined || nan_logit;
            }
        }
    }
    return result;
}

namespace {

// Rows of /tables/final_eval: one per position kind, with the best accuracy the data allows.
struct FinalEvalTable {
    std::vector<std::string> kind_names;
    std::vector<std::int64_t> positions;
    std::vector<double> loss, accuracy, best_possible;
};

FinalEvalTable final_eval_table(const InductionEvaluation& eval, const tasks::InductionHeadSpec& task) {
    FinalEvalTable table;
    const tasks::PositionKind order[] = {tasks::PositionKind::icl, tasks::PositionKind::non_trigger, tasks::PositionKind::first_trigger};
    for (auto kind : order) {
        const auto& m = eval.kinds[static_cast<int>(kind)];
        table.kind_names.push_back(tasks::position_kind_name(kind));
        table.positions.push_back(static_cast<std::int64_t>(m.positions));
        table.loss.push_back(m.loss());
        table.accuracy.push_back(m.accuracy());
        // icl targets are determined by the context; the others are uniform over their draw set
        const double draws = kind == tasks::PositionKind::non_trigger || task.successors == tasks::InductionHeadSpec::Successors::any
                                 ? tasks::kInductionVocab
                                 : tasks::kInductionVocab - static_cast<double>(task.triggers.size());
        table.best_possible.push_back(kind == tasks::PositionKind::icl ? 1.0 : 1.0 / draws);
    }
    return table;
}

template <class T>
InductionTraining train_induction_typed(const config::Config& cfg, const RunOptions& options, RunFolder& run) {
    const tasks::InductionHeadSpec task = induction_spec_from_config(cfg);
    const model::ModelSpec model_spec = model_spec_from_config(cfg, tasks::kInductionVocab, task.seq_len);
    const TrainerSettings settings = trainer_settings_from_config(cfg);
    const std::size_t batch_size = cfg.get_int("train.batch_size"), TT = task.seq_len;
    const std::string loss_positions = cfg.get_string("task.loss_positions");

    const Rng root(static_cast<std::uint64_t>(cfg.get_int("seed")));
    Rng init_rng = root.derive(kInitStream), data_rng = root.derive(kTrainDataStream), eval_rng = root.derive(kEvalDataStream);

    model::Transformer<T> model(model_spec);
    model.init(init_rng);  // a resumed run replaces the parameters with the checkpoint's
    tasks::TokenBatch eval_data, batch;
    tasks::sample_induction_batch(eval_data, static_cast<int>(cfg.get_int("eval.sequences")), task, eval_rng);
    run.log() << "model: " << model.parameter_count() << " parameters, " << model_spec.layers << " layers, width "
              << model_spec.width << ", " << model_spec.heads << " heads\n";

    std::vector<T> weights(batch_size * TT);
    std::optional<InductionEvaluation> last;
    TrainingTask training;
    training.train_step = [&](Rng& rng) {
        tasks::sample_induction_batch(batch, static_cast<int>(batch_size), task, rng);
        // Loss weights: the mean next-token loss over the chosen positions (icl_plus_all: the sum of two means).
        const std::size_t N = batch_size * TT;
        std::size_t icl_positions = 0;
        for (std::size_t n = 0; n < N; ++n)
            icl_positions += batch.kinds.data()[n] == static_cast<std::uint8_t>(tasks::PositionKind::icl);
        for (std::size_t n = 0; n < N; ++n) {
            const bool icl = batch.kinds.data()[n] == static_cast<std::uint8_t>(tasks::PositionKind::icl);
            const double on_icl = icl && icl_positions > 0 ? 1.0 / static_cast<double>(icl_positions) : 0.0;
            const double on_all = 1.0 / static_cast<double>(N);
            weights[n] = static_cast<T>(loss_positions == "icl" ? on_icl : loss_positions == "all" ? on_all : on_icl + on_all);
        }
        model.forward(batch.inputs.data(), batch_size, TT);
        const double loss = model.loss(batch.targets.data(), weights.data());
        model.zero_grad();
        model.backward(batch.targets.data(), weights.data());
        return loss;
    };
    training.evaluate = [&]() {
        last = evaluate_induction(model, eval_data, batch_size);
        const auto& icl = last->kinds[static_cast<int>(tasks::PositionKind::icl)];
        const auto& non_trigger = last->kinds[static_cast<int>(tasks::PositionKind::non_trigger)];
        const auto& first_trigger = last->kinds[static_cast<int>(tasks::PositionKind::first_trigger)];
        return Metrics{{"eval_loss", last->all.loss()},
                       {"eval_icl_loss", icl.loss()},
                       {"eval_nontrigger_loss", non_trigger.loss()},
                       {"icl_accuracy", icl.accuracy()},
                       {"nontrigger_accuracy", non_trigger.accuracy()},
                       {"first_trigger_accuracy", first_trigger.accuracy()},
                       {"min_attention_denominator", last->min_attention_denominator}};
    };
    training.tokens_per_step = batch_size * TT;
    training.progress_metric = "icl_accuracy";

    InductionTraining result;
    result.spec = model_spec;
    result.steps_total = settings.steps;
    Trainer<T> trainer(settings, model.layout(), model.params, model.grads, training, run, options);
    if (!trainer.train(data_rng)) {
        result.steps_done = trainer.steps_done();
        return result;
    }
    // A run resumed from its final checkpoint trained no step: evaluate the final parameters here.
    if (!last) last = evaluate_induction(model, eval_data, batch_size);

    io::ResultsWriter& w = run.results();
    trainer.write_tables(w);
    const FinalEvalTable table = final_eval_table(*last, task);
    w.write_columns("/tables/final_eval", {{"position_kind", table.kind_names},
                                           {"positions", table.positions},
                                           {"loss", table.loss},
                                           {"accuracy", table.accuracy},
                                           {"best_possible_accuracy", table.best_possible}});
    w.set_attr("final_icl_accuracy", last->kinds[static_cast<int>(tasks::PositionKind::icl)].accuracy());
    w.set_attr("final_nontrigger_accuracy", last->kinds[static_cast<int>(tasks::PositionKind::non_trigger)].accuracy());
    w.set_attr("final_eval_loss", last->all.loss());
    w.set_attr("parameter_count", static_cast<std::int64_t>(model.parameter_count()));
    w.set_attr("wall_time_s", trainer.elapsed_seconds());
    if (cfg.get_bool("output.checkpoint")) write_checkpoint(w, model);

    result.completed = true;
    result.steps_done = settings.steps;
    result.parameters.assign(model.params.begin(), model.params.end());
    result.final_eval = *last;
    result.wall_time_s = trainer.elapsed_seconds();
    return result;
}

}  // namespace

InductionTraining train_induction_model(const config::Config& cfg, const RunOptions& options, RunFolder& run) {
    return with_model_dtype(cfg, [&](auto zero) { return train_induction_typed<decltype(zero)>(cfg, options, run); });
}

void print_final_evaluation(const InductionTraining& training, const config::Config& cfg) {
    const FinalEvalTable table = final_eval_table(training.final_eval, induction_spec_from_config(cfg));
    std::printf("\nfinal evaluation on %lld held-out sequences (step %zu):\n", static_cast<long long>(cfg.get_int("eval.sequences")),
                training.steps_total);
    std::printf("  %-14s %10s %10s %10s %14s\n", "position kind", "positions", "loss", "accuracy", "best possible");
    for (std::size_t i = 0; i < table.kind_names.size(); ++i)
        std::printf("  %-14s %10lld %10.4f %10.4f %14.4f\n", table.kind_names[i].c_str(), static_cast<long long>(table.positions[i]),
                    table.loss[i], table.accuracy[i], table.best_possible[i]);
    std::printf("wall time %.1f s, %zu parameters\n", training.wall_time_s, training.parameters.size());
}

template InductionEvaluation evaluate_induction<float>(model::Transformer<float>&, const tasks::TokenBatch&, std::size_t);
template InductionEvaluation evaluate_induction<double>(model::Transformer<double>&, const tasks::TokenBatch&, std::size_t);

}  // namespace iclab::run
