// Paper 004 §5.1's single Performer layer with the §4 modifications (Eq. 14-17): forward and backward for one
// sequence, query output only (attention_004.hpp). Batch 1, raw loops; φ and its backward are the transformer's
// own (nn::feature_map_forward / feature_map_backward), the small projections go through nn::linear_*.
#include "framework/nn/attention_004.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "framework/core/check.hpp"
#include "framework/nn/layers.hpp"

namespace iclab::nn {

RegForm reg_form_from_name(const std::string& name) {
    if (name == "eq14") return RegForm::eq14;
    if (name == "eq15") return RegForm::eq15;
    throw Error("unknown regularized form '" + name + "' (known: eq14, eq15)");
}

double Attention004Shape::scale() const { return std::pow(static_cast<double>(width), -0.25); }

Attention004Layout attention_004_layout(const Attention004Shape& shape) {
    const std::size_t C = shape.width;
    Attention004Layout layout;
    layout.w_qkv = 0;
    layout.g1 = 3 * C * C;
    layout.g2 = layout.g1 + C * C;
    layout.g2b = layout.g2 + C * C;
    layout.size = layout.g2b + C * C;
    return layout;
}

namespace {

template <class T>
FeatureMapParams<T> performer_params(const T* random, const Attention004Shape& shape) {
    FeatureMapParams<T> p;
    p.map = FeatureMap::performer;
    p.random = random;
    p.random_features = shape.features;
    p.input_scale = shape.scale();  // φ(s x): the temperature of Eq. 1 folded into q and k (spec §0.3)
    return p;
}

// out (rows, C) = GELU(pre), pre (rows, C) = in (rows, C) G (C, C): one of Eq. 16's g.
template <class T>
void augment_forward(std::vector<T>& pre, std::vector<T>& out, const T* in, const T* g, std::size_t rows, std::size_t C) {
    pre.resize(rows * C);
    out.resize(rows * C);
    linear_forward(pre.data(), in, g, static_cast<const T*>(nullptr), rows, C, C);
    gelu_forward(out.data(), pre.data(), rows * C);
}

// d_in (rows, C) +=, d_g (C, C) += through out = GELU(in G); d_pre is scratch.
template <class T>
void augment_backward(T* d_in, T* d_g, const T* d_out, const std::vector<T>& pre, const T* in, const T* g, std::vector<T>& d_pre,
                      std::size_t rows, std::size_t C) {
    d_pre.assign(rows * C, T(0));
    gelu_backward(d_pre.data(), d_out, pre.data(), rows * C);
    linear_backward(d_in, d_g, static_cast<T*>(nullptr), d_pre.data(), in, g, rows, C, C);
}

void check_variant(const Attention004Shape& shape, const Attention004Variant& v) {
    ICLAB_CHECK(!(v.g2 && v.g2plus), "attention_004: g2 and g2+ both augment the keys; choose one");
    ICLAB_CHECK(v.negatives == 0 || v.negatives + 1 < shape.time, "attention_004: negatives k must lie in [1, T - 1)");
    ICLAB_CHECK(shape.time >= 2 && shape.width >= 1 && shape.features >= 1, "attention_004: empty shape");
}

}  // namespace

template <class T>
void attention_004_forward(T* out, Attention004Cache<T>& c, const T* h, const T* params, const T* random,
                           const Attention004Shape& shape, const Attention004Variant& v) {
    check_variant(shape, v);
    const std::size_t TT = shape.time, C = shape.width, R = shape.features, last = TT - 1;
    const Attention004Layout L = attention_004_layout(shape);
    c.raw.resize(TT * 3 * C);
    linear_forward(c.raw.data(), h, params + L.w_qkv, static_cast<const T*>(nullptr), TT, C, 3 * C);
    c.k.resize(TT * C);
    c.v.resize(TT * C);
    c.query.assign(c.raw.begin() + last * 3 * C, c.raw.begin() + last * 3 * C + C);
    for (std::size_t j = 0; j < TT; ++j)
        for (std::size_t d = 0; d < C; ++d) {
            c.k[j * C + d] = c.raw[j * 3 * C + C + d];
            c.v[j * C + d] = c.raw[j * 3 * C + 2 * C + d];
        }
    // Eq. 16: keys g2(k) = GELU(k G_2) or g2⁺(k) = GELU(GELU(k G_2b) G_2); values g1(v) = GELU(v G_1).
    if (v.g2plus) {
        augment_forward(c.pre_g2b, c.mid, c.k.data(), params + L.g2b, TT, C);
        augment_forward(c.pre_g2, c.keys, c.mid.data(), params + L.g2, TT, C);
    } else if (v.g2) {
        augment_forward(c.pre_g2, c.keys, c.k.data(), params + L.g2, TT, C);
    } else {
        c.keys = c.k;
    }
    if (v.g1) augment_forward(c.pre_g1, c.values, c.v.data(), params + L.g1, TT, C);
    else c.values = c.v;
    // Eq. 2 at the query: a_j = φ(k̃_j)ᵀφ(q) / D.
    const FeatureMapParams<T> p = performer_params(random, shape);
    c.phi_k.resize(TT * R);
    c.phi_q.resize(R);
    feature_map_forward(c.phi_k.data(), c.keys.data(), TT, C, p);
    feature_map_forward(c.phi_q.data(), c.query.data(), 1, C, p);
    c.attention.resize(TT);
    c.denominator = T(0);
    for (std::size_t j = 0; j < TT; ++j) {
        const T* phi = c.phi_k.data() + j * R;
        T score = T(0);
        for (std::size_t r = 0; r < R; ++r) score += phi[r] * c.phi_q[r];
        c.attention[j] = score;
        c.denominator += score;
    }
    for (auto& a : c.attention) a /= c.denominator;
    // Eq. 17 (negatives, renorm of §5.5) and Eq. 14 (the query's own term × (1 − α)).
    c.coefficient = c.attention;
    c.negative.assign(TT, 0);
    if (v.negatives > 0) {
        std::vector<std::size_t> order(last);
        std::iota(order.begin(), order.end(), std::size_t(0));
        std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return c.attention[i] < c.attention[j]; });
        for (std::size_t n = 0; n < v.negatives; ++n) c.negative[order[n]] = 1;
        const T lower = static_cast<T>(v.beta / static_cast<double>(v.negatives));
        const T raise = v.renorm ? static_cast<T>(v.beta / static_cast<double>(TT - v.negatives)) : T(0);
        for (std::size_t j = 0; j < TT; ++j) c.coefficient[j] += c.negative[j] ? -lower : raise;
    }
    if (v.reg_form == RegForm::eq14) c.coefficient[last] -= static_cast<T>(v.alpha) * c.attention[last];
    for (std::size_t d = 0; d < C; ++d) out[d] = T(0);
    for (std::size_t j = 0; j < TT; ++j)
        for (std::size_t d = 0; d < C; ++d) out[d] += c.coefficient[j] * c.values[j * C + d];
    if (v.reg_form == RegForm::eq15)  // Eq. 15: − α ṽ_T
        for (std::size_t d = 0; d < C; ++d) out[d] -= static_cast<T>(v.alpha) * c.values[last * C + d];
}

