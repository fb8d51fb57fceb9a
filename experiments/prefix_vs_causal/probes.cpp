// Experiment `prefix_vs_causal_probes` (paper 003 Figure 3, E.2; spec B2, choice Q13): per-layer linear probes of a
// finished `prefix_vs_causal` run (the probes themselves: probes.hpp, part_b::probe_layers). The trunk is untouched, so
// Table 1 and Figure 3 come from the same model. Output: /tables/probes (depth, query MSE, MC error in %).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "experiments/prefix_vs_causal/probes.hpp"

#include "framework/core/dense_linalg.hpp"
#include "framework/io/results_file.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/regression_training.hpp"

namespace iclab::experiments::part_b {

using run::regression_stream;
using run::RegressionStream;

namespace {

// Runs `data` through the model in chunks and hands each chunk's query rows to visit(depth, h (C), y (O)).
template <class Visit>
void query_states(model::Transformer<double>& model, const tasks::RegressionBatch<double>& data, const tasks::RegressionSpec& task,
                  std::size_t chunk, Visit visit) {
    const std::size_t B = data.inputs.shape()[0], TT = data.inputs.shape()[1], d_in = data.inputs.shape()[2];
    const std::size_t C = model.spec().width, O = tasks::regression_output_dim(task), L = model.spec().layers;
    model.set_prefix_length(tasks::regression_prefix_length(task));
    for (std::size_t first = 0; first < B; first += chunk) {
        const std::size_t rows = std::min(chunk, B - first);
        model.forward(data.inputs.data() + first * TT * d_in, rows, TT);
        for (std::size_t n = 0; n < rows * TT; ++n) {
            if (data.positions.data()[first * TT + n] != static_cast<std::uint8_t>(tasks::RegressionPosition::query)) continue;
            for (std::size_t l = 0; l <= L; ++l) visit(l, model.residual_stream(l) + n * C, data.targets.data() + (first * TT + n) * O);
        }
    }
}

}  // namespace

ProbeCurve probe_layers(model::Transformer<double>& model, const tasks::RegressionSpec& task, const config::Config& source,
                        std::size_t fit_sequences, double ridge) {
    const std::uint64_t pool_size = static_cast<std::uint64_t>(source.get_int("task.pool_sequences"));
    ICLAB_INPUT_CHECK(pool_size > 0, "the probes fit on the training pool: the run trained without one (task.pool_sequences 0)");
    ICLAB_CHECK(model.mode() == model::Transformer<double>::Mode::training, "the probes read the residual streams (training mode)");
    const std::size_t C = model.spec().width, K = C + 1, O = tasks::regression_output_dim(task), L = model.spec().layers;
    const std::size_t chunk = static_cast<std::size_t>(source.get_int("train.batch_size"));
    const bool classification = task.kind == tasks::RegressionKind::classification;

    // Fit: normal equations per depth, A_l = Σ [h,1][h,1]ᵀ (K, K), B_l = Σ [h,1] yᵀ (K, O).
    std::vector<std::uint64_t> indices(std::min<std::uint64_t>(fit_sequences, pool_size));
    for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
    tasks::RegressionBatch<double> fit;
    tasks::sample_regression_pool_batch(fit, indices, task, regression_stream(source, RegressionStream::pool));
    std::vector<std::vector<double>> A(L + 1, std::vector<double>(K * K, 0.0)), Bm(L + 1, std::vector<double>(K * O, 0.0));
    std::vector<double> h(K);
    query_states(model, fit, task, chunk, [&](std::size_t l, const double* state, const double* y) {
        std::copy(state, state + C, h.begin());
        h[C] = 1.0;
        for (std::size_t r = 0; r < K; ++r) {
            for (std::size_t c = 0; c < K; ++c) A[l][r * K + c] += h[r] * h[c];
            for (std::size_t o = 0; o < O; ++o) Bm[l][r * O + o] += h[r] * y[o];
        }
    });
    std::vector<std::vector<double>> W(L + 1);
    for (std::size_t l = 0; l <= L; ++l) {
        double trace = 0.0;
        for (std::size_t r = 0; r < K; ++r) trace += A[l][r * K + r];
        for (std::size_t r = 0; r < K; ++r) A[l][r * K + r] += ridge * trace / K;
        W[l] = linalg::solve(A[l], K, Bm[l], O);
    }

    // Test: the run's own test set (its evaluation stream), every depth.
    tasks::RegressionBatch<double> test;
    Rng eval_rng = regression_stream(source, RegressionStream::eval_data);
    tasks::sample_regression_batch(test, static_cast<std::size_t>(source.get_int("eval.sequences")), task, eval_rng);
    std::vector<double> sq(L + 1, 0.0), wrong(L + 1, 0.0), count(L + 1, 0.0), prediction(O);
    query_states(model, test, task, chunk, [&](std::size_t l, const double* state, const double* y) {
        std::size_t best = 0, label = 0;
        bool nan_prediction = false;  // no class then: the error NaN, never a class-0 guess (issue 45)
        for (std::size_t o = 0; o < O; ++o) {
            double p = W[l][C * O + o];
            for (std::size_t c = 0; c < C; ++c) p += state[c] * W[l][c * O + o];
            prediction[o] = p;
            nan_prediction = nan_prediction || std::isnan(p);
            sq[l] += (p - y[o]) * (p - y[o]);
            if (prediction[o] > prediction[best]) best = o;
            if (y[o] > y[label]) label = o;
        }
        wrong[l] += nan_prediction ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(best != label);
        count[l] += 1.0;
    });
    ProbeCurve out;
    for (std::size_t l = 0; l <= L; ++l) {
        out.query_mse.push_back(sq[l] / count[l]);
        out.error_pct.push_back(classification ? 100.0 * wrong[l] / count[l] : std::numeric_limits<double>::quiet_NaN());
    }
    return out;
}

}  // namespace iclab::experiments::part_b

