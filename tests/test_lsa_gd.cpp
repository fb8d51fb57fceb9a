// Paper 003 Part A (experiment lsa_gd): the constructed LSA on iclab's linear attention equals the weight-space GD
// recursions (Props 1, 2, 6; Eq. 3, 10, 18) to rounding in fp64, and does not when the mask or η is wrong; the
// stationary points (Props 3, 4, 7) solve their systems (the solver itself: test_dense_linalg.cpp); the quick
// config runs end to end through the iclab binary with every gated check passing.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "framework/core/dense_linalg.hpp"
#include "framework/core/rng.hpp"
#include "framework/icl/gd_recursions.hpp"
#include "framework/icl/lsa_gd.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "experiments/lsa_gd/study.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_lsa_gd {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab_test;

namespace {

double dot(const double* a, const double* b, std::size_t d) {
    double s = 0.0;
    for (std::size_t k = 0; k < d; ++k) s += a[k] * b[k];
    return s;
}

// The recursion's prediction of every position after `layers` layers: prefix ŷ_t = w⁽ᴸ⁾x_t (Eq. 3); causal and
// causalLM2 ỹ_j = w_j⁽ᴸ⁾x_j on ICEs and ŷ_q = w_n⁽ᴸ⁾x_q on queries (Eq. 10, 18).
std::vector<double> recursion(const icl::RegressionSequences& data, icl::LsaMask mask, double eta, std::size_t layers,
                              const std::vector<double>& w0) {
    const std::size_t n = data.examples, d = data.dim, T = data.time();
    std::vector<double> out(data.batch * T);
    for (std::size_t b = 0; b < data.batch; ++b) {
        const double* x = data.x.data() + b * T * d;
        const double* y = data.y.data() + b * T;
        if (mask == icl::LsaMask::prefix) {
            const auto w = icl::prefix_gd(x, y, n, d, eta, layers, w0);
            for (std::size_t t = 0; t < T; ++t) out[b * T + t] = dot(w.data() + layers * d, x + t * d, d);
        } else {
            const auto w = icl::causal_gd(x, y, n, d, eta, layers, w0, mask == icl::LsaMask::causal2);
            for (std::size_t t = 0; t < T; ++t) out[b * T + t] = dot(w.data() + (layers * n + std::min(t, n - 1)) * d, x + t * d, d);
        }
    }
    return out;
}

// max |LSA − recursion| / max(1, |recursion|) after `layers` layers of the LSA with (mask, eta) against the
// recursion with (reference_mask, reference_eta).
double lsa_error(const icl::RegressionSequences& data, icl::LsaMask mask, double eta, icl::LsaMask reference_mask,
                 double reference_eta, std::size_t layers, const std::vector<double>& w0) {
    std::vector<double> prediction;
    icl::lsa_forward<double>(data, mask, eta, layers, w0, [&](std::size_t l, const std::vector<double>& delta) {
        if (l == layers) prediction = icl::lsa_readout<double>(data, delta, w0);
    });
    const std::vector<double> reference = recursion(data, reference_mask, reference_eta, layers, w0);
    double worst = 0.0;
    for (std::size_t i = 0; i < reference.size(); ++i)
        worst = std::max(worst, std::abs(prediction[i] - reference[i]) / std::max(1.0, std::abs(reference[i])));
    return worst;
}

icl::RegressionSequences small_data(std::uint64_t seed) {
    Rng rng(seed);
    return icl::draw_regression_sequences(rng, 4, 40, 10, 16);  // 4 sequences, n 40, 10 queries, d 16 (paper's n and d)
}

}  // namespace

TEST_CASE("lsa_gd: the constructed LSA equals the GD recursions to 1e-12 in fp64 (Props 1, 2, 6)", "[lsa_gd]") {
    const auto data = small_data(7);
    Rng rng(8);
    std::vector<double> w0(16);
    for (double& v : w0) v = rng.normal();
    for (const std::vector<double>& start : {std::vector<double>{}, w0}) {
        INFO("w0 " << (start.empty() ? "0" : "random"));
        CHECK(lsa_error(data, icl::LsaMask::prefix, 1.6, icl::LsaMask::prefix, 1.6, 30, start) <= 1e-12);    // Prop 1 / 6
        CHECK(lsa_error(data, icl::LsaMask::causal, 1.6, icl::LsaMask::causal, 1.6, 30, start) <= 1e-12);    // Prop 2
        CHECK(lsa_error(data, icl::LsaMask::causal2, 0.1, icl::LsaMask::causal2, 0.1, 30, start) <= 1e-12);  // Eq. 18
    }
}

