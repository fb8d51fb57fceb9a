// The spike / plateau detector of the declared lr fallback (framework/train/loss_detector.hpp) on synthetic loss
// curves shaped like the cpu2 cases of experiments/prefix_vs_causal/README.md: a clean descent, a x18 jump after the
// warmup, a plateau then a descent, a plateau that is the floor (converged), noise, and a spike inside the warmup.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "framework/core/check.hpp"
#include "framework/train/loss_detector.hpp"

namespace iclab_test_loss_detector {  // this file's names (unity build: CMakeLists.txt)

using iclab::train::detect_loss_event;
using iclab::train::LossRule;
using iclab::train::LossRuleKind;

namespace {

constexpr std::size_t kSteps = 3000, kWarmup = 600;  // the cpu2 profile: 3000 steps, warmup_fraction 0.2

LossRule rule(LossRuleKind kind) {
    LossRule r;  // the defaults: window 50, spike x3, plateau 500 steps < 10 % then below 0.5 x
    r.kind = kind;
    return r;
}

// 2 e^{-t/300} + 0.01: falls fast during the warmup and flattens at 0.01 (a converged run).
std::vector<double> clean_curve() {
    std::vector<double> loss(kSteps);
    for (std::size_t t = 0; t < kSteps; ++t) loss[t] = 2.0 * std::exp(-static_cast<double>(t) / 300.0) + 0.01;
    return loss;
}

// The plateau rule written out directly from its definition, O(n (w + n)): the first 1-based step t + 1 with
// t - P >= warmup whose window improved by less than the threshold and after which some mean fell below escape x s_t.
std::size_t plateau_by_definition(const std::vector<double>& loss, std::size_t warmup, const LossRule& r) {
    auto mean = [&](std::size_t t) {
        double sum = 0.0;
        for (std::size_t i = t + 1 - r.window; i <= t; ++i) sum += loss[i];
        return sum / static_cast<double>(r.window);
    };
    for (std::size_t t = warmup + r.plateau_steps; t < loss.size(); ++t) {
        if (t - r.plateau_steps + 1 < r.window) continue;
        const double before = mean(t - r.plateau_steps), now = mean(t);
        if (!((before - now) / before < r.plateau_improvement)) continue;
        for (std::size_t u = t + 1; u < loss.size(); ++u)
            if (mean(u) < r.plateau_escape * now) return t + 1;
    }
    return 0;
}

}  // namespace

TEST_CASE("loss detector: a clean decaying curve that converges triggers no rule", "[loss_detector]") {
    const auto loss = clean_curve();
    for (const auto kind : {LossRuleKind::none, LossRuleKind::spike, LossRuleKind::plateau, LossRuleKind::spike_or_plateau}) {
        const auto d = detect_loss_event(loss, kWarmup, rule(kind));
        CHECK_FALSE(d.triggered);
        CHECK(d.step == 0);
    }
    // it does flatten (the plateau windows exist): the escape condition is what keeps the converged run from triggering
    CHECK_THAT(detect_loss_event(loss, kWarmup, rule(LossRuleKind::plateau)).reason, Catch::Contains("converged"));
    LossRule no_escape = rule(LossRuleKind::plateau);
    no_escape.plateau_escape = 1.0;  // "any later point lower" instead of "below half": the slow tail now fires
    CHECK(detect_loss_event(loss, kWarmup, no_escape).triggered);
}

TEST_CASE("loss detector: a x18 jump after the warmup is a spike at the step the 50-step mean crosses 3x", "[loss_detector]") {
    // 0.1 until step 999, x18 = 1.8 from step 1000 on (index 999), as the N-LR SL-L2 prefix run at lr 1e-3.
    std::vector<double> loss(kSteps, 0.1);
    for (std::size_t t = 999; t < kSteps; ++t) loss[t] = 1.8;
    const auto d = detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike));
    REQUIRE(d.triggered);
    CHECK(d.kind == "spike");
    // k jumped steps in the window: (1.8 k + 0.1 (50 - k)) / 50 > 0.3 <=> k > 5.88: k = 6, step 1000 + 5
    CHECK(d.step == 1005);
    CHECK(d.smoothed_loss == Approx((6 * 1.8 + 44 * 0.1) / 50));
    CHECK(d.reference_loss == Approx(0.1));
    CHECK(d.ratio == Approx(3.04));
    CHECK_THAT(d.reason, Catch::Contains("step 1005"));
    // spike_or_plateau reports the spike; none ignores it
    CHECK(detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike_or_plateau)).step == 1005);
    CHECK_FALSE(detect_loss_event(loss, kWarmup, rule(LossRuleKind::none)).triggered);
    // a x2.9 jump stays below the factor 3
    for (std::size_t t = 999; t < kSteps; ++t) loss[t] = 0.29;
    CHECK_FALSE(detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike)).triggered);
}