namespace iclab::experiments {

using namespace iclab::run;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace probes_cpp {


namespace {

void declare_keys(config::Schema& schema) {
    schema.add_string_free("source.run_dir", "", "the finished prefix_vs_causal run whose layers are probed")
        .add_int("probes.fit_sequences", static_cast<std::int64_t>(part_b::kProbeFitSequences), 1, 1 << 24, "training-pool sequences whose query positions fit the probes (Q13: 1,024)")
        .add_float("probes.ridge", part_b::kProbeRidge, 0.0, 1.0, "ridge added to the normal equations, relative to their mean diagonal")
        .add_rule([](const config::Config& cfg) {  // checked here, so that no run folder is made for a missing source
            const std::string dir = cfg.get_string("source.run_dir");
            if (dir.empty()) cfg.fail({"source.run_dir"}, "source.run_dir: name the finished prefix_vs_causal run to probe");
            if (!std::filesystem::exists(std::filesystem::path(dir) / kResultsFile))
                cfg.fail({"source.run_dir"}, "source.run_dir: '" + dir + "' holds no finished run (no " + kResultsFile + ")");
        });
}

// The source model's size from the config.yaml of source.run_dir (the resolved config its run folder keeps): fp64
// forwards (2 (4 + 2 mlp) C^2 + 4 T C a token and layer) over the fitted pool sequences (at most
// task.pool_sequences) and the run's eval.sequences, and their residual streams (L + 1) x T x C per sequence. When
// the file cannot be read, the cpu2 profile's model (L 6, C 64, T 30, eval.sequences 1024). issue 44: the cpu2 bound
// alone was 190x the work of a small source model.
RunEstimate estimate(const config::Config& cfg) {
    double L = 6, C = 64, T = 30, mlp = 0, fit = static_cast<double>(cfg.get_int("probes.fit_sequences")), test = 1024;
    try {
        const YAML::Node source = YAML::LoadFile((std::filesystem::path(cfg.get_string("source.run_dir")) / kConfigFile).string());
        L = source["model"]["layers"].as<double>(), C = source["model"]["width"].as<double>();
        mlp = source["model"]["mlp"].as<bool>() ? source["model"]["mlp_ratio"].as<double>() : 0.0;
        T = source["task"]["examples"].as<double>() + source["task"]["queries"].as<double>();
        fit = std::min(fit, source["task"]["pool_sequences"].as<double>());
        test = source["eval"]["sequences"].as<double>();
    } catch (const std::exception&) {  // no readable source config: the bound above (the run itself refuses it)
    }
    RunEstimate e;
    e.flops = (fit + test) * T * L * (2.0 * (4.0 + 2.0 * mlp) * C * C + 4.0 * T * C);
    e.gemm_flops = e.flops;  // all transformer forwards
    e.memory_gib = (fit + test) * (L + 1.0) * T * C * 8.0 / (1024.0 * 1024.0 * 1024.0);
    e.keys = {"probes.fit_sequences"};
    return e;
}

RunOutcome run_probes(const RunContext& context) {
    const config::Config& cfg = context.config;
    const std::filesystem::path source_dir = cfg.get_string("source.run_dir");
    ICLAB_INPUT_CHECK(std::filesystem::exists(source_dir / kResultsFile), "source.run_dir: " << source_dir.string()
                                                                                             << " holds no finished run");
    const config::Config source = context.catalog.load_config((source_dir / kConfigFile).string(), {});
    ICLAB_INPUT_CHECK(source.get_string("experiment") == "prefix_vs_causal",
                      "source.run_dir: a prefix_vs_causal run is needed, got " << source.get_string("experiment"));
    // Checked before the run folder exists: a refused run leaves nothing.
    const std::uint64_t pool_size = static_cast<std::uint64_t>(source.get_int("task.pool_sequences"));
    ICLAB_INPUT_CHECK(pool_size > 0, "source.run_dir: the run trained without a fixed pool (task.pool_sequences 0)");
    RunFolder run(cfg, context.options);
    const tasks::RegressionSpec task = regression_spec_from_config(source);
    model::Transformer<double> model(regression_model_spec(source));
    read_checkpoint(io::ResultsReader((source_dir / kResultsFile).string()), model);
    const part_b::ProbeCurve curve = part_b::probe_layers(
        model, task, source, static_cast<std::size_t>(cfg.get_int("probes.fit_sequences")), cfg.get_float("probes.ridge"));
    const std::vector<double>& mse = curve.query_mse;
    const std::vector<double>& error = curve.error_pct;
    std::vector<std::int64_t> depth;
    for (std::size_t l = 0; l < mse.size(); ++l) depth.push_back(static_cast<std::int64_t>(l));
    io::ResultsWriter& w = run.results();
    w.write_columns("/tables/probes", {{"depth", depth}, {"query_mse", mse}, {"error_pct", error}});
    w.set_attr("source_run_dir", source_dir.string());
    w.set_attr("mask", source.get_string("model.mask"));
    w.set_attr("task_kind", source.get_string("task.kind"));
    w.set_attr("shared_layers", static_cast<std::int64_t>(source.get_bool("model.shared_layers")));
    w.set_attr("context_output_l2", source.get_float("train.context_output_l2"));
    run.commit();
    if (!context.options.quiet)
        for (std::size_t l = 0; l < mse.size(); ++l) std::printf("depth %2zu  query MSE %.5g  error %% %.2f\n", l, mse[l], error[l]);
    return {run.path(), true, 0, 0};
}

}  // namespace
}  // namespace probes_cpp

Experiment prefix_vs_causal_probes() {
    using namespace probes_cpp;
    return {"prefix_vs_causal_probes", "paper 003 Figure 3: least-squares probes of every layer of a prefix_vs_causal run",
            {KeyGroup::output}, declare_keys, run_probes, estimate};
}

}  // namespace iclab::experiments
