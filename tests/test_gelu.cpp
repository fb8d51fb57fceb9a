// The GELU's float path (framework/nn/vector_math.hpp's exp instead of libm's tanh) against the tanh formula in
// double precision, forward and backward, over the whole range the model meets and beyond; and the
// double path against the same formula.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "framework/nn/layers.hpp"

namespace iclab_test_gelu {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

constexpr double kScale = 0.7978845608028654;  // sqrt(2 / pi)

double gelu_reference(double x) { return 0.5 * x * (1.0 + std::tanh(kScale * (x + 0.044715 * x * x * x))); }

double gelu_derivative_reference(double x) {
    const double t = std::tanh(kScale * (x + 0.044715 * x * x * x));
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * kScale * (1.0 + 3 * 0.044715 * x * x);
}

// x from -30 to 30 in steps of 1/1024 (every value exact in float), plus zero and extremes.
std::vector<double> gelu_inputs() {
    std::vector<double> xs;
    for (int i = -30 * 1024; i <= 30 * 1024; ++i) xs.push_back(i / 1024.0);
    for (double x : {-1e4, -200.0, -88.0, 1e-30, -1e-30, 88.0, 200.0, 1e4}) xs.push_back(x);
    return xs;
}

}  // namespace

TEST_CASE("gelu in float matches the tanh formula in double to 2-3 float ulps", "[layers][gelu]") {
    const std::vector<double> xs = gelu_inputs();
    std::vector<float> in(xs.begin(), xs.end()), out(xs.size()), d_in(xs.size(), 0.0f), ones(xs.size(), 1.0f);
    nn::gelu_forward(out.data(), in.data(), in.size());
    nn::gelu_backward(d_in.data(), ones.data(), in.data(), in.size());
    const double ulp = std::numeric_limits<float>::epsilon();
    double worst_forward = 0.0, worst_backward = 0.0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const double x = in[i];  // the float input
        // Error relative to |x| (the scale of GELU(x)): where GELU underflows towards 0 only the absolute error matters.
        const double forward_error = std::abs(out[i] - gelu_reference(x)) / std::max(std::abs(x), 1e-30);
        const double backward_error = std::abs(d_in[i] - gelu_derivative_reference(x)) / std::max(1.0, std::abs(x));
        worst_forward = std::max(worst_forward, forward_error);
        worst_backward = std::max(worst_backward, backward_error);
        REQUIRE(std::isfinite(out[i]));
        REQUIRE(std::isfinite(d_in[i]));
    }
    INFO("worst forward error " << worst_forward / ulp << " ulp, backward " << worst_backward / ulp << " ulp");
    CHECK(worst_forward < 2 * ulp);
    CHECK(worst_backward < 3 * ulp);
}

TEST_CASE("gelu in double equals the tanh formula", "[layers][gelu]") {
    const std::vector<double> xs = gelu_inputs();
    std::vector<double> out(xs.size()), d_in(xs.size(), 0.0), ones(xs.size(), 1.0);
    nn::gelu_forward(out.data(), xs.data(), xs.size());
    nn::gelu_backward(d_in.data(), ones.data(), xs.data(), xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i) {
        const double x = xs[i];
        // (the tanh formula itself cancels in 1 + tanh u for x below about -9: absolute comparison there)
        INFO("x = " << x << ", gelu " << out[i] << ", reference " << gelu_reference(x));
        REQUIRE(out[i] == Approx(gelu_reference(x)).epsilon(1e-14).margin(1e-14));
        REQUIRE(d_in[i] == Approx(gelu_derivative_reference(x)).epsilon(1e-13).margin(1e-13));
    }
}

}  // namespace iclab_test_gelu
