// `iclab bench` on an in-context regression config (the paper-003 cpu2 model, shrunk): the export that
// scripts/bench/torch_reference.py --check reads holds the parameters, batch, outputs, loss and gradients of
// the model the config describes. Checked here against a fresh model loaded from the export's parameters:
// outputs and loss recomputed (the loss by the formula, written out, not through the trainer's code) and
// gradients against central finite differences of that loss.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "experiments/registry.hpp"
#include "framework/io/results_file.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/regression_training.hpp"
#include "framework/tasks/regression.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_bench_regression {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab_test;

namespace {

// The cpu2 model with its features kept (softmax, learned positions, prefix mask with isolated queries and no
// query self-attention, shared block, no final LayerNorm, the all_positions L2 penalty), made small.
const std::vector<std::string> kOverrides = {"model.dtype=float64", "model.layers=2",   "model.width=16",
                                             "model.heads=2",       "task.examples=5",  "task.queries=3",
                                             "task.x_dim=3",        "train.batch_size=3",
                                             "prefix_vs_causal.test_examples=[4]"};

// (Σ_query |ŷ − y|² + λ Σ_context |ŷ|²) / (#query + #context): paper 003 E.2's loss in its all_positions form.
double all_positions_loss(const double* out, const double* target, const std::int32_t* positions, std::size_t n, std::size_t O,
                          double l2) {
    double fit = 0.0, penalty = 0.0;
    std::size_t counted = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (positions[i] == 0) continue;
        ++counted;
        for (std::size_t o = 0; o < O; ++o) {
            const double y = out[i * O + o];
            if (positions[i] == 2) fit += (y - target[i * O + o]) * (y - target[i * O + o]);
            else penalty += y * y;
        }
    }
    return (fit + l2 * penalty) / static_cast<double>(counted);
}

}  // namespace

TEST_CASE("bench exports a regression model whose loss a fresh forward of its parameters reproduces", "[cli][bench]") {
    Scratch scratch;
    const fs::path exported = scratch.path / "export.h5";
    const std::string config = "configs/cpu2/prefix_vs_causal.yaml";
    std::string overrides;
    for (const auto& o : kOverrides) overrides += " '" + o + "'";
    const auto r = run_iclab("bench " + config + overrides + " --iters 0 --export " + exported.string(), scratch.path);
    INFO(r.err);
    REQUIRE(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("export:"));

    const iclab::config::Config cfg =
        iclab::experiments::catalog().load_config(std::string(ICLAB_SOURCE_DIR) + "/" + config, kOverrides);
    const iclab::tasks::RegressionSpec task = iclab::run::regression_spec_from_config(cfg);
    const std::size_t B = 3, TT = iclab::tasks::regression_seq_len(task), O = iclab::tasks::regression_output_dim(task);
    REQUIRE(TT == 8);
    iclab::model::Transformer<double> model(iclab::run::regression_model_spec(cfg));
    model.set_prefix_length(iclab::tasks::regression_prefix_length(task));

    iclab::io::ResultsReader reader(exported);
    iclab::run::read_checkpoint(reader, model);
    const auto inputs = reader.read_tensor_double("/check/inputs");
    const auto targets = reader.read_tensor_double("/check/targets");
    const auto positions = reader.read_int32("/check/positions");
    const auto outputs = reader.read_tensor_double("/check/outputs");
    REQUIRE(inputs.shape == std::vector<std::size_t>{B, TT, iclab::tasks::regression_token_dim(task)});
    REQUIRE(outputs.shape == std::vector<std::size_t>{B, TT, O});
    CHECK(std::count(positions.values.begin(), positions.values.end(), 2) == static_cast<long>(B * task.queries));
    CHECK(std::count(positions.values.begin(), positions.values.end(), 1) == static_cast<long>(B * task.examples));
    const double exported_loss = reader.read_attr_double("/", "loss");
    const double l2 = cfg.get_float("train.context_output_l2");
    REQUIRE(l2 > 0.0);
    REQUIRE(cfg.get_string("train.context_output_l2_form") == "all_positions");

    // Outputs and loss of a fresh forward of the exported parameters on the exported batch.
    const auto loss_at = [&] {
        model.forward(inputs.values.data(), B, TT);
        return all_positions_loss(model.outputs(), targets.values.data(), positions.values.data(), B * TT, O, l2);
    };
    const double loss = loss_at();
    for (std::size_t i = 0; i < B * TT * O; ++i) CHECK(model.outputs()[i] == Approx(outputs.values[i]).epsilon(1e-12).margin(1e-14));
    CHECK(loss == Approx(exported_loss).epsilon(1e-12));
    CHECK(loss > 0.0);

    // The exported gradients against central differences of that loss, a few elements of each parameter
    // (the shared block receives every layer's contribution).
    for (const auto& entry : model.layout().entries()) {
        const auto gradient = reader.read_tensor_double("/check/grads/" + entry.name);
        REQUIRE(gradient.values.size() == entry.size);
        for (std::size_t k = 0; k < std::min<std::size_t>(entry.size, 3); ++k) {
            const std::size_t i = (k * 7919) % entry.size;
            double& p = model.params[entry.offset + i];
            const double saved = p, h = 1e-5;
            p = saved + h;
            const double up = loss_at();
            p = saved - h;
            const double down = loss_at();
            p = saved;
            const double numeric = (up - down) / (2 * h), analytic = gradient.values[i];
            INFO(entry.name << "[" << i << "]: exported " << analytic << ", finite difference " << numeric);
            CHECK(std::abs(numeric - analytic) <= 1e-6 * std::max(std::abs(numeric) + std::abs(analytic), 1e-3));
        }
    }
}

}  // namespace iclab_test_bench_regression
