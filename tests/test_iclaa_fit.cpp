// Learned ICLAA feature maps (spec iclaa.md §4.1): the hand-written gradient of the mixed-attention distillation
// loss against central finite differences (fp64), with two wrong gradients (sign flipped; the gradient of a map whose
// second half does not negate W) rejected by the same comparison; the loss is 0 where the map equals the exact
// kernel on the sample (keys before the split at 0: exp(q·0) = 1 = φ(q)ᵀφ(0) for W = 0, Σ e^{2c} = 1), so the
// sample's bookkeeping is the model's attention, and not 0 when Σ e^{2c} = 2; fitting lowers the loss on a
// model's own sequences.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/icl/feature_fit.hpp"

namespace iclab_test_iclaa_fit {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

std::vector<double> normals(std::size_t n, double sd, Rng& rng) {
    std::vector<double> x(n);
    for (auto& e : x) e = rng.normal(0.0, sd);
    return x;
}

// The frozen model the fits below distil: 2 softmax layers of 2 heads, width 16, 24 positions, no MLP.
model::ModelSpec small_softmax_spec() {
    model::ModelSpec spec;
    spec.vocab = 13;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 2;
    spec.max_seq_len = 24;
    spec.mlp = false;
    spec.attention = model::ModelSpec::Attention::softmax;
    spec.init_std = 0.3;
    return spec;
}

}  // namespace

TEST_CASE("Distillation loss gradient matches central finite differences", "[iclaa]") {
    const std::size_t T = 12, D = 4, F = 6;
    nn::RopeTable rope(T + 1, D, 10000.0);
    Rng rng(21);
    std::vector<icl::DistillationSample> samples;
    for (const std::size_t split : {3, 7}) {
        const auto q = normals(T * D, 1.0, rng), k = normals(T * D, 1.0, rng), v = normals(T * D, 1.0, rng);
        samples.push_back(icl::make_distillation_sample(q.data(), k.data(), v.data(), T, D, split, &rope));
    }
    auto w0 = normals(D * F / 2, 0.7, rng), c = normals(F, 0.5, rng);
    std::vector<double> d_w0(w0.size(), 0.0), d_c(c.size(), 0.0);
    const double base = icl::distillation_loss(samples, icl::two_sided_map(w0, c, D), d_w0.data(), d_c.data()).loss();
    REQUIRE(base > 1e-4);
    const double h = 1e-6;
    const auto loss_at = [&](std::vector<double>& x, std::size_t i, double delta) {
        const double keep = x[i];
        x[i] = keep + delta;
        const double value = icl::distillation_loss(samples, icl::two_sided_map(w0, c, D), nullptr, nullptr).loss();
        x[i] = keep;
        return value;
    };
    std::vector<double> numeric_w0(w0.size()), numeric_c(c.size());
    for (std::size_t i = 0; i < w0.size(); ++i) numeric_w0[i] = (loss_at(w0, i, h) - loss_at(w0, i, -h)) / (2 * h);
    for (std::size_t i = 0; i < c.size(); ++i) numeric_c[i] = (loss_at(c, i, h) - loss_at(c, i, -h)) / (2 * h);
    double scale = 0.0;
    for (double g : numeric_w0) scale = std::max(scale, std::abs(g));
    for (double g : numeric_c) scale = std::max(scale, std::abs(g));
    // the comparison: worst |numeric − analytic| against a tolerance relative to the largest numeric component
    const auto matches = [&](const std::vector<double>& g_w0, const std::vector<double>& g_c) {
        double worst = 0.0;
        for (std::size_t i = 0; i < w0.size(); ++i) worst = std::max(worst, std::abs(numeric_w0[i] - g_w0[i]));
        for (std::size_t i = 0; i < c.size(); ++i) worst = std::max(worst, std::abs(numeric_c[i] - g_c[i]));
        CAPTURE(worst, scale);
        return worst <= 1e-7 * scale + 1e-10;
    };
    CHECK(scale > 1e-3);
    CHECK(matches(d_w0, d_c));
    // negative controls, rejected by the same comparison: (1) the W gradient with its sign flipped
    std::vector<double> flipped = d_w0;
    for (auto& g : flipped) g = -g;
    CHECK_FALSE(matches(flipped, d_c));
    // (2) the gradient of a map whose second half uses +W (not −W): a plausible bookkeeping bug
    std::vector<double> wrong_w0(w0.size(), 0.0);
    {
        // d/dw0 of the wrong map's loss: finite differences of that map (its own code path has no gradient entry)
        const auto wrong_loss = [&](std::size_t i, double delta) {
            std::vector<double> shifted = w0;
            shifted[i] += delta;
            nn::KernelFeatures<double> m = icl::two_sided_map(shifted, c, D);
            for (std::size_t d = 0; d < D; ++d)
                for (std::size_t r = 0; r < F / 2; ++r) m.w[d * F + F / 2 + r] = shifted[d * (F / 2) + r];
            return icl::distillation_loss(samples, m, nullptr, nullptr).loss();
        };
        for (std::size_t i = 0; i < w0.size(); ++i) wrong_w0[i] = (wrong_loss(i, h) - wrong_loss(i, -h)) / (2 * h);
    }
    CHECK_FALSE(matches(wrong_w0, d_c));
}

