// The "ICL = GD" duals (specs/gd_duals.md; papers 002 and 004, von Oswald et al. 2023): finite-difference
// gradients of the new loss modules; every exact identity in fp64 and fp32 on small sweeps with its negative
// control, which must fail; the experiment end to end through the iclab binary.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "experiments/gd_duals/sweeps.hpp"
#include "framework/icl/gd_dual.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/nn/losses.hpp"
#include "tests/cli_helpers.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_gd_duals {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab_test;
using iclab::testing::check_gradient;
using iclab::testing::random_vector;

namespace {
constexpr double kControlFloor = 1e-4;  // rule 2: a negative control must fail by at least this much
template <class T>
double single_bar() { return sizeof(T) == 8 ? 1e-12 : 1e-6; }
template <class T>
double multi_bar() { return sizeof(T) == 8 ? 1e-11 : 1e-5; }
}  // namespace

TEST_CASE("gd_duals: loss modules match central finite differences", "[gd_duals][gradients]") {
    Rng rng(11);
    const std::size_t rows = 5, width = 3;
    auto out = random_vector(rows * width, rng), target = random_vector(rows * width, rng);
    SECTION("mse_half_mean") {
        std::vector<double> grad(out.size(), 0.0);
        nn::mse_half_mean_backward(grad.data(), out.data(), target.data(), rows, width);
        check_gradient("mse_half_mean", out, grad, [&] { return nn::mse_half_mean_forward(out.data(), target.data(), rows, width); });
        // (1/N) Σ ½‖ŷ − y‖², by hand at one point: the ½ and the mean are both there
        const std::vector<double> a = {1.0, 2.0}, b = {0.0, 0.0};
        CHECK(nn::mse_half_mean_forward(a.data(), b.data(), 2, 1) == Approx(0.25 * (1.0 + 4.0)));
    }
    SECTION("contrastive_dot") {
        std::vector<double> grad(out.size(), 0.0);
        nn::contrastive_dot_backward(grad.data(), target.data(), rows, width, 0.7);
        check_gradient("contrastive_dot", out, grad,
                       [&] { return nn::contrastive_dot_forward(out.data(), target.data(), rows, width, 0.7); });
    }
    SECTION("frobenius_l2") {
        std::vector<double> grad(out.size(), 0.0);
        nn::frobenius_l2_backward(grad.data(), out.data(), out.size(), 0.3);
        check_gradient("frobenius_l2", out, grad, [&] { return nn::frobenius_l2_forward(out.data(), out.size(), 0.3); });
    }
    SECTION("a wrong backward is caught") {  // the check itself can fail: a doubled gradient is rejected
        std::vector<double> grad(out.size(), 0.0);
        nn::mse_half_mean_backward(grad.data(), out.data(), target.data(), rows, width);
        for (auto& g : grad) g *= 2.0;
        double worst = 0.0;
        for (std::size_t i = 0; i < out.size(); ++i) {
            const double saved = out[i];
            out[i] = saved + 1e-5;
            const double plus = nn::mse_half_mean_forward(out.data(), target.data(), rows, width);
            out[i] = saved - 1e-5;
            const double minus = nn::mse_half_mean_forward(out.data(), target.data(), rows, width);
            out[i] = saved;
            worst = std::max(worst, std::abs(grad[i] - (plus - minus) / 2e-5));
        }
        CHECK(worst > 1e-2);
    }
}

TEMPLATE_TEST_CASE("gd_duals: paper 002 Theorem 1, a prompt equals one GD step", "[gd_duals]", float, double) {
    Rng root(21);
    for (auto map : {nn::FeatureMap::identity, nn::FeatureMap::elu1, nn::FeatureMap::relu, nn::FeatureMap::performer})
        for (std::size_t m : {1, 4})
            for (double eta_over_m : {0.1, 1.0, 10.0}) {
                if (sizeof(TestType) == 4 && eta_over_m != 1.0) continue;  // fp32 only at η/m = 1 (spec §1)
                icl::Thm1Setting s;
                s.feature_map = map;
                s.features = 16;
                s.prompt = m;
                s.eta_over_m = eta_over_m;
                Rng rng = root.derive(m * 100 + static_cast<std::uint64_t>(map));
                const auto r = icl::check_002_thm1<TestType>(s, rng);
                INFO(nn::feature_map_name(map) << " m " << m << " eta/m " << eta_over_m);
                CHECK(r.err <= single_bar<TestType>());
                CHECK(r.prompt_effect >= 1e-3);  // these instances have a prompt that matters
                CHECK(r.err_no_half >= kControlFloor);
                if (eta_over_m >= 1.0) CHECK(r.err_no_w0 >= kControlFloor);
                else CHECK(r.err_no_w0 < 0.0);  // not applicable below η/m = 1
                if (eta_over_m == 1.0 && sizeof(TestType) == 8) CHECK(r.err_iclca <= single_bar<TestType>());  // fp64 cross-check
            }
}

