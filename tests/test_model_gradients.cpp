// The whole transformer, end to end, against finite differences (fp64) for every variant the config allows,
// and fp32/fp64 agreement of the forward pass.
#include <catch2/catch.hpp>

#include "framework/model/transformer.hpp"
#include <functional>

#include "framework/nn/layers.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_model_gradients {  // this file's names (unity build: CMakeLists.txt)

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
    spec.random_features = 6;
    spec.performer_input_scale = 0.7;
    spec.normalize = normalize;
    spec.normalizer_eps = map == nn::FeatureMap::relu ? 0.1 : 1e-6;  // see tests/attention_variants.hpp
    spec.rope = rope;
    spec.init_std = 0.5;  // large weights: every path carries signal, so errors cannot hide in tiny gradients
    return spec;
}

// Nonzero b_KV, b_D (positive b_D keeps the denominator positive), biases and LayerNorm shifts (or zero b_KV, b_D).
void randomize_biases(model::Transformer<double>& net, Rng& rng, bool attention_biases) {
    for (const auto& entry : net.layout().entries()) {
        double* p = net.params.data() + entry.offset;
        const bool b_d = entry.name.find("attn.b_d") != std::string::npos;
        const bool b_kv = entry.name.find("attn.b_kv") != std::string::npos;
        for (std::size_t i = 0; i < entry.size; ++i) {
            if (b_d) p[i] = attention_biases ? rng.uniform(0.2, 1.0) : 0.0;
            else if (b_kv) p[i] = attention_biases ? rng.normal(0.0, 0.3) : 0.0;
            else if (entry.name.find("beta") != std::string::npos || entry.name.find(".b") != std::string::npos)
                p[i] = rng.normal(0.0, 0.3);
        }
    }
}

// Every parameter tensor's gradient against central differences, for a token model (weighted cross-entropy)
// or a vector model (weighted squared error through backward_outputs). Prefix P = 3 of T = 5.
void check_model_gradients(const model::ModelSpec& spec, bool attention_biases, std::size_t per_tensor) {
    model::Transformer<double> net(spec);
    Rng rng(42);
    net.init(rng);
    randomize_biases(net, rng, attention_biases);
    net.set_prefix_length(3);
    const std::size_t B = 2, T = 5, out = spec.output_size();
    std::vector<double> weights(B * T);
    for (auto& w : weights) w = rng.uniform(0.0, 0.2);
    std::vector<std::int32_t> tokens(B * T), targets(B * T);
    std::vector<double> vectors, vector_targets, d_outputs(B * T * out), losses(B * T);
    std::function<double()> loss;
    if (spec.input == model::ModelSpec::Input::tokens) {
        for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(spec.vocab));
        for (auto& t : targets) t = static_cast<std::int32_t>(rng.uniform_int(spec.vocab));
        loss = [&] {
            net.forward(tokens.data(), B, T);
            return net.loss(targets.data(), weights.data());
        };
        loss();
        net.zero_grad();
        net.backward(targets.data(), weights.data());
    } else {
        vectors = testing::random_vector(B * T * spec.input_dim, rng);
        vector_targets = testing::random_vector(B * T * out, rng);
        loss = [&] {
            net.forward(vectors.data(), B, T);
            return nn::squared_error_forward(losses.data(), net.outputs(), vector_targets.data(), weights.data(), B * T, out);
        };
        loss();
        net.zero_grad();
        nn::squared_error_backward(d_outputs.data(), net.outputs(), vector_targets.data(), weights.data(), B * T, out);
        net.backward_outputs(d_outputs.data());
    }
    for (const auto& entry : net.layout().entries()) {
        if (!attention_biases && (entry.name.find("attn.b_") != std::string::npos)) continue;
        if (entry.name.find("random_features") != std::string::npos) continue;  // fixed, no gradient computed
        std::vector<double> values(net.params.begin() + entry.offset, net.params.begin() + entry.offset + entry.size);
        std::vector<double> analytic(net.grads.begin() + entry.offset, net.grads.begin() + entry.offset + entry.size);
        auto loss_at = [&] {
            std::copy(values.begin(), values.end(), net.params.begin() + entry.offset);
            return loss();
        };
        check_gradient(entry.name, values, analytic, loss_at, per_tensor);
        std::copy(values.begin(), values.end(), net.params.begin() + entry.offset);
    }
}

}  // namespace