TEST_CASE("lsa_gd: a wrong mask or a perturbed eta breaks the equality (negative controls)", "[lsa_gd]") {
    const auto data = small_data(7);
    CHECK(lsa_error(data, icl::LsaMask::causal, 1.6, icl::LsaMask::prefix, 1.6, 30, {}) >= 1e-4);
    CHECK(lsa_error(data, icl::LsaMask::prefix, 1.6, icl::LsaMask::causal, 1.6, 30, {}) >= 1e-4);
    CHECK(lsa_error(data, icl::LsaMask::prefix, 1.6 * 1.01, icl::LsaMask::prefix, 1.6, 30, {}) >= 1e-4);
    CHECK(lsa_error(data, icl::LsaMask::causal, 1.6, icl::LsaMask::causal2, 1.6, 5, {}) >= 1e-4);  // η/n vs η/j
}

TEST_CASE("lsa_gd: stationary points solve their systems and the recursions reach them (Props 3, 4, 7)", "[lsa_gd]") {
    const auto data = small_data(11);
    const std::size_t n = data.examples, d = data.dim, T = data.time();
    for (std::size_t b = 0; b < data.batch; ++b) {
        const double* x = data.x.data() + b * T * d;
        const double* y = data.y.data() + b * T;
        for (bool normalized : {false, true}) {
            INFO("sequence " << b << (normalized ? " causalLM2" : " causalLM"));
            const auto a = icl::causal_stationary_coefficients(x, y, n, d, normalized);
            const auto m = icl::causal_system_matrix(x, n, d, normalized);
            for (std::size_t i = 0; i < n; ++i) {  // y = a*T (Prop 4) or y = a*S (Prop 7)
                double fitted = 0.0;
                for (std::size_t k = 0; k < n; ++k) fitted += a[k] * m[k * n + i];
                CHECK(std::abs(fitted - y[i]) <= 1e-10 * std::max(1.0, std::abs(y[i])));
            }
            std::vector<double> iterate(n, 0.0);  // Eq. 15 / Prop 7's update converges to a*
            for (int l = 0; l < 3000; ++l) icl::causal_coefficients_step(iterate, x, y, n, d, normalized ? 0.1 : 1.6, normalized);
            double diff = 0.0, norm = 0.0;
            for (std::size_t i = 0; i < n; ++i) diff += (iterate[i] - a[i]) * (iterate[i] - a[i]), norm += a[i] * a[i];
            CHECK(std::sqrt(diff / norm) <= 1e-8);
        }
        const auto w_star = icl::prefix_stationary_weights(x, y, n, d);  // Prop 3, noise-free: the task itself
        for (std::size_t k = 0; k < d; ++k) CHECK(std::abs(w_star[k] - data.w[b * d + k]) <= 1e-10);
    }
}