TEST_CASE("Distillation loss is 0 where the map equals the exact kernel", "[iclaa]") {
    const std::size_t T = 10, D = 4, F = 4, split = 4;
    nn::RopeTable rope(T + 1, D, 10000.0);
    Rng rng(5);
    auto q = normals(T * D, 1.0, rng), k = normals(T * D, 1.0, rng), v = normals(T * D, 1.0, rng);
    for (std::size_t j = 0; j < split * D; ++j) k[j] = 0.0;  // the prompt's keys: exact kernel exp(q·0/√D) = 1
    const std::vector<icl::DistillationSample> samples{icl::make_distillation_sample(q.data(), k.data(), v.data(), T, D, split, &rope)};
    const std::vector<double> w0(D * F / 2, 0.0);
    // W = 0 and Σ_f e^{2 c_f} = 1: φ(x)ᵀφ(y) = 1 for every x, y, the exact kernel on these keys
    const std::vector<double> exact_c(F, 0.5 * std::log(1.0 / static_cast<double>(F)));
    const double exact = icl::distillation_loss(samples, icl::two_sided_map(w0, exact_c, D), nullptr, nullptr).loss();
    CHECK(exact <= 1e-28);
    // Σ e^{2c} = 2: every prompt key counts twice, the loss is far from 0
    const std::vector<double> double_c(F, 0.5 * std::log(2.0 / static_cast<double>(F)));
    const double doubled = icl::distillation_loss(samples, icl::two_sided_map(w0, double_c, D), nullptr, nullptr).loss();
    CHECK(doubled > 1e-3);
}

TEST_CASE("Fitting a learned map lowers the distillation loss on the model's own sequences", "[iclaa]") {
    const model::ModelSpec spec = small_softmax_spec();
    model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
    Rng rng(4);
    net.init(rng);
    const std::size_t T = 24;
    const icl::SequenceSampler sample = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng& r) {
        tokens.resize(batch * T);
        for (auto& t : tokens) t = static_cast<std::int32_t>(r.uniform_int(spec.vocab));
    };
    icl::FeatureFitSettings settings;
    settings.features = 8;
    settings.steps = 300;
    settings.batch = 8;
    settings.split_min = 4;
    settings.split_max = 16;
    icl::FeatureFitReport report;
    Rng fit_rng(8);
    const auto maps = icl::fit_feature_maps(net, sample, T, settings, fit_rng, &report);
    REQUIRE(maps.size() == 2);
    for (std::size_t l = 0; l < 2; ++l)
        for (std::size_t h = 0; h < 2; ++h) {
            CAPTURE(l, h, report.first_loss[l][h], report.final_loss[l][h]);
            CHECK(report.final_loss[l][h] < 0.5 * report.first_loss[l][h]);
        }
}

TEST_CASE("Learned maps fitted together on shared sequences equal each fit alone, bit for bit", "[iclaa]") {
    // fit_feature_maps_together (issue 44: the frozen model's forward once per step for every F) against
    // fit_feature_maps of each F alone with a sampler that draws the same sequences from its own stream
    const model::ModelSpec spec = small_softmax_spec();
    model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
    Rng rng(4);
    net.init(rng);
    const std::size_t T = 24;
    const auto draw = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng& r) {
        tokens.resize(batch * T);
        for (auto& t : tokens) t = static_cast<std::int32_t>(r.uniform_int(spec.vocab));
    };
    std::vector<icl::FeatureFitSettings> settings(3);
    const std::size_t features[3] = {4, 8, 12};
    for (std::size_t n = 0; n < 3; ++n) {
        settings[n].features = features[n];
        settings[n].steps = 6;
        settings[n].batch = 3;
        settings[n].split_min = 4 + n;  // each fit its own splits and lr
        settings[n].split_max = 16;
        settings[n].lr = 1e-2 * static_cast<double>(n + 1);
    }
    Rng data(11);
    const icl::SequenceSource source = [&](std::vector<std::int32_t>& tokens, std::size_t batch) { draw(tokens, batch, data); };
    std::vector<Rng> inits{Rng(20), Rng(21), Rng(22)};
    std::vector<icl::FeatureFitReport> reports;
    const auto together = icl::fit_feature_maps_together(net, source, T, settings, {&inits[0], &inits[1], &inits[2]}, &reports);
    REQUIRE(together.size() == 3);
    REQUIRE(reports.size() == 3);
    for (std::size_t n = 0; n < 3; ++n) {
        CAPTURE(n);
        Rng alone_data(11), alone_init(20 + n);
        const icl::SequenceSampler sample = [&](std::vector<std::int32_t>& tokens, std::size_t batch, Rng&) { draw(tokens, batch, alone_data); };
        icl::FeatureFitReport report;
        const auto alone = icl::fit_feature_maps(net, sample, T, settings[n], alone_init, &report);
        REQUIRE(alone.size() == 2);
        for (std::size_t l = 0; l < 2; ++l)
            for (std::size_t h = 0; h < 2; ++h) {
                CHECK(alone[l][h].features == features[n]);
                CHECK(together[n][l][h].w == alone[l][h].w);  // exact equality of every parameter
                CHECK(together[n][l][h].c == alone[l][h].c);
                CHECK(reports[n].final_loss[l][h] == report.final_loss[l][h]);
                CHECK(reports[n].first_loss[l][h] == report.first_loss[l][h]);
            }
    }
    // a stop after the first step abandons every fit
    settings[0].stop = [] { return true; };
    Rng data2(11);
    const icl::SequenceSource source2 = [&](std::vector<std::int32_t>& tokens, std::size_t batch) { draw(tokens, batch, data2); };
    std::vector<Rng> again{Rng(20), Rng(21), Rng(22)};
    CHECK(icl::fit_feature_maps_together(net, source2, T, settings, {&again[0], &again[1], &again[2]}, &reports).empty());
    CHECK(reports[2].stopped);
}

}  // namespace iclab_test_iclaa_fit