// The full product the schema allows: feature maps (with the normalizers each allows) and softmax x masks x
// RoPE x attention biases x MLP x shared/unshared layers.
TEST_CASE("transformer gradients match finite differences for every attention combination", "[gradients][model]") {
    struct Attention {
        bool softmax;
        nn::FeatureMap map;
        bool normalize;
    };
    std::vector<Attention> attentions{{true, nn::FeatureMap::elu1, true}};
    for (auto map : testing::all_feature_maps())
        for (bool normalize : {true, false})
            if (nn::feature_map_is_nonnegative(map) || !normalize) attentions.push_back({false, map, normalize});
    for (const auto& attention : attentions)
        for (const auto& mask : testing::all_masks())
            for (bool rope : {true, false})
                for (bool biases : {true, false})
                    for (bool mlp : {true, false})
                        for (bool shared : {false, true}) {
                            if (attention.softmax && biases) continue;  // softmax attention has no b_KV, b_D
                            auto spec = small_spec(attention.map, attention.normalize, rope, mlp);
                            spec.attention = attention.softmax ? model::ModelSpec::Attention::softmax : model::ModelSpec::Attention::linear;
                            spec.mask = mask.kind;
                            spec.isolate_queries = mask.isolate;
                            spec.query_self = mask.self;
                            spec.shared_layers = shared;
                            DYNAMIC_SECTION((attention.softmax ? "softmax" : nn::feature_map_name(attention.map))
                                            << (attention.normalize ? " normalized " : " unnormalized ") << nn::mask_kind_name(mask.kind)
                                            << (mask.isolate ? " isolated" : "") << (rope ? " rope" : "") << (biases ? " biases" : "")
                                            << (mlp ? " mlp" : " attention-only") << (shared ? " shared" : " unshared")) {
                                check_model_gradients(spec, biases, 5);
                            }
                        }
}

// The structural switches: vector read-in/read-out (linear, identity, slice), no LayerNorm, no residual, no W_o,
// no b_qkv — the LSA of paper 003 and paper 004's single layer among them.
TEST_CASE("transformer gradients match finite differences for every block structure", "[gradients][model]") {
    for (int read_in = 0; read_in < 3; ++read_in)
        for (bool layernorm : {true, false})
            for (bool residual : {true, false})
                for (bool projection : {true, false})
                    for (bool mlp : {true, false}) {
                        auto spec = small_spec(nn::FeatureMap::elu1, true, true, mlp);
                        spec.layernorm = layernorm;
                        spec.residual = residual;
                        spec.output_projection = projection;
                        spec.qkv_bias = projection;
                        spec.mask = nn::MaskKind::prefix;
                        if (read_in > 0) {
                            spec.input = model::ModelSpec::Input::vectors;
                            spec.input_dim = read_in == 1 ? 5 : spec.width;
                            spec.output_dim = 2;
                            spec.read_in = read_in == 1 ? model::ModelSpec::ReadIn::linear : model::ModelSpec::ReadIn::identity;
                            spec.read_out = read_in == 1 ? model::ModelSpec::ReadOut::linear : model::ModelSpec::ReadOut::slice;
                        }
                        DYNAMIC_SECTION((read_in == 0 ? "tokens" : read_in == 1 ? "vectors linear" : "vectors identity/slice")
                                        << (layernorm ? " layernorm" : " no-norm") << (residual ? " residual" : " no-residual")
                                        << (projection ? " W_o" : " no-W_o") << (mlp ? " mlp" : "")) {
                            check_model_gradients(spec, true, 8);
                        }
                    }
}