TEST_CASE("lsa_gd: the quick config writes the checks table and one claim per gated check", "[lsa_gd][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run configs/quick/lsa_gd.yaml output.dir=" + scratch.path.string(), scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    // Every gated check passes except A6's "more than 100 examples" (first n = 97 at this size: not reproduced) and
    // App. D's kappa claim read with the 2-norm condition number (7.2 / 10.6 / 13.8 against n/2 = 20 / 50 / 150).
    CHECK_THAT(result.out, Catch::Contains("paper 003 Part A") && Catch::Contains("4 not reproduced, 0 inconclusive"));
    const fs::path run_dir = last_line(result.out);
    io::ResultsReader reader((run_dir / "results.h5").string());
    CHECK(reader.read_attr_int64("/", "checks_failed") == 4);
    const auto names = reader.read_column_string("/tables/checks/check");
    const auto verdicts = reader.read_column_string("/tables/checks/verdict");
    const auto ours = reader.read_column_double("/tables/checks/ours");
    REQUIRE(names.size() == verdicts.size());
    REQUIRE(names.size() >= 40);
    std::size_t gated = 0;
    for (std::size_t i = 0; i < names.size(); ++i) {
        INFO(names[i] << " = " << ours[i]);
        if (names[i] == "fig2r_mu0_first_n_below_1e-2_min") CHECK((verdicts[i] == "not reproduced") == (ours[i] <= 100));
        else if (names[i].rfind("kappa_2norm_ratio", 0) == 0) CHECK(verdicts[i] == "not reproduced");
        else CHECK((verdicts[i] == "reproduced" || verdicts[i].empty()));
        gated += !verdicts[i].empty();
    }
    CHECK(gated >= 35);
    for (const std::string name : {"prop1_prefix_lsa_equals_gd_fp64", "prop2_causal_lsa_equals_gd_fp64", "fig2_causal_query_mse_l50_min",
                                   "prop4_asymptotic_rate_vs_rho", "fig2r_mu0_first_n_below_1e-2_min", "kappa_eig_ratio_S_over_T_n40"})
        CHECK(std::count(names.begin(), names.end(), name) == 1);
    const auto layers = reader.read_column_int64("/tables/layers/layer");
    CHECK(*std::max_element(layers.begin(), layers.end()) == 50);
    CHECK(reader.has("/tables/stationary/causal_query_mse"));
    CHECK(reader.has("/tables/kappa/eig_ratio_S_over_T"));
    // the claims: one per gated check, with the check's verdict; a paper value only where the paper printed one
    const auto claims = io::read_claims(reader);
    CHECK(claims.size() == gated);
    std::size_t printed = 0, audit4_own = 0, audit4_quoted = 0, audit4_provenance = 0;
    for (const auto& c : claims) {
        INFO(c.claim.id);
        const auto at = std::find(names.begin(), names.end(), c.claim.id.substr(c.claim.id.find(' ') + 1));
        REQUIRE(at != names.end());
        const std::string verdict = verdicts[static_cast<std::size_t>(at - names.begin())];
        CHECK(io::verdict_name(c.verdict) == verdict);  // the table states its claim's verdict
        if (c.claim.kind == io::ClaimKind::printed_number) {
            ++printed;
            CHECK(std::isfinite(c.claim.paper_value));
        } else {
            CHECK(std::isnan(c.claim.paper_value));
        }
        if (c.claim.id == "003-A6 fig2r_mu0_first_n_below_1e-2_min") {  // "more than 100" is qualitative, not 100 +- 20
            CHECK(c.claim.kind == io::ClaimKind::qualitative);
            CHECK(c.claim.rule.text() == "x >= 101 for every value");
        }
        if (c.claim.id.find("eta_best_convergent_prefix") != std::string::npos) CHECK(c.claim.paper_value == 1.6);
        if (c.claim.id.find("kappa_") != std::string::npos) {  // "about n/2" is a derived target: an own check, both readings
            CHECK(c.claim.kind == io::ClaimKind::own_check);
            CHECK_THAT(c.claim.statement, Catch::Contains("derived target n/2"));
            CHECK_FALSE(c.claim.provenance.empty());  // both readings were fixed after the first runs
        }
        // one replicate: the causal plateau's max is its min, one claim
        CHECK(c.claim.id != "003-A2 fig2_causal_query_mse_l50_max");
        // fourth audit of issue 45: the kind is declared, not read from an apostrophe ("eta 1.6's" is an own check's text)
        if (c.claim.id.find("_causal_query_mse_l50") != std::string::npos && c.claim.id.find("eta3.2_over") != std::string::npos) {
            CHECK(c.claim.kind == io::ClaimKind::own_check);
            ++audit4_own;
        }
        if (c.claim.id.find("fig2r_mse_increases_with_mu") != std::string::npos || c.claim.id.find("fig4_causal2_above") != std::string::npos) {
            CHECK(c.claim.kind == io::ClaimKind::qualitative);
            ++audit4_quoted;
        }
        // bars and settings replaced after development runs say so: the asymptotic rates, causalLM2's eta 0.1
        if (c.claim.id.find("asymptotic_rate_vs_rho") != std::string::npos || c.claim.id.find("eq18_causal2") != std::string::npos ||
            c.claim.id.find("prop6_causal2") != std::string::npos) {
            CHECK_THAT(c.claim.provenance, Catch::StartsWith("chosen after the first runs"));
            ++audit4_provenance;
        }
        // at eta 0.1, d = 16 no draw can make causalLM2 unstable: that row is shown, not a claim
        CHECK(c.claim.id.find("_sequences_with_rho_S_above_1") == std::string::npos);
    }
    CHECK(printed >= 1);  // eta = 1.6 (E.1) is the one number printed
    CHECK(audit4_own == 1);         // the checks above ran on the claims they name (an id renamed fails here)
    CHECK(audit4_quoted == 2);
    CHECK(audit4_provenance == 4);  // prop3 and prop4 asymptotic rates, eq18 and prop6 at causalLM2's eta
}

