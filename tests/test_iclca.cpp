// ICLCA (paper 000 Theorem 4.5, Algorithm 1): the converted model without the prompt gives the logits of
// the original model with it, exactly (fp64, relative error <= 1e-10), for random multi-layer models with
// MLPs and LayerNorms, every supported feature map, normalizer on and off, RoPE on and off; composition and
// removal identities; unsupported settings refused with the assumption named.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/icl/iclca.hpp"
#include "tests/attention_variants.hpp"

namespace iclab_test_iclca {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

model::ModelSpec conversion_spec(nn::FeatureMap map, bool normalize, bool rope) {
    model::ModelSpec spec;
    spec.vocab = 11;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 3;
    spec.max_seq_len = 40;
    spec.mlp = true;
    spec.feature_map = map;
    spec.random_features = 10;
    spec.performer_input_scale = 0.5;
    spec.normalize = normalize;
    spec.rope = rope;
    spec.init_std = 0.4;
    return spec;
}

// Nonzero starting biases: b_KV ~ N(0, 0.3²), b_D ~ U(0.2, 1), so R_{-M} b_KV and b_D + Σφ(k) are exercised.
void randomize_attention_biases(model::Transformer<double>& net, Rng& rng) {
    for (const auto& entry : net.layout().entries()) {
        double* p = net.params.data() + entry.offset;
        if (entry.name.find("attn.b_kv") != std::string::npos)
            for (std::size_t i = 0; i < entry.size; ++i) p[i] = rng.normal(0.0, 0.3);
        if (entry.name.find("attn.b_d") != std::string::npos)
            for (std::size_t i = 0; i < entry.size; ++i) p[i] = rng.uniform(0.2, 1.0);
    }
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::size_t vocab, Rng& rng) {
    std::vector<std::int32_t> tokens(n);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(vocab));
    return tokens;
}

// ‖a − b‖ / ‖b‖ over all entries
double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff += (a[i] - b[i]) * (a[i] - b[i]);
        norm += b[i] * b[i];
    }
    return std::sqrt(diff / norm);
}

// logits of the model on [prefix; input] at the input's positions
std::vector<double> logits_on_input(model::Transformer<double>& net, const std::vector<std::int32_t>& prefix,
                                    const std::vector<std::int32_t>& input) {
    std::vector<std::int32_t> all = prefix;
    all.insert(all.end(), input.begin(), input.end());
    net.forward(all.data(), 1, all.size());
    const std::size_t V = net.spec().vocab;
    return std::vector<double>(net.logits() + prefix.size() * V, net.logits() + all.size() * V);
}

}  // namespace

TEST_CASE("ICLCA is exact: converted model on X equals the original on [X' X]", "[iclca]") {
    for (auto map : testing::all_feature_maps())
        for (bool normalize : {true, false})
            for (bool rope : {true, false}) {
                if (!nn::feature_map_is_nonnegative(map) && normalize) continue;
                DYNAMIC_SECTION(nn::feature_map_name(map) << (normalize ? " normalized" : " unnormalized") << (rope ? " rope" : "")) {
                    const auto spec = conversion_spec(map, normalize, rope);
                    model::Transformer<double> net(spec);
                    Rng rng(5);
                    net.init(rng);
                    randomize_attention_biases(net, rng);
                    const auto prompt = random_tokens(13, spec.vocab, rng), input = random_tokens(9, spec.vocab, rng);
                    const auto with_prompt = logits_on_input(net, prompt, input);
                    const auto original = icl::read_biases(net);
                    const auto converted = icl::iclca_convert(net, prompt.data(), prompt.size());
                    CHECK(icl::read_biases(net).b_kv == original.b_kv);  // conversion leaves the model as it was
                    icl::write_biases(net, converted);
                    const auto without_prompt = logits_on_input(net, {}, input);
                    CHECK(relative_error(without_prompt, with_prompt) <= 1e-10);
                    // the prompt matters: the original model without it differs
                    icl::write_biases(net, original);
                    CHECK(relative_error(logits_on_input(net, {}, input), with_prompt) > 1e-3);
                    // removal: writing the original biases back gives the original outputs exactly
                    CHECK(logits_on_input(net, prompt, input) == with_prompt);
                }
            }
}

TEST_CASE("ICLCA composes: X'_2 on top of X'_1's adapter equals converting [X'_1 X'_2]", "[iclca]") {
    const auto spec = conversion_spec(nn::FeatureMap::elu1, true, true);
    model::Transformer<double> net(spec);
    Rng rng(6);
    net.init(rng);
    randomize_attention_biases(net, rng);
    const auto first = random_tokens(7, spec.vocab, rng), second = random_tokens(5, spec.vocab, rng);
    auto both = first;
    both.insert(both.end(), second.begin(), second.end());
    const auto original = icl::read_biases(net);
    const auto joint = icl::iclca_convert(net, both.data(), both.size());
    const auto adapter1 = icl::iclca_convert(net, first.data(), first.size());
    icl::write_biases(net, adapter1);
    const auto stacked = icl::iclca_convert(net, second.data(), second.size());
    for (std::size_t l = 0; l < spec.layers; ++l) {
        for (std::size_t i = 0; i < joint.b_kv[l].size(); ++i) CHECK(stacked.b_kv[l][i] == Approx(joint.b_kv[l][i]).margin(1e-12));
        for (std::size_t i = 0; i < joint.b_d[l].size(); ++i) CHECK(stacked.b_d[l][i] == Approx(joint.b_d[l][i]).margin(1e-12));
    }
    // and the stacked adapter reproduces the model with both prompts
    icl::write_biases(net, original);
    const auto input = random_tokens(6, spec.vocab, rng);
    const auto reference = logits_on_input(net, both, input);
    icl::write_biases(net, stacked);
    CHECK(relative_error(logits_on_input(net, {}, input), reference) <= 1e-10);
}

