// Optimizers, schedules and clipping against their closed forms.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <vector>

#include "framework/train/optimizer.hpp"

namespace iclab_test_optimizer {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {
model::ParameterLayout two_tensors() {
    model::ParameterLayout layout;
    layout.add("w", {2}, true, true, "matrix-like: decayed");
    layout.add("b", {1}, true, false, "bias: not decayed");
    layout.add("frozen", {1}, false, false, "not trainable");
    return layout;
}
}  // namespace

TEST_CASE("AdamW matches the closed form of its first two steps", "[optimizer]") {
    const auto layout = two_tensors();
    train::OptimizerSpec spec;
    spec.kind = train::OptimizerKind::adamw;
    spec.beta1 = 0.9;
    spec.beta2 = 0.99;
    spec.eps = 1e-8;
    spec.weight_decay = 0.1;
    train::Optimizer<double> optimizer(spec, layout);
    std::vector<double> params{1.0, -2.0, 0.5, 3.0}, grads{0.3, -0.1, 0.2, 5.0};
    optimizer.step(params, grads, 0.01);
    // step 1: m_hat = g, v_hat = g², update = g/(|g| + eps) + wd·θ (decoupled, matrices only)
    CHECK(params[0] == Approx(1.0 - 0.01 * (0.3 / (0.3 + 1e-8) + 0.1 * 1.0)).epsilon(1e-12));
    CHECK(params[1] == Approx(-2.0 - 0.01 * (-0.1 / (0.1 + 1e-8) + 0.1 * -2.0)).epsilon(1e-12));
    CHECK(params[2] == Approx(0.5 - 0.01 * (0.2 / (0.2 + 1e-8))).epsilon(1e-12));
    CHECK(params[3] == 3.0);  // not trainable: untouched
    // step 2 with a new gradient: m = 0.9·0.1·g1 ... written out for the bias entry
    const double theta = params[2];
    grads = {0.0, 0.0, -0.4, 1.0};
    optimizer.step(params, grads, 0.01);
    const double m = 0.9 * (0.1 * 0.2) + 0.1 * -0.4, v = 0.99 * (0.01 * 0.04) + 0.01 * 0.16;
    const double m_hat = m / (1 - 0.81), v_hat = v / (1 - 0.9801);
    CHECK(params[2] == Approx(theta - 0.01 * m_hat / (std::sqrt(v_hat) + 1e-8)).epsilon(1e-12));
}

TEST_CASE("AdamW and SGD on a tensor large enough to be shared by threads give the same bits with 1 and 2 threads",
          "[optimizer][determinism]") {
    // 200000 elements (an embedding-sized tensor: threads share it), and a small one that stays on one thread.
    model::ParameterLayout layout;
    layout.add("embedding", {400, 500}, true, true, "large");
    layout.add("bias", {7}, true, false, "small");
    for (const auto kind : {train::OptimizerKind::adamw, train::OptimizerKind::sgd}) {
        train::OptimizerSpec spec;
        spec.kind = kind;
        spec.weight_decay = 0.01;
        spec.momentum = 0.9;
        std::vector<std::vector<float>> finals;
        for (const int threads : {1, 2}) {
            const int before = omp_get_max_threads();
            omp_set_num_threads(threads);
            train::Optimizer<float> optimizer(spec, layout);
            std::vector<float> params(layout.total()), grads(layout.total());
            for (std::size_t i = 0; i < params.size(); ++i) {
                params[i] = std::sin(0.37f * static_cast<float>(i));
                grads[i] = std::cos(0.11f * static_cast<float>(i)) * 1e-2f;
            }
            const std::vector<float> start = params;
            for (int step = 0; step < 3; ++step) optimizer.step(params, grads, 1e-3);
            omp_set_num_threads(before);
            CHECK(params != start);  // the steps moved the parameters
            finals.push_back(params);
        }
        CHECK(finals[0] == finals[1]);
    }
}

TEST_CASE("SGD with momentum and L2 matches its closed form", "[optimizer]") {
    const auto layout = two_tensors();
    train::OptimizerSpec spec;
    spec.kind = train::OptimizerKind::sgd;
    spec.momentum = 0.5;
    spec.weight_decay = 0.1;
    train::Optimizer<double> optimizer(spec, layout);
    std::vector<double> params{1.0, 0.0, 2.0, 0.0}, grads{1.0, 0.0, 1.0, 0.0};
    optimizer.step(params, grads, 0.1);
    CHECK(params[0] == Approx(1.0 - 0.1 * (1.0 + 0.1)).epsilon(1e-14));  // v = g + wd·θ
    CHECK(params[2] == Approx(2.0 - 0.1).epsilon(1e-14));               // bias: no decay
    optimizer.step(params, grads, 0.1);
    const double v0 = 1.1, theta1 = 0.89, v1 = 0.5 * v0 + (1.0 + 0.1 * theta1);
    CHECK(params[0] == Approx(theta1 - 0.1 * v1).epsilon(1e-14));
}

TEST_CASE("warmup + cosine schedule hits its end points", "[optimizer]") {
    train::ScheduleSpec schedule;
    schedule.base_lr = 1.0;
    schedule.warmup_steps = 10;
    schedule.total_steps = 110;
    schedule.min_lr_ratio = 0.1;
    CHECK(train::learning_rate(schedule, 0) == Approx(0.1));
    CHECK(train::learning_rate(schedule, 9) == Approx(1.0));
    CHECK(train::learning_rate(schedule, 10) == Approx(1.0));
    CHECK(train::learning_rate(schedule, 109) == Approx(0.1));
    CHECK(train::learning_rate(schedule, 10 + 99 / 2.0) == Approx(0.55).epsilon(0.02));
    for (std::size_t s = 11; s < 110; ++s) CHECK(train::learning_rate(schedule, s) <= train::learning_rate(schedule, s - 1));
    schedule.kind = train::ScheduleKind::constant;
    CHECK(train::learning_rate(schedule, 57) == 1.0);
}

TEST_CASE("gradient clipping scales trainable gradients to the maximum norm", "[optimizer]") {
    const auto layout = two_tensors();
    std::vector<double> grads{3.0, 0.0, 4.0, 100.0};  // the frozen entry does not count
    CHECK(train::clip_gradient_norm(grads, layout, 1.0) == Approx(5.0));
    CHECK(grads[0] == Approx(0.6));
    CHECK(grads[2] == Approx(0.8));
    CHECK(grads[3] == 100.0);
    std::vector<double> small{0.3, 0.0, 0.4, 0.0};
    CHECK(train::clip_gradient_norm(small, layout, 1.0) == Approx(0.5));
    CHECK(small[0] == 0.3);
}

TEST_CASE("a nonnegative tensor is projected onto >= 0 after the step, others are not", "[optimizer]") {
    model::ParameterLayout layout;
    layout.add("free", {2}, true, false, "unconstrained");
    layout.add("b_d", {2}, true, false, "kept >= 0", /*nonnegative=*/true);
    for (auto kind : {train::OptimizerKind::sgd, train::OptimizerKind::adamw}) {
        train::OptimizerSpec spec;
        spec.kind = kind;
        train::Optimizer<double> optimizer(spec, layout);
        // both tensors get the same gradient; a step of lr 1 pushes the first entry of each below zero
        std::vector<double> params{0.2, 0.5, 0.2, 0.5}, grads{1.0, -1.0, 1.0, -1.0};
        optimizer.step(params, grads, 1.0);
        CHECK(params[0] < 0.0);         // free: goes negative
        CHECK(params[2] == 0.0);        // nonnegative: clipped to the boundary
        CHECK(params[3] == params[1]);  // inside the constraint: the same update as the free tensor
        CHECK(params[3] > 0.5);
    }
}

}  // namespace iclab_test_optimizer
