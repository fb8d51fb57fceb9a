// Finite-difference checks of every layer's backward, fp64, with the fake loss L = Σ out ⊙ r.
#include <catch2/catch.hpp>

#include "framework/nn/layers.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_layers_gradients {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using iclab::testing::check_gradient;
using iclab::testing::dot;
using iclab::testing::random_vector;

TEST_CASE("layernorm backward matches finite differences", "[gradients][layers]") {
    Rng rng(1);
    const std::size_t N = 5, C = 7;
    auto in = random_vector(N * C, rng, 2.0), gamma = random_vector(C, rng), beta = random_vector(C, rng);
    const auto r = random_vector(N * C, rng);
    std::vector<double> out(N * C), mean(N), rstd(N);
    auto loss = [&] {
        nn::layernorm_forward(out.data(), mean.data(), rstd.data(), in.data(), gamma.data(), beta.data(), N, C);
        return dot(out, r);
    };
    loss();
    std::vector<double> d_in(N * C, 0.0), d_gamma(C, 0.0), d_beta(C, 0.0);
    nn::layernorm_backward(d_in.data(), d_gamma.data(), d_beta.data(), r.data(), in.data(), gamma.data(), mean.data(),
                           rstd.data(), N, C);
    check_gradient("layernorm.in", in, d_in, loss);
    check_gradient("layernorm.gamma", gamma, d_gamma, loss);
    check_gradient("layernorm.beta", beta, d_beta, loss);
}

TEST_CASE("linear backward matches finite differences, and accumulates", "[gradients][layers]") {
    Rng rng(2);
    const std::size_t N = 6, I = 5, O = 4;
    auto in = random_vector(N * I, rng), w = random_vector(I * O, rng), b = random_vector(O, rng);
    const auto r = random_vector(N * O, rng);
    std::vector<double> out(N * O);
    auto loss = [&] {
        nn::linear_forward(out.data(), in.data(), w.data(), b.data(), N, I, O);
        return dot(out, r);
    };
    loss();
    std::vector<double> d_in(N * I, 0.0), d_w(I * O, 0.0), d_b(O, 0.0);
    nn::linear_backward(d_in.data(), d_w.data(), d_b.data(), r.data(), in.data(), w.data(), N, I, O);
    check_gradient("linear.in", in, d_in, loss);
    check_gradient("linear.weight", w, d_w, loss);
    check_gradient("linear.bias", b, d_b, loss);
    // backward accumulates: a second call doubles the gradients
    auto d_w_twice = d_w;
    nn::linear_backward<double>(nullptr, d_w_twice.data(), nullptr, r.data(), in.data(), w.data(), N, I, O);
    for (std::size_t i = 0; i < d_w.size(); ++i) CHECK(d_w_twice[i] == Approx(2.0 * d_w[i]).epsilon(1e-12));
}

TEST_CASE("gelu backward matches finite differences", "[gradients][layers]") {
    Rng rng(3);
    auto in = random_vector(50, rng, 2.0);
    const auto r = random_vector(50, rng);
    std::vector<double> out(50);
    auto loss = [&] {
        nn::gelu_forward(out.data(), in.data(), in.size());
        return dot(out, r);
    };
    loss();
    std::vector<double> d_in(50, 0.0);
    nn::gelu_backward(d_in.data(), r.data(), in.data(), in.size());
    check_gradient("gelu.in", in, d_in, loss);
}

TEST_CASE("embedding backward matches finite differences with repeated tokens", "[gradients][layers]") {
    Rng rng(4);
    const std::size_t N = 8, C = 3, V = 5;
    std::vector<std::int32_t> tokens{0, 3, 3, 1, 4, 0, 3, 2};
    auto table = random_vector(V * C, rng);
    const auto r = random_vector(N * C, rng);
    std::vector<double> out(N * C);
    auto loss = [&] {
        nn::embedding_forward(out.data(), tokens.data(), table.data(), N, C, V);
        return dot(out, r);
    };
    loss();
    std::vector<double> d_table(V * C, 0.0);
    nn::embedding_backward(d_table.data(), r.data(), tokens.data(), N, C);
    check_gradient("embedding.table", table, d_table, loss);
    std::vector<std::int32_t> bad{0, 7};
    CHECK_THROWS_WITH(nn::embedding_forward(out.data(), bad.data(), table.data(), 2, C, V), Catch::Contains("token id 7"));
}

TEST_CASE("weighted cross-entropy backward matches finite differences", "[gradients][layers]") {
    Rng rng(5);
    const std::size_t N = 6, V = 9;
    auto logits = random_vector(N * V, rng, 3.0);
    std::vector<std::int32_t> targets{0, 8, 3, 3, 5, 1};
    std::vector<double> weights{0.5, 0.0, 0.25, 0.125, 0.125, 0.0};
    std::vector<double> probs(N * V), losses(N);
    auto loss = [&] {
        nn::cross_entropy_forward(probs.data(), losses.data(), logits.data(), targets.data(), N, V);
        return dot(losses, weights);
    };
    loss();
    // closed form at one position: -log softmax
    double total = 0.0;
    for (std::size_t v = 0; v < V; ++v) total += std::exp(logits[v]);
    CHECK(losses[0] == Approx(std::log(total) - logits[0]).epsilon(1e-12));
    std::vector<double> d_logits(N * V, 0.0);
    nn::cross_entropy_backward(d_logits.data(), probs.data(), targets.data(), weights.data(), N, V);
    check_gradient("cross_entropy.logits", logits, d_logits, loss, 60);
}

}  // namespace iclab_test_layers_gradients
