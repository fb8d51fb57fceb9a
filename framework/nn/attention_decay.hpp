#pragma once
// Decayed linear attention (RetNet / GLA style; issue 43, docs/decay.md): the inner loops that both forms of causal
// linearized attention (linear_attention.cpp, linear_attention_recurrent.cpp) add when LinearAttentionOptions::decay is
// set. Internal to framework/nn. With a per-head γ ∈ (0, 1] the state of Eq. 19 becomes
//   S_i = γ S_{i-1} + R_i φ(k_i) v_iᵀ,  z_i = γ z_{i-1} + φ(k_i),  S_{-1} = b_KV, z_{-1} = b_D      (decay.md Eq. D1)
// so that, unrolled, query i (0-based) sees key j ≤ i with weight γ^{i-j} and the biases with γ^{i+1}:
//   S_i = γ^{i+1} b_KV + Σ_{j≤i} γ^{i-j} R_j φ(k_j) v_jᵀ,   z_i = γ^{i+1} b_D + Σ_{j≤i} γ^{i-j} φ(k_j)   (decay.md Eq. D2)
// The normalizer's state decays with the numerator's ("z likewise", issue 43): den_i = φ(q_i)ᵀ z_i + eps.
// Without decay (empty options.decay) none of this runs: the code paths of γ = 1 are those of before, bit for bit.
#include <cmath>
#include <cstddef>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/multiply_add.hpp"
#include "framework/nn/attention_kernels.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::nn::kernels {

// The decay is per head, in (0, 1], and needs the causal mask (the state runs forward in time).
inline void check_decay(const AttentionShape& shape, const LinearAttentionOptions& options) {
    if (options.decay.empty()) return;
    ICLAB_CHECK(options.decay.size() == shape.heads,
                "attention decay: " << options.decay.size() << " values for " << shape.heads << " heads");
    for (double gamma : options.decay)
        ICLAB_CHECK(gamma > 0.0 && gamma <= 1.0, "attention decay gamma must be in (0, 1], got " << gamma);
    ICLAB_CHECK(options.mask.plain_causal(), "attention decay needs the causal mask, not the "
                                                 << mask_kind_name(options.mask.kind) << " mask"
                                                 << (options.mask.isolate_queries ? " with isolated queries" : ""));
}

// powers (H, count): γ_h^n for n = 0 .. count-1, each std::pow in double rounded once to T (so a prompt's key at
// distance n from a query gets the same factor in [X'; X] and in X: the exactness of the conversion needs no more).
// Empty without decay.
template <class T>
std::vector<T> decay_powers(const LinearAttentionOptions& options, std::size_t count) {
    std::vector<T> powers;
    if (options.decay.empty()) return powers;
    powers.resize(options.decay.size() * count);
    for (std::size_t h = 0; h < options.decay.size(); ++h)
        for (std::size_t n = 0; n < count; ++n)
            powers[h * count + n] = static_cast<T>(std::pow(options.decay[h], static_cast<double>(n)));
    return powers;
}

// S_ij *= γ^{i-j} for j ≤ i of a (T, T) causal score matrix (decay.md Eq. D3); the entries above the diagonal (zero,
// or never written with the causal triangle) are not touched.
template <class T>
inline void decay_scores(T* scores, std::size_t time, const T* powers) {
    for (std::size_t i = 0; i < time; ++i) {
        T* row = scores + i * time;
        for (std::size_t j = 0; j <= i; ++j) row[j] *= powers[i - j];
    }
}

// ∂/∂γ of Σ_ij dS_ij S_ij with S_ij = γ^{i-j} P_ij:  Σ_{j<i} dS_ij S_ij (i - j) / γ   (decay.md Eq. D6)
template <class T>
inline T decay_score_gradient(const T* d_scores, const T* scores, std::size_t time, T gamma) {
    T sum = T(0);
    for (std::size_t i = 1; i < time; ++i) {
        T row_sum = T(0);
        for (std::size_t j = 0; j < i; ++j)
            row_sum = multiply_add(d_scores[i * time + j] * scores[i * time + j], static_cast<T>(i - j), row_sum);
        sum += row_sum;
    }
    return sum / gamma;
}

