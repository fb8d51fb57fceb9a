#pragma once
// Rotary position encoding, paper 000 Definition B.1 (Su et al. 2023).
// R_{Θ,m} rotates each pair (x_{2p}, x_{2p+1}) by the angle m·θ_p with θ_p = base^{-2p/F}, p = 0..F/2-1.
// Positions m are 0-based here: the first token of a sequence has R_0 = I. Only relative positions
// matter in Eq. 12, since (R_i a)ᵀ(R_j b) = aᵀ R_{j-i} b (Eq. 23-24).
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "framework/core/check.hpp"

namespace iclab::nn {

class RopeTable {
public:
    RopeTable() = default;
    RopeTable(std::size_t max_positions, std::size_t features, double base) { build(max_positions, features, base); }

    void build(std::size_t max_positions, std::size_t features, double base) {
        ICLAB_CHECK(features % 2 == 0, "RoPE needs an even feature width, got " << features);
        max_positions_ = max_positions;
        features_ = features;
        base_ = base;
        const std::size_t pairs = features / 2;
        cos_.resize(max_positions * pairs);
        sin_.resize(max_positions * pairs);
        cos_f_.resize(max_positions * pairs);
        sin_f_.resize(max_positions * pairs);
        for (std::size_t m = 0; m < max_positions; ++m)
            for (std::size_t p = 0; p < pairs; ++p) {
                // angles in double: m·θ_p reaches ~1e4 rad for long sequences
                const double theta = std::pow(base, -2.0 * static_cast<double>(p) / static_cast<double>(features));
                const double angle = static_cast<double>(m) * theta;
                cos_[m * pairs + p] = std::cos(angle);
                sin_[m * pairs + p] = std::sin(angle);
                cos_f_[m * pairs + p] = static_cast<float>(cos_[m * pairs + p]);
                sin_f_[m * pairs + p] = static_cast<float>(sin_[m * pairs + p]);
            }
    }

    std::size_t max_positions() const { return max_positions_; }
    std::size_t features() const { return features_; }
    double base() const { return base_; }

    // out = R_m · in (inverse = false) or R_mᵀ · in = R_{-m} · in (inverse = true). out may not alias in.
    // The angles' cos and sin are computed in double and rounded once to T: float reads a table of those roundings
    // (the same values a cast at each use gives, and −round(s) = round(−s), so the same bits; a float table lets the
    // loop vectorize without conversions).
    template <class T>
    void rotate(T* out, const T* in, std::size_t position, bool inverse) const {
        ICLAB_CHECK(position < max_positions_, "RoPE position " << position << " beyond the table (" << max_positions_ << ")");
        const std::size_t pairs = features_ / 2;
        const T* c = table<T>(cos_, cos_f_) + position * pairs;
        const T* s = table<T>(sin_, sin_f_) + position * pairs;
        if (inverse)
            rotate_pairs(out, in, c, s, pairs, T(-1));
        else
            rotate_pairs(out, in, c, s, pairs, T(1));
    }

private:
    template <class T>
    static const T* table(const std::vector<double>& in_double, const std::vector<float>& in_float) {
        if constexpr (std::is_same_v<T, float>)
            return in_float.data();
        else
            return in_double.data();
    }
    // (x0, x1) of each pair to (c x0 − σ s x1, σ s x0 + c x1), σ = ±1 (σ s exact)
    template <class T>
    static void rotate_pairs(T* __restrict out, const T* __restrict in, const T* c, const T* s, std::size_t pairs, T sign) {
        for (std::size_t p = 0; p < pairs; ++p) {
            const T x0 = in[2 * p], x1 = in[2 * p + 1];
            const T cs = c[p], sn = sign * s[p];
            out[2 * p] = cs * x0 - sn * x1;
            out[2 * p + 1] = sn * x0 + cs * x1;
        }
    }

    std::size_t max_positions_ = 0;
    std::size_t features_ = 0;
    double base_ = 10000.0;
    std::vector<double> cos_, sin_;      // (max_positions, F/2)
    std::vector<float> cos_f_, sin_f_;   // the same rounded to float
};

}  // namespace iclab::nn
