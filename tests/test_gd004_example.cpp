// The `gd004_example` experiment (paper 004 §5.2, Fig. 3 left; specs/gd_duals.md §4-5): the single fixed task of
// A.3 (task.w_mode fixed), and a short run through the iclab binary whose GD-CL reference must reproduce the
// trained layer's prediction exactly, with a trajectory of N·N_CL + 1 points that is linear at epoch boundaries.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/io/results_file.hpp"
#include "framework/tasks/regression.hpp"
#include "tests/cli_helpers.hpp"

using namespace iclab_test;

TEST_CASE("gd004_example: a fixed task gives every sequence the same W, per_sequence does not", "[gd004_example]") {
    iclab::tasks::RegressionSpec spec;
    spec.x_dim = 3;
    spec.examples = 4;
    iclab::tasks::RegressionBatch<double> batch;
    iclab::Rng rng(3);
    iclab::tasks::sample_regression_batch(batch, 2, spec, rng);
    bool differ = false;
    for (std::size_t k = 0; k < 3; ++k) differ = differ || batch.task_weights(0, 0, k) != batch.task_weights(1, 0, k);
    CHECK(differ);
    spec.fixed_weights = {0.5, -1.0, 2.0};
    iclab::tasks::sample_regression_batch(batch, 2, spec, rng);
    for (std::size_t b = 0; b < 2; ++b) {
        for (std::size_t k = 0; k < 3; ++k) CHECK(batch.task_weights(b, 0, k) == spec.fixed_weights[k]);
        for (std::size_t i = 0; i < 5; ++i)  // y = W x for every example, the query included
            CHECK(batch.y(b, i, 0) == Approx(0.5 * batch.x(b, i, 0) - batch.x(b, i, 1) + 2.0 * batch.x(b, i, 2)));
    }
    spec.fixed_weights = {1.0};
    CHECK_THROWS(iclab::tasks::sample_regression_batch(batch, 2, spec, rng));
}

TEST_CASE("gd004_example: GD-CL reproduces the trained layer's prediction", "[gd004_example][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run configs/quick/gd004_example.yaml train.steps=512 eval.every=256 log.every=256 "
                                  "example.test_sequences=50 example.dual_sequences=5 --threads 1 output.dir=" + scratch.path.string(),
                                  scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    CHECK_THAT(result.out, Catch::Contains("pass"));
    iclab::io::ResultsReader reader((fs::path(last_line(result.out)) / "results.h5").string());
    CHECK(reader.read_attr_string("/", "all_pass") == "true");
    const double y_tf = reader.read_column_double("/tables/004_example/y_tf")[0];
    const double y_cl = reader.read_column_double("/tables/004_example/y_cl")[0];
    CHECK(std::abs(y_tf - y_cl) <= 1e-11 * std::max(1.0, std::abs(y_tf)));
    CHECK(reader.read_column_double("/tables/004_example/paper_y_tf")[0] == -0.6490);  // N = 15: §5.2
    const auto max_err = reader.read_column_double("/tables/004_example_duals/max_err");
    CHECK(max_err[0] <= 1e-11);
    CHECK(max_err[1] <= 1e-5);
    CHECK(max_err[1] > 1e-9);  // the fp32 dual really ran in fp32
    const auto trajectory = reader.read_column_double("/tables/004_example_traj/y_cl");
    REQUIRE(trajectory.size() == 15 * 10 + 1);
    CHECK(trajectory.back() == Approx(y_cl).epsilon(1e-12));
    // epoch boundaries on the straight line from y_CL(0) to y_TF (Theorem 1 with η_gd = η/N_CL)
    for (std::size_t e = 0; e <= 10; ++e)
        CHECK(trajectory[e * 15] == Approx(trajectory[0] + (y_tf - trajectory[0]) * e / 10.0).margin(1e-12));
    CHECK(reader.read_attr_double("/", "control_min_error") >= 1e-4);
}

TEST_CASE("gd004_example refuses a layer that is not paper 004's", "[gd004_example][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run configs/quick/gd004_example.yaml model.isolate_queries=true output.dir=" + scratch.path.string(),
                                  scratch.path);
    CHECK(result.status == 2);
    CHECK_THAT(result.err, Catch::Contains("its own included"));
}