TEST_CASE("ICLCA in the recurrent form and in float", "[iclca]") {
    auto spec = conversion_spec(nn::FeatureMap::elu1, true, true);
    spec.attention_form = model::ModelSpec::AttentionForm::recurrent;
    model::Transformer<double> net(spec);
    model::Transformer<float> net32(spec);
    Rng rng(7);
    net.init(rng);
    randomize_attention_biases(net, rng);
    for (std::size_t i = 0; i < net.params.size(); ++i) net32.params[i] = static_cast<float>(net.params[i]);
    const auto prompt = random_tokens(20, spec.vocab, rng), input = random_tokens(10, spec.vocab, rng);
    const auto reference = logits_on_input(net, prompt, input);
    icl::write_biases(net, icl::iclca_convert(net, prompt.data(), prompt.size()));
    CHECK(relative_error(logits_on_input(net, {}, input), reference) <= 1e-10);
    icl::write_biases(net32, icl::iclca_convert(net32, prompt.data(), prompt.size()));
    net32.forward(input.data(), 1, input.size());
    std::vector<double> low(net32.logits(), net32.logits() + input.size() * spec.vocab);
    CHECK(relative_error(low, reference) <= 1e-5);
}

TEST_CASE("ICLCA refuses settings where the conversion is not exact, naming the assumption", "[iclca]") {
    auto spec = conversion_spec(nn::FeatureMap::elu1, true, true);
    spec.attention = model::ModelSpec::Attention::softmax;
    CHECK_THROWS_WITH(icl::check_iclca_assumptions(spec), Catch::Contains("Assumption 4.4"));
    spec.attention = model::ModelSpec::Attention::linear;
    spec.mask = nn::MaskKind::prefix;
    CHECK_THROWS_WITH(icl::check_iclca_assumptions(spec), Catch::Contains("Assumption 4.2"));
    spec.mask = nn::MaskKind::full;
    CHECK_THROWS_WITH(icl::check_iclca_assumptions(spec), Catch::Contains("Assumption 4.2"));
    spec.mask = nn::MaskKind::causal;
    spec.isolate_queries = true;
    CHECK_THROWS_WITH(icl::check_iclca_assumptions(spec), Catch::Contains("Assumption 4.2"));
    spec.isolate_queries = false;
    spec.shared_layers = true;
    CHECK_THROWS_WITH(icl::check_iclca_assumptions(spec), Catch::Contains("shared_layers"));
    spec.shared_layers = false;
    CHECK_NOTHROW(icl::check_iclca_assumptions(spec));
}

TEST_CASE("model fingerprints tell models apart but not their b_KV, b_D or float vs double", "[iclca]") {
    const auto spec = conversion_spec(nn::FeatureMap::elu1, true, true);
    model::Transformer<double> a(spec), b(spec);
    model::Transformer<float> a32(spec);
    Rng rng(8);
    a.init(rng);
    b.init(rng);
    for (std::size_t i = 0; i < a.params.size(); ++i) a.params[i] = static_cast<double>(static_cast<float>(a.params[i]));
    for (std::size_t i = 0; i < a.params.size(); ++i) a32.params[i] = static_cast<float>(a.params[i]);
    const std::string fingerprint = icl::model_fingerprint(a);
    CHECK(fingerprint != icl::model_fingerprint(b));
    CHECK(fingerprint == icl::model_fingerprint(a32));
    randomize_attention_biases(a, rng);
    CHECK(fingerprint == icl::model_fingerprint(a));
}

TEST_CASE("ICLCA converts a prompt as long as the model's context", "[iclca]") {
    auto spec = conversion_spec(nn::FeatureMap::elu1, true, true);
    spec.max_seq_len = 12;
    model::Transformer<double> net(spec);
    Rng rng(9);
    net.init(rng);
    const auto prompt = random_tokens(12, spec.vocab, rng), input = random_tokens(4, spec.vocab, rng);
    const auto converted = icl::iclca_convert(net, prompt.data(), prompt.size());  // rotates by R_{-12}
    CHECK(converted.b_kv.size() == spec.layers);
    CHECK_THROWS_AS(icl::iclca_convert(net, random_tokens(13, spec.vocab, rng).data(), 13), InputError);
}

}  // namespace iclab_test_iclca
