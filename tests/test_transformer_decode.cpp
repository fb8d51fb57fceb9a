// Incremental decoding (framework/model/transformer_decode.hpp): the KV cache (softmax) and the recurrent state of
// Eq. 19 (linear) give, at every position, the logits of the model's full causal forward, to <= 1e-12 relative in
// fp64; with an ICLCA adapter (b_KV, b_D set in the parameters) and with ICLAA prompt terms (softmax) as well.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "framework/core/measure.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/model/transformer_decode.hpp"

namespace iclab_test_transformer_decode {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

model::ModelSpec decode_spec(model::ModelSpec::Attention attention, bool rope, bool learned_positions) {
    model::ModelSpec spec;
    spec.vocab = 23;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 3;
    spec.max_seq_len = 40;
    spec.attention = attention;
    spec.rope = rope;
    spec.positions = learned_positions ? model::ModelSpec::Positions::learned : model::ModelSpec::Positions::none;
    spec.init_std = 0.3;  // large enough that attention is far from uniform
    return spec;
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::size_t vocab, Rng& rng) {
    std::vector<std::int32_t> tokens(n);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(vocab));
    return tokens;
}

// Largest relative error over positions of the decoder's logits against rows of `reference` (T, V): prefill the
// first `prefill` tokens in one append, then one token per step.
double decode_error(model::TransformerDecoder<double>& decoder, const std::vector<std::int32_t>& tokens,
                    const std::vector<double>& reference, std::size_t V, std::size_t prefill) {
    decoder.reset();
    double worst = 0.0;
    decoder.append(tokens.data(), prefill);
    for (std::size_t t = 0; t < prefill; ++t)
        worst = std::max(worst, relative_error(decoder.logits() + t * V, reference.data() + t * V, V));
    for (std::size_t t = prefill; t < tokens.size(); ++t) {
        decoder.append(tokens.data() + t, 1);
        REQUIRE(decoder.length() == t + 1);
        worst = std::max(worst, relative_error(decoder.last_logits(), reference.data() + t * V, V));
    }
    return worst;
}

std::vector<double> full_logits(model::Transformer<double>& net, const std::vector<std::int32_t>& tokens) {
    net.forward(tokens.data(), 1, tokens.size());
    return std::vector<double>(net.logits(), net.logits() + tokens.size() * net.spec().vocab);
}

}  // namespace

TEST_CASE("Incremental decoding equals the full forward at every position", "[decode]") {
    struct Variant {
        std::string name;
        model::ModelSpec spec;
    };
    std::vector<Variant> variants = {
        {"softmax, learned positions (GPT-2 style)", decode_spec(model::ModelSpec::Attention::softmax, false, true)},
        {"softmax, RoPE", decode_spec(model::ModelSpec::Attention::softmax, true, false)},
        {"linear elu1, RoPE", decode_spec(model::ModelSpec::Attention::linear, true, false)},
        {"linear elu1, RoPE + learned positions", decode_spec(model::ModelSpec::Attention::linear, true, true)},
    };
    model::ModelSpec performer = decode_spec(model::ModelSpec::Attention::linear, true, false);
    performer.feature_map = nn::FeatureMap::performer;
    performer.random_features = 12;
    variants.push_back({"linear performer, RoPE", performer});
    model::ModelSpec recurrent = decode_spec(model::ModelSpec::Attention::linear, true, false);
    recurrent.attention_form = model::ModelSpec::AttentionForm::recurrent;
    variants.push_back({"linear elu1, RoPE, recurrent full forward", recurrent});
    for (const auto& variant : variants) {
        CAPTURE(variant.name);
        model::Transformer<double> net(variant.spec, model::Transformer<double>::Mode::inference);
        Rng rng(17);
        net.init(rng);
        const auto tokens = random_tokens(variant.spec.max_seq_len, variant.spec.vocab, rng);
        const auto reference = full_logits(net, tokens);
        model::TransformerDecoder<double> decoder(net);
        for (const std::size_t prefill : {std::size_t(1), std::size_t(7), variant.spec.max_seq_len}) {
            CAPTURE(prefill);
            const double error = decode_error(decoder, tokens, reference, variant.spec.vocab, prefill);
            CHECK(error <= 1e-12);
        }
        // the negative control: a decoder that forgot the first token's cache is not the model
        decoder.reset();
        decoder.append(tokens.data() + 1, 5);
        CHECK(relative_error(decoder.logits() + 4 * variant.spec.vocab, reference.data() + 5 * variant.spec.vocab,
                             variant.spec.vocab) > 1e-6);
        // the context limit is named
        decoder.reset();
        decoder.append(tokens.data(), tokens.size());
        try {
            decoder.append(tokens.data(), 1);
            FAIL("a token past the context was accepted");
        } catch (const InputError& e) {
            CHECK(std::string(e.what()).find("context of 40 tokens") != std::string::npos);
        }
    }
}

