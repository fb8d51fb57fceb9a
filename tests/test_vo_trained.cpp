// The `vo_trained` experiment (von Oswald et al. 2023 Fig. 2; specs/gd_duals.md §11): the alignment metrics on
// known inputs (GD against itself is perfectly aligned, a negated model is not), and a short training run
// through the iclab binary that must align with GD, while the untrained model must not.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/core/rng.hpp"
#include "framework/icl/gd_alignment.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_vo_trained {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

TEST_CASE("vo_trained: gd_alignment of GD against itself and against a negated model", "[vo_trained]") {
    const std::size_t B = 50, N = 10, d = 4, rows = N + 1;
    iclab::Rng rng(5);
    std::vector<double> x(B * rows * d), y(B * rows), a(B), w1(B * d);
    for (std::size_t b = 0; b < B; ++b) {
        std::vector<double> w(d);
        for (auto& v : w) v = rng.normal();
        for (std::size_t i = 0; i < rows; ++i) {
            double sum = 0.0;
            for (std::size_t k = 0; k < d; ++k) sum += w[k] * (x[(b * rows + i) * d + k] = rng.uniform(-1.0, 1.0));
            y[b * rows + i] = sum;
        }
        // by hand: W_1(η = 1) = (1/N) Σ_i y_i x_iᵀ and a_q = W_1 x_q
        for (std::size_t k = 0; k < d; ++k) {
            for (std::size_t i = 0; i < N; ++i) w1[b * d + k] += y[b * rows + i] * x[(b * rows + i) * d + k] / N;
            a[b] += w1[b * d + k] * x[(b * rows + N) * d + k];
        }
    }
    double num = 0.0, den = 0.0;
    for (std::size_t b = 0; b < B; ++b) {
        num += y[b * rows + N] * a[b];
        den += a[b] * a[b];
    }
    const double eta = num / den;
    std::vector<double> y_gd(B), s_gd(B * d), s_neg(B * d);
    for (std::size_t b = 0; b < B; ++b) y_gd[b] = eta * a[b];
    for (std::size_t i = 0; i < B * d; ++i) {
        s_gd[i] = eta * w1[i];
        s_neg[i] = -s_gd[i];
    }
    const auto same = iclab::icl::gd_alignment(x, y, B, N, d, y_gd, s_gd);
    CHECK(same.eta_star == Approx(eta).epsilon(1e-12));
    CHECK(same.rel_loss_gap <= 1e-12);
    CHECK(same.preds_diff <= 1e-12);
    CHECK(same.model_cos == Approx(1.0).epsilon(1e-12));
    CHECK(same.model_diff <= 1e-12);
    const auto negated = iclab::icl::gd_alignment(x, y, B, N, d, y_gd, s_neg);
    CHECK(negated.model_cos == Approx(-1.0).epsilon(1e-12));
    CHECK(negated.model_diff > 0.1);
}

TEST_CASE("vo_trained: a trained LSA aligns with GD, the untrained one does not", "[vo_trained][cli]") {
    Scratch scratch;
    const std::string base = "run configs/quick/vo_trained.yaml train.batch_size=512 eval.every=200 vo.eval_tasks=1000 --threads 1 output.dir=" +
                             scratch.path.string();
    const auto trained = run_iclab(base + " train.steps=600", scratch.path);
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    iclab::io::ResultsReader reader((fs::path(last_line(trained.out)) / "results.h5").string());
    CHECK(reader.read_column_string("/tables/vo_trained/seed_verdict") == std::vector<std::string>{"reproduced"});
    CHECK(reader.read_column_double("/tables/vo_trained/model_cos")[0] >= 0.99);
    CHECK(reader.read_column_double("/tables/vo_trained/rel_loss_gap")[0] <= 0.05);
    CHECK_FALSE(reader.has("/tables/vo_trained/paper_model_cos"));  // von Oswald Fig. 2 prints no number
    const auto claims = iclab::io::read_claims(reader);
    REQUIRE(claims.size() == 2);
    for (const auto& c : claims) {
        CHECK(c.claim.kind == iclab::io::ClaimKind::qualitative);
        CHECK(std::isnan(c.claim.paper_value));
        CHECK(c.verdict == iclab::io::Verdict::inconclusive);  // one seed: no interval (the profile pools >= 3)
    }
    const auto untrained = run_iclab(base + " train.steps=1 eval.every=1", scratch.path);
    REQUIRE(untrained.status == 0);
    CHECK_THAT(untrained.out, Catch::Contains("this seed: not reproduced"));
    iclab::io::ResultsReader reader0((fs::path(last_line(untrained.out)) / "results.h5").string());
    CHECK(reader0.read_column_string("/tables/vo_trained/seed_verdict") == std::vector<std::string>{"not reproduced"});
    // pooled with two more untrained seeds, the cosine claim is decided: not reproduced (a negative control)
    const auto untrained1 = run_iclab(base + " train.steps=1 eval.every=1 seed=1", scratch.path);
    const auto untrained2 = run_iclab(base + " train.steps=1 eval.every=1 seed=2", scratch.path);
    REQUIRE(untrained1.status == 0);
    REQUIRE(untrained2.status == 0);
    std::vector<std::pair<std::string, std::vector<iclab::io::ClaimResult>>> runs;
    for (const auto* r : {&untrained, &untrained1, &untrained2}) {
        const std::string dir = last_line(r->out);
        runs.push_back({dir, iclab::io::read_claims(iclab::io::ResultsReader((fs::path(dir) / "results.h5").string()))});
    }
    const auto pooled = iclab::io::pool_claims(runs);
    REQUIRE(pooled.size() == 2);
    CHECK(pooled[0].claim.id == "VO-T model_cos");
    CHECK(pooled[0].values.size() == 3);
    CHECK(pooled[0].verdict == iclab::io::Verdict::not_reproduced);
}

}  // namespace iclab_test_vo_trained