TEMPLATE_TEST_CASE("gd_duals: paper 002 Algorithm 1 equals the deep model, the causal one does not", "[gd_duals]", float, double) {
    Rng root(22);
    std::size_t index = 0;
    for (const std::string pattern : {"A", "AF", "AFAF"})
        for (auto map : {nn::FeatureMap::identity, nn::FeatureMap::performer})
            for (bool pre_ln : {false, true})
                for (std::size_t heads : {1, 2}) {
                    icl::Alg1Setting s;
                    s.pattern = pattern;
                    s.feature_map = map;
                    s.features = 32;
                    s.pre_ln = pre_ln;
                    s.heads = heads;
                    Rng rng = root.derive(++index);
                    const auto r = icl::check_002_alg1<TestType>(s, rng);
                    INFO(pattern << " " << nn::feature_map_name(map) << " pre_ln " << pre_ln << " heads " << heads);
                    CHECK(r.err_final <= multi_bar<TestType>());
                    CHECK(r.err_max_layer <= multi_bar<TestType>());
                    CHECK(r.err_causal_control >= 1e-3);
                    CHECK(r.err_layer.size() == pattern.size());
                }
}

TEMPLATE_TEST_CASE("gd_duals: paper 004 Theorem 1, kernel attention equals GD with the contrastive loss", "[gd_duals]", float,
                   double) {
    Rng root(23);
    std::size_t index = 0;
    for (int kernel = 0; kernel < 3; ++kernel)
        for (std::size_t epochs : {1, 10}) {
            icl::Thm1004Setting s;
            s.softmax = kernel == 2;
            s.feature_map = kernel == 0 ? nn::FeatureMap::performer : nn::FeatureMap::elu1;
            s.features = 120;
            s.epochs = epochs;
            Rng rng = root.derive(++index);
            const auto r = icl::check_004_thm1<TestType>(s, rng);
            INFO("kernel " << kernel << " N_CL " << epochs);
            CHECK(r.err <= multi_bar<TestType>());
            CHECK(r.err_epochs <= multi_bar<TestType>());
            CHECK(r.err_eta <= multi_bar<TestType>());
            if (!s.softmax) CHECK(r.err_full_batch <= single_bar<TestType>());
            CHECK(r.err_ctrl_d >= kControlFloor);
            if (r.err_ctrl_w0 >= 0.0) CHECK(r.err_ctrl_w0 >= kControlFloor);
            CHECK(std::abs(r.y_cl - r.y_tf) <= multi_bar<TestType>() * std::max(1.0, std::abs(r.y_tf)) * 10);
        }
}

TEMPLATE_TEST_CASE("gd_duals: paper 004 regularized, augmented and negative-sample duals", "[gd_duals]", float, double) {
    Rng root(24);
    std::size_t index = 0;
    std::vector<icl::Thm1004Setting> settings;
    for (double alpha : {-0.1, 0.01, 0.5}) {
        icl::Thm1004Setting s;
        s.variant = "reg";
        s.alpha = alpha;
        settings.push_back(s);
    }
    for (int which = 0; which < 4; ++which) {
        icl::Thm1004Setting s;
        s.variant = "aug";
        s.aug_g1 = which == 0 || which == 2;
        s.aug_g2 = which == 1 || which == 2;
        s.aug_g2plus = which == 3;
        s.epochs = 10;
        settings.push_back(s);
    }
    for (bool renorm : {false, true}) {
        icl::Thm1004Setting s;
        s.variant = "neg";
        s.negatives = 3;
        s.beta = 0.1;
        s.renorm = renorm;
        s.epochs = 10;
        settings.push_back(s);
    }
    for (const auto& s : settings) {
        Rng rng = root.derive(++index);
        const auto r = icl::check_004_thm1<TestType>(s, rng);
        INFO(s.variant << " alpha " << s.alpha << " renorm " << s.renorm);
        CHECK(r.err <= (s.variant == "reg" ? single_bar<TestType>() : multi_bar<TestType>()));
        if (s.variant == "reg" && s.alpha == 0.01 && r.err_ctrl_base < 0.0)
            SUCCEED("control skipped: alpha a_N+1 |v_N+1| < 1e-3, it cannot fail");
        else
            CHECK(r.err_ctrl_base >= kControlFloor);
        if (s.variant == "reg") {
            CHECK(r.eq15_vs_gd >= kControlFloor);  // typo A8: Eq. 15 as printed is not the dual
            CHECK(r.eq15_minus_eq14_residual <= single_bar<TestType>());
        }
    }
}

