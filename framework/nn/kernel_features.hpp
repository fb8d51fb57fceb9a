#pragma once
// Feature maps that estimate the softmax kernel exp(aᵀb/√D) in absolute scale, for ICLAA (paper 000 §5, Eq. 17-18;
// corrected form in ../shared/specs/iclaa.md §1.2-1.4). Inputs are scaled x̃ = s·x with s = D^{-1/4}, so that
// exp(aᵀb/√D) = exp(ãᵀb̃). Every map is evaluated in the log domain:
//   exp_linear : log φ_r(x̃) = w_rᵀx̃ + c_r − λ‖x̃‖²/2
//       PRF / ORF (Choromanski et al. 2020, FAVOR+ without its stabilizers): W (D, F) columns N(0, I_D) or orthogonal
//                 blocks with chi(D) norms, c_r = −½ ln F, λ = 1  ⇒  E[φ(x̃)ᵀφ(ỹ)] = exp(x̃ᵀỹ)
//       learned   (Hedgehog-style two-sided exponential, spec §4.1): columns [W₀ | −W₀], c = [c₁; c₂], λ = 0
//   elu1       : φ(x̃) = elu(x̃) + 1 (F = D), a positive map that estimates no kernel in particular
// A map returns the max log-feature A = max_r log φ_r and the shifted features φ̂_r = φ_r·e^{−A} ∈ (0, 1]: no exp
// overflows whatever the norms (Performer's max-subtraction and additive eps are NOT used: in ICLAA they would not
// cancel against the exact softmax part, spec §1.4).
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/rng.hpp"

namespace iclab::nn {

enum class KernelMapKind { exp_linear, elu1 };

template <class T>
struct KernelFeatures {
    KernelMapKind kind = KernelMapKind::exp_linear;
    std::size_t dim = 0;       // D
    std::size_t features = 0;  // F
    double input_scale = 1.0;  // s
    double lambda = 1.0;       // λ of exp_linear
    std::vector<T> w;          // (D, F) exp_linear: column r is w_r
    std::vector<T> c;          // (F)

    // Bytes of what an adapter must store to rebuild the map (W and c; nothing for elu1).
    std::size_t parameter_count() const { return kind == KernelMapKind::exp_linear ? w.size() + c.size() : 0; }
};

// phi_hat (F) = φ(s·x)·e^{−A}; returns A = max_r log φ_r(s·x) (−inf if every feature is 0).
template <class T>
inline T kernel_features(T* phi_hat, const T* x, const KernelFeatures<T>& map) {
    const std::size_t D = map.dim, F = map.features;
    const T s = static_cast<T>(map.input_scale);
    if (map.kind == KernelMapKind::elu1) {
        T highest = T(0);
        for (std::size_t d = 0; d < D; ++d) {
            const T v = s * x[d];
            phi_hat[d] = v > T(0) ? v + T(1) : std::exp(v);
            highest = std::max(highest, phi_hat[d]);
        }
        for (std::size_t d = 0; d < D; ++d) phi_hat[d] /= highest;
        return std::log(highest);
    }
    T norm = T(0);
    for (std::size_t r = 0; r < F; ++r) phi_hat[r] = map.c[r];
    for (std::size_t d = 0; d < D; ++d) {
        const T v = s * x[d];
        norm += v * v;
        const T* row = map.w.data() + d * F;
        for (std::size_t r = 0; r < F; ++r) phi_hat[r] += v * row[r];
    }
    const T quadratic = static_cast<T>(map.lambda) * norm / T(2);
    T highest = -std::numeric_limits<T>::infinity();
    for (std::size_t r = 0; r < F; ++r) highest = std::max(highest, phi_hat[r]);
    for (std::size_t r = 0; r < F; ++r) phi_hat[r] = std::exp(phi_hat[r] - highest);
    return highest - quadratic;
}

// Random feature directions W (D, R) row-major (column r = w_r): N(0, I_D), or orthogonal blocks of D columns
// (Gram-Schmidt of Gaussian columns — Haar-distributed, so no QR sign correction is needed) each rescaled by an
// independent chi(D) norm (Yu et al. 2016; Choromanski et al. 2020). Shared by performer attention and ICLAA.
inline std::vector<double> draw_feature_directions(std::size_t D, std::size_t R, bool orthogonal, Rng& rng) {
    std::vector<double> w(D * R);  // column-major while building: column r at w[r*D]
    for (auto& x : w) x = rng.normal(0.0, 1.0);
    if (orthogonal) {
        for (std::size_t first = 0; first < R; first += D) {
            const std::size_t last = std::min(R, first + D);
            for (std::size_t r = first; r < last; ++r) {
                double* col = w.data() + r * D;
                for (std::size_t prev = first; prev < r; ++prev) {
                    const double* other = w.data() + prev * D;
                    double dot = 0.0;
                    for (std::size_t d = 0; d < D; ++d) dot += col[d] * other[d];
                    for (std::size_t d = 0; d < D; ++d) col[d] -= dot * other[d];
                }
                double norm = 0.0;
                for (std::size_t d = 0; d < D; ++d) norm += col[d] * col[d];
                norm = std::sqrt(norm);
                for (std::size_t d = 0; d < D; ++d) col[d] /= norm;
            }
            for (std::size_t r = first; r < last; ++r) {
                double chi = 0.0;
                for (std::size_t d = 0; d < D; ++d) chi += std::pow(rng.normal(0.0, 1.0), 2);
                chi = std::sqrt(chi);
                for (std::size_t d = 0; d < D; ++d) w[r * D + d] *= chi;
            }
        }
    }
    std::vector<double> row_major(D * R);
    for (std::size_t d = 0; d < D; ++d)
        for (std::size_t r = 0; r < R; ++r) row_major[d * R + r] = w[r * D + d];
    return row_major;
}

// The PRF / ORF map of D-dimensional inputs with F features and input scale s (exp_linear, λ = 1, c = −½ ln F).
template <class T>
inline KernelFeatures<T> random_kernel_features(std::size_t D, std::size_t F, bool orthogonal, double input_scale, Rng& rng) {
    ICLAB_CHECK(D > 0 && F > 0, "random features need D > 0 and F > 0");
    KernelFeatures<T> map;
    map.kind = KernelMapKind::exp_linear;
    map.dim = D;
    map.features = F;
    map.input_scale = input_scale;
    map.lambda = 1.0;
    const std::vector<double> w = draw_feature_directions(D, F, orthogonal, rng);
    map.w.assign(w.begin(), w.end());
    map.c.assign(F, static_cast<T>(-0.5 * std::log(static_cast<double>(F))));
    return map;
}

}  // namespace iclab::nn