TEST_CASE("loss detector: a spike inside the warmup is ignored, the same spike after it is not", "[loss_detector]") {
    auto loss = clean_curve();
    for (std::size_t t = 200; t < 300; ++t) loss[t] *= 18.0;  // steps 201-300, warmup 600: back down by step 350
    CHECK_FALSE(detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike_or_plateau)).triggered);
    // the same spike with a warmup of 100 steps fires as it starts (5 jumped steps of 50 exceed 3x the minimum)
    const auto early = detect_loss_event(loss, 100, rule(LossRuleKind::spike));
    REQUIRE(early.triggered);
    CHECK(early.step > 200);
    CHECK(early.step <= 250);
}

TEST_CASE("loss detector: a long plateau then a descent is a plateau, the same plateau to the end is not", "[loss_detector]") {
    // warmup: 3 -> 0.8; steps 600-1250: 0.80 -> 0.74 (the LR UL-no-L2 prefix run at lr 1e-3); then down to ~0.02
    std::vector<double> loss(kSteps);
    for (std::size_t t = 0; t < kSteps; ++t) {
        const double x = static_cast<double>(t);
        loss[t] = t < 600 ? 3.0 - 2.2 * x / 600.0 : t < 1250 ? 0.80 - 0.06 * (x - 600.0) / 650.0 : 0.72 * std::exp(-(x - 1250.0) / 400.0) + 0.02;
    }
    const auto d = detect_loss_event(loss, kWarmup, rule(LossRuleKind::plateau));
    REQUIRE(d.triggered);
    CHECK(d.kind == "plateau");
    // inside the plateau a 500-step window improves by 0.06 x 500 / 650 / 0.78 ~ 6 %; the first windows, starting
    // on the warmup's slope, by more than 10 %: the rule fires once the window starts on the plateau, before its end
    CHECK(d.step == plateau_by_definition(loss, kWarmup, rule(LossRuleKind::plateau)));
    CHECK(d.step > 1101);
    CHECK(d.step < 1250);
    CHECK(d.ratio > 0.9);
    CHECK(d.ratio < 1.0);
    CHECK(detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike_or_plateau)).kind == "plateau");
    CHECK_FALSE(detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike)).triggered);
    // stuck on the plateau until the end (no descent below half of it): treated as the floor, not triggered
    for (std::size_t t = 1250; t < kSteps; ++t) loss[t] = 0.74 - 0.02 * static_cast<double>(t - 1250) / 1750.0;
    CHECK_FALSE(detect_loss_event(loss, kWarmup, rule(LossRuleKind::plateau)).triggered);
}

TEST_CASE("loss detector: per-step noise of 30 % on a clean descent triggers nothing", "[loss_detector]") {
    std::mt19937_64 engine(12345);
    std::normal_distribution<double> normal(0.0, 0.3);
    for (int repeat = 0; repeat < 20; ++repeat) {
        auto loss = clean_curve();
        for (auto& l : loss) l *= std::max(0.05, 1.0 + normal(engine));
        const auto d = detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike_or_plateau));
        INFO(d.reason);
        CHECK_FALSE(d.triggered);
    }
}

TEST_CASE("loss detector: bad input is refused", "[loss_detector]") {
    auto loss = clean_curve();
    LossRule zero = rule(LossRuleKind::spike);
    zero.window = 0;
    CHECK_THROWS_AS(detect_loss_event(loss, kWarmup, zero), iclab::InputError);
    loss[7] = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_AS(detect_loss_event(loss, kWarmup, rule(LossRuleKind::spike)), iclab::InputError);
    CHECK_THROWS_AS(iclab::train::loss_rule_kind("spikes"), iclab::InputError);
    CHECK(iclab::train::loss_rule_name(iclab::train::loss_rule_kind("spike_or_plateau")) == "spike_or_plateau");
    // shorter than a window: nothing to smooth, nothing fires
    CHECK_FALSE(detect_loss_event(std::vector<double>(10, 1.0), 0, rule(LossRuleKind::spike_or_plateau)).triggered);
}

}  // namespace iclab_test_loss_detector
