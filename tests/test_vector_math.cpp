// The vectorizable exp (framework/nn/vector_math.hpp) against double-precision exp over its whole
// range, and its clamping outside it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "framework/nn/vector_math.hpp"

namespace iclab_test_vector_math {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

TEST_CASE("exp_vectorizable is within 2 float ulps of exp on [-87, 88]", "[vector_math]") {
    const double ulp = std::numeric_limits<float>::epsilon();
    double worst = 0.0;
    for (int i = -87 * 4096; i <= 88 * 4096; ++i) {  // steps of 1/4096: every value exact in float
        const float x = static_cast<float>(i / 4096.0);
        const double exact = std::exp(static_cast<double>(x));
        worst = std::max(worst, std::abs(nn::exp_vectorizable(x) - exact) / exact);
    }
    INFO("worst relative error " << worst / ulp << " ulp");
    CHECK(worst < 2 * ulp);
    CHECK(nn::exp_vectorizable(0.0f) == 1.0f);
}

TEST_CASE("exp_vectorizable clamps outside [-87, 88] and stays finite", "[vector_math]") {
    CHECK(nn::exp_vectorizable(-1000.0f) == nn::exp_vectorizable(-87.0f));
    CHECK(nn::exp_vectorizable(1000.0f) == nn::exp_vectorizable(88.0f));
    CHECK(std::isfinite(nn::exp_vectorizable(88.0f)));
    CHECK(nn::exp_vectorizable(-87.0f) >= std::numeric_limits<float>::min());  // a normal float
    CHECK(nn::exp_elementwise(1.0) == std::exp(1.0));                          // double: libm
}

TEST_CASE("exp_vectorizable propagates NaN without undefined behaviour", "[vector_math]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(std::isnan(iclab::nn::exp_vectorizable(nan)));
    CHECK(std::isnan(iclab::nn::exp_vectorizable(-nan)));
}

// select_bits returns exactly one of the two bit patterns, the first when the condition holds: signed zeros, NaN
// payloads and infinities included (a float ternary would too; the blend must not round, convert or canonicalize).
template <class T>
void check_select_bits() {
    const T values[] = {T(0), -T(0), T(1), T(-2.5), std::numeric_limits<T>::infinity(), -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(), -std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::max()};
    for (const T a : values)
        for (const T b : values)
            for (const bool c : {true, false}) {
                const T r = nn::select_bits(c, a, b);
                CHECK(std::memcmp(&r, c ? &a : &b, sizeof(T)) == 0);
            }
}

TEST_CASE("select_bits is the bit pattern of the selected value", "[vector_math]") {
    check_select_bits<float>();
    check_select_bits<double>();
}

}  // namespace iclab_test_vector_math
