// `lsa_gd`, the stationary half (paper 003 Part A, spec A4-A7): stationary points and linear rates (Props 3, 4, 7),
// the online-GD identities (Props 5, 8), Figure 2 right and Figure 4 (stationary query MSE vs n and the μ-shift),
// and App. D's κ claim. Everything here uses the weight-space recursions (gd_recursions.hpp) and dense_linalg (LU solve, Jacobi
// eigenvalues; LAPACK's dgesv / dsyev until 2026-11-27).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "experiments/lsa_gd/study.hpp"
#include "framework/core/dense_linalg.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/gd_recursions.hpp"

namespace iclab::experiments::lsa_study {

using icl::RegressionSequences;

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

double row_dot(const double* a, const double* b, std::size_t d) {
    double r = 0.0;
    for (std::size_t k = 0; k < d; ++k) r += a[k] * b[k];
    return r;
}
double norm(const std::vector<double>& v) { return std::sqrt(row_dot(v.data(), v.data(), v.size())); }
double diff_norm(const double* a, const double* b, std::size_t n) {
    double s = 0.0;
    for (std::size_t i = 0; i < n; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
    return std::sqrt(s);
}
// row vector e (n) times M (n, n)
std::vector<double> times(const std::vector<double>& e, const std::vector<double>& m, std::size_t n) {
    std::vector<double> out(n, 0.0);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t i = 0; i < n; ++i) out[i] += e[k] * m[k * n + i];
    return out;
}

// The asymptotic rate of e ← e M (Props 3, 4) from e0: ‖e_l‖/‖e_{l−1}‖ of the normalized iteration after `steps`
// steps. The recursions' own error e_l = w⁽ˡ⁾ − w* reaches rounding (~1e-16 ‖w*‖) long before the ratio settles when
// M is non-normal with near-equal eigenvalues (causal T); the identity e_l = e_{l−1} M is checked on the recursion
// itself, and the rate of that M here, where normalizing keeps e far from rounding and underflow.
double power_rate(std::vector<double> e, const std::vector<double>& m, std::size_t n, std::size_t steps) {
    double ratio = norm(e);
    for (std::size_t step = 0; step <= steps; ++step) {
        for (double& v : e) v /= ratio;
        e = times(e, m, n);
        ratio = norm(e);
    }
    return ratio;
}


}  // namespace

// A6 / A7 gates on the stationary curves (index u·replicates + r; entry j = query MSE with n = j ICEs).
void study_stationary_checks(const Settings& s, const std::vector<std::vector<double>>& causal,
                             const std::vector<std::vector<double>>& causal2, Study& study) {
    auto& c = study.checks;
    const std::size_t R = s.stationary_replicates, N = s.stationary_examples;
    auto mean_at = [&](const std::vector<std::vector<double>>& curves, std::size_t u, std::size_t j) {
        double m = 0;
        for (std::size_t r = 0; r < R; ++r) m += curves[u * R + r][j] / static_cast<double>(R);
        return m;
    };
    const auto zero = std::find(s.mus.begin(), s.mus.end(), 0.0);
    if (zero != s.mus.end()) {
        const std::size_t u0 = static_cast<std::size_t>(zero - s.mus.begin());
        double first = kInfinity, last = 0, at_n = 0;
        for (std::size_t r = 0; r < R; ++r) {
            // N + 1 when the curve never reaches below 1e-2; NaN for a curve with a NaN (never "more than 100")
            const double crossing = first_index_below(causal[u0 * R + r], 1, N, 1e-2);
            first = min_or_nan(first, crossing);
            last = max_or_nan(last, crossing);
            at_n = max_or_nan(at_n, causal[u0 * R + r][N]);
        }
        // "more than 100 examples" is qualitative: first n with MSE < 1e-2 above 100 (n >= 101) in every replicate.
        c.push_back(quoting(gated("A6", "fig2r_mu0_first_n_below_1e-2_min", "Fig. 2 right: mu = 0 'takes more than 100 examples to reach below 1e-2'",
                                  first, 101, kInfinity, "> 100 (n >= 101), earliest replicate")));
        c.push_back(reported("A6", "fig2r_mu0_first_n_below_1e-2_max", "the same, latest replicate", last, "shown"));
        if (N >= 300)
            c.push_back(quoting(gated("A6", "fig2r_mu0_mse_n" + std::to_string(N), "mu = 0 'eventually converges'", at_n, 0, 1e-6,
                                      "<= 1e-6, every replicate")));
        if (N >= 40) {
            double plateau = 0;
            std::size_t count = 0;
            for (const LayerRow& row : study.layers)
                if (row.mask == "causal" && row.layer == static_cast<std::int64_t>(s.layers)) plateau += row.query_mse, ++count;
            const double ratio = mean_at(causal, u0, 40) / (plateau / static_cast<double>(count));
            c.push_back(gated("A6", "fig2r_n40_stationary_over_layer_plateau", "causal n = 40 stationary MSE = the Fig. 2 middle plateau",
                              ratio, 1 / 1.5, 1.5, "within x1.5 of the causal query MSE at l = L (means over replicates)"));
        }
    }
    double violations = 0, worse = 0;
    for (std::size_t j = s.stationary_step; j <= N; j += s.stationary_step) {
        if (j < 40) continue;
        for (std::size_t u = 0; u < s.mus.size(); ++u) {
            if (u > 0 && s.mus[u] > s.mus[u - 1] && !(mean_at(causal, u, j) > mean_at(causal, u - 1, j))) violations += 1;
            if (!(mean_at(causal2, u, j) > mean_at(causal, u, j))) worse += 1;
        }
    }
    c.push_back(quoting(gated("A6", "fig2r_mse_increases_with_mu_violations", "Fig. 2 right: larger mu is 'even worse'", violations, 0, 0,
                              "= 0 grid points n >= 40 where MSE(mu) does not increase (means over replicates)")));
    c.push_back(quoting(gated("A7", "fig4_causal2_above_causal_violations", "Fig. 4: causalLM2 'converges even slower' than causalLM", worse,
                              0, 0, "= 0 grid points (mu, n >= 40) with causalLM2 MSE <= causalLM MSE")));
}

