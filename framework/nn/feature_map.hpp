#pragma once
// Feature maps φ of linearized attention (paper 000 §3.1, Eq. 3; paper 004 §3.1, §5.1).
//   identity  : φ(x) = x                                   (linear attention; paper 003's LSA)
//   elu1      : φ(x) = elu(x) + 1                          (Katharopoulos et al. 2020), strictly positive
//   relu      : φ(x) = max(x, 0)                           non-negative
//   performer : φ(x) = exp(W_rᵀ(s x) − ‖s x‖²/2) / √R      positive random features (Choromanski et al. 2020,
//               paper 004 §5.1) with R random vectors W_r ~ N(0, I_D) (or orthogonal blocks) fixed per layer,
//               so that E[φ(q)ᵀφ(k)] = exp(s² qᵀk). s = 1 in paper 004; s = D^{-1/4} gives the softmax
//               kernel exp(qᵀk/√D). F = R features instead of F = D.
// Row-wise pairs: φ of `rows` vectors of width D at once (one GEMM for performer).
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/vector_math.hpp"

namespace iclab::nn {

enum class FeatureMap { identity, elu1, relu, performer };

inline FeatureMap feature_map_from_name(const std::string& name) {
    if (name == "identity") return FeatureMap::identity;
    if (name == "elu1") return FeatureMap::elu1;
    if (name == "relu") return FeatureMap::relu;
    if (name == "performer") return FeatureMap::performer;
    throw Error("unknown feature map '" + name + "' (known: identity, elu1, relu, performer)");
}

inline const char* feature_map_name(FeatureMap map) {
    switch (map) {
        case FeatureMap::identity: return "identity";
        case FeatureMap::elu1: return "elu1";
        case FeatureMap::relu: return "relu";
        case FeatureMap::performer: return "performer";
    }
    return "?";
}

// Whether φ(q)ᵀ(Σφ(k) + b_D) stays positive, as the kernel normalizer needs (identity can change sign).
inline bool feature_map_is_nonnegative(FeatureMap map) { return map != FeatureMap::identity; }

// What a feature map needs besides its input: the random matrix of performer features.
template <class T>
struct FeatureMapParams {
    FeatureMap map = FeatureMap::elu1;
    const T* random = nullptr;  // (D, R) performer only: column r is W_r
    std::size_t random_features = 0;  // R
    double input_scale = 1.0;         // s
    // Kernel of the projection x W (model.small_gemm in the model: the per-(batch, head) products' kernel).
    SmallGemm kernel = SmallGemm::blocked;
};

// phi (rows, F) = φ(x (rows, D)); F = D for elementwise maps, R for performer.
template <class T>
inline void feature_map_forward(T* phi, const T* x, std::size_t rows, std::size_t D, const FeatureMapParams<T>& p) {
    const std::size_t n = rows * D;
    switch (p.map) {
        case FeatureMap::identity:
            for (std::size_t i = 0; i < n; ++i) phi[i] = x[i];
            return;
        case FeatureMap::elu1:
            // float: both sides computed and one kept by a bit blend (select_bits), the bits of the branch. Written as
            // a ternary, GCC leaves the loop scalar on targets without AVX-512's masks (it may not if-convert the exp
            // that only one side runs, vector_math.hpp) and calls exp_vectorizable once per element: 14 % of the quick
            // model's step on an AVX2 CPU (AMD EPYC Zen 3, perf, 2026-11-30). double keeps the branch (libm's exp is
            // a call either way).
            if constexpr (std::is_same_v<T, float>) {
                for (std::size_t i = 0; i < n; ++i) phi[i] = select_bits(x[i] > T(0), x[i] + T(1), exp_elementwise(x[i]));
            } else {
                for (std::size_t i = 0; i < n; ++i) phi[i] = x[i] > T(0) ? x[i] + T(1) : exp_elementwise(x[i]);
            }
            return;
        case FeatureMap::relu:
            for (std::size_t i = 0; i < n; ++i) phi[i] = x[i] > T(0) ? x[i] : T(0);
            return;
        case FeatureMap::performer: break;
    }
    const std::size_t R = p.random_features;
    ICLAB_CHECK(p.random != nullptr && R > 0, "performer features need their random matrix");
    const T s = static_cast<T>(p.input_scale);
    gemm<T>(matrix(phi, rows, R), matrix<const T>(x, rows, D), matrix<const T>(p.random, D, R), false, false, s, T(0),
            p.kernel);
    const T inv_sqrt_r = T(1) / std::sqrt(static_cast<T>(R));
    for (std::size_t t = 0; t < rows; ++t) {
        T half_norm = T(0);
        for (std::size_t d = 0; d < D; ++d) half_norm += x[t * D + d] * x[t * D + d];
        half_norm *= s * s / T(2);
        T* row = phi + t * R;
        for (std::size_t r = 0; r < R; ++r) row[r] = std::exp(row[r] - half_norm) * inv_sqrt_r;
    }
}

// d_x (rows, D) += (∂φ/∂x)ᵀ d_phi (rows, F); phi is forward's output. scratch is resized as needed.
//   performer: ∂φ_r/∂x = φ_r (s W_r − s² x)  =>  d_x = s (d_phi ⊙ φ) Wᵀ − s² x Σ_r (d_phi ⊙ φ)_r
template <class T>
inline void feature_map_backward(T* d_x, const T* d_phi, const T* x, const T* phi, std::size_t rows, std::size_t D,
                                 const FeatureMapParams<T>& p, std::vector<T>& scratch) {
    const std::size_t n = rows * D;
    switch (p.map) {
        case FeatureMap::identity:
            for (std::size_t i = 0; i < n; ++i) d_x[i] += d_phi[i];
            return;
        case FeatureMap::elu1:
            for (std::size_t i = 0; i < n; ++i) d_x[i] += d_phi[i] * select_bits(x[i] > T(0), T(1), phi[i]);  // exp(x) = φ
            return;
        case FeatureMap::relu:
            for (std::size_t i = 0; i < n; ++i) d_x[i] += x[i] > T(0) ? d_phi[i] : T(0);
            return;
        case FeatureMap::performer: break;
    }
    const std::size_t R = p.random_features;
    const T s = static_cast<T>(p.input_scale);
    scratch.resize(rows * R);
    for (std::size_t t = 0; t < rows; ++t) {
        T row_sum = T(0);
        for (std::size_t r = 0; r < R; ++r) {
            scratch[t * R + r] = d_phi[t * R + r] * phi[t * R + r];
            row_sum += scratch[t * R + r];
        }
        for (std::size_t d = 0; d < D; ++d) d_x[t * D + d] -= s * s * row_sum * x[t * D + d];
    }
    gemm<T>(matrix(d_x, rows, D), matrix<const T>(scratch.data(), rows, R), matrix<const T>(p.random, D, R), false, true, s,
            T(1), p.kernel);
}

// One row (n elements) of an elementwise map's backward, written: d_x = 0 + (0 + (∂φ/∂x)ᵀ d_phi), the derivatives of
// feature_map_backward above; the bits of that function into a zeroed row, then added to zeros (attention's d_qkv, which
// the kernels write in place). One pass instead of a fill, the accumulation and the add.
template <class T>
inline void feature_map_backward_fresh(T* d_x, const T* d_phi, const T* x, const T* phi, std::size_t n, FeatureMap map) {
    switch (map) {
        case FeatureMap::identity:
            for (std::size_t i = 0; i < n; ++i) d_x[i] = T(0) + (T(0) + d_phi[i]);
            return;
        case FeatureMap::elu1:
            for (std::size_t i = 0; i < n; ++i) d_x[i] = T(0) + (T(0) + d_phi[i] * select_bits(x[i] > T(0), T(1), phi[i]));
            return;
        case FeatureMap::relu:
            for (std::size_t i = 0; i < n; ++i) d_x[i] = T(0) + (T(0) + (x[i] > T(0) ? d_phi[i] : T(0)));
            return;
        case FeatureMap::performer: break;
    }
    ICLAB_CHECK(false, "feature_map_backward_fresh: elementwise maps only");
}

}  // namespace iclab::nn
