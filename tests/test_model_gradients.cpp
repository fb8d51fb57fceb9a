// The whole transformer, end to end, against finite differences (fp64) for every variant the config allows,
// and fp32/fp64 agreement of the forward pass.
#include <catch2/catch.hpp>

#include "framework/model/transformer.hpp"
#include "tests/gradient_check.hpp"

using namespace iclab;
using iclab::testing::check_gradient;

namespace {

model::ModelSpec small_spec(nn::FeatureMap map, bool normalize, bool rope, bool mlp) {
    model::ModelSpec spec;
    spec.vocab = 7;
    spec.width = 8;
    spec.heads = 2;
    spec.layers = 2;
    spec.max_seq_len = 8;
    spec.mlp = mlp;
    spec.feature_map = map;
    spec.normalize = normalize;
    spec.rope = rope;
    spec.init_std = 0.5;  // large weights: every path carries signal, so errors cannot hide in tiny gradients
    return spec;
}

}  // namespace

TEST_CASE("transformer gradients match finite differences end to end", "[gradients][model]") {
    for (auto map : {nn::FeatureMap::elu1, nn::FeatureMap::identity})
        for (bool normalize : {true, false})
            for (bool rope : {true, false})
                for (bool mlp : {true, false}) {
                    if (map == nn::FeatureMap::identity && normalize) continue;
                    DYNAMIC_SECTION(nn::feature_map_name(map) << (normalize ? " normalized" : " unnormalized")
                                                              << (rope ? " rope" : "") << (mlp ? " mlp" : " attention-only")) {
                        const auto spec = small_spec(map, normalize, rope, mlp);
                        model::Transformer<double> net(spec);
                        Rng rng(42);
                        net.init(rng);
                        // nonzero b_KV, b_D (positive b_D keeps the denominator positive) and LayerNorm shifts
                        for (const auto& entry : net.layout().entries()) {
                            double* p = net.params.data() + entry.offset;
                            const bool b_d = entry.name.find("attn.b_d") != std::string::npos;
                            for (std::size_t i = 0; i < entry.size; ++i) {
                                if (b_d) p[i] = rng.uniform(0.2, 1.0);
                                else if (entry.name.find("b_kv") != std::string::npos || entry.name.find("beta") != std::string::npos ||
                                         entry.name.find("b_") != std::string::npos)
                                    p[i] = rng.normal(0.0, 0.3);
                            }
                        }
                        const std::size_t B = 2, T = 5;
                        std::vector<std::int32_t> tokens(B * T), targets(B * T);
                        for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(spec.vocab));
                        for (auto& t : targets) t = static_cast<std::int32_t>(rng.uniform_int(spec.vocab));
                        std::vector<double> weights(B * T);
                        for (auto& w : weights) w = rng.uniform(0.0, 0.2);
                        auto loss = [&] {
                            net.forward(tokens.data(), B, T);
                            return net.loss(targets.data(), weights.data());
                        };
                        loss();
                        net.zero_grad();
                        net.backward(targets.data(), weights.data());
                        for (const auto& entry : net.layout().entries()) {
                            std::vector<double> values(net.params.begin() + entry.offset, net.params.begin() + entry.offset + entry.size);
                            std::vector<double> analytic(net.grads.begin() + entry.offset, net.grads.begin() + entry.offset + entry.size);
                            auto loss_at = [&] {
                                std::copy(values.begin(), values.end(), net.params.begin() + entry.offset);
                                return loss();
                            };
                            check_gradient(entry.name, values, analytic, loss_at, 12);
                            std::copy(values.begin(), values.end(), net.params.begin() + entry.offset);
                        }
                    }
                }
}

TEST_CASE("quadratic and recurrent attention forms give the same model", "[model][attention]") {
    auto spec = small_spec(nn::FeatureMap::elu1, true, true, true);
    spec.attention_form = model::ModelSpec::AttentionForm::quadratic;
    model::Transformer<double> quadratic(spec);
    spec.attention_form = model::ModelSpec::AttentionForm::recurrent;
    model::Transformer<double> recurrent(spec);
    Rng rng(8);
    quadratic.init(rng);
    for (std::size_t i = 0; i < quadratic.params.size(); ++i) quadratic.params[i] += rng.normal(0.0, 0.1);  // nonzero b_KV, b_D too
    recurrent.params = quadratic.params;
    for (const auto& entry : quadratic.layout().entries())
        if (entry.name.find("attn.b_d") != std::string::npos)
            for (std::size_t i = 0; i < entry.size; ++i) recurrent.params[entry.offset + i] = quadratic.params[entry.offset + i] = 0.5;
    std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 0, 1, 3, 3, 2, 6, 5, 4, 0, 1};
    std::vector<double> weights(16, 1.0 / 16);
    quadratic.forward(tokens.data(), 2, 8);
    recurrent.forward(tokens.data(), 2, 8);
    double error = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < 16 * spec.vocab; ++i) {
        error = std::max(error, std::abs(quadratic.logits()[i] - recurrent.logits()[i]));
        scale = std::max(scale, std::abs(quadratic.logits()[i]));
    }
    CHECK(error / scale < 1e-12);
    quadratic.loss(tokens.data(), weights.data());
    recurrent.loss(tokens.data(), weights.data());
    quadratic.zero_grad();
    recurrent.zero_grad();
    quadratic.backward(tokens.data(), weights.data());
    recurrent.backward(tokens.data(), weights.data());
    double grad_error = 0.0, grad_scale = 0.0;
    for (std::size_t i = 0; i < quadratic.grads.size(); ++i) {
        grad_error = std::max(grad_error, std::abs(quadratic.grads[i] - recurrent.grads[i]));
        grad_scale = std::max(grad_scale, std::abs(quadratic.grads[i]));
    }
    CHECK(grad_error / grad_scale < 1e-10);
}

TEST_CASE("float and double forward passes agree", "[model]") {
    const auto spec = small_spec(nn::FeatureMap::elu1, true, true, true);
    model::Transformer<double> net64(spec);
    model::Transformer<float> net32(spec);
    Rng rng(3);
    net64.init(rng);
    for (std::size_t i = 0; i < net64.params.size(); ++i) net32.params[i] = static_cast<float>(net64.params[i]);
    std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 0, 1};
    net64.forward(tokens.data(), 1, 8);
    net32.forward(tokens.data(), 1, 8);
    double max_diff = 0.0, max_abs = 0.0;
    for (std::size_t i = 0; i < 8 * spec.vocab; ++i) {
        max_diff = std::max(max_diff, std::abs(net64.logits()[i] - static_cast<double>(net32.logits()[i])));
        max_abs = std::max(max_abs, std::abs(net64.logits()[i]));
    }
    CHECK(max_abs > 0.1);
    CHECK(max_diff / max_abs < 1e-4);
}

TEST_CASE("model rejects inconsistent dimensions", "[model]") {
    auto spec = small_spec(nn::FeatureMap::elu1, true, true, true);
    spec.heads = 3;
    CHECK_THROWS_WITH(model::Transformer<float>(spec), Catch::Contains("not divisible"));
    spec.width = 6;  // head width 2 fine; make it odd
    spec.heads = 2;  // head width 3
    CHECK_THROWS_WITH(model::Transformer<float>(spec), Catch::Contains("even head width"));
}