Causal2Stability causal2_stability(const Settings& s, const Rng& data_root, double eta) {
    const std::size_t d = s.dim, n = s.examples;
    std::vector<double> rhos;  // max_j |1 - eta |x_j|^2 / j| per sequence of every replicate
    Causal2Stability out;
    for (std::size_t r = 0; r < s.replicates; ++r) {
        const RegressionSequences rdata = replicate_data(s, data_root, r, n);
        const std::size_t TT = rdata.time();
        for (std::size_t b = 0; b < rdata.batch; ++b) {
            const double* x = rdata.x.data() + b * TT * d;
            double rho = 0;
            for (std::size_t j = 0; j < n; ++j)
                rho = max_or_nan(rho, std::abs(1 - eta * row_dot(x + j * d, x + j * d, d) / static_cast<double>(j + 1)));
            rhos.push_back(rho);
            out.worst = max_or_nan(out.worst, rho);
        }
    }
    out.unstable = count_above(rhos, 1.0);  // NaN with a NaN rho: "= 0 sequences above 1" does not pass
    return out;
}

// Both asymptotic-rate checks replaced the finite-layer ratio checks after development runs (fourth audit of issue 45).
const char* const kRateProvenance =
    "chosen after the first runs (2026-11-25, 819da5c): it replaced 'ratio ||e_l||/||e_(l-1)|| at l = 200 within 1 % of rho' "
    "(causal: 'at most 1.01 rho_T') after the first runs; remeasured at ae6856c, the causal ratio is still 3.4 % off rho_T "
    "at l = 200 (T is non-normal with near-equal diagonal entries); now the normalized iteration's ratio after rates.power_steps steps, "
    "bar 1e-3; the finite-layer ratios are reported";

