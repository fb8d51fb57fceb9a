#pragma once
// Feature maps φ of linearized attention (paper 000 §3.1, Eq. 3).
//   identity : φ(x) = x                      (linear attention)
//   elu1     : φ(x) = elu(x) + 1             (Katharopoulos et al. 2020), strictly positive
#include <cmath>
#include <cstddef>
#include <string>

#include "framework/core/check.hpp"
#include "framework/nn/vector_math.hpp"

namespace iclab::nn {

enum class FeatureMap { identity, elu1 };

inline FeatureMap feature_map_from_name(const std::string& name) {
    if (name == "identity") return FeatureMap::identity;
    if (name == "elu1") return FeatureMap::elu1;
    throw Error("unknown feature map '" + name + "' (known: identity, elu1)");
}

inline const char* feature_map_name(FeatureMap map) { return map == FeatureMap::identity ? "identity" : "elu1"; }

// out (n) = φ(in (n))
template <class T>
inline void feature_map_forward(T* out, const T* in, std::size_t n, FeatureMap map) {
    if (map == FeatureMap::identity) {
        for (std::size_t i = 0; i < n; ++i) out[i] = in[i];
    } else {
        for (std::size_t i = 0; i < n; ++i) out[i] = in[i] > T(0) ? in[i] + T(1) : exp_elementwise(in[i]);
    }
}

// d_in (n) += φ'(in) ⊙ d_out
template <class T>
inline void feature_map_backward(T* d_in, const T* d_out, const T* in, std::size_t n, FeatureMap map) {
    if (map == FeatureMap::identity) {
        for (std::size_t i = 0; i < n; ++i) d_in[i] += d_out[i];
    } else {
        for (std::size_t i = 0; i < n; ++i) d_in[i] += d_out[i] * (in[i] > T(0) ? T(1) : exp_elementwise(in[i]));
    }
}

}  // namespace iclab::nn