// x (rows, n): row i *= factors[i]
template <class T>
inline void scale_rows(T* x, std::size_t rows, std::size_t n, const T* factors) {
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t c = 0; c < n; ++c) x[i * n + c] *= factors[i];
}

template <class T>
inline void scale(T* x, std::size_t n, T factor) {
    for (std::size_t i = 0; i < n; ++i) x[i] *= factor;
}

// The kernel normalizer with decay (one head, causal):  z_i = γ z_{i-1} + φ(k_i), z_{-1} = b_D;  den_i = φ(q_i)ᵀ z_i + eps
template <class T>
inline void decayed_normalizer_forward(T* den, const T* phi_q, const T* phi_k, const T* head_bd, std::size_t time, std::size_t F,
                                       T eps, T gamma, std::vector<T>& key_sum) {
    key_sum.assign(head_bd, head_bd + F);
    T* z = key_sum.data();
    for (std::size_t i = 0; i < time; ++i) {
        const T* pk = phi_k + i * F;
        for (std::size_t f = 0; f < F; ++f) z[f] = multiply_add(gamma, z[f], pk[f]);
        den[i] = dot_lanes(phi_q + i * F, z, F) + eps;
    }
}

// Its backward, given d_den (T). Forward in i: d φq_i = d_den_i z_i, and (d_gamma set) the tangent u_i = ∂z_i/∂γ =
// γ u_{i-1} + z_{i-1} (u_{-1} = 0), dγ += d_den_i φq_iᵀ u_i. Backward in i: g_i = γ g_{i+1} + d_den_i φq_i (the gradient
// reaching z_i), d φk_i = g_i, and d b_D += γ g_0. d_phi_q, d_phi_k (T, F) written in full; d_bd and *d_gamma accumulated.
template <class T>
inline void decayed_normalizer_backward(T* d_phi_q, T* d_phi_k, T* d_bd, T* d_gamma, const T* d_den, const T* phi_q,
                                        const T* phi_k, const T* head_bd, std::size_t time, std::size_t F, T gamma,
                                        std::vector<T>& key_sum, std::vector<T>& scratch) {
    key_sum.assign(head_bd, head_bd + F);
    if (scratch.size() < 2 * F) scratch.resize(2 * F);
    T* z = key_sum.data();
    T* tangent = scratch.data();
    T* g = scratch.data() + F;
    std::fill(tangent, tangent + F, T(0));
    T gamma_sum = T(0);
    for (std::size_t i = 0; i < time; ++i) {
        const T* pk = phi_k + i * F;
        if (d_gamma != nullptr)
            for (std::size_t f = 0; f < F; ++f) tangent[f] = multiply_add(gamma, tangent[f], z[f]);  // u_i, z = z_{i-1}
        for (std::size_t f = 0; f < F; ++f) z[f] = multiply_add(gamma, z[f], pk[f]);
        T* dq = d_phi_q + i * F;
        for (std::size_t f = 0; f < F; ++f) dq[f] = d_den[i] * z[f];
        if (d_gamma != nullptr) gamma_sum = multiply_add(d_den[i], dot_lanes(phi_q + i * F, tangent, F), gamma_sum);
    }
    std::fill(g, g + F, T(0));
    for (std::size_t i = time; i-- > 0;) {
        const T* pq = phi_q + i * F;
        for (std::size_t f = 0; f < F; ++f) g[f] = multiply_add(d_den[i], pq[f], gamma * g[f]);
        std::copy(g, g + F, d_phi_k + i * F);
    }
    axpy(d_bd, gamma, g, F);
    if (d_gamma != nullptr) *d_gamma += gamma_sum;
}

// dγ reduced over the batch in a fixed order (b ascending per head): d_decay (H) += Σ_b partial (B, H).
template <class T>
inline void reduce_decay_gradient(T* d_decay, const std::vector<T>& partial, std::size_t B, std::size_t H) {
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t b = 0; b < B; ++b) d_decay[h] += partial[b * H + h];
}

}  // namespace iclab::nn::kernels