TEMPLATE_TEST_CASE("gd_duals: von Oswald's constructed LSA equals K GD steps", "[gd_duals]", float, double) {
    Rng root(25);
    std::size_t index = 0;
    for (std::size_t K : {1, 4, 16})
        for (bool w0_zero : {true, false})
            for (bool shared : {true, false}) {
                icl::VoSetting s;
                s.dy = 3;
                s.layers = K;
                s.w0_zero = w0_zero;
                s.shared = shared;
                Rng rng = root.derive(++index);
                const auto r = icl::check_vo_construct<TestType>(s, rng);
                INFO("K " << K << " w0_zero " << w0_zero << " shared " << shared);
                CHECK(r.err <= (K == 1 ? single_bar<TestType>() : multi_bar<TestType>()));
                if (!w0_zero) CHECK(r.err_ctrl >= 1e-3);  // η = 0.5, N = 10: the query's value is large enough
                else CHECK(r.err_ctrl < 0.0);
            }
}

namespace {
// Every check at one or two instances on a cut-down grid: seconds.
const std::string kTinyDuals =
    "configs/quick/gd_duals.yaml thm1_002.instances=2 thm1_002.widths=[8] thm1_002.prompts=[4] thm1_002.inputs=[4] "
    "thm1_002.eta_over_m=[1e-3,1] alg1_002.instances=1 alg1_002.patterns=[AF] alg1_002.prompts=[4] alg1_002.inputs=[4] "
    "thm1_004.instances=2 thm1_004.kernels=[prf120,softmax] thm1_004.demos=[15] variants_004.instances=1 "
    "variants_004.negatives=[3] variants_004.betas=[0.1] vo_construct.instances=2 vo_construct.demos=[10] "
    "vo_construct.layers=[1,4] --threads 1";
}  // namespace

TEST_CASE("gd_duals: the quick config runs end to end and every row passes", "[gd_duals][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run " + kTinyDuals + " output.dir=" + scratch.path.string(), scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    CHECK_THAT(result.out, Catch::Contains("002-T1") && Catch::Contains("004-T1 softmax kernel") && Catch::Contains("VO-C K=1") &&
                               Catch::Contains("every row reproduced"));
    const fs::path run_dir = last_line(result.out);
    iclab::io::ResultsReader reader((run_dir / "results.h5").string());
    const std::string g = "/tables/gd_duals/";
    const auto checks = reader.read_column_string(g + "check");
    const auto dtypes = reader.read_column_string(g + "dtype");
    const auto verdict = reader.read_column_string(g + "verdict");
    const auto max_error = reader.read_column_double(g + "max_error"), bar = reader.read_column_double(g + "bar");
    const auto control = reader.read_column_double(g + "control_error"), floor = reader.read_column_double(g + "control_floor");
    const auto instances = reader.read_column_int64(g + "instances");
    const auto over_bar = reader.read_column_double(g + "max_error_over_bar");
    std::set<std::string> seen(checks.begin(), checks.end());
    for (const std::string name : {"002-T1", "002-T1 corners", "002-A1", "004-T1", "004-T1 full-batch", "004-T1 softmax kernel",
                                   "004-V reg (Eq. 14)", "004-V Eq. 15 - Eq. 14", "004-V aug (Eq. 16)", "004-V neg (Eq. 17-18)",
                                   "VO-C K=1", "VO-C K<=16"}) {
        INFO(name);
        CHECK(seen.count(name) == 1);
    }
    for (std::size_t r = 0; r < checks.size(); ++r) {
        INFO(checks[r] << " " << dtypes[r]);
        CHECK(verdict[r] == "reproduced");
        CHECK(instances[r] > 0);
        CHECK(std::isfinite(bar[r]));  // every row is gated
        CHECK(over_bar[r] <= 1.0);
        if (!std::isnan(floor[r])) CHECK(control[r] >= floor[r]);
        if (dtypes[r] == "float32" && checks[r].find("004") == 0) CHECK(max_error[r] > 1e-9);  // fp32 really ran in fp32
    }
    CHECK_FALSE(reader.has("/tables/gd_duals/paper_value"));  // the papers print no number for these identities
    CHECK(reader.read_attr_string("/", "all_pass") == "true");
    // The summary recomputed from the instances: each instance's bar is the row's bar, or max(bar, 32 kappa 2^-24) for
    // fp32 002 checks, and the row's worst err/bar and count at the kappa bar follow from them.
    const std::string i = "/tables/gd_duals_instances/";
    const auto i_check = reader.read_column_string(i + "check"), i_dtype = reader.read_column_string(i + "dtype");
    const auto i_err = reader.read_column_double(i + "err"), i_bar = reader.read_column_double(i + "bar");
    const auto i_kappa = reader.read_column_double(i + "conditioning");
    const auto at_kappa = reader.read_column_int64(g + "instances_at_kappa_bar");
    CHECK(i_check.size() > checks.size());
    for (std::size_t r = 0; r < checks.size(); ++r) {
        INFO(checks[r] << " " << dtypes[r]);
        double worst = 0.0, worst_ratio = 0.0;
        std::int64_t count = 0, by_kappa = 0;
        for (std::size_t k = 0; k < i_check.size(); ++k) {
            if (i_check[k] != checks[r] || i_dtype[k] != dtypes[r]) continue;
            const bool kappa_gated = dtypes[r] == "float32" && checks[r].find("002") == 0;
            const double expected_bar = kappa_gated ? std::max(bar[r], 32.0 * i_kappa[k] * std::ldexp(1.0, -24)) : bar[r];
            CHECK(i_bar[k] == Approx(expected_bar).epsilon(1e-12));
            worst = std::max(worst, i_err[k]), worst_ratio = std::max(worst_ratio, i_err[k] / i_bar[k]);
            ++count, by_kappa += i_bar[k] > bar[r] ? 1 : 0;
        }
        CHECK(count == instances[r]);
        CHECK(by_kappa == at_kappa[r]);
        CHECK(worst == max_error[r]);
        CHECK(worst_ratio == Approx(over_bar[r]).epsilon(1e-12));
    }
    // the claims: own checks without a paper value, one per row plus one per applicable control, all reproduced here
    const auto claims = iclab::io::read_claims(reader);
    CHECK(claims.size() > checks.size());
    for (const auto& c : claims) {
        INFO(c.claim.id);
        CHECK(c.claim.kind == iclab::io::ClaimKind::own_check);
        CHECK(std::isnan(c.claim.paper_value));
        CHECK(c.verdict == iclab::io::Verdict::reproduced);
    }
}