// causalLM2's rho <= 1 on every draw of x in [-1, 1]^d when eta d <= 2 (the diagonal 1 - eta |x_j|^2 / j of I - eta S lies in
// [1 - eta d, 1]); above it a draw can diverge, so the count of unstable sequences is a claim again (fourth audit of issue 45).
TEST_CASE("lsa_gd: causalLM2 stability is a claim only where a draw can fail it", "[lsa_gd]") {
    using iclab::experiments::lsa_study::Settings;
    using iclab::experiments::lsa_study::causal2_stable_by_construction;
    using iclab::experiments::lsa_study::causal2_eta_provenance;
    Settings s;  // d = 16
    CHECK(causal2_stable_by_construction(s, 0.1));
    CHECK(causal2_stable_by_construction(s, 0.125));  // eta d = 2: 1 - eta |x|^2 / j >= -1
    CHECK_FALSE(causal2_stable_by_construction(s, 0.3));  // the spec's eta: 27 of 192 sequences diverged at it
    CHECK_FALSE(causal2_eta_provenance(s).empty());  // the configs' 0.1 was chosen after the spec's 0.3 failed
    s.eta_causal2 = 0.05;
    CHECK(causal2_eta_provenance(s).empty());  // a reader's own eta is theirs
}

// E.1's best eta (issue 45): the argmin of the prefix query MSE over the convergent etas; a NaN MSE or radius in any
// prefix row makes it NaN (a NaN row never loses the argmin), causal rows never count, no convergent eta gives NaN.
TEST_CASE("lsa_gd: the best convergent eta is the argmin over rho < 1, NaN with a NaN prefix row", "[lsa_gd][nan]") {
    using iclab::experiments::lsa_study::EtaRow;
    using iclab::experiments::lsa_study::best_convergent_prefix_eta;
    const double nan = std::nan("");
    const auto row = [](const char* mask, double eta, double query_mse, double radius) {
        EtaRow r;
        r.mask = mask, r.eta = eta, r.query_mse = query_mse, r.spectral_radius_max = radius;
        return r;
    };
    std::vector<EtaRow> rows{row("prefix", 0.4, 1e-2, 0.9), row("causal", 0.4, 1e-9, 0.1), row("prefix", 0.8, 1e-3, 0.95),
                             row("prefix", 1.6, 1e-4, 0.99), row("prefix", 3.2, 1e-9, 2.2)};
    CHECK(best_convergent_prefix_eta(rows) == 1.6);  // 3.2's MSE is lower but rho > 1; the causal row is not a candidate
    rows[2].query_mse = 1e-4;
    CHECK(best_convergent_prefix_eta(rows) == 0.8);  // a tie: the first in grid order
    for (auto broken : {&EtaRow::query_mse, &EtaRow::spectral_radius_max}) {
        std::vector<EtaRow> with_nan = rows;
        with_nan[0].*broken = nan;  // the worst row: before the fix it lost the argmin and 0.8 won
        CHECK(std::isnan(best_convergent_prefix_eta(with_nan)));
    }
    std::vector<EtaRow> causal_nan = rows;
    causal_nan[1].query_mse = nan;  // a causal row's NaN is not E.1's prefix argmin
    CHECK(best_convergent_prefix_eta(causal_nan) == 0.8);
    CHECK(std::isnan(best_convergent_prefix_eta({row("prefix", 3.2, 1e-9, 2.2)})));  // none converges
}

}  // namespace iclab_test_lsa_gd