void study_stationary(const Settings& s, const Rng& data_root, const Rng& stationary_root, Study& study) {
    auto& c = study.checks;
    const std::size_t d = s.dim, n = s.examples;
    const RegressionSequences data = replicate_data(s, data_root, 0, n);
    const std::size_t TT = data.time();
    const std::size_t rate_layers = std::max({s.rate_layer, s.convergence_layers, s.layers});

    // ---- causalLM2 layer dynamics (Prop 7): rate I − ηS has diagonal 1 − η|x_j|²/j, so η < 2/|x_1|² is needed ------
    std::vector<double> causal2_etas{s.eta_causal2};  // the chosen η, the spec's 0.3 and the paper's 1.6
    for (double eta : {0.3, s.eta})
        if (eta != s.eta_causal2) causal2_etas.push_back(eta);
    for (double eta : causal2_etas) {
        const Causal2Stability stability = causal2_stability(s, data_root, eta);
        const double unstable = stability.unstable, worst = stability.worst;
        std::ostringstream name;
        name << "causal2_eta" << eta << "_sequences_with_rho_S_above_1";
        const double total = static_cast<double>(s.replicates * data.batch);
        if (eta == s.eta_causal2) {
            const std::string claim = "causalLM2 layer dynamics converge at the chosen eta (I - eta S, Prop 7)";
            const std::string of = "of " + std::to_string(static_cast<int>(total)) + " sequences";
            if (causal2_stable_by_construction(s, eta)) {
                // No draw can fail it (fourth audit of issue 45: a claim that cannot fail): shown with its bound, not judged.
                std::ostringstream bound;
                bound << of << "; not judged: rho <= 1 on every draw, since 1 - eta |x_j|^2 / j lies in [1 - eta d, 1] = ["
                      << 1 - eta * static_cast<double>(d) << ", 1] for x in [-1, 1]^d";
                c.push_back(reported("A7", name.str(), claim, unstable, bound.str()));
            } else {
                // the band is the declaration, equal in every seed (iclab claims pools seeds)
                c.push_back(gated("A7", name.str(), claim, unstable, 0, 0, "= 0 " + of + " (all replicates)"));
                c.back().provenance = causal2_eta_provenance(s);
            }
            std::ostringstream rho_name;  // the measured max rho: its own row
            rho_name << "causal2_eta" << eta << "_max_rho_S";
            c.push_back(reported("A7", rho_name.str(), "the largest max_j|1 - eta|x_j|^2/j| at the chosen eta", worst, "shown; all replicates"));
        } else
            c.push_back(reported("A7", name.str(), "causalLM2 spectral radius max_j|1 - eta|x_j|^2/j| > 1 (diverges)", unstable,
                                 "of " + std::to_string(static_cast<int>(total)) + " sequences; max rho " + std::to_string(worst)));
    }

    // ---- A4: Props 3 and 4, every sequence of replicate 0 ------------------------------------------------------
    double prefix_identity = 0, prefix_rate_dev = 0, prefix_rate_worst_ratio = 0, prefix_truth = 0;
    double prefix_power = 0, causal_power = 0;
    double causal_identity = 0, causal_rate_dev = 0, causal_rate_above = 0, causal_converged = 0, causal_solve = 0, causal_form = 0;
    for (std::size_t b = 0; b < data.batch; ++b) {
        const double* x = data.x.data() + b * TT * d;
        const double* y = data.y.data() + b * TT;
        // Prop 3: w* solves y Xᵀ = w* XXᵀ; with noise-free y it is the task w itself.
        const std::vector<double> w_star = icl::prefix_stationary_weights(x, y, n, d);
        prefix_truth = max_or_nan(prefix_truth, diff_norm(w_star.data(), data.w.data() + b * d, d) / norm(w_star));
        const std::vector<double> gram = icl::ice_gram(x, n, d);
        std::vector<double> m(d * d);  // I − (η/n) XXᵀ
        for (std::size_t i = 0; i < d * d; ++i) m[i] = (i % (d + 1) == 0 ? 1.0 : 0.0) - s.eta / static_cast<double>(n) * gram[i];
        double rho = 0;
        for (double lambda : linalg::symmetric_eigenvalues(gram, d)) rho = max_or_nan(rho, std::abs(1 - s.eta / static_cast<double>(n) * lambda));
        const std::vector<double> history = icl::prefix_gd(x, y, n, d, s.eta, rate_layers, {});
        // Causal, Prop 4: a* (forward substitution, and the LU solve of Tᵀa*ᵀ = yᵀ), the Eq. 15 recursion, I − (η/n)T.
        const std::vector<double> a_star = icl::causal_stationary_coefficients(x, y, n, d, false);
        const std::vector<double> t_matrix = icl::causal_system_matrix(x, n, d, false);
        std::vector<double> t_transposed(n * n), y_ice(y, y + n);
        for (std::size_t k = 0; k < n; ++k)
            for (std::size_t i = 0; i < n; ++i) t_transposed[i * n + k] = t_matrix[k * n + i];
        const std::vector<double> a_lu = linalg::solve(t_transposed, n, y_ice, 1);
        causal_solve = max_or_nan(causal_solve, diff_norm(a_lu.data(), a_star.data(), n) / norm(a_star));
        std::vector<double> mt(n * n), a(n, 0.0);
        double rho_t = 0;
        for (std::size_t i = 0; i < n * n; ++i) mt[i] = (i % (n + 1) == 0 ? 1.0 : 0.0) - s.eta / static_cast<double>(n) * t_matrix[i];
        for (std::size_t j = 0; j < n; ++j) rho_t = max_or_nan(rho_t, std::abs(mt[j * n + j]));  // triangular: eigenvalues = diagonal

        {  // Props 3, 4: the asymptotic rate is the spectral radius (T triangular: its diagonal)
            std::vector<double> e0(w_star), ea0(a_star);
            prefix_power = max_or_nan(prefix_power, std::abs(power_rate(e0, m, d, s.power_steps) / rho - 1));
            causal_power = max_or_nan(causal_power, std::abs(power_rate(ea0, mt, n, s.power_steps) / rho_t - 1));
        }
        bool prefix_rate_done = false, causal_rate_done = false;
        const double prefix_e0 = norm(w_star);  // w⁽⁰⁾ = 0
        const double causal_e0 = norm(a_star);
        std::vector<double> e_previous(w_star.size()), ea_previous(n);
        for (std::size_t k = 0; k < d; ++k) e_previous[k] = -w_star[k];
        for (std::size_t i = 0; i < n; ++i) ea_previous[i] = -a_star[i];
        for (std::size_t l = 1; l <= rate_layers; ++l) {
            std::vector<double> e(d), ea(n);
            for (std::size_t k = 0; k < d; ++k) e[k] = history[l * d + k] - w_star[k];
            icl::causal_coefficients_step(a, x, y, n, d, s.eta, false);  // Eq. 15
            for (std::size_t i = 0; i < n; ++i) ea[i] = a[i] - a_star[i];
            if (l <= s.layers) {  // Prop 3 / Prop 4 rate identities, while ‖e‖ is far above rounding
                const std::vector<double> predicted = times(e_previous, m, d), predicted_a = times(ea_previous, mt, n);
                prefix_identity = max_or_nan(prefix_identity, diff_norm(e.data(), predicted.data(), d) / norm(e_previous));
                causal_identity = max_or_nan(causal_identity, diff_norm(ea.data(), predicted_a.data(), n) / norm(ea_previous));
            }
            if (!prefix_rate_done && (l == s.rate_layer || norm(e) < 1e-6 * prefix_e0)) {
                const double ratio = norm(e) / norm(e_previous);
                prefix_rate_dev = max_or_nan(prefix_rate_dev, std::abs(ratio / rho - 1));
                prefix_rate_worst_ratio = max_or_nan(prefix_rate_worst_ratio, ratio / rho);
                prefix_rate_done = true;
            }
            if (!causal_rate_done && (l == s.rate_layer || norm(ea) < 1e-6 * causal_e0)) {
                const double ratio = norm(ea) / norm(ea_previous);
                causal_rate_dev = max_or_nan(causal_rate_dev, std::abs(ratio / rho_t - 1));
                causal_rate_above = max_or_nan(causal_rate_above, ratio / rho_t);
                causal_rate_done = true;
            }
            if (l == s.layers) {  // Prop 4's form: Eq. 10's w_j equals Σ_{i≤j} a_i x_iᵀ
                const std::vector<double> w_causal = icl::causal_gd(x, y, n, d, s.eta, l, {}, false);
                const std::vector<double> w_form = icl::causal_stationary_weights(a, x, n, d, false);
                causal_form = max_or_nan(causal_form, diff_norm(w_causal.data() + l * n * d, w_form.data(), n * d) / norm(w_form));
            }
            if (l == s.convergence_layers) causal_converged = max_or_nan(causal_converged, norm(ea) / norm(a_star));
            e_previous = e;
            ea_previous = ea;
        }
    }
    const std::string rate_at = "ratio ||e_l||/||e_(l-1)|| at l = " + std::to_string(s.rate_layer) + " (or where ||e_l|| < 1e-6 ||e_0||)";
    c.push_back(identity(gated("A4", "prop3_least_squares_is_task_w", "Prop 3: w* = least squares (noise-free: the task w)", prefix_truth, 0, 1e-10,
                      "<= 1e-10 relative, LU solve")));
    c.push_back(identity(gated("A4", "prop3_rate_identity", "Prop 3: w(l) - w* = (w(l-1) - w*)(I - (eta/n) XX^T)", prefix_identity, 0, 1e-10,
                      "<= 1e-10 relative, layers 1..L")));
    const std::string power_at = "|ratio/rho - 1| <= 1e-3, ratio of e <- eM/||eM|| after " + std::to_string(s.power_steps) + " steps";
    c.push_back(gated("A4", "prop3_asymptotic_rate_vs_rho", "Prop 3: linear rate rho = max|1 - (eta/n) lambda_i(XX^T)| (Jacobi eigenvalues)",
                      prefix_power, 0, 1e-3, power_at));
    c.back().provenance = kRateProvenance;
    c.push_back(reported("A4", "prop3_recursion_ratio_deviation", "Prop 3: the recursion's own ratio at a finite layer", prefix_rate_dev,
                         "max |ratio/rho - 1|, " + rate_at));
    c.push_back(identity(gated("A4", "prop4_a_star_forward_vs_lapack", "Prop 4: y = a*T by forward substitution = LU solve of T^T (partial pivoting)", causal_solve, 0, 1e-10,
                      "<= 1e-10 relative")));
    c.push_back(identity(gated("A4", "prop4_form_w_equals_sum_a_x", "Prop 4: w_j(l) of Eq. 10 = sum_(i<=j) a_i(l) x_i of Eq. 15", causal_form, 0, 1e-10,
                      "<= 1e-10 relative at l = L")));
    c.push_back(identity(gated("A4", "prop4_rate_identity", "Prop 4: a(l) - a* = (a(l-1) - a*)(I - (eta/n) T)", causal_identity, 0, 1e-10,
                      "<= 1e-10 relative, layers 1..L")));
    c.push_back(gated("A4", "prop4_converged_a", "Prop 4: a(l) -> a*", causal_converged, 0, 1e-8,
                      "||a(" + std::to_string(s.convergence_layers) + ") - a*|| / ||a*|| <= 1e-8"));
    c.push_back(gated("A4", "prop4_asymptotic_rate_vs_rho", "Prop 4: linear rate rho_T = max_j |1 - (eta/n)|x_j|^2| (T triangular)",
                      causal_power, 0, 1e-3, power_at));
    c.back().provenance = kRateProvenance;
    c.push_back(reported("A4", "prop4_recursion_ratio_deviation", "Prop 4: the recursion's own ratio at a finite layer", causal_rate_dev,
                         "max |ratio/rho_T - 1| (largest ratio/rho_T " + std::to_string(causal_rate_above) + "), " + rate_at +
                             "; T is non-normal with near-equal diagonal entries, so the ratio settles slowly"));

    // ---- A6 / A7: stationary query MSE vs n, per μ (Figure 2 right, Figure 4), and A5 on the μ = 0 data -------------
    const std::size_t N = s.stationary_examples;
    std::vector<std::vector<double>> causal_curve(s.mus.size() * s.stationary_replicates), causal2_curve(causal_curve.size());
    double prop5 = 0, prop8 = 0, prefix_ls_mu0 = 0, prefix_ls_max = 0;
    std::vector<double> kappa_n;
    for (std::size_t e : {std::size_t{40}, std::size_t{100}, std::size_t{300}})
        if (e <= N) kappa_n.push_back(static_cast<double>(e));
    std::vector<double> eig_ratio(kappa_n.size(), 0.0), cond_ratio(kappa_n.size(), 0.0);
    for (std::size_t u = 0; u < s.mus.size(); ++u)
        for (std::size_t r = 0; r < s.stationary_replicates; ++r) {
            const RegressionSequences sdata = replicate_data(s, stationary_root, r, N, s.mus[u]);  // same draws for every μ, shifted
            const std::size_t ST = sdata.time();
            std::vector<double>& causal = causal_curve[u * s.stationary_replicates + r];
            std::vector<double>& causal2 = causal2_curve[u * s.stationary_replicates + r];
            causal.assign(N + 1, 0.0);
            causal2.assign(N + 1, 0.0);
            std::vector<double> prefix(N + 1, 0.0);
            for (std::size_t b = 0; b < sdata.batch; ++b) {
                const double* x = sdata.x.data() + b * ST * d;
                const double* y = sdata.y.data() + b * ST;
                const std::vector<double> a1 = icl::causal_stationary_coefficients(x, y, N, d, false);
                const std::vector<double> a2 = icl::causal_stationary_coefficients(x, y, N, d, true);
                const std::vector<double> w1 = icl::causal_stationary_weights(a1, x, N, d, false);  // w*_j, Prop 4
                const std::vector<double> w2 = icl::causal_stationary_weights(a2, x, N, d, true);   // w*_j, Prop 7
                for (std::size_t j = 1; j <= N; ++j)  // ŷ_q = w*_n x_q for n = j ICEs
                    for (std::size_t q = N; q < ST; ++q) {
                        const double e1 = row_dot(w1.data() + (j - 1) * d, x + q * d, d) - y[q];
                        const double e2 = row_dot(w2.data() + (j - 1) * d, x + q * d, d) - y[q];
                        causal[j] += e1 * e1;
                        causal2[j] += e2 * e2;
                    }
                for (std::size_t j = s.stationary_step; j <= N; j += s.stationary_step) {
                    if (j < d) continue;  // least squares needs n >= d
                    const std::vector<double> w_ls = icl::prefix_stationary_weights(x, y, j, d);
                    for (std::size_t q = N; q < ST; ++q) {
                        const double e = row_dot(w_ls.data(), x + q * d, d) - y[q];
                        prefix[j] += e * e;
                    }
                }
                if (u == 0 && r == 0) {
                    for (std::size_t j = 0; j + 1 < N; ++j) {  // Props 5, 8: row j is the paper's w*_(j+1)
                        const double* xn = x + (j + 1) * d;
                        const double norm2 = row_dot(xn, xn, d);
                        std::vector<double> step5(d), step8(d);
                        const double g5 = row_dot(w1.data() + j * d, xn, d) - y[j + 1];  // ∇L_j = (w x_(j+1) − y_(j+1)) x_(j+1)ᵀ
                        const double shrink = static_cast<double>(j + 1) / static_cast<double>(j + 2);  // w̃ = (j/(j+1)) w*, 1-based j
                        const double g8 = shrink * row_dot(w2.data() + j * d, xn, d) - y[j + 1];
                        for (std::size_t k = 0; k < d; ++k) {
                            step5[k] = w1[j * d + k] - g5 * xn[k] / norm2;
                            step8[k] = shrink * w2[j * d + k] - g8 * xn[k] / norm2;
                        }
                        const std::vector<double> next5(w1.begin() + (j + 1) * d, w1.begin() + (j + 2) * d);
                        const std::vector<double> next8(w2.begin() + (j + 1) * d, w2.begin() + (j + 2) * d);
                        prop5 = max_or_nan(prop5, diff_norm(step5.data(), next5.data(), d) / norm(next5));
                        prop8 = max_or_nan(prop8, diff_norm(step8.data(), next8.data(), d) / norm(next8));
                    }
                    for (std::size_t k = 0; k < kappa_n.size(); ++k) {  // App. D: κ(S) vs κ(T) on the first n ICEs
                        const std::size_t m = static_cast<std::size_t>(kappa_n[k]);
                        const std::vector<double> t1 = icl::causal_system_matrix(x, m, d, false), t2 = icl::causal_system_matrix(x, m, d, true);
                        auto diagonal_ratio = [m](const std::vector<double>& t) {
                            double hi = 0, lo = kInfinity;
                            for (std::size_t j = 0; j < m; ++j) hi = max_or_nan(hi, std::abs(t[j * m + j])), lo = min_or_nan(lo, std::abs(t[j * m + j]));
                            return hi / lo;  // |λ|max / |λ|min: triangular, eigenvalues = diagonal
                        };
                        eig_ratio[k] += diagonal_ratio(t2) / diagonal_ratio(t1) / static_cast<double>(sdata.batch);
                        cond_ratio[k] += linalg::condition_number_2(t2, m) / linalg::condition_number_2(t1, m) / static_cast<double>(sdata.batch);
                    }
                }
            }
            const double count = static_cast<double>(sdata.batch * s.queries);
            for (std::size_t j = 1; j <= N; ++j) causal[j] /= count, causal2[j] /= count;
            for (std::size_t j = s.stationary_step; j <= N; j += s.stationary_step) {
                prefix[j] = j < d ? kNaN : prefix[j] / count;
                if (j >= d) {
                    double& worst = s.mus[u] == 0.0 ? prefix_ls_mu0 : prefix_ls_max;  // μ = 0 gated, μ ≠ 0 reported
                    worst = max_or_nan(worst, prefix[j]);
                }
                study.stationary.push_back({s.mus[u], static_cast<std::int64_t>(j), static_cast<std::int64_t>(r), causal[j], causal2[j], prefix[j]});
            }
        }
    study_stationary_checks(s, causal_curve, causal2_curve, study);
    c.push_back(identity(gated("A5", "prop5_online_gd", "Prop 5: w*_(j+1) = w*_j - |x_(j+1)|^-2 grad L_j(w*_j)", prop5, 0, 1e-10,
                      "<= 1e-10 relative, every j < " + std::to_string(N) + ", mu = 0, replicate 0")));
    c.push_back(identity(gated("A5", "prop8_online_gd_causal2", "Prop 8 (with Prop 7): the same with w~_j = (j/(j+1)) w*_j", prop8, 0, 1e-10,
                      "<= 1e-10 relative, every j, mu = 0, replicate 0")));
    c.push_back(identity(gated("A6", "prefix_least_squares_mse_mu0", "prefix stationary = least squares, exact for n >= d without noise", prefix_ls_mu0, 0,
                      1e-20, "<= 1e-20, mu = 0, every n >= d")));
    c.push_back(reported("A6", "prefix_least_squares_mse_mu_gt0", "the same for mu > 0 (ill-conditioned XX^T)", prefix_ls_max,
                         "max over mu > 0, n >= d"));
    const auto fmt_g = [](double x) {
        char text[32];
        std::snprintf(text, sizeof text, "%g", x);
        return std::string(text);
    };
    for (std::size_t k = 0; k < kappa_n.size(); ++k) {
        const std::string nn = std::to_string(static_cast<int>(kappa_n[k]));
        study.kappa.push_back({static_cast<std::int64_t>(kappa_n[k]), eig_ratio[k], cond_ratio[k], kappa_n[k] / 2});
        // App. D prints no number: "about n/2 greater" gives the target n/2 (20 / 50 / 150 at n = 40 / 100 / 300), a
        // derived target, so an own check (issue 45). The sentence has two readings; both are judged, and the
        // eigenvalue-modulus one was picked as the reading after the first runs, where the 2-norm one fails.
        c.push_back(gated("A7", "kappa_eig_ratio_S_over_T_n" + nn,
                          "App. D: kappa(S) is about n/2 greater than kappa(T), read as the ratio of eigenvalue moduli "
                          "|lambda|max/|lambda|min; derived target n/2 = " + fmt_g(kappa_n[k] / 2) + " (the paper prints no number); "
                          "the 2-norm reading of the same sentence fails (kappa_2norm_ratio_S_over_T, 7.2 / 10.6 / 13.8 at n = 40 / 100 / 300)",
                          eig_ratio[k], 0.25 * kappa_n[k], 0.75 * kappa_n[k], "in [0.5, 1.5] x n/2 (mean over sequences)"));
        c.back().provenance = "chosen after the first runs (2026-11-25): the eigenvalue-modulus reading of 'about n/2' was "
                              "picked after the 2-norm condition-number reading measured 7.2 / 10.6 / 13.8";
        c.push_back(gated("A7", "kappa_2norm_ratio_S_over_T_n" + nn,
                          "App. D: kappa(S) is about n/2 greater than kappa(T), read with the 2-norm condition number; derived "
                          "target n/2 = " + fmt_g(kappa_n[k] / 2) + " (the paper prints no number)",
                          cond_ratio[k], 0.25 * kappa_n[k], 0.75 * kappa_n[k], "in [0.5, 1.5] x n/2 (mean over sequences)"));
        c.back().provenance = "declared after the first runs (2026-11-29): issue 45, the reading not picked is judged too "
                              "(it was reported only)";
    }
}

}  // namespace iclab::experiments::lsa_study
