// The `regression` experiment end to end through the iclab binary: a small model learns in-context linear
// regression (query MSE well below the zero predictor's), the results file holds the curves and the final
// table with the least-squares reference, and bad configs are refused before any work.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_regression_experiment {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {
// Two examples per dimension is plenty for least squares; the tiny model learns most of it in 400 steps.
const std::string kTinyRegression =
    "configs/quick/regression.yaml task.x_dim=3 task.examples=12 model.layers=1 model.width=32 model.heads=2 "
    "train.steps=400 eval.every=100 eval.sequences=256 train.lr=0.003 --quiet";
}  // namespace

TEST_CASE("regression experiment learns in context and logs curves and the final table", "[regression][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run " + kTinyRegression + " output.dir=" + scratch.path.string(), scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    const fs::path run_dir = last_line(result.out);
    iclab::io::ResultsReader reader((run_dir / "results.h5").string());
    const auto steps = reader.read_column_double("/curves/step");
    const auto relative = reader.read_column_double("/curves/relative_query_mse");
    const auto model_mse = reader.read_column_double("/curves/query_mse");
    const auto zero_mse = reader.read_column_double("/curves/zero_predictor_mse");
    const auto least_squares = reader.read_column_double("/curves/least_squares_mse");
    REQUIRE(steps.size() == 4);
    CHECK(steps.back() == 400.0);
    for (std::size_t i = 0; i < steps.size(); ++i) {
        CHECK(relative[i] == Approx(model_mse[i] / zero_mse[i]).epsilon(1e-12));
        CHECK(least_squares[i] < 1e-8);     // noise-free, N > d: least squares recovers W exactly
        CHECK(zero_mse[i] == zero_mse[0]);  // the same held-out set every time
    }
    // E|y|^2 = d/3 for W ~ N(0, I), x ~ U(-1, 1)^d: the held-out zero-predictor MSE is near 1
    CHECK(zero_mse[0] == Approx(1.0).margin(0.2));
    CHECK(relative.back() < 0.5);
    CHECK(reader.read_attr_double("/", "final_relative_query_mse") == Approx(relative.back()));
    const auto predictors = reader.read_column_string("/tables/final_eval/predictor");
    REQUIRE(predictors.size() == 3);
    CHECK(predictors[0] == "model");
    CHECK(predictors[1] == "zero predictor");
    CHECK(iclab::io::read_claims(reader).empty());  // regression.claims: none
}

TEST_CASE("regression with regression.claims=004-5.1 declares paper 004's claim on the seed's relative query MSE", "[regression][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run " + kTinyRegression + " regression.claims=004-5.1 seed=3 output.dir=" + scratch.path.string(),
                                  scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    iclab::io::ResultsReader reader((fs::path(last_line(result.out)) / "results.h5").string());
    const auto claims = iclab::io::read_claims(reader);
    REQUIRE(claims.size() == 1);
    CHECK(claims[0].claim.id == "004-5.1 pre-trained layer predicts the label");
    CHECK(claims[0].units == std::vector<std::int64_t>{3});
    CHECK(claims[0].values[0] == Approx(reader.read_attr_double("/", "final_relative_query_mse")).epsilon(1e-12));
    CHECK(claims[0].verdict == iclab::io::Verdict::inconclusive);  // one seed: no interval (the profile pools 5)
    // a NaN ratio is inconclusive, never reproduced
    CHECK(iclab::io::evaluate_claim(claims[0].claim, {0, 1}, {0.1, std::nan("")}).verdict == iclab::io::Verdict::inconclusive);
}

TEST_CASE("regression configs with inconsistent keys are refused with exit 2 before any work", "[regression][cli]") {
    Scratch scratch;
    const auto identity = run_iclab("run " + kTinyRegression + " model.read_in=identity output.dir=" + scratch.path.string(), scratch.path);
    CHECK(identity.status == 2);
    CHECK_THAT(identity.err, Catch::Contains("model.width") && Catch::Contains("identity read-in needs model.width = token width"));
    const auto recurrent = run_iclab("run " + kTinyRegression + " model.attention_form=recurrent output.dir=" + scratch.path.string(),
                                     scratch.path);
    CHECK(recurrent.status == 2);
    CHECK_THAT(recurrent.err, Catch::Contains("model.attention_form") && Catch::Contains("causal"));
    const auto shift = run_iclab("run " + kTinyRegression + " task.sigmoid_shift=true output.dir=" + scratch.path.string(), scratch.path);
    CHECK(shift.status == 2);
    CHECK_THAT(shift.err, Catch::Contains("task.sigmoid_shift"));
    CHECK(count_entries(scratch.path) == 2);  // the captured stdout and stderr: no run folder
}

}  // namespace iclab_test_regression_experiment
