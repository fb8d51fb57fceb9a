#pragma once
// Elementwise math in a form the compiler vectorizes. std::exp and std::tanh are opaque libm calls,
// one per element: perf showed tanhf + expm1f of the GELU at 27% of the paper model's training time,
// and expf of the elu+1 feature map at 13% of the quick model's. fp64 keeps libm: it serves exactness
// checks, not speed.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "framework/core/multiply_add.hpp"

namespace iclab::nn {

// e^x for float as straight-line arithmetic. Cephes expf: x = n ln2 + r with |r| <= ln2/2 (ln2 split
// in two so that n·ln2 is exact), e^r by its degree-7 polynomial (relative error 4.2e-9 on that
// range), 2^n through the exponent bits. x is clamped to [-87, 88], where 2^n is a normal float: the
// result is then e^-87 = 1.6e-38 below and e^88 = 1.7e38 above. tests/test_vector_math.cpp bounds the
// error against double-precision exp (within 2 float ulps). The multiply-adds are written out (iclab::multiply_add:
// fused on every FMA target, not as the compiler's contraction decides): n = fma(x, 1/ln2, 1.5·2^23) − 1.5·2^23;
// r = fma(n, 2.12e-4, x − n·0.693359375) (n·0.693359375 is exact: 9 + 8 bits); Horner in fma steps. These are the
// multiply-adds GCC fused here under its default contraction on AVX2 and AVX-512 builds (every float in [-87, 88]
// compared: the same bits).
inline float exp_vectorizable(float x) {
    x = std::min(std::max(x, -87.0f), 88.0f);
    const float n = multiply_add(x, 1.44269504088896341f, 12582912.0f) - 12582912.0f;  // round(x / ln2): adding 1.5·2^23
    const float r = multiply_add(n, 2.12194440e-4f, x - n * 0.693359375f);              // shifts out the fraction bits
    float p = 1.9875691500e-4f;
    p = multiply_add(p, r, 1.3981999507e-3f);
    p = multiply_add(p, r, 8.3334519073e-3f);
    p = multiply_add(p, r, 4.1665795894e-2f);
    p = multiply_add(p, r, 1.6666665459e-1f);
    p = multiply_add(p, r, 5.0000001201e-1f);
    const float exp_r = multiply_add(p, r * r, r) + 1.0f;
    // 2^n; a NaN x (a diverging run) gives n = NaN, whose cast to int is undefined: cast 0 instead, the NaN
    // still propagates through exp_r (found by the UBSan build).
    const float n_finite = n == n ? n : 0.0f;
    const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(n_finite) + 127) << 23;
    float two_n;
    std::memcpy(&two_n, &bits, sizeof two_n);
    return exp_r * two_n;
}

// c ? a : b as a bitwise blend of a and b (exactly one of their bit patterns). A float select written as a branch or a
// ternary that the compiler turns into one (e.g. d · (c ? 1 : φ), whose `d · 1` side it simplifies away) is left scalar
// by GCC without AVX-512's masks: under -ftrapping-math it may not if-convert a floating-point operation that only one
// side runs. Integer blends it vectorizes for any SIMD width (found: the elu+1 backward, 11 % of the quick model's
// step in an AVX2 build).
template <class T>
inline T select_bits(bool c, T a, T b) {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    static_assert(sizeof(T) == sizeof(Bits), "select_bits: float or double");
    Bits ab, bb;
    std::memcpy(&ab, &a, sizeof(T));
    std::memcpy(&bb, &b, sizeof(T));
    const Bits mask = Bits(0) - static_cast<Bits>(c);
    const Bits r = (ab & mask) | (bb & ~mask);
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
}

// e^x elementwise: the vectorizable form in float, libm in double.
inline float exp_elementwise(float x) { return exp_vectorizable(x); }
inline double exp_elementwise(double x) { return std::exp(x); }

}  // namespace iclab::nn
