// The fused kernels of issue 23 (framework/nn/layers.hpp): finite-difference gradients in double precision with the
// fake loss L = Σ out ⊙ r, and bit-for-bit equality in float with the unfused passes they replace.
#include <catch2/catch.hpp>

#include <vector>

#include "framework/nn/layers.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_fused_layers {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using iclab::testing::check_gradient;
using iclab::testing::dot;
using iclab::testing::random_vector;

// The MLP as the model runs it: h = gelu(x W1 + b1) (linear_gelu_forward), y = h W2 + b2; backward through
// linear_backward's gelu_pre (d pre in the d_in product's region) and the first layer's linear_backward (d b1).
template <class T>
struct FusedMlp {
    std::size_t N, I, F, O;
    nn::SmallGemm kernel;
    std::vector<T> pre, h, y, d_h, d_x;
    void forward(const std::vector<T>& x, const std::vector<T>& w1, const std::vector<T>& b1, const std::vector<T>& w2,
                 const std::vector<T>& b2) {
        pre.assign(N * F, T(7));  // written in full
        h.assign(N * F, T(7));
        y.assign(N * O, T(0));
        nn::linear_gelu_forward(h.data(), pre.data(), x.data(), w1.data(), b1.data(), N, I, F, kernel);
        nn::linear_forward(y.data(), h.data(), w2.data(), b2.data(), N, F, O, static_cast<const T*>(nullptr), kernel);
    }
    // gradients of L = Σ y ⊙ r, accumulated into d_w1, d_b1, d_w2, d_b2
    void backward(const std::vector<T>& r, const std::vector<T>& x, const std::vector<T>& w1, const std::vector<T>& w2,
                  std::vector<T>& d_w1, std::vector<T>& d_b1, std::vector<T>& d_w2, std::vector<T>& d_b2) {
        d_h.assign(N * F, T(-3));  // written, whatever it held
        d_x.assign(N * I, T(-3));
        nn::linear_backward(d_h.data(), d_w2.data(), d_b2.data(), r.data(), h.data(), w2.data(), N, F, O, false, kernel,
                            pre.data());
        nn::linear_backward(d_x.data(), d_w1.data(), d_b1.data(), d_h.data(), x.data(), w1.data(), N, I, F, false, kernel);
    }
};

TEST_CASE("fused MLP (bias + gelu in the product's epilogue, gelu' in the d_in product's): gradients match finite "
          "differences",
          "[gradients][layers][fused]") {
    for (const nn::SmallGemm kernel : {nn::SmallGemm::openblas, nn::SmallGemm::blocked}) {
        Rng rng(31);
        const std::size_t N = 7, I = 5, F = 37, O = 3;  // F not a multiple of the 16-column chunks
        auto x = random_vector(N * I, rng, 1.5), w1 = random_vector(I * F, rng), b1 = random_vector(F, rng),
             w2 = random_vector(F * O, rng), b2 = random_vector(O, rng);
        const auto r = random_vector(N * O, rng);
        FusedMlp<double> mlp{N, I, F, O, kernel, {}, {}, {}, {}, {}};
        auto loss = [&] {
            mlp.forward(x, w1, b1, w2, b2);
            return dot(mlp.y, r);
        };
        loss();
        std::vector<double> d_w1(I * F, 0.0), d_b1(F, 0.0), d_w2(F * O, 0.0), d_b2(O, 0.0);
        mlp.backward(r, x, w1, w2, d_w1, d_b1, d_w2, d_b2);
        const auto d_x = mlp.d_x;
        INFO("kernel " << (kernel == nn::SmallGemm::blocked ? "blocked" : "openblas"));
        check_gradient("mlp.x", x, d_x, loss, 60);
        check_gradient("mlp.w1", w1, d_w1, loss, 60);
        check_gradient("mlp.b1", b1, d_b1, loss, 60);
        check_gradient("mlp.w2", w2, d_w2, loss, 60);
        check_gradient("mlp.b2", b2, d_b2, loss, 60);
    }
}

TEST_CASE("fused MLP equals the unfused passes (bias add, gelu, gelu backward into zeros, bias sums) bit for bit in "
          "float",
          "[layers][fused]") {
    for (const nn::SmallGemm kernel : {nn::SmallGemm::openblas, nn::SmallGemm::blocked}) {
        Rng rng(32);
        const std::size_t N = 300, I = 24, F = 70, O = 9;  // above the parallel thresholds
        std::vector<float> x(N * I), w1(I * F), b1(F), w2(F * O), b2(O), r(N * O);
        for (auto* v : {&x, &w1, &b1, &w2, &b2, &r})
            for (auto& e : *v) e = static_cast<float>(rng.normal(0.0, 1.5));
        FusedMlp<float> fused{N, I, F, O, kernel, {}, {}, {}, {}, {}};
        fused.forward(x, w1, b1, w2, b2);
        std::vector<float> d_w1(I * F, 0.25f), d_b1(F, 0.5f), d_w2(F * O, 0.25f), d_b2(O, 0.5f);
        fused.backward(r, x, w1, w2, d_w1, d_b1, d_w2, d_b2);
        // unfused: the product, the bias add and gelu_forward as passes of their own
        std::vector<float> pre(N * F), h(N * F), y(N * O);
        nn::linear_forward(pre.data(), x.data(), w1.data(), b1.data(), N, I, F, static_cast<const float*>(nullptr), kernel);
        nn::gelu_forward(h.data(), pre.data(), N * F);
        nn::linear_forward(y.data(), h.data(), w2.data(), b2.data(), N, F, O, static_cast<const float*>(nullptr), kernel);
        std::vector<float> e_w1(I * F, 0.25f), e_b1(F, 0.5f), e_w2(F * O, 0.25f), e_b2(O, 0.5f), d_h(N * F), d_pre(N * F, 0.0f),
            d_x(N * I);
        nn::linear_backward(d_h.data(), e_w2.data(), e_b2.data(), r.data(), h.data(), w2.data(), N, F, O, false, kernel);
        nn::gelu_backward(d_pre.data(), d_h.data(), pre.data(), N * F);  // into zeros
        nn::linear_backward(d_x.data(), e_w1.data(), e_b1.data(), d_pre.data(), x.data(), w1.data(), N, I, F, false, kernel);
        INFO("kernel " << (kernel == nn::SmallGemm::blocked ? "blocked" : "openblas"));
        CHECK(fused.pre == pre);
        CHECK(fused.h == h);
        CHECK(fused.y == y);
        CHECK(fused.d_h == d_pre);
        CHECK(fused.d_x == d_x);
        CHECK(d_w1 == e_w1);
        CHECK(d_b1 == e_b1);
        CHECK(d_w2 == e_w2);
        CHECK(d_b2 == e_b2);
    }
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

}  // namespace iclab_test_fused_layers