template <class T>
void attention_004_backward(T* d_params, const T* d_out, const T* h, const T* params, const T* random, Attention004Cache<T>& c,
                            const Attention004Shape& shape, const Attention004Variant& v) {
    const std::size_t TT = shape.time, C = shape.width, R = shape.features, last = TT - 1;
    const Attention004Layout L = attention_004_layout(shape);
    const T alpha = static_cast<T>(v.alpha);
    // ĥ = Σ_j coefficient_j ṽ_j (− α ṽ_T):  dṽ_j = coefficient_j d_out;  d coefficient_j = ṽ_jᵀ d_out.
    std::vector<T>& d_values = c.d_b;
    d_values.assign(TT * C, T(0));
    std::vector<T> d_attention(TT);
    for (std::size_t j = 0; j < TT; ++j) {
        T dot = T(0);
        for (std::size_t d = 0; d < C; ++d) {
            d_values[j * C + d] = c.coefficient[j] * d_out[d];
            dot += c.values[j * C + d] * d_out[d];
        }
        d_attention[j] = dot;  // the shifts ± β/k, β/(T−k) are constants (S fixed, spec §9)
    }
    if (v.reg_form == RegForm::eq14) d_attention[last] *= T(1) - alpha;
    if (v.reg_form == RegForm::eq15)
        for (std::size_t d = 0; d < C; ++d) d_values[last * C + d] -= alpha * d_out[d];
    // a_j = score_j / D:  d score_j = (d a_j − Σ_i d a_i a_i) / D;  score_j = φ(k̃_j)ᵀφ(q).
    T weighted = T(0);
    for (std::size_t j = 0; j < TT; ++j) weighted += d_attention[j] * c.attention[j];
    c.d_phi_k.resize(TT * R);
    c.d_phi_q.assign(R, T(0));
    for (std::size_t j = 0; j < TT; ++j) {
        const T d_score = (d_attention[j] - weighted) / c.denominator;
        const T* phi = c.phi_k.data() + j * R;
        T* d_phi = c.d_phi_k.data() + j * R;
        for (std::size_t r = 0; r < R; ++r) {
            d_phi[r] = d_score * c.phi_q[r];
            c.d_phi_q[r] += d_score * phi[r];
        }
    }
    const FeatureMapParams<T> p = performer_params(random, shape);
    c.d_keys.assign(TT * C, T(0));
    std::vector<T> d_query(C, T(0));
    feature_map_backward(c.d_keys.data(), c.d_phi_k.data(), c.keys.data(), c.phi_k.data(), TT, C, p, c.scratch);
    feature_map_backward(d_query.data(), c.d_phi_q.data(), c.query.data(), c.phi_q.data(), 1, C, p, c.scratch);
    // Back through Eq. 16 into d_raw (T, 3C) = [d q (query row only) | d k | d v].
    std::vector<T> d_k(TT * C, T(0)), d_v(TT * C, T(0));
    if (v.g2plus) {
        std::vector<T> d_mid(TT * C, T(0));
        augment_backward(d_mid.data(), d_params + L.g2, c.d_keys.data(), c.pre_g2, c.mid.data(), params + L.g2, c.d_a, TT, C);
        augment_backward(d_k.data(), d_params + L.g2b, d_mid.data(), c.pre_g2b, c.k.data(), params + L.g2b, c.d_a, TT, C);
    } else if (v.g2) {
        augment_backward(d_k.data(), d_params + L.g2, c.d_keys.data(), c.pre_g2, c.k.data(), params + L.g2, c.d_a, TT, C);
    } else {
        d_k = c.d_keys;
    }
    if (v.g1) augment_backward(d_v.data(), d_params + L.g1, d_values.data(), c.pre_g1, c.v.data(), params + L.g1, c.d_a, TT, C);
    else d_v = d_values;
    c.d_raw.assign(TT * 3 * C, T(0));
    for (std::size_t j = 0; j < TT; ++j)
        for (std::size_t d = 0; d < C; ++d) {
            c.d_raw[j * 3 * C + C + d] = d_k[j * C + d];
            c.d_raw[j * 3 * C + 2 * C + d] = d_v[j * C + d];
        }
    for (std::size_t d = 0; d < C; ++d) c.d_raw[last * 3 * C + d] = d_query[d];
    linear_backward(static_cast<T*>(nullptr), d_params + L.w_qkv, static_cast<T*>(nullptr), c.d_raw.data(), h, params + L.w_qkv,
                    TT, C, 3 * C);
}

#define ICLAB_INSTANTIATE_ATTENTION_004(T)                                                                                  \
    template void attention_004_forward<T>(T*, Attention004Cache<T>&, const T*, const T*, const T*, const Attention004Shape&, \
                                           const Attention004Variant&);                                                     \
    template void attention_004_backward<T>(T*, const T*, const T*, const T*, const T*, Attention004Cache<T>&,              \
                                            const Attention004Shape&, const Attention004Variant&);
ICLAB_INSTANTIATE_ATTENTION_004(float)
ICLAB_INSTANTIATE_ATTENTION_004(double)

}  // namespace iclab::nn
