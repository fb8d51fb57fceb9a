// `lsa_gd`, the layer half (paper 003 Part A, spec A1-A3): the constructed LSA (framework/icl/lsa_gd.hpp) run on
// iclab's linear attention, layer by layer, against the independent weight-space recursions (gd_recursions.hpp).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "experiments/lsa_gd/study.hpp"
#include "framework/core/dense_linalg.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/gd_recursions.hpp"

namespace iclab::experiments::lsa_study {

using icl::LsaMask;
using icl::RegressionSequences;

Check gated(const std::string& section, const std::string& name, const std::string& claim, double ours, double lo, double hi,
            const std::string& band, double paper) {
    // the verdict of its claim (count_within [lo, hi] on one value): a non-finite value is inconclusive, as evaluate_claim
    // has it, never a pass (scaled_max_error maps a NaN output to +inf, which the control's band [1e-4, inf] contained)
    const char* verdict = !std::isfinite(ours) ? "inconclusive" : ours >= lo && ours <= hi ? "reproduced" : "not reproduced";
    return {section, name, claim, ours, paper, band, verdict, lo, hi, ""};
}

Check reported(const std::string& section, const std::string& name, const std::string& claim, double ours,
               const std::string& note, double paper) {
    return {section, name, claim, ours, paper, note, "", kNaN, kNaN, ""};  // no rule, no verdict
}

std::string causal2_eta_provenance(const Settings& s) {
    if (s.eta_causal2 != 0.1) return "";
    return "chosen after the first runs (2026-11-25): eta = 0.1, a value of E.1's grid, replaced the spec's causalLM2 eta = 0.3 "
           "after development runs before the first commit (129ce4a), which already had 0.1; remeasured at ae6856c, eta 0.3 "
           "leaves 27 of 192 sequences with spectral radius > 1 (max 1.64) and fails the Eq. 18 exactness check (3.6e-12 > "
           "1e-12) (experiments/lsa_gd/README.md)";
}

RegressionSequences replicate_data(const Settings& s, const Rng& root, std::size_t replicate, std::size_t examples, double mu) {
    Rng rng = root.derive(replicate);
    return icl::draw_regression_sequences(rng, s.sequences, examples, s.queries, s.dim, mu);
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double dot(const double* a, const double* b, std::size_t d) {
    double r = 0.0;
    for (std::size_t k = 0; k < d; ++k) r += a[k] * b[k];
    return r;
}

// The recursions' predictions (layers, B, T) for l = 1..layers: prefix (Prop 1/6) ŷ_t = w⁽ˡ⁾x_t at every
// position; causal and causalLM2 (Prop 2, Eq. 10/18) ỹ_j = w_j⁽ˡ⁾x_j on ICEs, ŷ_q = w_n⁽ˡ⁾x_q on queries.
std::vector<double> recursion_predictions(const RegressionSequences& data, LsaMask mask, double eta, std::size_t layers,
                                          const std::vector<double>& w0) {
    const std::size_t B = data.batch, n = data.examples, TT = data.time(), d = data.dim;
    std::vector<double> out(layers * B * TT);
    for (std::size_t b = 0; b < B; ++b) {
        const double* x = data.x.data() + b * TT * d;
        const double* y = data.y.data() + b * TT;
        if (mask == LsaMask::prefix) {
            const std::vector<double> w = icl::prefix_gd(x, y, n, d, eta, layers, w0);  // (L + 1, d)
            for (std::size_t l = 1; l <= layers; ++l)
                for (std::size_t t = 0; t < TT; ++t) out[((l - 1) * B + b) * TT + t] = dot(w.data() + l * d, x + t * d, d);
        } else {
            const std::vector<double> w = icl::causal_gd(x, y, n, d, eta, layers, w0, mask == LsaMask::causal2);  // (L + 1, n, d)
            for (std::size_t l = 1; l <= layers; ++l)
                for (std::size_t t = 0; t < TT; ++t) {
                    const std::size_t row = std::min(t, n - 1);  // ICE j uses w_j, every query w_n
                    out[((l - 1) * B + b) * TT + t] = dot(w.data() + (l * n + row) * d, x + t * d, d);
                }
        }
    }
    return out;
}

// max over positions of |a − reference| / max(1, |reference|); +inf when a is not finite.
double scaled_max_error(const std::vector<double>& a, const double* reference) {
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double e = std::abs(a[i] - reference[i]) / std::max(1.0, std::abs(reference[i]));
        worst = std::isfinite(e) ? std::max(worst, e) : kInf;
    }
    return worst;
}

// The first `queries` queries of every sequence (the ICEs unchanged): queries are isolated, so each one's
// prediction does not depend on the others (Fig. 5), and the deep runs need not carry all of them.
RegressionSequences with_queries(const RegressionSequences& data, std::size_t queries) {
    RegressionSequences out = data;
    out.queries = std::min(queries, data.queries);
    const std::size_t T = data.time(), U = out.time(), d = data.dim;
    out.x.resize(data.batch * U * d);
    out.y.resize(data.batch * U);
    for (std::size_t b = 0; b < data.batch; ++b) {
        std::copy(data.x.begin() + b * T * d, data.x.begin() + (b * T + U) * d, out.x.begin() + b * U * d);
        std::copy(data.y.begin() + b * T, data.y.begin() + b * T + U, out.y.begin() + b * U);
    }
    return out;
}

struct Trace {
    std::vector<double> ice_mse, query_mse;  // per layer 1..L
    double exactness = 0.0;                  // max over layers (NaN without a reference)
    std::vector<double> exactness_by_layer;
    std::vector<double> last_prediction;     // (B, T) after the last layer
};

// Runs the LSA in T precision; against `reference` (layers, B, T) when given.
template <class T>
Trace run_lsa(const RegressionSequences& data, LsaMask mask, double eta, std::size_t layers, const std::vector<double>& w0,
              const std::vector<double>* reference) {
    Trace trace;
    const std::size_t BT = data.batch * data.time();
    icl::lsa_forward<T>(data, mask, eta, layers, w0, [&](std::size_t l, const std::vector<T>& delta) {
        std::vector<double> prediction = icl::lsa_readout<T>(data, delta, w0);
        trace.ice_mse.push_back(icl::lsa_mse(data, prediction, true));
        trace.query_mse.push_back(icl::lsa_mse(data, prediction, false));
        const double e = reference ? scaled_max_error(prediction, reference->data() + (l - 1) * BT) : kNaN;
        trace.exactness_by_layer.push_back(e);
        trace.exactness = reference ? max_or_nan(trace.exactness, e) : kNaN;
        if (l == layers) trace.last_prediction = std::move(prediction);
    });
    return trace;
}

std::string text(double v) {
    std::ostringstream os;
    os.precision(3);
    os << v;
    return os.str();
}

// max_j over the system: prefix ρ = max_i |1 − (η/n) λ_i(XXᵀ)| (Prop 3); causal ρ = max_j |1 − (η/n)|x_j|²| (Prop 4,
// T is triangular so its eigenvalues are its diagonal). Returned per sequence.
std::vector<double> spectral_radii(const RegressionSequences& data, LsaMask mask, double eta) {
    const std::size_t n = data.examples, d = data.dim, TT = data.time();
    std::vector<double> radii;
    for (std::size_t b = 0; b < data.batch; ++b) {
        const double* x = data.x.data() + b * TT * d;
        std::vector<double> eigenvalues;
        if (mask == LsaMask::prefix)
            eigenvalues = linalg::symmetric_eigenvalues(icl::ice_gram(x, n, d), d);
        else
            for (std::size_t j = 0; j < n; ++j) eigenvalues.push_back(dot(x + j * d, x + j * d, d));
        double rho = 0.0;
        for (double lambda : eigenvalues) rho = max_or_nan(rho, std::abs(1.0 - eta / static_cast<double>(n) * lambda));
        radii.push_back(rho);
    }
    return radii;
}

}  // namespace

