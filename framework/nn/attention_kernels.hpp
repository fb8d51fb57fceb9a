#pragma once
// Inner loops shared by the two forms of causal linearized attention (linear_attention.cpp, the masked
// quadratic form of Eq. 13, and linear_attention_recurrent.cpp, the state form of Eq. 19). Internal to
// framework/nn. All loops are contiguous; none reorders a float sum in a way that depends on threads.
#include <algorithm>
#include <cstddef>

#include "framework/core/check.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::nn::kernels {

// y (n) += alpha x (n): no reduction, so the compiler vectorizes it.
template <class T>
inline void axpy(T* y, T alpha, const T* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

// Σ a_i b_i in kLanes interleaved partial sums, added in a fixed order at the end. A plain float
// reduction cannot be vectorized without -ffast-math (the compiler may not reorder the sum); this one can.
template <class T>
inline T dot_lanes(const T* a, const T* b, std::size_t n) {
    constexpr std::size_t kLanes = 8;
    T lane[kLanes] = {};
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (std::size_t k = 0; k < kLanes; ++k) lane[k] += a[i + k] * b[i + k];
    T sum = T(0);
    for (; i < n; ++i) sum += a[i] * b[i];
    for (std::size_t k = 0; k < kLanes; ++k) sum += lane[k];
    return sum;
}

// out (n) = Σ_r coeff[r] rows[r·stride + c], c < n: a sum of axpys with the sum over r in ascending order,
// accumulated in registers kBlock columns at a time. Plain axpys into out chain every row through a store
// and a reload of out (measured: the whole recurrent forward 1.4x slower at D = F = 32).
template <class T>
inline void combine_rows(T* out, const T* coeff, const T* rows, std::size_t count, std::size_t n, std::size_t stride) {
    constexpr std::size_t kBlock = 32;
    std::size_t c = 0;
    for (; c + kBlock <= n; c += kBlock) {
        T acc[kBlock] = {};
        for (std::size_t r = 0; r < count; ++r)
            for (std::size_t k = 0; k < kBlock; ++k) acc[k] += coeff[r] * rows[r * stride + c + k];
        for (std::size_t k = 0; k < kBlock; ++k) out[c + k] = acc[k];
    }
    for (; c < n; ++c) {
        T sum = T(0);
        for (std::size_t r = 0; r < count; ++r) sum += coeff[r] * rows[r * stride + c];
        out[c] = sum;
    }
}

inline void check_attention_options(const AttentionShape& shape, const LinearAttentionOptions& options) {
    if (options.rope != nullptr) {
        ICLAB_CHECK(options.rope->features() == shape.features(),
                    "RoPE table built for " << options.rope->features() << " features, attention has " << shape.features());
        ICLAB_CHECK(shape.time <= options.rope->max_positions(),
                    "sequence of " << shape.time << " tokens exceeds the RoPE table (" << options.rope->max_positions() << ")");
    }
}

// Features of the token at position t for one head: φ(q), φ(k), then R_t φ(q), R_t φ(k) (Definition B.1;
// copies of φ when RoPE is off). q and k point at the head's D = F columns of the token's q and k.
template <class T>
inline void attention_features(T* phi_q, T* phi_k, T* rot_q, T* rot_k, const T* q, const T* k, std::size_t t,
                               std::size_t F, const LinearAttentionOptions& options) {
    feature_map_forward(phi_q, q, F, options.feature_map);
    feature_map_forward(phi_k, k, F, options.feature_map);
    if (options.rope != nullptr) {
        options.rope->rotate(rot_q, phi_q, t, false);
        options.rope->rotate(rot_k, phi_k, t, false);
    } else {
        std::copy(phi_q, phi_q + F, rot_q);
        std::copy(phi_k, phi_k + F, rot_k);
    }
}

// d φ (F) += R_tᵀ d rot (F): back through RoPE; scratch (F) is workspace.
template <class T>
inline void rope_backward(T* d_phi, const T* d_rot, T* scratch, std::size_t t, std::size_t F,
                          const LinearAttentionOptions& options) {
    if (options.rope != nullptr) {
        options.rope->rotate(scratch, d_rot, t, true);
        axpy(d_phi, T(1), scratch, F);
    } else {
        axpy(d_phi, T(1), d_rot, F);
    }
}

// Bias gradients summed over the batch in a fixed order: partial_* hold one slot per (b, h).
template <class T>
inline void reduce_bias_gradients(T* d_b_kv, T* d_b_d, const std::vector<T>& partial_bkv, const std::vector<T>& partial_bd,
                                  std::size_t B, std::size_t H, std::size_t F, std::size_t D) {
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t bh = b * H + h;
            for (std::size_t i = 0; i < F * D; ++i) d_b_kv[h * F * D + i] += partial_bkv[bh * F * D + i];
            for (std::size_t f = 0; f < F; ++f) d_b_d[h * F + f] += partial_bd[bh * F + f];
        }
}

}  // namespace iclab::nn::kernels
