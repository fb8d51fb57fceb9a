// Learned ICLAA feature maps (spec iclaa.md §4.1): the hand-written gradient of the mixed-attention distillation
// loss against central finite differences (fp64), the loss of a split with the exact kernel in place of φ is 0
// (the sample's bookkeeping is the model's attention), and fitting lowers the loss on a model's own sequences.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/icl/feature_fit.hpp"

using namespace iclab;

namespace {

std::vector<double> normals(std::size_t n, double sd, Rng& rng) {
    std::vector<double> x(n);
    for (auto& e : x) e = rng.normal(0.0, sd);
    return x;
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
    double worst = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < w0.size(); ++i) {
        const double numeric = (loss_at(w0, i, h) - loss_at(w0, i, -h)) / (2 * h);
        worst = std::max(worst, std::abs(numeric - d_w0[i]));
        scale = std::max(scale, std::abs(numeric));
    }
    for (std::size_t i = 0; i < c.size(); ++i) {
        const double numeric = (loss_at(c, i, h) - loss_at(c, i, -h)) / (2 * h);
        worst = std::max(worst, std::abs(numeric - d_c[i]));
        scale = std::max(scale, std::abs(numeric));
    }
    CAPTURE(worst, scale);
    CHECK(scale > 1e-3);
    CHECK(worst <= 1e-7 * scale + 1e-10);
    // a wrong gradient (the sign of the second half's W flipped) is caught by the same comparison
    CHECK(std::abs(d_w0[0]) > 1e-6);
}

TEST_CASE("Fitting a learned map lowers the distillation loss on the model's own sequences", "[iclaa]") {
    model::ModelSpec spec;
    spec.vocab = 13;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 2;
    spec.max_seq_len = 24;
    spec.mlp = false;
    spec.attention = model::ModelSpec::Attention::softmax;
    spec.init_std = 0.3;
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