// Paper 003 Part B's model (Q9, Q10): learned absolute positions added after the read-in, with and without the final
// LayerNorm, shared and unshared, softmax attention under both of its masks with isolated queries.
TEST_CASE("transformer gradients match finite differences with learned positions and no final LayerNorm", "[gradients][model]") {
    for (bool vectors : {false, true})
        for (bool final_norm : {true, false})
            for (bool shared : {false, true})
                for (auto mask : {nn::MaskKind::prefix, nn::MaskKind::causal}) {
                    auto spec = small_spec(nn::FeatureMap::elu1, true, false, true);
                    spec.attention = model::ModelSpec::Attention::softmax;
                    spec.positions = model::ModelSpec::Positions::learned;
                    spec.final_layernorm = final_norm;
                    spec.shared_layers = shared;
                    spec.mask = mask;
                    spec.isolate_queries = true;
                    spec.query_self = false;
                    if (vectors) {
                        spec.input = model::ModelSpec::Input::vectors;
                        spec.input_dim = 5;
                        spec.output_dim = 3;
                    }
                    DYNAMIC_SECTION((vectors ? "vectors" : "tokens") << (final_norm ? " final-LN" : " no-final-LN")
                                    << (shared ? " shared" : " unshared") << " " << nn::mask_kind_name(mask)) {
                        model::Transformer<double> net(spec);
                        CHECK(net.layout().find("position_embedding").size == spec.max_seq_len * spec.width);
                        bool has_final = false;
                        for (const auto& entry : net.layout().entries()) has_final |= entry.name == "final_norm.gamma";
                        CHECK(has_final == final_norm);
                        check_model_gradients(spec, false, 8);
                    }
                }
}

// Learned positions make the model see order: the same tokens in another order give other outputs under the prefix
// mask, which without positions is permutation-equivariant over the prefix (paper 003 Q10).
TEST_CASE("learned positions break the prefix mask's permutation equivariance", "[model][mask]") {
    for (bool learned : {false, true}) {
        auto spec = small_spec(nn::FeatureMap::elu1, true, false, true);
        spec.attention = model::ModelSpec::Attention::softmax;
        spec.mask = nn::MaskKind::prefix;
        spec.positions = learned ? model::ModelSpec::Positions::learned : model::ModelSpec::Positions::none;
        model::Transformer<double> net(spec);
        Rng rng(5);
        net.init(rng);
        net.set_prefix_length(4);
        const std::vector<std::int32_t> a{1, 2, 3, 4}, b{2, 1, 3, 4};  // the prefix's first two tokens swapped
        net.forward(a.data(), 1, 4);
        const std::vector<double> out_a(net.outputs() + 3 * spec.vocab, net.outputs() + 4 * spec.vocab);
        net.forward(b.data(), 1, 4);
        double diff = 0.0;
        for (std::size_t v = 0; v < spec.vocab; ++v) diff = std::max(diff, std::abs(out_a[v] - net.outputs()[3 * spec.vocab + v]));
        if (learned) CHECK(diff > 1e-6);
        else CHECK(diff < 1e-12);
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
    CHECK_THROWS_WITH(model::Transformer<float>(spec), Catch::Contains("even feature width"));
}

TEST_CASE("inference mode gives the training-mode logits without gradient buffers", "[model]") {
    for (bool softmax : {false, true}) {
        auto spec = small_spec(nn::FeatureMap::performer, true, true, true);
        spec.layers = 3;
        if (softmax) spec.attention = model::ModelSpec::Attention::softmax;
        model::Transformer<double> train(spec), infer(spec, model::Transformer<double>::Mode::inference);
        Rng rng(12);
        train.init(rng);
        infer.params = train.params;
        CHECK(infer.grads.empty());
        CHECK_THROWS_WITH(infer.zero_grad(), Catch::Contains("no gradients"));
        std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 0, 1, 3, 3, 2, 6, 5, 4, 0, 1};
        train.forward(tokens.data(), 2, 8);
        infer.forward(tokens.data(), 2, 8);
        for (std::size_t i = 0; i < 16 * spec.vocab; ++i) CHECK(train.logits()[i] == infer.logits()[i]);
    }
}

