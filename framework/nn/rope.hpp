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
#include "framework/core/multiply_add.hpp"

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
    template <class T>
    void rotate(T* out, const T* in, std::size_t position, bool inverse) const {
        ICLAB_CHECK(position < max_positions_, "RoPE position " << position << " beyond the table (" << max_positions_ << ")");
        const std::size_t pairs = features_ / 2;
        if constexpr (std::is_same_v<T, float>) {
            // The float copy of the table: static_cast<float>(±s) is ±static_cast<float>(s) (rounding is symmetric), so
            // the same values as the double table's conversion below, without a conversion per pair and call (issue 44:
            // RoPE was ~16 % of the linear attention forward's own CPU samples on an x86-64-v3 build).
            const float* c = cos_f_.data() + position * pairs;
            const float* s = sin_f_.data() + position * pairs;
            for (std::size_t p = 0; p < pairs; ++p) {
                const float x0 = in[2 * p], x1 = in[2 * p + 1];
                const float cs = c[p], sn = inverse ? -s[p] : s[p];
                out[2 * p] = multiply_add(cs, x0, -(sn * x1));
                out[2 * p + 1] = multiply_add(sn, x0, cs * x1);
            }
            return;
        }
        const double* c = cos_.data() + position * pairs;
        const double* s = sin_.data() + position * pairs;
        const double sign = inverse ? -1.0 : 1.0;
        // Each output one rounded product and one fused multiply-add, written out. Left as cs·x0 − sn·x1 and sn·x0 + cs·x1,
        // GCC 12 vectorizes the pair into one vfmaddsub (a fused multiply-add) even under -ffp-contract=off, while the
        // loop's scalar remainder rounds twice: which pairs were fused then followed the vector width (AVX-512 vs AVX2
        // builds: 18 pairs at D = 36 leave a remainder on one and not the other, the 205K iclca_exactness fp64 rows).
        for (std::size_t p = 0; p < pairs; ++p) {
            const T x0 = in[2 * p], x1 = in[2 * p + 1];
            const T cs = static_cast<T>(c[p]), sn = static_cast<T>(sign * s[p]);
            out[2 * p] = multiply_add(cs, x0, -(sn * x1));
            out[2 * p + 1] = multiply_add(sn, x0, cs * x1);
        }
    }

private:
    std::size_t max_positions_ = 0;
    std::size_t features_ = 0;
    double base_ = 10000.0;
    std::vector<double> cos_, sin_;    // (max_positions, F/2)
    std::vector<float> cos_f_, sin_f_;  // the same, rounded to float once (rotate<float>)
};

}  // namespace iclab::nn