double best_convergent_prefix_eta(const std::vector<EtaRow>& rows) {
    const std::string prefix = icl::lsa_mask_name(LsaMask::prefix);
    double best_eta = kNaN, best_mse = kInf;
    for (const EtaRow& row : rows) {
        if (row.mask != prefix) continue;
        if (std::isnan(row.spectral_radius_max) || std::isnan(row.query_mse)) return kNaN;
        if (row.spectral_radius_max < 1.0 && row.query_mse < best_mse) {
            best_mse = row.query_mse;
            best_eta = row.eta;
        }
    }
    return best_eta;
}

void study_layers(const Settings& s, const Rng& data_root, const Rng& w0_root, Study& study) {
    const std::size_t L = s.layers;
    const std::vector<double> zero_w0;
    double exact[3] = {0, 0, 0}, fp32_error[2] = {0, 0}, prop6[3] = {0, 0, 0}, control = kInf;
    std::vector<double> prefix_l50, causal_l50, ice_l50, decades, causal2_query;
    const LsaMask masks[3] = {LsaMask::prefix, LsaMask::causal, LsaMask::causal2};
    Rng w0_rng = w0_root;
    std::vector<double> w0(s.dim);
    for (double& v : w0) v = w0_rng.normal(0.0, s.w0_std);  // Prop 6: w⁽⁰⁾ ≠ 0, one w0 for all sequences (it is a weight)

    for (std::size_t r = 0; r < s.replicates; ++r) {
        const RegressionSequences data = replicate_data(s, data_root, r, s.examples);
        for (int m = 0; m < 3; ++m) {
            const double eta = masks[m] == LsaMask::causal2 ? s.eta_causal2 : s.eta;
            const std::vector<double> reference = recursion_predictions(data, masks[m], eta, L, zero_w0);
            const Trace trace = run_lsa<double>(data, masks[m], eta, L, zero_w0, &reference);
            exact[m] = max_or_nan(exact[m], trace.exactness);
            for (std::size_t l = 1; l <= L; ++l)
                study.layers.push_back({icl::lsa_mask_name(masks[m]), static_cast<std::int64_t>(r), static_cast<std::int64_t>(l), eta,
                                        trace.ice_mse[l - 1], trace.query_mse[l - 1], trace.exactness_by_layer[l - 1]});
            if (masks[m] != LsaMask::causal2) ice_l50.push_back(trace.ice_mse.back());
            if (masks[m] == LsaMask::prefix) {
                prefix_l50.push_back(trace.query_mse.back());
                if (L >= 40) decades.push_back(std::log10(trace.query_mse[9] / trace.query_mse[39]));
            }
            if (masks[m] == LsaMask::causal) causal_l50.push_back(trace.query_mse.back());
            if (masks[m] == LsaMask::causal2) causal2_query.push_back(trace.query_mse.back());
            if (r == 0 && masks[m] == LsaMask::causal) {  // negative control: the causal LSA against the prefix recursion
                const std::vector<double> wrong = recursion_predictions(data, LsaMask::prefix, eta, L, zero_w0);
                control = run_lsa<double>(data, LsaMask::causal, eta, L, zero_w0, &wrong).exactness;
            }
            if (r == 0) {  // Prop 6 (w0 ≠ 0) and the fp32 check on replicate 0
                const std::vector<double> reference_w0 = recursion_predictions(data, masks[m], eta, L, w0);
                prop6[m] = run_lsa<double>(data, masks[m], eta, L, w0, &reference_w0).exactness;
                if (s.fp32 && m < 2) fp32_error[m] = run_lsa<float>(data, masks[m], eta, L, zero_w0, &reference).exactness;
            }
        }
    }
    auto& c = study.checks;
    const std::string exact_band = "<= 1e-12 (max |LSA - recursion| / max(1,|y|), all layers, positions, replicates)";
    c.push_back(identity(gated("A1", "prop1_prefix_lsa_equals_gd_fp64", "Prop 1: prefix LSA output = GD Eq. 3 (w0 = 0)", exact[0], 0, 1e-12, exact_band)));
    c.push_back(identity(gated("A1", "prop2_causal_lsa_equals_gd_fp64", "Prop 2: causal LSA output = GD Eq. 10", exact[1], 0, 1e-12, exact_band)));
    c.push_back(identity(gated("A1", "eq18_causal2_lsa_equals_gd_fp64", "App. D: causalLM2 LSA = Eq. 18 (eta " + text(s.eta_causal2) + ")", exact[2], 0,
                      1e-12, exact_band)));
    c.back().provenance = causal2_eta_provenance(s);
    c.push_back(identity(gated("A1", "prop6_prefix_w0_fp64", "Prop 6: w0 != 0, prefix LSA = Eq. 3 from w0", prop6[0], 0, 1e-12, "<= 1e-12, replicate 0")));
    c.push_back(identity(gated("A1", "prop6_causal_w0_fp64", "Prop 6 read for causal: w0 != 0, causal LSA = Eq. 10 from w0", prop6[1], 0, 1e-12,
                      "<= 1e-12, replicate 0")));
    c.push_back(identity(gated("A1", "prop6_causal2_w0_fp64", "Prop 6 read for causalLM2: w0 != 0", prop6[2], 0, 1e-12, "<= 1e-12, replicate 0")));
    c.back().provenance = causal2_eta_provenance(s);
    if (s.fp32) {
        c.push_back(identity(gated("A1", "prop1_prefix_fp32", "Prop 1 in fp32", fp32_error[0], 0, 1e-4, "<= 1e-4, replicate 0")));
        c.push_back(identity(gated("A1", "prop2_causal_fp32", "Prop 2 in fp32", fp32_error[1], 0, 1e-4, "<= 1e-4, replicate 0")));
    }
    c.push_back(identity(gated("A1", "control_causal_lsa_vs_prefix_gd", "negative control: causal LSA vs the prefix recursion must differ", control, 1e-4,
                      kInf, ">= 1e-4 (the exactness check can fail)")));
    if (L >= 40 && s.layers == 50) {
        c.push_back(gated("A2", "fig2_prefix_query_mse_l50_max", "Fig. 2 left: prefix query MSE falls log-linearly (~1e-4 by l = 50)",
                          max_of(prefix_l50), 0, 1e-3, "<= 1e-3, every replicate"));
        c.push_back(gated("A2", "fig2_ice_mse_l50_max", "Fig. 2: ICE MSE of both masks ~1e-5 by l = 50", max_of(ice_l50), 0, 1e-4,
                          "<= 1e-4, both masks, every replicate"));
        c.push_back(quoting(gated("A2", "fig2_causal_query_mse_l50_min", "Fig. 2 middle: causal query MSE 'stuck above the 1e-1 level'",
                                  min_of(causal_l50), 0.1, 1.0, "in [0.1, 1.0], every replicate")));
        // With one replicate the max is the min: one number, one claim (issue 45); reported beside it then.
        if (causal_l50.size() > 1)
            c.push_back(gated("A2", "fig2_causal_query_mse_l50_max", "Fig. 2 middle: causal query MSE plateau (upper end)",
                              max_of(causal_l50), 0.1, 1.0, "in [0.1, 1.0], every replicate"));
        else
            c.push_back(reported("A2", "fig2_causal_query_mse_l50_max", "Fig. 2 middle: causal query MSE plateau (upper end)",
                                 max_of(causal_l50), "one replicate: equals fig2_causal_query_mse_l50_min, judged there"));
        double ratio = kInf;
        for (std::size_t r = 0; r < causal_l50.size(); ++r) ratio = min_or_nan(ratio, causal_l50[r] / prefix_l50[r]);
        // Reported, not judged (second audit of issue 45): >= 100 follows from the two gated rows above (causal >= 0.1 and
        // prefix <= 1e-3 in every replicate), so a claim on it would count the same evidence twice.
        c.push_back(reported("A2", "fig2_causal_over_prefix_l50_min", "causal query MSE >> prefix at l = 50", ratio,
                             "implied by fig2_causal_query_mse_l50_min >= 0.1 and fig2_prefix_query_mse_l50_max <= 1e-3: not judged again"));
        c.push_back(gated("A2", "fig2_prefix_decades_l10_to_l40_min", "prefix query MSE decays log-linearly",
                          min_of(decades), 2, kInf, ">= 2 decades from l = 10 to 40, every replicate"));
        c.push_back(reported("A2", "causal2_query_mse_l50_max", "App. D: causalLM2 layer dynamics at its eta", max_of(causal2_query),
                             "eta_causal2 = " + text(s.eta_causal2) + "; not a paper figure"));
    }

    // A3: the η ablation of E.1, every replicate.
    double causal_increases = 0;  // NaN once one causal ICE curve has a NaN (count_increases): "= 0" never passes on it
    std::vector<double> prefix_32, causal_32;  // query MSE at l = L and eta = 3.2, per swept replicate
    std::vector<double> causal_at_eta;         // the same at eta = s.eta (the grid's 1.6), per swept replicate
    for (std::size_t r = 0; r < std::min(s.replicates, s.eta_sweep_replicates); ++r) {
        const RegressionSequences data = replicate_data(s, data_root, r, s.examples);
        std::vector<EtaRow> rows;  // this replicate's
        for (double eta : s.eta_sweep)
            for (LsaMask mask : {LsaMask::prefix, LsaMask::causal}) {
                const Trace trace = run_lsa<double>(data, mask, eta, L, zero_w0, nullptr);
                const std::vector<double> radii = spectral_radii(data, mask, eta);
                EtaRow row{icl::lsa_mask_name(mask), static_cast<std::int64_t>(r), eta, trace.ice_mse.back(), trace.query_mse.back(),
                           max_of(radii), min_of(radii), 0};
                const double increases = count_increases(trace.ice_mse);  // layers 1..L: the L - 1 steps l - 1 -> l
                row.ice_mse_increases = std::isnan(increases) ? -1 : static_cast<std::int64_t>(increases);  // -1: a NaN ICE MSE
                if (mask == LsaMask::causal) causal_increases += increases;
                if (eta == 3.2) (mask == LsaMask::prefix ? prefix_32 : causal_32).push_back(row.query_mse);
                if (eta == s.eta && mask == LsaMask::causal) causal_at_eta.push_back(row.query_mse);
                rows.push_back(row);
                study.etas.push_back(row);
            }
        const double best_eta = best_convergent_prefix_eta(rows);
        // Its value is the argmin over the grid's convergent etas, and no pick by chance (a "uniform pick among the 6"
        // rate was printed here: only 5 have rho < 1). While rho < 1 the prefix query MSE at l = L falls as eta grows
        // (the slowest mode's rate 1 - eta lambda_min / n shrinks), so the largest convergent eta of the doubling grid
        // wins (1.6; 3.2 has rho ~2.2). What the data can fail is where rho crosses 1 (eta < 2n / lambda_max at 1.6,
        // not at 3.2) and the fall of the MSE with eta below it.
        c.push_back(gated("A3", "eta_best_convergent_prefix_r" + std::to_string(r), "E.1: eta = 1.6 'converges the fastest without divergence'",
                          best_eta, 1.6, 1.6,
                          "= 1.6: per seed, the argmin of the prefix query MSE at l = L over the etas of the " +
                              std::to_string(s.eta_sweep.size()) +
                              "-eta doubling grid with spectral radius < 1. Not a pick by chance, no coin's rate: below rho = 1 "
                              "the MSE falls as eta grows, so the largest convergent eta wins by construction; the claim tests "
                              "that the convergence edge eta = 2n / lambda_max lies between 1.6 and 3.2 (rho(1.6) < 1 < "
                              "rho(3.2)) and that the MSE falls with eta below it, in every seed",
                          1.6));
    }
    const bool has32 = std::count(s.eta_sweep.begin(), s.eta_sweep.end(), 3.2) > 0;
    if (has32) {  // min_of / max_of keep a NaN loss: a NaN never passes "causal does not diverge" (std::max from 0 did)
        c.push_back(gated("A3", "eta3.2_prefix_query_mse_l50_min", "E.1: larger eta diverges (prefix)", min_of(prefix_32), 1e3, kInf,
                          "> 1e3 at l = L, every swept replicate"));
        // Not the MSE itself: at l = L it is Prop 4's stationary MSE, which does not depend on eta, so it equals
        // fig2_causal_query_mse_l50_min (eta 1.6) to 3-4 digits and would judge that measurement twice (issue 45).
        // Its ratio to eta 1.6's is what "does not diverge at 3.2" adds: the largest factor from 1 over the replicates.
        if (causal_at_eta.size() == causal_32.size()) {
            double factor = 1.0;
            for (std::size_t r = 0; r < causal_32.size(); ++r) {
                const double ratio = causal_32[r] / causal_at_eta[r];
                factor = max_or_nan(factor, max_or_nan(ratio, 1.0 / ratio));
            }
            c.push_back(gated("A3", "eta3.2_over_eta" + text(s.eta) + "_causal_query_mse_l50",
                              "causal does not diverge at eta = 3.2: its query MSE at l = L is eta " + text(s.eta) +
                                  "'s (Prop 4: the stationary MSE does not depend on eta)",
                              factor, 1.0, 1.5, "within x1.5: max(ratio, 1/ratio) of the two MSEs at l = L, every swept replicate"));
            c.back().provenance = "chosen after the first runs (2026-11-30): it was the MSE at eta 3.2 (band [0, 1]), equal to "
                                  "003-A2 fig2_causal_query_mse_l50_min to 3-4 digits in every seed (a second audit: one "
                                  "measurement counted twice); now its ratio to eta 1.6's, with the x1.5 band of "
                                  "fig2r_n40_stationary_over_layer_plateau";
        } else {
            c.push_back(reported("A3", "eta3.2_causal_query_mse_l50_max", "causal query MSE at eta = 3.2", max_of(causal_32),
                                 "eta " + text(s.eta) + " is not in the grid: no ratio to judge"));
        }
    }
    c.push_back(gated("A3", "causal_ice_mse_increases", "causal ICE MSE decreases monotonically in l for every eta",
                      causal_increases, 0, 0, "= 0 increases over all eta, layers, swept replicates"));

    // A4 through the LSA itself: at depth convergence_layers the causal query prediction is the stationary w*_n·x_q
    // (Prop 4) and the prefix one the least-squares w*·x_q (Prop 3), replicate 0.
    const RegressionSequences data = with_queries(replicate_data(s, data_root, 0, s.examples), s.deep_queries);
    const std::size_t n = data.examples, d = data.dim, TT = data.time();
    for (LsaMask mask : {LsaMask::causal, LsaMask::prefix}) {
        const Trace deep = run_lsa<double>(data, mask, s.eta, s.convergence_layers, zero_w0, nullptr);
        std::vector<double> stationary(data.batch * TT);
        for (std::size_t b = 0; b < data.batch; ++b) {
            const double* x = data.x.data() + b * TT * d;
            const double* y = data.y.data() + b * TT;
            std::vector<double> w;
            if (mask == LsaMask::causal) {
                const std::vector<double> a = icl::causal_stationary_coefficients(x, y, n, d, false);
                const std::vector<double> all = icl::causal_stationary_weights(a, x, n, d, false);
                w.assign(all.begin() + (n - 1) * d, all.begin() + n * d);  // w*_n
            } else {
                w = icl::prefix_stationary_weights(x, y, n, d);
            }
            for (std::size_t t = 0; t < TT; ++t) stationary[b * TT + t] = dot(w.data(), x + t * d, d);
        }
        std::vector<double> lsa_queries, stationary_queries;
        for (std::size_t bt = 0; bt < stationary.size(); ++bt)
            if (bt % TT >= n) {
                lsa_queries.push_back(deep.last_prediction[bt]);
                stationary_queries.push_back(stationary[bt]);
            }
        const std::string depth = std::to_string(s.convergence_layers);
        if (mask == LsaMask::causal)
            c.push_back(gated("A4", "prop4_causal_lsa_l" + depth + "_vs_stationary", "Prop 4: causal LSA converges to the stationary w*_n x_q",
                              scaled_max_error(lsa_queries, stationary_queries.data()), 0, 1e-8, "<= 1e-8 (max over the first " + std::to_string(data.queries) + " queries, replicate 0)"));
        else
            c.push_back(gated("A4", "prop3_prefix_lsa_l" + depth + "_vs_least_squares", "Prop 3: prefix LSA converges to least squares w* x_q",
                              scaled_max_error(lsa_queries, stationary_queries.data()), 0, 1e-8, "<= 1e-8 (max over the first " + std::to_string(data.queries) + " queries, replicate 0)"));
    }
}

}  // namespace iclab::experiments::lsa_study
