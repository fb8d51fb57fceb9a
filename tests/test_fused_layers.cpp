// The fused kernels of issue 23 (framework/nn/layers.hpp): finite-difference gradients in double precision with the
// fake loss L = Σ out ⊙ r, and bit-for-bit equality in float with the unfused passes they replace.
#include <catch2/catch.hpp>

#include <vector>

#include "framework/nn/layers.hpp"
#include "tests/gradient_check.hpp"

using namespace iclab;
using iclab::testing::check_gradient;
using iclab::testing::dot;
using iclab::testing::random_vector;

TEST_CASE("bias + gelu fused: backward matches finite differences (pre-activation and bias)", "[gradients][layers][fused]") {
    Rng rng(31);
    const std::size_t N = 7, F = 37;  // F not a multiple of the 16-column chunks
    auto x = random_vector(N * F, rng, 2.0), bias = random_vector(F, rng);
    const auto r = random_vector(N * F, rng);
    std::vector<double> pre(N * F), out(N * F);
    auto loss = [&] {
        pre = x;  // pre enters as x W (here: x) and leaves as x + b
        nn::bias_gelu_forward(out.data(), pre.data(), bias.data(), N, F);
        return dot(out, r);
    };
    loss();
    for (std::size_t i = 0; i < N * F; ++i) REQUIRE(pre[i] == x[i] + bias[i % F]);
    std::vector<double> d_pre(N * F, 123.0), d_bias(F, 0.0);  // d_pre is written, whatever it held
    nn::gelu_bias_backward(d_pre.data(), d_bias.data(), r.data(), pre.data(), N, F);
    check_gradient("bias_gelu.x", x, d_pre, loss, 60);
    check_gradient("bias_gelu.bias", bias, d_bias, loss, 60);
    // d_bias accumulates: a second call doubles it (pre recomputed at the unperturbed point first)
    loss();
    auto twice = d_bias;
    nn::gelu_bias_backward(d_pre.data(), twice.data(), r.data(), pre.data(), N, F);
    for (std::size_t f = 0; f < F; ++f) CHECK(twice[f] == Approx(2.0 * d_bias[f]).epsilon(1e-12));
}

TEST_CASE("bias + gelu fused equals bias add then gelu, and gelu backward then the bias gradient, bit for bit in float",
          "[layers][fused]") {
    Rng rng(32);
    const std::size_t N = 300, F = 70;  // above the parallel threshold of the column sums
    std::vector<float> x(N * F), bias(F), d_out(N * F);
    for (auto& v : x) v = static_cast<float>(rng.normal(0.0, 3.0));
    for (auto& v : bias) v = static_cast<float>(rng.normal(0.0, 1.0));
    for (auto& v : d_out) v = static_cast<float>(rng.normal(0.0, 1.0));
    // unfused: linear_forward's bias add, gelu_forward; gelu_backward into zeros, linear_backward's bias sum
    std::vector<float> pre_a = x, out_a(N * F);
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t f = 0; f < F; ++f) pre_a[n * F + f] += bias[f];
    nn::gelu_forward(out_a.data(), pre_a.data(), N * F);
    std::vector<float> d_pre_a(N * F, 0.0f), d_bias_a(F, 0.5f);
    nn::gelu_backward(d_pre_a.data(), d_out.data(), pre_a.data(), N * F);
    for (std::size_t n = 0; n < N; ++n)
        for (std::size_t f = 0; f < F; ++f) d_bias_a[f] += d_pre_a[n * F + f];
    // fused
    std::vector<float> pre_b = x, out_b(N * F), d_pre_b(N * F, -1.0f), d_bias_b(F, 0.5f);
    nn::bias_gelu_forward(out_b.data(), pre_b.data(), bias.data(), N, F);
    nn::gelu_bias_backward(d_pre_b.data(), d_bias_b.data(), d_out.data(), pre_b.data(), N, F);
    CHECK(pre_a == pre_b);
    CHECK(out_a == out_b);
    CHECK(d_pre_a == d_pre_b);
    CHECK(d_bias_a == d_bias_b);
}

TEST_CASE("residual + layernorm fused: gradients through both summands match finite differences",
          "[gradients][layers][fused]") {
    Rng rng(33);
    const std::size_t N = 5, C = 19;
    auto a = random_vector(N * C, rng, 2.0), residual = random_vector(N * C, rng), gamma = random_vector(C, rng),
         beta = random_vector(C, rng);
    const auto r = random_vector(N * C, rng);
    std::vector<double> sum(N * C), out(N * C), mean(N), rstd(N);
    auto loss = [&] {
        sum = a;
        nn::residual_layernorm_forward(out.data(), mean.data(), rstd.data(), sum.data(), residual.data(), gamma.data(),
                                       beta.data(), N, C);
        return dot(out, r);
    };
    loss();
    for (std::size_t i = 0; i < N * C; ++i) REQUIRE(sum[i] == a[i] + residual[i]);
    // d sum = LayerNorm backward; both summands receive it
    std::vector<double> d_sum(N * C, 0.0), d_gamma(C, 0.0), d_beta(C, 0.0);
    nn::layernorm_backward(d_sum.data(), d_gamma.data(), d_beta.data(), r.data(), sum.data(), gamma.data(), mean.data(),
                           rstd.data(), N, C);
    check_gradient("residual_layernorm.a", a, d_sum, loss);
    check_gradient("residual_layernorm.residual", residual, d_sum, loss);
    check_gradient("residual_layernorm.gamma", gamma, d_gamma, loss);
    check_gradient("residual_layernorm.beta", beta, d_beta, loss);
}

TEST_CASE("residual + layernorm fused equals the residual add then layernorm, bit for bit in float", "[layers][fused]") {
    Rng rng(34);
    const std::size_t N = 200, C = 64;
    std::vector<float> a(N * C), residual(N * C), gamma(C), beta(C);
    for (auto& v : a) v = static_cast<float>(rng.normal(0.0, 2.0));
    for (auto& v : residual) v = static_cast<float>(rng.normal(0.0, 1.0));
    for (auto& v : gamma) v = static_cast<float>(rng.normal(1.0, 0.2));
    for (auto& v : beta) v = static_cast<float>(rng.normal(0.0, 0.2));
    std::vector<float> sum_a = a, out_a(N * C), mean_a(N), rstd_a(N);
    for (std::size_t i = 0; i < N * C; ++i) sum_a[i] += residual[i];
    nn::layernorm_forward(out_a.data(), mean_a.data(), rstd_a.data(), sum_a.data(), gamma.data(), beta.data(), N, C);
    std::vector<float> sum_b = a, out_b(N * C), mean_b(N), rstd_b(N);
    nn::residual_layernorm_forward(out_b.data(), mean_b.data(), rstd_b.data(), sum_b.data(), residual.data(), gamma.data(),
                                   beta.data(), N, C);
    CHECK(sum_a == sum_b);
    CHECK(out_a == out_b);
    CHECK(mean_a == mean_b);
    CHECK(rstd_a == rstd_b);
}