// Paper 003's prefixLM at the model level (several layers, MLPs): the prefix sees itself in both directions
// and never what follows it; causal positions after it see everything before them.
TEST_CASE("prefix mask through the whole model: the prefix depends on itself, never on later tokens", "[model][mask]") {
    for (bool softmax : {false, true}) {
        auto spec = small_spec(nn::FeatureMap::elu1, true, true, true);
        spec.layers = 3;
        spec.mask = nn::MaskKind::prefix;
        if (softmax) spec.attention = model::ModelSpec::Attention::softmax;
        model::Transformer<double> net(spec);
        Rng rng(13);
        net.init(rng);
        net.set_prefix_length(4);
        std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 0, 1};
        net.forward(tokens.data(), 1, 8);
        const std::vector<double> before(net.logits(), net.logits() + 8 * spec.vocab);
        const auto change_when = [&](std::size_t position) {
            auto changed = tokens;
            changed[position] = (changed[position] + 3) % static_cast<std::int32_t>(spec.vocab);
            net.forward(changed.data(), 1, 8);
            std::vector<double> change(8, 0.0);
            for (std::size_t t = 0; t < 8; ++t)
                for (std::size_t v = 0; v < spec.vocab; ++v) change[t] += std::abs(net.logits()[t * spec.vocab + v] - before[t * spec.vocab + v]);
            return change;
        };
        for (std::size_t later = 4; later < 8; ++later) {
            const auto change = change_when(later);
            for (std::size_t t = 0; t < 4; ++t) CHECK(change[t] == 0.0);  // prefix blind to what follows
            for (std::size_t t = later; t < 8; ++t) CHECK(change[t] > 1e-9);
        }
        const auto change_last_prefix = change_when(3);
        for (std::size_t t = 0; t < 8; ++t) CHECK(change_last_prefix[t] > 1e-9);  // position 0 sees position 3
        spec.mask = nn::MaskKind::causal;  // the same model with the causal mask: position 0 does not
        model::Transformer<double> causal(spec);
        causal.params = net.params;
        causal.forward(tokens.data(), 1, 8);
        const std::vector<double> causal_before(causal.logits(), causal.logits() + 8 * spec.vocab);
        auto changed = tokens;
        changed[3] = (changed[3] + 3) % static_cast<std::int32_t>(spec.vocab);
        causal.forward(changed.data(), 1, 8);
        for (std::size_t v = 0; v < spec.vocab; ++v) CHECK(causal.logits()[v] == causal_before[v]);
    }
}

TEST_CASE("min_attention_denominator reports each layer's smallest kernel normalizer", "[model]") {
    auto spec = small_spec(nn::FeatureMap::elu1, true, true, true);
    spec.layers = 3;
    model::Transformer<double> net(spec), infer(spec, model::Transformer<double>::Mode::inference);
    Rng rng(21);
    net.init(rng);
    std::vector<std::int32_t> tokens{1, 2, 3, 4, 5, 6, 0, 1, 3, 3, 2, 6, 5, 4, 0, 1};
    net.forward(tokens.data(), 2, 8);
    const std::vector<double> before = net.min_attention_denominator();
    REQUIRE(before.size() == 3);
    for (double den : before) CHECK(den > 0.0);  // b_D = 0 and elu+1 features: den = φ(q)ᵀΣφ(k) + eps > 0
    // A strongly negative b_D in layer 1 drives its normalizer below zero; layer 0 comes before it and is unchanged.
    for (std::size_t i = 0; i < net.layout().find("blocks.1.attn.b_d").size; ++i) net.param("blocks.1.attn.b_d")[i] = -100.0;
    net.forward(tokens.data(), 2, 8);
    const std::vector<double> after = net.min_attention_denominator();
    CHECK(after[0] == before[0]);
    CHECK(after[1] < 0.0);
    infer.params = net.params;  // inference mode reuses one block of activations but reports every layer
    infer.forward(tokens.data(), 2, 8);
    CHECK(infer.min_attention_denominator() == after);
    spec.attention = model::ModelSpec::Attention::softmax;
    model::Transformer<double> soft(spec);
    soft.init(rng);
    soft.forward(tokens.data(), 2, 8);
    for (double den : soft.min_attention_denominator()) CHECK(std::isnan(den));
}

// GPT-2's option set (docs/gpt2.md): softmax attention scaled 1/sqrt(D), causal, no RoPE, learned positions, pre-LN
// with biases on every linear, GELU-tanh MLP, final LayerNorm, tied input/output embeddings (logits = LN_f(x) wteᵀ,
// no output bias); and tying alone on the default linear model. B·T = 10 tokens over V = 7 repeat tokens, so
// embedding.wte gathers gradient from the input lookup and the output product in one tensor.
TEST_CASE("transformer gradients match finite differences with tied embeddings (GPT-2 option set)", "[gradients][model][gpt2]") {
    for (bool gpt2 : {true, false})
        for (bool shared : {false, true}) {
            auto spec = small_spec(nn::FeatureMap::elu1, true, !gpt2, true);
            spec.tie_embeddings = true;
            spec.shared_layers = shared;
            if (gpt2) {
                spec.attention = model::ModelSpec::Attention::softmax;
                spec.positions = model::ModelSpec::Positions::learned;
                spec.mask = nn::MaskKind::causal;
            }
            DYNAMIC_SECTION((gpt2 ? "gpt2" : "linear tied") << (shared ? " shared" : " unshared")) {
                model::Transformer<double> net(spec);
                for (const auto& entry : net.layout().entries()) CHECK(entry.name != "unembedding.w");
                check_model_gradients(spec, !gpt2, 30);
            }
        }
}

