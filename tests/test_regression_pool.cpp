// Paper 003 Part B's data and loss services: the fixed training pool (B0, Q21: sequence i is a function of
// (seed, i) alone), the distinct per-step draw of pool indices, and the L2 penalty's two normalizations (E.2).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "framework/run/regression_training.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab_test_regression_pool {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {
tasks::RegressionSpec small_task(tasks::RegressionKind kind) {
    tasks::RegressionSpec spec;
    spec.kind = kind;
    spec.x_dim = 3;
    spec.examples = 5;
    spec.queries = 2;
    return spec;
}

bool same_sequence(const tasks::RegressionBatch<double>& a, std::size_t i, const tasks::RegressionBatch<double>& b, std::size_t j) {
    const std::size_t stride = a.inputs.size() / a.inputs.shape()[0], ts = a.targets.size() / a.targets.shape()[0];
    return std::equal(a.inputs.data() + i * stride, a.inputs.data() + (i + 1) * stride, b.inputs.data() + j * stride) &&
           std::equal(a.targets.data() + i * ts, a.targets.data() + (i + 1) * ts, b.targets.data() + j * ts);
}
}  // namespace

TEST_CASE("pool: sequence i depends only on the pool stream and i, not on the batch it is drawn in", "[regression_task][pool]") {
    for (auto kind : {tasks::RegressionKind::linear, tasks::RegressionKind::sigmoid, tasks::RegressionKind::classification}) {
        const auto spec = small_task(kind);
        const Rng pool = Rng(7).derive(4);
        tasks::RegressionBatch<double> a, b, c;
        tasks::sample_regression_pool_batch(a, {3, 10, 42}, spec, pool);
        tasks::sample_regression_pool_batch(b, {42, 3}, spec, pool);
        tasks::sample_regression_pool_batch(c, {3}, spec, Rng(8).derive(4));
        REQUIRE(a.inputs.shape()[0] == 3);
        REQUIRE(b.inputs.shape()[0] == 2);
        CHECK(same_sequence(a, 0, b, 1));
        CHECK(same_sequence(a, 2, b, 0));
        CHECK_FALSE(same_sequence(a, 0, a, 1));  // different indices: different tasks
        CHECK_FALSE(same_sequence(a, 0, c, 0));  // another seed: another pool
        // Each pool sequence is what a one-sequence batch of its own stream draws.
        tasks::RegressionBatch<double> one;
        Rng rng = pool.derive(10);
        tasks::sample_regression_batch(one, 1, spec, rng);
        CHECK(same_sequence(a, 1, one, 0));
    }
}

TEST_CASE("pool: per-step indices are distinct, in range and uniform over the pool", "[regression_task][pool]") {
    Rng rng(11);
    const std::uint64_t pool_size = 20;
    std::vector<double> counts(pool_size, 0.0);
    const int draws = 4000;
    for (int s = 0; s < draws; ++s) {
        const auto indices = tasks::draw_distinct_indices(6, pool_size, rng);
        REQUIRE(indices.size() == 6);
        const std::set<std::uint64_t> unique(indices.begin(), indices.end());
        REQUIRE(unique.size() == 6);
        for (auto i : indices) {
            REQUIRE(i < pool_size);
            counts[i] += 1.0;
        }
    }
    // Each index is chosen with probability 6/20 per draw: 1200 expected, binomial std ~29.
    for (double c : counts) CHECK(c == Approx(draws * 6.0 / pool_size).margin(150));
    const auto all = tasks::draw_distinct_indices(pool_size, pool_size, rng);  // the whole pool
    CHECK(std::set<std::uint64_t>(all.begin(), all.end()).size() == pool_size);
    CHECK_THROWS(tasks::draw_distinct_indices(21, pool_size, rng));
}

