// Issue 45 (a third read of the claims): a model whose outputs are NaN never scores a class, so no accuracy, error
// percentage or "steps to p %" made from it can pass a claim. The evaluations' argmax loops (`z[v] > z[best]`) drop a
// NaN and used to predict class / token 0; each now reports NaN. Finite models keep their numbers (the fingerprints
// of regression, prefix_vs_causal, induction_head and bias_training are unchanged), checked here too.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "experiments/registry.hpp"
#include "framework/core/rng.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/induction_training.hpp"
#include "framework/run/regression_training.hpp"
#include "framework/tasks/induction_head.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab_test_nan_models {  // this file's names (unity build: CMakeLists.txt)

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

iclab::config::Config load(const std::string& config, const std::vector<std::string>& overrides) {
    return iclab::experiments::catalog().load_config(std::string(ICLAB_SOURCE_DIR) + "/" + config, overrides);
}

}  // namespace

TEST_CASE("nan models: a classification model with a NaN output has no accuracy, a finite one has", "[nan][regression]") {
    const auto cfg = load("configs/quick/prefix_vs_causal.yaml",
                          {"task.kind=classification", "task.x_dim=3", "task.queries=2", "model.layers=1",
                           "model.width=16"});
    const iclab::tasks::RegressionSpec task = iclab::run::regression_spec_from_config(cfg);
    iclab::model::Transformer<double> model(iclab::run::regression_model_spec(cfg));
    iclab::Rng init(3), data_rng(4);
    model.init(init);
    iclab::tasks::RegressionBatch<double> data;
    iclab::tasks::sample_regression_batch(data, 8, task, data_rng);
    const auto finite = iclab::run::evaluate_regression(model, data, task, 4);
    REQUIRE(std::isfinite(finite.query_accuracy));
    CHECK(finite.query_accuracy >= 0.0);
    CHECK(finite.query_accuracy <= 1.0);
    // every output NaN: the argmax loop predicted class 0 and scored about 1/3, which a claim could pass
    for (double& p : model.params) p = kNaN;
    const auto poisoned = iclab::run::evaluate_regression(model, data, task, 4);
    CHECK(std::isnan(poisoned.query_accuracy));
    CHECK(std::isnan(poisoned.query_mse));
}

TEST_CASE("nan models: an induction model with NaN logits has no ICL accuracy, a finite one has", "[nan][induction]") {
    const auto cfg = load("configs/quick/induction_head.yaml", {"task.seq_len=24", "model.width=16", "model.layers=1"});
    const iclab::tasks::InductionHeadSpec task = iclab::run::induction_spec_from_config(cfg);
    iclab::model::Transformer<float> model(iclab::run::model_spec_from_config(cfg, iclab::tasks::kInductionVocab, task.seq_len));
    iclab::Rng init(5), data_rng(6);
    model.init(init);
    iclab::tasks::TokenBatch data;
    iclab::tasks::sample_induction_batch(data, 4, task, data_rng);
    const auto finite = iclab::run::evaluate_induction(model, data, 2);
    REQUIRE(finite.all.positions > 0);
    CHECK(std::isfinite(finite.all.accuracy()));
    for (const auto& kind : finite.kinds) CHECK_FALSE(std::isnan(kind.accuracy()));
    // one NaN parameter of the output head makes every logit NaN: the argmax used to predict token 0
    for (float& p : model.params) p = std::numeric_limits<float>::quiet_NaN();
    const auto poisoned = iclab::run::evaluate_induction(model, data, 2);
    CHECK(std::isnan(poisoned.all.accuracy()));
    for (const auto& kind : poisoned.kinds)
        if (kind.positions > 0) CHECK(std::isnan(kind.accuracy()));
}

}  // namespace iclab_test_nan_models
