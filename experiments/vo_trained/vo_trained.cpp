// Experiment `vo_trained` (von Oswald et al. 2023 §3, Fig. 2; specs/gd_duals.md §11): train one linear
// self-attention layer (identity features, no normalizer, residual, projection P, keys and values the context
// only) on in-context linear regression with the training service of framework/run, then compare it on fixed
// eval tasks with one GD step from W_0 = 0 at the best learning rate η* (framework/icl/gd_alignment.hpp):
// loss gap, prediction difference, and the cosine / distance of the sensitivities ∂ŷ/∂x_q.
#include <cmath>
#include <cstdio>

#include "framework/icl/gd_alignment.hpp"
#include "framework/io/claims.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/regression_training.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace vo_trained_cpp {


namespace {

constexpr std::uint64_t kEvalTasks = 101;  // stream of the fixed eval tasks (the trainer's own streams differ)

void declare_keys(config::Schema& schema) {
    schema.add_int("vo.eval_tasks", 10000, 1, 1 << 24, "fixed eval tasks of the comparison (von Oswald's `analyse`: 10,000)")
        .add_float("vo.max_rel_loss_gap", 0.05, 0.0, 1e300, "bar: |loss_TF - loss_GD| / loss_GD at the end (ours, spec §11.2)")
        .add_float("vo.min_model_cos", 0.99, -1.0, 1.0, "bar: mean cosine of the sensitivities at the end (ours, spec §11.2)")
        .add_rule([](const config::Config& cfg) {
            if (cfg.get_string("task.kind") != "linear" || cfg.get_int("task.y_dim") != 1 || cfg.get_int("task.queries") != 1 ||
                cfg.get_string("task.format") != "stacked")
                cfg.fail({"task.kind", "task.y_dim", "task.queries", "task.format"},
                         "vo_trained compares with GD on linear regression: task.kind linear, y_dim 1, queries 1, stacked tokens");
            if (cfg.get_string("model.read_out") != "slice" || cfg.get_int("model.layers") != 1)
                cfg.fail({"model.read_out", "model.layers"}, "vo_trained reads the query's y-slot of one layer (read_out slice, layers 1)");
            // One LSA layer: linear attention without feature map or normalizer, no LayerNorm or MLP, the query outside
            // the keys, so that the prediction is linear in x_q (the sensitivities below and von Oswald's GD step).
            if (cfg.get_string("model.attention") != "linear" || cfg.get_string("model.feature_map") != "identity" ||
                cfg.get_string("model.normalizer") != "none")
                cfg.fail({"model.attention", "model.feature_map", "model.normalizer"},
                         "vo_trained trains one linear self-attention layer: model.attention linear, model.feature_map identity, "
                         "model.normalizer none");
            if (cfg.get_bool("model.layernorm") || cfg.get_bool("model.mlp") || cfg.get_bool("model.rope") ||
                !cfg.get_bool("model.isolate_queries") || cfg.get_bool("model.query_self"))
                cfg.fail({"model.layernorm", "model.mlp", "model.rope", "model.isolate_queries", "model.query_self"},
                         "vo_trained's layer is linear in the query: model.layernorm, model.mlp, model.rope, model.query_self "
                         "false and model.isolate_queries true");
        });
}

// The trained model in double on `tasks` eval tasks: predictions ŷ_TF (B) and, since one LSA layer is linear in
// x_q (keys and values exclude the query), the sensitivities ∂ŷ_TF/∂x_q = ŷ(x_q = e_k) − ŷ(x_q = 0) (B, d_x).
void trained_predictions(model::Transformer<double>& net, const tasks::RegressionBatch<double>& data, const tasks::RegressionSpec& task,
                         std::vector<double>& y_tf, std::vector<double>& s_tf) {
    const std::size_t B = data.inputs.shape()[0], TT = data.inputs.shape()[1], d_in = data.inputs.shape()[2], d = task.x_dim;
    const std::size_t N = task.examples, probes = d + 2;  // the task itself, x_q = 0, x_q = e_1..e_d
    net.set_prefix_length(tasks::regression_prefix_length(task));
    y_tf.assign(B, 0.0);
    s_tf.assign(B * d, 0.0);
    std::vector<double> batch(probes * TT * d_in);
    for (std::size_t b = 0; b < B; ++b) {
        const double* tokens = data.inputs.data() + b * TT * d_in;
        for (std::size_t p = 0; p < probes; ++p) {
            std::copy(tokens, tokens + TT * d_in, batch.begin() + p * TT * d_in);
            if (p == 0) continue;
            double* query = batch.data() + (p * TT + N) * d_in;
            for (std::size_t k = 0; k < d; ++k) query[k] = (p >= 2 && k == p - 2) ? 1.0 : 0.0;
        }
        net.forward(batch.data(), probes, TT);
        const double* out = net.outputs();  // (probes, T, 1)
        y_tf[b] = out[N];
        for (std::size_t k = 0; k < d; ++k) s_tf[b * d + k] = out[(k + 2) * TT + N] - out[TT + N];
    }
}

RunOutcome run_vo_trained(const RunContext& context) {
    const config::Config& cfg = context.config;
    RunFolder run(cfg, context.options);
    const RegressionTraining training = train_regression_model(cfg, context.options, run);
    if (!training.completed) return {run.path(), false, training.steps_done, training.steps_total};
    model::Transformer<double> net(training.spec, model::Transformer<double>::Mode::inference);
    net.params = training.parameters;
    tasks::RegressionBatch<double> data;
    Rng eval_rng = context.stream(kEvalTasks);
    const std::size_t B = static_cast<std::size_t>(cfg.get_int("vo.eval_tasks")), N = training.task.examples, d = training.task.x_dim;
    tasks::sample_regression_batch(data, B, training.task, eval_rng);
    std::vector<double> y_tf, s_tf;
    trained_predictions(net, data, training.task, y_tf, s_tf);
    const std::vector<double> x(data.x.begin(), data.x.end()), y(data.y.begin(), data.y.end());
    const icl::AlignmentMetrics m = icl::gd_alignment(x, y, B, N, d, y_tf, s_tf);
    const double max_gap = cfg.get_float("vo.max_rel_loss_gap"), min_cos = cfg.get_float("vo.min_model_cos");
    const bool pass = m.rel_loss_gap <= max_gap && m.model_cos >= min_cos;
    // this seed alone against both bars, in the claims' vocabulary (a NaN decides nothing); the claims pool the seeds
    const char* seed_verdict = std::isnan(m.rel_loss_gap) || std::isnan(m.model_cos) ? "inconclusive"
                               : pass                                                 ? "reproduced"
                                                                                      : "not reproduced";
    io::ResultsWriter& w = run.results();
    w.write_columns("/tables/vo_trained",
                    {{"seed", std::vector<std::int64_t>{cfg.get_int("seed")}},
                     {"steps", std::vector<std::int64_t>{static_cast<std::int64_t>(training.steps_total)}},
                     {"eval_tasks", std::vector<std::int64_t>{static_cast<std::int64_t>(B)}},
                     {"eta_star", std::vector<double>{m.eta_star}},
                     {"loss_tf", std::vector<double>{m.loss_tf}},
                     {"loss_gd", std::vector<double>{m.loss_gd}},
                     {"rel_loss_gap", std::vector<double>{m.rel_loss_gap}},
                     {"max_rel_loss_gap", std::vector<double>{max_gap}},
                     {"preds_diff", std::vector<double>{m.preds_diff}},
                     {"model_cos", std::vector<double>{m.model_cos}},
                     {"min_model_cos", std::vector<double>{min_cos}},
                     {"model_diff", std::vector<double>{m.model_diff}},
                     {"seed_verdict", std::vector<std::string>{seed_verdict}}},
                    {{"seed_verdict", "this seed alone: both bars met (reproduced), one missed (not reproduced), a NaN "
                                      "(inconclusive); the claims VO-T judge the seeds together"}});
    // von Oswald Fig. 2 is qualitative (cosine -> ~1, loss gap -> ~0): no paper value; the bars are ours (spec §11.2).
    // One value per run; `iclab claims` pools the seeds of the reproduce profile (>= 3) into an interval.
    const std::int64_t seed = cfg.get_int("seed");
    io::Claim cos;
    cos.id = "VO-T model_cos";
    cos.paper = "von Oswald 2023";
    cos.source = "Figure 2 (spec gd_duals §11)";
    cos.kind = io::ClaimKind::qualitative;
    cos.statement = "a trained one-layer LSA computes one GD step: its sensitivities align with GD's (cosine -> 1)";
    cos.metric = "mean cosine of dy/dx_q, trained LSA vs one GD step at eta*";
    cos.rule = io::ClaimRule::interval_above(min_cos);
    cos.readme = "experiments/vo_trained/README.md";
    // Third audit of issue 45, from git history: declared as claims over the seeds after the README had shown five.
    cos.provenance = "chosen after the first runs (2026-11-25, 3abc32b): the rule became the 95 % t-interval over the seeds "
                     "after the README of 073c2e2 had shown five seeds (gap 0.35 %, cos 0.9990); before, each run passed or "
                     "failed alone, with a printed band around an invented paper cosine 1.0; the bars (cos 0.99, gap 0.05) "
                     "are spec gd_duals §11.2's, set before any run";
    io::Claim gap = cos;
    gap.id = "VO-T loss gap";
    gap.statement = "a trained one-layer LSA reaches the loss of one GD step at the best eta";
    gap.metric = "|loss_TF - loss_GD| / loss_GD on the eval tasks";
    gap.rule = io::ClaimRule::interval_below(max_gap);
    io::write_claims(w, {io::evaluate_claim(cos, {seed}, {m.model_cos}), io::evaluate_claim(gap, {seed}, {m.rel_loss_gap})});
    run.commit();
    if (!context.options.quiet) {
        print_regression_evaluation(training, cfg);
        std::printf("\ntrained LSA vs one GD step at eta* = %.4f on %zu eval tasks (von Oswald et al. Fig. 2):\n", m.eta_star, B);
        std::printf("  loss_TF %.5f  loss_GD %.5f  rel. gap %.4f (bar %.2f)\n", m.loss_tf, m.loss_gd, m.rel_loss_gap, max_gap);
        std::printf("  preds_diff %.5f  model_cos %.5f (bar %.2f)  model_diff %.5f\n", m.preds_diff, m.model_cos, min_cos, m.model_diff);
        std::printf("  this seed: %s (the claims pool the seeds)\n", seed_verdict);
    }
    return {run.path(), true, training.steps_total, training.steps_total};
}

}  // namespace
}  // namespace vo_trained_cpp

Experiment vo_trained() {
    using namespace vo_trained_cpp;
    return {"vo_trained", "trained one-layer LSA vs one GD step at the best eta (von Oswald et al. 2023 Fig. 2; spec §11)",
            {KeyGroup::output, KeyGroup::model, KeyGroup::train, KeyGroup::regression_task},
            declare_keys,
            run_vo_trained,
            [](const config::Config& cfg) {  // training, then (d_x + 1) forwards of each eval task
                RunEstimate e = estimate_training(cfg);
                const double T = static_cast<double>(cfg.get_int("task.examples") + cfg.get_int("task.queries"));
                e.flops += static_cast<double>(cfg.get_int("vo.eval_tasks")) * static_cast<double>(cfg.get_int("task.x_dim") + 2) *
                           transformer_forward_flops(cfg, T, vector_io_width(cfg));
                e.gemm_flops = e.flops;
                e.keys.push_back("vo.eval_tasks");
                return e;
            }};
}

}  // namespace iclab::experiments