// The other kernel for every product (model.large_gemm and model.small_gemm: openblas; the tests above run the
// default, iclab's blocked kernel): the linear layers, read-in, read-out and tied output through OpenBLAS's sgemm /
// dgemm, the attention's per-head products through one OpenBLAS call each.
TEST_CASE("transformer gradients match finite differences with OpenBLAS for every product", "[gradients][model][large_gemm]") {
    for (int variant = 0; variant < 3; ++variant) {
        auto spec = small_spec(nn::FeatureMap::elu1, true, variant == 0, true);
        spec.large_gemm = nn::SmallGemm::openblas;
        spec.small_gemm = nn::SmallGemm::openblas;
        if (variant == 1) {  // paper 003's model: vectors, linear read-in/out, softmax, learned positions, isolated queries
            spec.attention = model::ModelSpec::Attention::softmax;
            spec.positions = model::ModelSpec::Positions::learned;
            spec.mask = nn::MaskKind::prefix;
            spec.isolate_queries = true;
            spec.input = model::ModelSpec::Input::vectors;
            spec.input_dim = 5;
            spec.output_dim = 3;
        }
        if (variant == 2) {  // GPT-2's tied output product
            spec.attention = model::ModelSpec::Attention::softmax;
            spec.positions = model::ModelSpec::Positions::learned;
            spec.mask = nn::MaskKind::causal;
            spec.tie_embeddings = true;
        }
        DYNAMIC_SECTION((variant == 0 ? "linear attention, rope, mlp" : variant == 1 ? "vectors, softmax, prefix" : "gpt2 tied")) {
            check_model_gradients(spec, variant == 0, 12);
        }
    }
}

// Tying is the untied model with unembedding.w = wteᵀ: the same logits (to rounding of the two GEMM orders).
TEST_CASE("tied embeddings give the logits of an untied model whose unembedding is wte transposed", "[model][gpt2]") {
    auto spec = small_spec(nn::FeatureMap::elu1, true, false, true);
    spec.attention = model::ModelSpec::Attention::softmax;
    spec.positions = model::ModelSpec::Positions::learned;
    spec.tie_embeddings = true;
    model::Transformer<double> tied(spec, model::Transformer<double>::Mode::inference);
    Rng rng(5);
    tied.init(rng);
    spec.tie_embeddings = false;
    model::Transformer<double> untied(spec, model::Transformer<double>::Mode::inference);
    CHECK(untied.parameter_count() == tied.parameter_count() + spec.width * spec.vocab);
    for (const auto& entry : tied.layout().entries())
        std::copy(tied.param(entry.name), tied.param(entry.name) + entry.size, untied.param(entry.name));
    const double* wte = tied.param("embedding.wte");
    double* w_out = untied.param("unembedding.w");
    for (std::size_t v = 0; v < spec.vocab; ++v)
        for (std::size_t c = 0; c < spec.width; ++c) w_out[c * spec.vocab + v] = wte[v * spec.width + c];
    const std::vector<std::int32_t> tokens{3, 1, 4, 1, 5, 6, 2, 6};
    tied.forward(tokens.data(), 1, tokens.size());
    untied.forward(tokens.data(), 1, tokens.size());
    double max_logit = 0.0;
    for (std::size_t i = 0; i < tokens.size() * spec.vocab; ++i) {
        CHECK(tied.logits()[i] == Approx(untied.logits()[i]).margin(1e-12));
        max_logit = std::max(max_logit, std::abs(tied.logits()[i]));
    }
    CHECK(max_logit > 0.1);  // logits that carry signal
}

}  // namespace iclab_test_model_gradients