TEST_CASE("Incremental decoding honours an ICLCA adapter (linear attention)", "[decode]") {
    const model::ModelSpec spec = decode_spec(model::ModelSpec::Attention::linear, true, false);
    model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
    Rng rng(5);
    net.init(rng);
    const auto prompt = random_tokens(15, spec.vocab, rng), input = random_tokens(20, spec.vocab, rng);
    const auto original = icl::read_biases(net);
    const auto with_prompt = icl::logits_with_prompt(net, prompt.data(), prompt.size(), input.data(), input.size());
    icl::write_biases(net, icl::iclca_convert(net, prompt.data(), prompt.size()));
    const auto converted = full_logits(net, input);  // M_new's full forward
    model::TransformerDecoder<double> decoder(net);
    CHECK(decode_error(decoder, input, converted, spec.vocab, 4) <= 1e-12);
    CHECK(decode_error(decoder, input, with_prompt, spec.vocab, 1) <= 1e-10);  // = M_old with the prompt (Eq. 16)
    icl::write_biases(net, original);
    decoder.reset();  // the state restarts from the model's own biases
    CHECK(decode_error(decoder, input, full_logits(net, input), spec.vocab, 3) <= 1e-12);
    CHECK(decode_error(decoder, input, with_prompt, spec.vocab, 3) > 1e-6);
}

TEST_CASE("Incremental decoding honours ICLAA prompt terms (softmax attention)", "[decode]") {
    for (const bool rope : {true, false}) {
        CAPTURE(rope);
        const model::ModelSpec spec = decode_spec(model::ModelSpec::Attention::softmax, rope, !rope);
        model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
        Rng rng(9);
        net.init(rng);
        const auto prompt = random_tokens(11, spec.vocab, rng), input = random_tokens(16, spec.vocab, rng);
        const auto kv = icl::capture_prompt_keys_values(net, prompt.data(), 1, prompt.size());
        icl::LayerHeadMaps maps(spec.layers);
        for (auto& layer : maps)
            layer.assign(spec.heads, nn::random_kernel_features<double>(spec.head_dim(), 24, false,
                                                                        std::pow(double(spec.head_dim()), -0.25), rng));
        // kernel terms for the older part of the prompt, an exact cache of its 3 most recent tokens (a hybrid)
        auto terms = icl::empty_prompt_terms(spec.layers, spec.heads);
        icl::add_kernel_terms(terms, 0, kv, 0, maps, net.rope(), icl::RopeConvention::rotate_then_map, 3);
        icl::add_cache_terms(terms, 0, kv, 0, icl::CacheSelection::recent, 3, net.rope());
        const auto reference = icl::logits_with_terms(net, terms, input.data(), 1, input.size());
        model::TransformerDecoder<double> decoder(net, &terms);
        CHECK(decode_error(decoder, input, reference, spec.vocab, 5) <= 1e-12);
        // without the terms the decoder is M_old on X alone, which differs
        model::TransformerDecoder<double> plain(net);
        CHECK(decode_error(plain, input, reference, spec.vocab, 5) > 1e-6);
    }
}

}  // namespace iclab_test_transformer_decode