TEST_CASE("L2 on in-context outputs: context_mean and all_positions weights", "[regression_task][pool]") {
    const auto spec = small_task(tasks::RegressionKind::linear);  // T = 7: 5 contexts, 2 queries per sequence
    tasks::RegressionBatch<double> batch;
    Rng rng(3);
    tasks::sample_regression_batch(batch, 4, spec, rng);
    run::RegressionLossWeights<double> w;
    const auto sums = [&](double& fit_query, double& fit_context, double& l2_context) {
        fit_query = fit_context = l2_context = 0.0;
        for (std::size_t i = 0; i < w.fit.size(); ++i) {
            const bool query = batch.positions.data()[i] == static_cast<std::uint8_t>(tasks::RegressionPosition::query);
            (query ? fit_query : fit_context) += w.fit[i];
            l2_context += w.l2[i];
            if (query) CHECK(w.l2[i] == 0.0);
        }
    };
    double q = 0, c = 0, l = 0;
    run::regression_loss_weights(w, batch, false, 0.5, 1.0, false);  // query mean + 0.5 · context mean
    sums(q, c, l);
    CHECK(q == Approx(1.0));
    CHECK(c == 0.0);
    CHECK(l == Approx(0.5));
    run::regression_loss_weights(w, batch, false, 1.0, 1.0, true);  // [C]: every one of 4·7 positions weighs 1/28
    sums(q, c, l);
    CHECK(q == Approx(8.0 / 28.0));
    CHECK(l == Approx(20.0 / 28.0));
    for (std::size_t i = 0; i < w.fit.size(); ++i) CHECK(w.fit[i] + w.l2[i] == Approx(1.0 / 28.0));
    run::regression_loss_weights(w, batch, false, 0.0, 1.0, true);  // no L2: the query mean is unchanged by the form
    sums(q, c, l);
    CHECK(q == Approx(1.0));
    CHECK(l == 0.0);
}

TEST_CASE("permute examples: slot i receives example order[i] with its tokens, targets and labels, queries stay",
          "[regression_task][permute]") {
    for (auto format : {tasks::TokenFormat::stacked, tasks::TokenFormat::interleaved}) {
        auto spec = small_task(tasks::RegressionKind::linear);
        spec.format = format;
        tasks::RegressionBatch<double> batch, before;
        Rng rng(5);
        tasks::sample_regression_batch(batch, 2, spec, rng);
        before = batch;
        const std::vector<std::size_t> order{3, 0, 4, 1, 2};
        tasks::permute_regression_examples(batch, 1, order, spec);
        CHECK(same_sequence(batch, 0, before, 0));  // another sequence is untouched
        const std::size_t d = spec.x_dim;
        for (std::size_t i = 0; i < spec.examples + spec.queries; ++i) {
            const std::size_t from = i < spec.examples ? order[i] : i;
            for (std::size_t j = 0; j < d; ++j) CHECK(batch.x(1, i, j) == before.x(1, from, j));
            CHECK(batch.y(1, i, 0) == before.y(1, from, 0));
            // The token holding x_i and the target read there moved with the example.
            const std::size_t at = tasks::regression_prediction_position(spec, i);
            const std::size_t was = tasks::regression_prediction_position(spec, from);
            for (std::size_t j = 0; j < d; ++j) CHECK(batch.inputs(1, at, j) == before.inputs(1, was, j));
            CHECK(batch.targets(1, at, 0) == before.targets(1, was, 0));
            // Labels still follow the sequence's task: y = W x.
            double wx = 0.0;
            for (std::size_t j = 0; j < d; ++j) wx += batch.task_weights(1, 0, j) * batch.x(1, i, j);
            CHECK(batch.y(1, i, 0) == Approx(wx).margin(1e-12));
        }
        if (format == tasks::TokenFormat::interleaved)  // the y token of slot 0 is example 3's
            CHECK(batch.inputs(1, 1, d) == before.inputs(1, 7, d));
        // The identity leaves the batch unchanged; a non-permutation is refused.
        auto again = batch;
        tasks::permute_regression_examples(again, 1, {0, 1, 2, 3, 4}, spec);
        CHECK(same_sequence(again, 1, batch, 1));
        CHECK_THROWS_AS(tasks::permute_regression_examples(again, 1, {0, 1, 2, 3, 3}, spec), InputError);
        CHECK_THROWS_AS(tasks::permute_regression_examples(again, 1, {0, 1, 2, 3}, spec), InputError);
        CHECK_THROWS_AS(tasks::permute_regression_examples(again, 2, order, spec), InputError);
    }
}

TEST_CASE("shuffle_with: every order of 3 items is equally likely", "[rng][permute]") {
    Rng rng(9);
    std::map<std::vector<int>, int> counts;
    const int draws = 6000;
    for (int s = 0; s < draws; ++s) {
        std::vector<int> items{0, 1, 2};
        shuffle_with(items, rng);
        ++counts[items];
    }
    REQUIRE(counts.size() == 6);
    for (const auto& [order, count] : counts) CHECK(std::abs(count - draws / 6) < 5 * std::sqrt(draws / 6.0));  // 5 sd
}

}  // namespace iclab_test_regression_pool
