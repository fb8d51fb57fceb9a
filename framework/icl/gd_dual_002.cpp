// Paper 002 (poster): Theorem 1 (a prompt equals one GD step) and Algorithm 1 / Theorem 2 (a deep model equals
// greedy layer-wise GD), spec §1-2. Attention side: nn::linear_attention_forward (normalizer off, full mask, no
// RoPE). GD side: FeatureLinearModel (Linear + mse_half_mean + SGD).
#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/gd_dual.hpp"
#include "framework/icl/gd_dual_detail.hpp"
#include "framework/icl/gd_reference.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/layers.hpp"

namespace iclab::icl {

using namespace detail;

template <class T>
double dual_error(const T* attention, const T* gd, std::size_t n) {
    double diff = 0.0, scale = 1.0;
    for (std::size_t i = 0; i < n; ++i) {
        diff = max_or_nan(diff, std::abs(static_cast<double>(attention[i]) - static_cast<double>(gd[i])));
        scale = max_or_nan(scale, std::abs(static_cast<double>(attention[i])));
    }
    // NaN too (max_or_nan keeps it; std::max scored an all-NaN output 0): a dual check never passes on one
    ICLAB_CHECK(std::isfinite(diff) && std::isfinite(scale), "non-finite outputs in a dual check");
    return diff / scale;
}

namespace {
// Performer features at the softmax temperature, φ(x) = exp(ωᵀ(s x) − ‖s x‖²/2)/√R with s = D^{-1/4} (spec §0.3):
// with s = 1 and unit-variance k, q of width 32 the features spread over exp(N(0, 32)) and the prompt's terms
// vanished against W_0's (control errors 1e-24, measured); identity, elu+1 and ReLU ignore s.
double performer_scale(std::size_t D) { return std::pow(static_cast<double>(D), -0.25); }

// The conditioning of one Theorem-1 step: y_i adds W_0 x_i and the gradient's residual W_0 x_i − y_i removes it
// again, so the step carries the term (η/m) Σ_i (W_0 x_i) x_iᵀ φ(q_t) that cancels. Its size, max over queries t,
// divided by the output scale max(1, max|S|): the GD side's rounding is about eps·κ (spec §0.2's "ill-conditioned
// corners"; large for elu+1 at C = 32, where W_0 x_i ≈ 90 |v_i|, and for heavy-tailed performer features).
template <class T>
double cancelled_size(const std::vector<T>& w0x, const std::vector<T>& x, const std::vector<T>& phi_q, std::size_t m,
                      std::size_t queries, std::size_t F, std::size_t width, double eta_over_m) {
    double worst = 0.0;
    for (std::size_t t = 0; t < queries; ++t) {
        double sum = 0.0;
        for (std::size_t i = 0; i < m; ++i) {
            double dot = 0.0, size = 0.0;
            for (std::size_t f = 0; f < F; ++f) dot += static_cast<double>(x[i * F + f]) * phi_q[t * F + f];
            for (std::size_t c = 0; c < width; ++c) size = max_or_nan(size, std::abs(static_cast<double>(w0x[i * width + c])));
            sum += size * std::abs(dot);
        }
        worst = max_or_nan(worst, eta_over_m * sum);
    }
    return worst;
}

template <class T>
double output_scale(const std::vector<T>& out) {
    double scale = 1.0;
    for (T value : out) scale = max_or_nan(scale, std::abs(static_cast<double>(value)));
    return scale;
}

nn::AttentionMask full_mask() {
    nn::AttentionMask mask;
    mask.kind = nn::MaskKind::full;
    return mask;
}
}  // namespace

template <class T>
Thm1Result check_002_thm1(const Thm1Setting& s, Rng& rng) {
    const std::size_t C = s.width, m = s.prompt, n = s.input, total = m + n + 1;
    const bool performer = s.feature_map == nn::FeatureMap::performer;
    const std::size_t R = performer ? s.features : C;
    const double eta = s.eta_over_m * static_cast<double>(m);
    const auto w_qkv = normal_draws<T>(C * 3 * C, rng, 1.0 / std::sqrt(static_cast<double>(C)));  // (C, 3C) [W_Q|W_K|W_V]
    const auto tokens = normal_draws<T>(total * C, rng, 1.0);  // rows [0, m): X'; [m, m+n): X; m+n: a fresh query p
    const auto random = performer ? normal_draws<T>(C * R, rng, 1.0) : std::vector<T>();
    const double ps = performer_scale(C);
    const auto params = feature_params(s.feature_map, random, R, ps);
    const auto qkv = project(tokens, total, w_qkv, C, 3 * C);
    Thm1Result result;

    // Attention side: S_0 = F_0([X'; X], φ(W_Q p)) = Σ_{t∈X'∪X} (W_V t) φ(W_K t)ᵀ φ(W_Q p) for p ∈ X and the fresh
    // query (isolated: it sees [X'; X] and is seen by nobody).
    nn::AttentionMask mask = full_mask();
    mask.prefix_length = m + n;
    mask.isolate_queries = true;
    mask.query_self = false;
    nn::LinearAttentionCache<T> cache;
    const auto out = attention(qkv, total, C, 1, s.feature_map, random, R, false, mask, cache, ps);
    const auto s0 = block(out, C, m, n + 1, 0, C);

    // W_0 = W_base([X]) = Σ_{t∈X} (W_V t) φ(W_K t)ᵀ: the attention's own state over the input tokens only.
    const auto qkv_x = block(qkv, 3 * C, m, n, 0, 3 * C);
    nn::LinearAttentionCache<T> cache_x;
    attention(qkv_x, n, C, 1, s.feature_map, random, R, false, full_mask(), cache_x, ps);
    FeatureLinearModel<T> model(R, C);
    std::vector<T> zeros(R * C, T(0)), key_sum(R);
    nn::linear_attention_final_state(model.weight().data(), key_sum.data(), cache_x, qkv_x.data(), zeros.data(), zeros.data(),
                                     shape_of(n, C, 1, s.feature_map, R));
    const std::vector<T> w0 = model.weight();

    // Training set (Thm 1): x_i = φ(W_K p'_i), y_i = (m/η) W_V p'_i + W_0 x_i.
    const auto x = features_of(block(qkv, 3 * C, 0, m, C, C), m, C, params);
    const auto v = block(qkv, 3 * C, 0, m, 2 * C, C);
    std::vector<T> y(m * C), y_no_w0(m * C);
    model.predict(y.data(), x.data(), m);
    const std::vector<T> w0x = y;
    for (std::size_t i = 0; i < m * C; ++i) {
        y_no_w0[i] = static_cast<T>(m / eta) * v[i];
        y[i] += y_no_w0[i];
    }
    const auto phi_q = features_of(block(qkv, 3 * C, m, n + 1, 0, C), n + 1, C, params);
    result.conditioning = cancelled_size(w0x, x, phi_q, m, n + 1, R, C, s.eta_over_m) / output_scale(s0);
    std::vector<T> s1((n + 1) * C);
    auto run = [&](const std::vector<T>& targets, ReferenceLoss::Kind kind) {  // one full-batch step from W_0, then S_1
        model.weight() = w0;
        ReferenceLoss loss;
        loss.kind = kind;
        model.step(x.data(), targets.data(), m, loss, eta);
        model.predict(s1.data(), phi_q.data(), n + 1);
        return dual_error(s0.data(), s1.data(), s0.size());
    };
    result.err_no_half = run(y, ReferenceLoss::Kind::mse_mean);             // control: l_2 without the ½ (B1)
    result.err_no_w0 = run(y_no_w0, ReferenceLoss::Kind::mse_half_mean);   // control: y_i without W_0 x_i
    {  // the prompt's effect: S_0 against W_0 φ(W_Q p)
        model.weight() = w0;
        model.predict(s1.data(), phi_q.data(), n + 1);
        result.prompt_effect = dual_error(s0.data(), s1.data(), s0.size());
    }
    if (result.prompt_effect < 1e-3) result.err_no_half = result.err_no_w0 = -1.0;
    double w0x_size = 0.0;
    for (T value : w0x) w0x_size = max_or_nan(w0x_size, std::abs(static_cast<double>(value)));
    // The no-W_0 control changes W_1 by (η/m) W_0 X Xᵀ: it vanishes with W_0 x_i ≈ 0 (ReLU keys of X' and X on disjoint
    // supports) and shrinks with η/m (3e-7 measured at η/m = 1e-3): it applies at η/m ≥ 1 only.
    if (w0x_size < 1e-3 || s.eta_over_m < 1.0) result.err_no_w0 = -1.0;
    result.err = run(y, ReferenceLoss::Kind::mse_half_mean);              // Theorem 1; leaves W_1 in the model
    if (s.eta_over_m == 1.0) {  // η = m: W_1 − W_0 = Σ_i W_V p'_i φ(W_K p'_i)ᵀ, the attention state of X' (ICLCA's b_KV)
        const auto qkv_p = block(qkv, 3 * C, 0, m, 0, 3 * C);
        nn::LinearAttentionCache<T> cache_p;
        attention(qkv_p, m, C, 1, s.feature_map, random, R, false, full_mask(), cache_p, ps);
        std::vector<T> state(R * C), delta(R * C);
        nn::linear_attention_final_state(state.data(), key_sum.data(), cache_p, qkv_p.data(), zeros.data(), zeros.data(),
                                         shape_of(m, C, 1, s.feature_map, R));
        for (std::size_t i = 0; i < R * C; ++i) delta[i] = model.weight()[i] - w0[i];
        result.err_iclca = dual_error(state.data(), delta.data(), state.size());
    }
    return result;
}

// ---- Algorithm 1 ------------------------------------------------------------------------------------------------

namespace {

template <class T>
struct DeepLayer {
    bool attention = true;
    std::vector<T> w_qkv;          // (C, 3C)   LSA
    std::vector<T> random;         // (D, R)    LSA with performer features
    std::vector<T> w1, w2;         // (C, 4C), (4C, C)   FFN
    std::vector<T> gamma, beta;    // (C)       pre-LN
};

// LN_l(h) per token when pre-LN is on (it commutes with Algorithm 1: spec B6), h itself otherwise.
template <class T>
std::vector<T> layer_input(const DeepLayer<T>& layer, const std::vector<T>& h, std::size_t rows, std::size_t C, bool pre_ln) {
    if (!pre_ln) return h;
    std::vector<T> u(h.size()), mean(rows), rstd(rows);
    nn::layernorm_forward(u.data(), mean.data(), rstd.data(), h.data(), layer.gamma.data(), layer.beta.data(), rows, C);
    return u;
}

// t ← t + FFN_l(t) = t + W_2ᵀ GELU(W_1ᵀ LN(t)): the same FFN forward on both sides (Algorithm 1 step "FFN").
template <class T>
void ffn_residual(std::vector<T>& h, std::size_t rows, std::size_t C, const DeepLayer<T>& layer, bool pre_ln) {
    const auto u = layer_input(layer, h, rows, C, pre_ln);
    const auto a = project(u, rows, layer.w1, C, 4 * C);
    std::vector<T> g(a.size());
    nn::gelu_forward(g.data(), a.data(), a.size());
    const auto f = project(g, rows, layer.w2, 4 * C, C);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += f[i];
}

// The model f_1 = (T_L + I) ∘ … ∘ (T_1 + I) with iclab's attention under `mask`: hidden states after every layer.
template <class T>
std::vector<std::vector<T>> model_forward(const std::vector<DeepLayer<T>>& layers, std::vector<T> h, const Alg1Setting& s,
                                          std::size_t R, nn::MaskKind mask_kind) {
    const std::size_t C = s.width, rows = s.prompt + s.input;
    nn::AttentionMask mask;
    mask.kind = mask_kind;
    std::vector<std::vector<T>> states;
    for (const auto& layer : layers) {
        if (layer.attention) {
            const auto qkv = project(layer_input(layer, h, rows, C, s.pre_ln), rows, layer.w_qkv, C, 3 * C);
            nn::LinearAttentionCache<T> cache;
            const auto out = attention(qkv, rows, C, s.heads, s.feature_map, layer.random, R, false, mask, cache,
                                       performer_scale(C / s.heads));
            for (std::size_t i = 0; i < h.size(); ++i) h[i] += out[i];
        } else {
            ffn_residual(h, rows, C, layer, s.pre_ln);
        }
        states.push_back(h);
    }
    return states;
}

// Algorithm 1 of paper 002, standalone: per-layer weights, φ, the generic GD step and the FFN forward only — it
// never calls the attention forward. Per LSA layer and head: (a) W_0 = Σ_{t∈inputs} (W_V t) φ(W_K t)ᵀ; (b) x_j =
// φ(W_K p'_j), y_j = W_V p'_j + W_0 x_j, one GD step of lr m on (1/m) Σ ½‖W x_j − y_j‖² (Thm 1 at η = M); (c) every
// token t ← t + W_1 φ(W_Q t). Records the implicit loss before and after each step.
template <class T>
std::vector<std::vector<T>> algorithm1(const std::vector<DeepLayer<T>>& layers, std::vector<T> h, const Alg1Setting& s,
                                       std::size_t R, Alg1Result& result) {
    const std::size_t C = s.width, H = s.heads, D = C / H, m = s.prompt, n = s.input, rows = m + n;
    const std::size_t F = s.feature_map == nn::FeatureMap::performer ? R : D;
    std::vector<std::vector<T>> states;
    std::size_t decreased = 0, steps = 0;
    for (const auto& layer : layers) {
        if (!layer.attention) {
            ffn_residual(h, rows, C, layer, s.pre_ln);
            result.loss_before.push_back(std::numeric_limits<double>::quiet_NaN());
            result.loss_after.push_back(std::numeric_limits<double>::quiet_NaN());
            states.push_back(h);
            continue;
        }
        const auto qkv = project(layer_input(layer, h, rows, C, s.pre_ln), rows, layer.w_qkv, C, 3 * C);
        const auto params = feature_params(s.feature_map, layer.random, R, performer_scale(D));
        std::vector<T> update(rows * C, T(0));
        double before = 0.0, after = 0.0, cancelled = 0.0;
        for (std::size_t head = 0; head < H; ++head) {
            const auto phi_q = features_of(block(qkv, 3 * C, 0, rows, head * D, D), rows, D, params);
            const auto phi_k = features_of(block(qkv, 3 * C, 0, rows, C + head * D, D), rows, D, params);
            const auto v = block(qkv, 3 * C, 0, rows, 2 * C + head * D, D);
            FeatureLinearModel<T> model(F, D);
            // (a) W_0 (F, D) = Σ_{t∈inputs} φ(k_t) v_tᵀ over the input rows [m, m+n)
            nn::gemm<T>(nn::matrix(model.weight().data(), F, D), nn::matrix<const T>(phi_k.data() + m * F, n, F),
                        nn::matrix<const T>(v.data() + m * D, n, D), true, false);
            // (b) the training set of the prompt rows [0, m) and one GD step of lr m
            std::vector<T> y(m * D);
            model.predict(y.data(), phi_k.data(), m);
            cancelled = max_or_nan(cancelled, cancelled_size(y, phi_k, phi_q, m, rows, F, D, 1.0));  // y = W_0 x here
            for (std::size_t i = 0; i < m * D; ++i) y[i] += v[i];
            ReferenceLoss loss;
            before += model.step(phi_k.data(), y.data(), m, loss, static_cast<double>(m));
            after += model.loss(phi_k.data(), y.data(), m, loss);
            // (c) every token's head slot moves by W_1 φ(W_Q t)
            std::vector<T> out(rows * D);
            model.predict(out.data(), phi_q.data(), rows);
            for (std::size_t t = 0; t < rows; ++t)
                for (std::size_t d = 0; d < D; ++d) update[t * C + head * D + d] = out[t * D + d];
        }
        for (std::size_t i = 0; i < h.size(); ++i) h[i] += update[i];
        result.conditioning = max_or_nan(result.conditioning, cancelled / output_scale(h));
        result.loss_before.push_back(before);
        result.loss_after.push_back(after);
        decreased += after < before ? 1 : 0;
        ++steps;
        states.push_back(h);
    }
    result.frac_layers_loss_decreased = steps > 0 ? static_cast<double>(decreased) / steps : 0.0;
    return states;
}

}  // namespace

template <class T>
Alg1Result check_002_alg1(const Alg1Setting& s, Rng& rng) {
    const std::size_t C = s.width, D = C / s.heads, rows = s.prompt + s.input;
    ICLAB_CHECK(C % s.heads == 0, "width " << C << " is not divisible by heads " << s.heads);
    const bool performer = s.feature_map == nn::FeatureMap::performer;
    const std::size_t R = performer ? s.features : D;
    const double c = static_cast<double>(C);
    const double depth = 1.0 / std::sqrt(static_cast<double>(s.pattern.size()));
    std::vector<DeepLayer<T>> layers;
    for (char kind : s.pattern) {
        ICLAB_CHECK(kind == 'A' || kind == 'F', "layer pattern letters are A (LSA) and F (FFN), got '" << kind << "'");
        DeepLayer<T> layer;
        layer.attention = kind == 'A';
        if (layer.attention) {
            // W_Q, W_K ~ N(0, 1/C); W_V ~ N(0, 1/(C(m+n) κ² L²)) with κ the typical size of φ(k)ᵀφ(q) (1 for performer
            // features, √D for identity, D for elu+1 / ReLU); FFN W_2 ~ N(0, 1/(4 C L)). Spec §2's scales (κ = L = 1)
            // let the unnormalized residual stream grow until the cubic LSA branches amplified rounding chaotically
            // (err 1e-9 to 0.5 and overflow at L = 12 without LN; measured); these keep every layer's update small.
            const double kappa = performer ? 1.0 : s.feature_map == nn::FeatureMap::identity ? std::sqrt(static_cast<double>(D))
                                                                                            : static_cast<double>(D);
            layer.w_qkv.resize(C * 3 * C);
            for (std::size_t i = 0; i < C; ++i)
                for (std::size_t j = 0; j < 3 * C; ++j)
                    layer.w_qkv[i * 3 * C + j] =
                        static_cast<T>(rng.normal(0.0, j < 2 * C ? 1.0 / std::sqrt(c) : depth * depth / (std::sqrt(c * rows) * kappa)));
            if (performer) layer.random = normal_draws<T>(D * R, rng, 1.0);
        } else {
            layer.w1 = normal_draws<T>(C * 4 * C, rng, 1.0 / std::sqrt(c));
            layer.w2 = normal_draws<T>(4 * C * C, rng, depth / std::sqrt(4.0 * c));
        }
        layer.gamma = normal_draws<T>(C, rng, 0.1);
        for (auto& g : layer.gamma) g += T(1);
        layer.beta = normal_draws<T>(C, rng, 0.1);
        layers.push_back(std::move(layer));
    }
    const auto tokens = normal_draws<T>(rows * C, rng, 1.0);  // [p'_1..p'_m, p_1..p_n]
    Alg1Result result;
    const auto model_states = model_forward(layers, tokens, s, R, nn::MaskKind::full);
    const auto algorithm_states = algorithm1(layers, tokens, s, R, result);
    for (std::size_t l = 0; l < layers.size(); ++l) {
        result.err_layer.push_back(dual_error(model_states[l].data(), algorithm_states[l].data(), rows * C));
        result.err_max_layer = max_or_nan(result.err_max_layer, result.err_layer.back());
    }
    result.err_final = result.err_layer.back();
    // Negative control (B4): the causal model is not Algorithm 1 (one W_1 for every token needs full attention).
    const auto causal_states = model_forward(layers, tokens, s, R, nn::MaskKind::causal);
    result.err_causal_control = dual_error(causal_states.back().data(), algorithm_states.back().data(), rows * C);
    return result;
}

template double dual_error<float>(const float*, const float*, std::size_t);
template double dual_error<double>(const double*, const double*, std::size_t);
template Thm1Result check_002_thm1<float>(const Thm1Setting&, Rng&);
template Thm1Result check_002_thm1<double>(const Thm1Setting&, Rng&);
template Alg1Result check_002_alg1<float>(const Alg1Setting&, Rng&);
template Alg1Result check_002_alg1<double>(const Alg1Setting&, Rng&);

}  // namespace iclab::icl