TEST_CASE("gd_duals: a row fails when an instance exceeds its bar or its control does not fail", "[gd_duals]") {
    using iclab::experiments::duals::Results;
    {
        Results results;
        results.add("x", "float64", "cell", 0, 1e-13, 1.0, 1e-12, 1e-4, "");
        CHECK(results.summary[0].pass());
        results.add("x", "float64", "cell", 1, 2e-12, 1.0, 1e-12, 1e-4, "");  // one instance over the bar fails the row
        CHECK_FALSE(results.summary[0].pass());
        CHECK(results.summary[0].max_error_over_bar == Approx(2.0));
    }
    {
        Results results;  // a conditioning-aware bar admits a larger error only where kappa is large
        results.add("x", "float32", "cell", 0, 5e-6, 1.0, 1e-6, 1e-4, "", 10.0, 1e-5);
        CHECK(results.summary[0].pass());
        CHECK(results.summary[0].kappa_bar_instances == 1);
        results.add("x", "float32", "cell", 1, 5e-6, 1.0, 1e-6, 1e-4, "", 0.1, 1e-7);  // small kappa: the fixed bar 1e-6
        CHECK_FALSE(results.summary[0].pass());
        CHECK(results.summary[0].kappa_bar_instances == 1);
    }
    {
        Results results;
        results.add("x", "float64", "cell", 0, 1e-13, 1e-5, 1e-12, 1e-4, "");  // a control that did not fail
        CHECK_FALSE(results.summary[0].pass());
        results.add("y", "float64", "cell", 0, std::nan(""), 1.0, 1e-12, 1e-4, "");  // a NaN error is no pass
        CHECK_FALSE(results.summary[1].pass());
        // an ungated instance is refused
        CHECK_THROWS_AS(results.add("z", "float32", "cell", 0, 1e-3, 1.0, std::nan(""), 1e-4, ""), iclab::Error);
    }
}

TEST_CASE("iclab claims pools the runs of one setting over seeds and keeps other settings apart", "[gd_duals][cli][claims]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string();
    for (const char* extra : {" seed=1", " seed=2", " seed=3 thm1_002.instances=1"}) {
        const auto r = run_iclab("run " + kTinyDuals + out + extra + " --quiet", scratch.path);
        INFO(r.err);
        REQUIRE(r.status == 0);
    }
    const auto result = run_iclab("claims " + scratch.path.string() + " --out " + (scratch.path / "claims.csv").string(), scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    // seeds 1 and 2 are one setting (2 runs); seed 3 changed a key, so it is a setting of its own
    CHECK_THAT(result.out, Catch::Contains("2 runs") && Catch::Contains("1 run)") && Catch::Contains("claims: "));
    CHECK(fs::exists(scratch.path / "claims.csv"));
    const auto again = run_iclab("claims " + scratch.path.string() + " --out " + (scratch.path / "claims.csv").string(), scratch.path);
    CHECK(again.status == 2);  // no silent overwrite
    CHECK_THAT(again.err, Catch::Contains("--overwrite"));
    const auto bad = run_iclab("claims " + scratch.path.string() + " --out " + (scratch.path / "claims.txt").string(), scratch.path);
    CHECK(bad.status == 2);
}

}  // namespace iclab_test_gd_duals
