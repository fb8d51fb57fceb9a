// Paper 004 (Ren & Liu): Theorem 1 (Eq. 9-12) — kernel attention equals GD on f(x) = W φ(x) with the contrastive
// loss — with the N_CL-epoch schedule of §5.1 / App. A.3, the exact-softmax kernel form (spec §3.4), and the exact
// duals of the regularized (Eq. 14), augmented (Eq. 16) and negative-sample (Eq. 17-18) attentions (spec §7).
// Attention side: nn::linear_attention_forward (normalized, eps = 0) or nn::softmax_attention_forward; the
// variants modify its attention weights a_j (read from the layer's cache). GD side: FeatureLinearModel or
// KernelLinearModel with the contrastive_dot loss (and frobenius_l2) and SGD.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/gd_dual.hpp"
#include "framework/icl/gd_dual_detail.hpp"
#include "framework/icl/gd_reference.hpp"
#include "framework/nn/layers.hpp"
#include "framework/nn/softmax_attention.hpp"

namespace iclab::icl {

using namespace detail;

namespace {

constexpr std::size_t kWidth = 12, kInputs = 11;  // C = d_x + d_y (paper 004 §5.1)

// GELU(G z) row-wise (Eq. 16's g), z (T, C).
template <class T>
std::vector<T> augment(const std::vector<T>& z, std::size_t rows, const std::vector<T>& g) {
    const auto a = project(z, rows, g, kWidth, kWidth);
    std::vector<T> out(a.size());
    nn::gelu_forward(out.data(), a.data(), a.size());
    return out;
}

// What the GD side of one instance needs: training inputs φ(x_i) (or x_i for the kernel form), targets y_i
// (i = 1..N+1, the last builds W_0) and the normalizer D = Σ_{j≤N+1} φ(k_j)ᵀφ(q) (A7, A14: it includes the
// query's own key and depends on q).
template <class T>
struct DualData {
    std::vector<T> inputs, targets, test;  // (T, F), (T, C), (F)
    std::size_t features = 0;
    double normalizer = 0.0;
};

struct GdRun {
    bool with_w0 = true, full_batch = false, softmax = false;
    double normalizer = 0.0, eta_loss = 1.0, alpha = 0.0;
    double l2_batch1 = 0.0;  // batch-1 steps: the l2 coefficient of frobenius_l2 per step (spec §8 splits)
    std::size_t epochs = 1;
    std::vector<double>* steps_y = nullptr;  // batch-1 runs: the y-slot of W^{(s)} φ(q) for s = 0..N·N_CL
};

// Theorem 1's GD side (Eq. 9-11): W_0 = D^{-1} y_{N+1} φ(x_{N+1})ᵀ; per-sample loss −(1/(η D)) y_iᵀ W φ(x_i); batch-1
// SGD with η_gd = η/N_CL over i = 1..N for N_CL epochs (or one full-batch step of lr η, with the regularizer
// (α/(2η))‖W‖²_F of Eq. 13). Returns W φ(q) after every epoch (index 0: W_0 φ(q)).
template <class T>
std::vector<std::vector<T>> run_gd(const DualData<T>& d, std::size_t N, const GdRun& r) {
    const std::size_t F = d.features, C = kWidth;
    ReferenceLoss loss;
    loss.kind = ReferenceLoss::Kind::contrastive_dot;
    loss.scale = 1.0 / (r.eta_loss * r.normalizer);
    std::vector<T> w0_coefficient(C);
    for (std::size_t c = 0; c < C; ++c) w0_coefficient[c] = r.with_w0 ? static_cast<T>(d.targets[N * C + c] / r.normalizer) : T(0);
    std::vector<std::vector<T>> trajectory;
    std::vector<T> y(C);
    if (r.softmax) {
        ICLAB_CHECK(!r.full_batch && r.alpha == 0.0, "the kernel form takes batch-1 contrastive steps only");
        KernelLinearModel<T> model(F, C);
        model.add_centre(d.inputs.data() + N * F, w0_coefficient.data());  // W_0: centre k_{N+1}
        model.predict(y.data(), d.test.data());
        trajectory.push_back(y);
        for (std::size_t e = 0; e < r.epochs; ++e) {
            for (std::size_t i = 0; i < N; ++i)
                model.step(d.inputs.data() + i * F, d.targets.data() + i * C, loss, r.eta_loss / r.epochs);
            model.predict(y.data(), d.test.data());
            trajectory.push_back(y);
        }
        return trajectory;
    }
    FeatureLinearModel<T> model(F, C);
    for (std::size_t f = 0; f < F; ++f)  // weight (F, C) = W_0ᵀ = φ(x_{N+1}) (y_{N+1}/D)ᵀ
        for (std::size_t c = 0; c < C; ++c) model.weight()[f * C + c] = d.inputs[N * F + f] * w0_coefficient[c];
    model.predict(y.data(), d.test.data(), 1);
    trajectory.push_back(y);
    if (r.steps_y != nullptr) r.steps_y->assign(1, static_cast<double>(y[C - 1]));
    if (r.full_batch) {
        loss.l2 = r.alpha / r.eta_loss;
        model.step(d.inputs.data(), d.targets.data(), N, loss, r.eta_loss);
        model.predict(y.data(), d.test.data(), 1);
        trajectory.push_back(y);
        return trajectory;
    }
    loss.l2 = r.l2_batch1;
    for (std::size_t e = 0; e < r.epochs; ++e) {
        for (std::size_t i = 0; i < N; ++i) {
            model.step(d.inputs.data() + i * F, d.targets.data() + i * C, 1, loss, r.eta_loss / r.epochs);
            if (r.steps_y == nullptr) continue;
            model.predict(y.data(), d.test.data(), 1);  // the per-step prediction recorder (spec §3.2)
            r.steps_y->push_back(static_cast<double>(y[C - 1]));
        }
        model.predict(y.data(), d.test.data(), 1);
        trajectory.push_back(y);
    }
    return trajectory;
}

}  // namespace

template <class T>
Thm1004Result check_004_thm1(const Thm1004Setting& s, Rng& rng) {
    const std::size_t C = kWidth, N = s.demos, TT = N + 1;
    const bool performer = !s.softmax && s.feature_map == nn::FeatureMap::performer;
    const std::size_t F = s.softmax ? C : performer ? s.features : C;
    // Instance: one task w ~ N(0, I), x ~ U(−1, 1)^11 (A10), tokens h_j = [x_j; y_j], h_{N+1} = [x_{N+1}; 0] (A11);
    // W_Q, W_K, W_V ~ U(±1/√C); G ~ U(±1/√C); ω ~ N(0, I) (performer).
    const auto w = normal_draws<T>(kInputs, rng, 1.0);
    std::vector<T> h(TT * C, T(0));
    double y_true = 0.0;
    for (std::size_t j = 0; j < TT; ++j) {
        double y = 0.0;
        for (std::size_t d = 0; d < kInputs; ++d) {
            h[j * C + d] = static_cast<T>(rng.uniform(-1.0, 1.0));
            y += static_cast<double>(w[d]) * h[j * C + d];
        }
        if (j < N) h[j * C + kInputs] = static_cast<T>(y);
        else y_true = y;
    }
    const double bound = 1.0 / std::sqrt(static_cast<double>(C));
    Dual004Weights<T> weights;
    weights.w_qkv = uniform_draws<T>(C * 3 * C, rng, -bound, bound);
    weights.g1 = uniform_draws<T>(C * C, rng, -bound, bound);
    weights.g2 = uniform_draws<T>(C * C, rng, -bound, bound);
    weights.g2b = uniform_draws<T>(C * C, rng, -bound, bound);
    weights.random = performer ? normal_draws<T>(C * F, rng, 1.0) : std::vector<T>();
    weights.scale = std::pow(static_cast<double>(C), -0.25);
    Thm1004Result result = dual_004(h, weights, s, nullptr);
    result.y_true = y_true;
    return result;
}

template <class T>
Thm1004Result dual_004(const std::vector<T>& h, const Dual004Weights<T>& weights, const Thm1004Setting& s,
                       std::vector<double>* trajectory_y) {
    const std::size_t C = kWidth, N = s.demos, TT = N + 1;
    const bool performer = !s.softmax && s.feature_map == nn::FeatureMap::performer;
    const std::size_t F = s.softmax ? C : performer ? s.features : C;
    const bool reg = s.variant == "reg", aug = s.variant == "aug", neg = s.variant == "neg";
    ICLAB_CHECK(s.variant == "none" || reg || aug || neg, "unknown variant '" << s.variant << "'");
    const bool reg_full = reg && s.reg_split == "full_batch";
    ICLAB_CHECK(!reg || reg_full || s.reg_split == "per_sample" || s.reg_split == "per_step", "unknown reg_split '" << s.reg_split << "'");
    ICLAB_CHECK(!reg_full || s.epochs == 1, "the regularized dual (Eq. 14) is exact for one full-batch step (N_CL = 1) only");
    ICLAB_CHECK(!neg || (s.negatives >= 1 && s.negatives < N), "negatives k must lie in [1, N)");
    ICLAB_CHECK(h.size() == TT * C && weights.w_qkv.size() == C * 3 * C && (!performer || weights.random.size() == C * F),
                "dual_004: tokens, weights or random features of the wrong size");
    const auto& w_qkv = weights.w_qkv;
    const auto& g1 = weights.g1;
    const auto& g2 = weights.g2;
    const auto& g2b = weights.g2b;
    const auto& random = weights.random;
    const auto params = feature_params(s.softmax ? nn::FeatureMap::identity : s.feature_map, random, F);

    // q = s W_Q h_{N+1}, k_j = s W_K h_j, v_j = W_V h_j with s = C^{-1/4} (spec §0.3); Eq. 16: k̃ = s g2(W_K h),
    // ṽ = g1(W_V h), queries not augmented.
    const T scale = static_cast<T>(weights.scale);
    const auto raw = project(h, TT, w_qkv, C, 3 * C);
    auto q = block(raw, 3 * C, 0, TT, 0, C), k = block(raw, 3 * C, 0, TT, C, C), v = block(raw, 3 * C, 0, TT, 2 * C, C);
    auto k_aug = k, v_aug = v;
    if (aug && s.aug_g2) k_aug = augment(k, TT, g2);
    if (aug && s.aug_g2plus) k_aug = augment(augment(k, TT, g2b), TT, g2);  // g2⁺(z) = GELU(G_2 GELU(G_1 z)), G_1 = g2b
    if (aug && s.aug_g1) v_aug = augment(v, TT, g1);
    for (auto& x : q) x *= scale;
    for (auto& x : k) x *= scale;
    for (auto& x : k_aug) x *= scale;
    std::vector<T> qkv(TT * 3 * C);
    for (std::size_t j = 0; j < TT; ++j)
        for (std::size_t c = 0; c < C; ++c) {
            qkv[j * 3 * C + c] = q[j * C + c];
            qkv[j * 3 * C + C + c] = k_aug[j * C + c];
            qkv[j * 3 * C + 2 * C + c] = v_aug[j * C + c];
        }

    // Attention side: ĥ_{N+1} = Σ_{j≤N+1} a_j v_j (Eq. 2 with the normalizer over all N+1 keys), and a_j.
    std::vector<T> h_hat(C), a(TT);
    if (s.softmax) {
        nn::AttentionShape shape = shape_of(TT, C, 1, nn::FeatureMap::identity, 0);
        nn::SoftmaxAttentionOptions<T> options;
        options.scale = 1.0;  // the temperature is in q and k
        nn::SoftmaxAttentionCache<T> cache;
        std::vector<T> out(TT * C);
        nn::softmax_attention_forward(out.data(), cache, qkv.data(), shape, options);
        std::copy(out.begin() + N * C, out.end(), h_hat.begin());
        std::copy(cache.probs.begin() + N * TT, cache.probs.begin() + (N + 1) * TT, a.begin());
    } else {
        nn::LinearAttentionCache<T> cache;
        const auto out = attention(qkv, TT, C, 1, s.feature_map, random, F, true, nn::AttentionMask(), cache);
        std::copy(out.begin() + N * C, out.end(), h_hat.begin());
        for (std::size_t j = 0; j < TT; ++j) {
            T dot = T(0);
            for (std::size_t f = 0; f < F; ++f) dot += cache.phi_k[j * F + f] * cache.phi_q[N * F + f];
            a[j] = dot / cache.den[N];
        }
    }
    // The variants' attention (spec §7) from the layer's a_j: Eq. 14 scales the self term by (1 − α); Eq. 17 moves
    // β/k off each of the k least-attended keys j ≠ N+1 (ties: smaller index) and, with renorm, β/(T − k) onto the rest.
    std::vector<T> h_att = h_hat, modification(TT, T(0));
    std::vector<std::size_t> negatives;
    if (neg) {
        std::vector<std::size_t> order(N);
        std::iota(order.begin(), order.end(), std::size_t(0));
        std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return a[i] < a[j]; });
        negatives.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(s.negatives));
        for (std::size_t j = 0; j < TT; ++j) modification[j] = s.renorm ? static_cast<T>(s.beta / (TT - s.negatives)) : T(0);
        for (std::size_t j : negatives) modification[j] = static_cast<T>(-s.beta / s.negatives);
    }
    if (reg) modification[N] = static_cast<T>(-s.alpha) * a[N];
    for (std::size_t j = 0; j < TT; ++j)
        for (std::size_t c = 0; c < C; ++c) h_att[c] += modification[j] * v_aug[j * C + c];

    // GD side from the same φ values (rule 3).
    auto dual_data = [&](const std::vector<T>& keys, const std::vector<T>& values) {
        DualData<T> d;
        d.features = F;
        d.inputs = s.softmax ? keys : features_of(keys, TT, C, params);
        d.test = s.softmax ? block(q, C, N, 1, 0, C) : features_of(block(q, C, N, 1, 0, C), 1, C, params);
        for (std::size_t j = 0; j < TT; ++j) {
            double dot = 0.0;
            for (std::size_t f = 0; f < F; ++f) dot += static_cast<double>(d.inputs[j * F + f]) * d.test[f];
            d.normalizer += s.softmax ? std::exp(dot) : dot;
        }
        d.targets = values;
        return d;
    };
    DualData<T> dual = dual_data(k_aug, v_aug);
    if (neg) {  // Eq. 18 with N(i) := S for every i: y_i = v_i − (β/k) Σ_{j∈S} v_j [+ (β/(T−k)) Σ_{j∉S} v_j]
        std::vector<T> shift(C, T(0));
        for (std::size_t j = 0; j < TT; ++j)
            for (std::size_t c = 0; c < C; ++c) shift[c] += modification[j] * v_aug[j * C + c];
        for (std::size_t j = 0; j < TT; ++j)
            for (std::size_t c = 0; c < C; ++c) dual.targets[j * C + c] += shift[c];
    }
    GdRun run;
    run.softmax = s.softmax;
    run.normalizer = dual.normalizer;
    run.eta_loss = s.eta_loss;
    run.epochs = s.epochs;
    run.full_batch = reg_full;
    run.alpha = s.alpha;
    // spec §8: per_sample ℓ_i + (α/(2ηN))‖W‖² (one epoch sums to Eq. 13), per_step the full α/(2η) each step
    if (reg && !reg_full) run.l2_batch1 = s.alpha / (s.eta_loss * (s.reg_split == "per_sample" ? static_cast<double>(N) : 1.0));
    run.steps_y = trajectory_y;
    const auto trajectory = run_gd(dual, N, run);
    run.steps_y = nullptr;  // the other runs below do not record
    Thm1004Result result;
    result.err = dual_error(h_att.data(), trajectory.back().data(), C);
    // §3.3.2: y^{(eN)} = W_0φ(q) + (e/N_CL)(ĥ − W_0φ(q)) at every epoch boundary (batch-1 runs).
    for (std::size_t e = 0; e < trajectory.size() && !reg; ++e) {
        std::vector<T> line(C);
        for (std::size_t c = 0; c < C; ++c)
            line[c] = trajectory[0][c] + static_cast<T>(static_cast<double>(e) / s.epochs) * (h_att[c] - trajectory[0][c]);
        result.err_epochs = max_or_nan(result.err_epochs, dual_error(line.data(), trajectory[e].data(), C));
    }
    for (double eta : {1e-2, 1e2}) {  // §3.3.3: η cancels between Eq. 9 and Eq. 10
        GdRun other = run;
        other.eta_loss = eta;
        other.l2_batch1 = run.l2_batch1 * s.eta_loss / eta;  // the regularizer's α/η (Eq. 13) scales with η too
        result.err_eta = max_or_nan(result.err_eta, dual_error(trajectory.back().data(), run_gd(dual, N, other).back().data(), C));
    }
    if (!s.softmax && (!reg || !reg_full)) {  // §3.3.4: one full-batch step with η_gd = η_loss (reg: Eq. 13, = Eq. 14)
        GdRun full = run;
        full.full_batch = true;
        full.epochs = 1;
        result.err_full_batch = dual_error(h_att.data(), run_gd(dual, N, full).back().data(), C);
    } else {
        result.err_full_batch = -1.0;
    }
    // Negative controls (§3.5, §7).
    double v_norm = 0.0;
    for (std::size_t c = 0; c < C; ++c) v_norm = std::max(v_norm, std::abs(static_cast<double>(v_aug[N * C + c])));
    if (a[N] * v_norm >= 1e-3) {
        GdRun no_w0 = run;
        no_w0.with_w0 = false;
        result.err_ctrl_w0 = dual_error(h_att.data(), run_gd(dual, N, no_w0).back().data(), C);
    } else {
        result.err_ctrl_w0 = -1.0;
    }
    GdRun keys_only = run;  // D over keys 1..N only: drop the query's own key
    double self_score = 0.0;
    for (std::size_t f = 0; f < F; ++f) self_score += static_cast<double>(dual.inputs[N * F + f]) * dual.test[f];
    keys_only.normalizer = dual.normalizer - (s.softmax ? std::exp(self_score) : self_score);
    result.err_ctrl_d = dual_error(h_att.data(), run_gd(dual, N, keys_only).back().data(), C);
    if (reg || aug || neg) {  // the base-model dual (unmodified k, v, y_i and W_0, no regularizer) against the variant
        GdRun base = run;
        base.alpha = 0.0;
        DualData<T> plain = dual_data(k, v);
        base.normalizer = plain.normalizer;
        result.err_ctrl_base = dual_error(h_att.data(), run_gd(plain, N, base).back().data(), C);
        // Eq. 14 moves the output by α a_{N+1} v_{N+1} only: below 1e-3 the control cannot fail (the §3.5 rule).
        if (reg && std::abs(s.alpha) * a[N] * v_norm < 1e-3) result.err_ctrl_base = -1.0;
    }
    if (reg && !reg_full && !s.softmax) {  // spec §8 closed form, ρ = 1 − η_gd·l2 per step, S = N·N_CL
        const double rho = 1.0 - (s.eta_loss / s.epochs) * run.l2_batch1;
        const std::size_t steps = N * s.epochs;
        auto score = [&](std::size_t j) {
            double dot = 0.0;
            for (std::size_t f = 0; f < F; ++f) dot += static_cast<double>(dual.inputs[j * F + f]) * dual.test[f];
            return dot;
        };
        std::vector<T> closed(C);
        const double w0 = std::pow(rho, static_cast<double>(steps)) * score(N) / dual.normalizer;
        for (std::size_t c = 0; c < C; ++c) {
            double sum = w0 * static_cast<double>(dual.targets[N * C + c]);
            for (std::size_t step = 1; step <= steps; ++step) {
                const std::size_t i = (step - 1) % N;
                sum += std::pow(rho, static_cast<double>(steps - step)) * static_cast<double>(dual.targets[i * C + c]) * score(i) /
                       (static_cast<double>(s.epochs) * dual.normalizer);
            }
            closed[c] = static_cast<T>(sum);
        }
        result.err_closed_form = dual_error(closed.data(), trajectory.back().data(), C);
    }
    if (reg) {  // Eq. 15 as printed: ĥ − α v_{N+1}; it differs from Eq. 14 by −α(1 − a_{N+1}) v_{N+1} (typo A8)
        std::vector<T> eq15(C), predicted(C);
        for (std::size_t c = 0; c < C; ++c) {
            eq15[c] = h_hat[c] - static_cast<T>(s.alpha) * v_aug[N * C + c];
            predicted[c] = h_att[c] - static_cast<T>(s.alpha) * (T(1) - a[N]) * v_aug[N * C + c];
        }
        result.eq15_vs_gd = dual_error(eq15.data(), trajectory.back().data(), C);
        result.eq15_minus_eq14_residual = dual_error(eq15.data(), predicted.data(), C);
        result.y_tf_eq15 = static_cast<double>(eq15[C - 1]);
    }
    result.y_tf = static_cast<double>(h_att[C - 1]);
    result.y_cl = static_cast<double>(trajectory.back()[C - 1]);
    return result;
}

template Thm1004Result check_004_thm1<float>(const Thm1004Setting&, Rng&);
template Thm1004Result dual_004<float>(const std::vector<float>&, const Dual004Weights<float>&, const Thm1004Setting&,
                                       std::vector<double>*);
template Thm1004Result dual_004<double>(const std::vector<double>&, const Dual004Weights<double>&, const Thm1004Setting&,
                                        std::vector<double>*);
template Thm1004Result check_004_thm1<double>(const Thm1004Setting&, Rng&);

}  // namespace iclab::icl
