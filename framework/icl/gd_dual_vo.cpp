// von Oswald et al. 2023, Proposition 1 and its K-layer recurrent form (spec §10): the constructed linear
// self-attention layer equals one GD step on L(W) = (1/(2N)) Σ_i ‖W x_i − y_i‖², K layers equal K steps.
// Attention side: nn::linear_attention_forward with identity features, no normalizer, keys and values the N
// context tokens only (`include_query=False`: an isolated query), residual. GD side: FeatureLinearModel over x
// (identity features) with mse_half_mean and SGD. Paper 003 E.1's LSA is this construction with W_0 = 0.
#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/gd_dual.hpp"
#include "framework/icl/gd_dual_detail.hpp"
#include "framework/icl/gd_reference.hpp"

namespace iclab::icl {

using namespace detail;

namespace {

// w_qkv (C, 3C), row convention (q = e · w_qkv[:, 0:C]): W_K = W_Q = [[I_dx, 0], [0, 0]] and
// P W_V = (η/N) [[0, 0], [W_0, −I_dy]] (the code's create_weights, stored transposed as Haiku does).
template <class T>
std::vector<T> constructed_weights(const std::vector<T>& w0, std::size_t dx, std::size_t dy, double eta, std::size_t N) {
    const std::size_t C = dx + dy;
    std::vector<T> w(C * 3 * C, T(0));
    for (std::size_t i = 0; i < dx; ++i) w[i * 3 * C + i] = w[i * 3 * C + C + i] = T(1);
    const T p = static_cast<T>(eta / static_cast<double>(N));
    for (std::size_t a = 0; a < dy; ++a) {
        for (std::size_t b = 0; b < dx; ++b) w[b * 3 * C + 2 * C + dx + a] = p * w0[a * dx + b];
        w[(dx + a) * 3 * C + 2 * C + dx + a] = -p;
    }
    return w;
}

// K residual LSA layers e_t ← e_t + P W_V Σ_{i≤N} e_i (W_K e_i)ᵀ (W_Q e_t) over every token, context and query.
template <class T>
std::vector<T> constructed_forward(std::vector<T> e, const std::vector<std::vector<T>>& weights, std::size_t N, std::size_t C,
                                   bool include_query) {
    nn::AttentionMask mask;
    mask.kind = nn::MaskKind::full;
    if (!include_query) {
        mask.prefix_length = N;
        mask.isolate_queries = true;
        mask.query_self = false;
    }
    for (const auto& w : weights) {
        nn::LinearAttentionCache<T> cache;
        const auto out = attention(project(e, N + 1, w, C, 3 * C), N + 1, C, 1, nn::FeatureMap::identity, std::vector<T>(), 0,
                                   false, mask, cache);
        for (std::size_t i = 0; i < e.size(); ++i) e[i] += out[i];
    }
    return e;
}

}  // namespace

template <class T>
VoResult check_vo_construct(const VoSetting& s, Rng& rng) {
    const std::size_t dx = s.dx, dy = s.dy, C = dx + dy, N = s.demos, K = s.layers;
    ICLAB_CHECK(N > 0 && K > 0, "von Oswald's construction needs N > 0 context tokens and K > 0 layers");
    const auto task = normal_draws<T>(dy * dx, rng, 1.0);  // (dy, dx)
    const auto x = uniform_draws<T>((N + 1) * dx, rng, -1.0, 1.0);  // rows [0, N): x_i; N: x_q
    const auto w0 = s.w0_zero ? std::vector<T>(dy * dx, T(0)) : normal_draws<T>(dy * dx, rng, 0.3);
    std::vector<double> etas(K, s.eta);
    if (!s.shared)
        for (auto& eta : etas) eta = rng.uniform(0.1, 0.8);

    // GD side: W_0, then W_{l+1} = W_l − η_l ∇L(W_l) with L = (1/N) Σ ½‖W x_i − y_i‖² (von Oswald Eq. 1).
    FeatureLinearModel<T> model(dx, dy);
    for (std::size_t a = 0; a < dy; ++a)
        for (std::size_t b = 0; b < dx; ++b) model.weight()[b * dy + a] = w0[a * dx + b];
    std::vector<T> y(N * dy), before((N + 1) * dy), after((N + 1) * dy);
    for (std::size_t i = 0; i < N; ++i)
        for (std::size_t a = 0; a < dy; ++a) {
            T sum = T(0);
            for (std::size_t b = 0; b < dx; ++b) sum += task[a * dx + b] * x[i * dx + b];
            y[i * dy + a] = sum;
        }
    model.predict(before.data(), x.data(), N + 1);  // W_0 x_j and W_0 x_q
    ReferenceLoss loss;
    for (double eta : etas) model.step(x.data(), y.data(), N, loss, eta);
    model.predict(after.data(), x.data(), N + 1);  // W_K x_j and W_K x_q

    // Tokens e_j = (x_j, y_j), e_q = (x_q, −W_0 x_q) (C1); expected after K layers: context y-slots y_j − (W_K − W_0) x_j,
    // query y-slot −W_K x_q, x-slots unchanged.
    std::vector<T> e((N + 1) * C), expected((N + 1) * C);
    for (std::size_t j = 0; j <= N; ++j) {
        for (std::size_t b = 0; b < dx; ++b) e[j * C + b] = expected[j * C + b] = x[j * dx + b];
        for (std::size_t a = 0; a < dy; ++a) {
            e[j * C + dx + a] = j < N ? y[j * dy + a] : -before[j * dy + a];
            expected[j * C + dx + a] = j < N ? y[j * dy + a] - after[j * dy + a] + before[j * dy + a] : -after[j * dy + a];
        }
    }
    std::vector<std::vector<T>> weights;
    for (double eta : etas) weights.push_back(constructed_weights(w0, dx, dy, eta, N));
    const auto out = constructed_forward(e, weights, N, C, false);
    VoResult result;
    result.err_context = dual_error(out.data(), expected.data(), N * C);
    result.err_query = dual_error(out.data() + N * C, expected.data() + N * C, C);
    result.err = max_or_nan(result.err_context, result.err_query);
    double query_value = 0.0;  // (η_1/N)·2 max|W_0 x_q|: the query's value when it is wrongly among keys and values
    for (std::size_t a = 0; a < dy; ++a)
        query_value = max_or_nan(query_value, 2.0 * etas[0] / N * std::abs(static_cast<double>(before[N * dy + a])));
    // C2: the query among keys and values adds its value (0, 2 W_0 x_q)·(η/N). A NaN value applies the control (its
    // error is then NaN and the claim inconclusive), never reads as "not applicable" (second audit of issue 45).
    if (!s.w0_zero && !(query_value < 1e-2)) {
        const auto control = constructed_forward(e, weights, N, C, true);
        result.err_ctrl = dual_error(control.data(), expected.data(), (N + 1) * C);
    }
    return result;
}

template VoResult check_vo_construct<float>(const VoSetting&, Rng&);
template VoResult check_vo_construct<double>(const VoSetting&, Rng&);

}  // namespace iclab::icl
