// ICLCA with decayed linear attention (issue 43, docs/decay.md Theorem D.1, Algorithm 1'): the converted model on X
// equals the model with the prompt on [X'; X] to rounding (fp64 ≤ 1e-12, fp32 ≤ 1e-5) for γ ∈ {0.5, 0.9, 0.99, 1}, in
// both forms, with adapters composed (in memory and through adapter files); at the layer, the two controls (the bias
// decayed by the wrong power of γ, or not decayed) fail by far. The learned decay's gradient dθ against finite
// differences, the model's two forms and its decoder with decay, and the config key model.decay.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/config/config.hpp"
#include "framework/model/transformer_decode.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/nn/linear_attention.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"
#include "tests/attention_variants.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclca_decay {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

const double kGammas[] = {0.5, 0.9, 0.99, 1.0};

model::ModelSpec decay_spec(nn::FeatureMap map, bool normalize, model::ModelSpec::AttentionForm form) {
    model::ModelSpec spec;
    spec.vocab = 11;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 3;
    spec.max_seq_len = 48;
    spec.feature_map = map;
    spec.random_features = 10;
    spec.performer_input_scale = 0.5;
    spec.normalize = normalize;
    spec.init_std = 0.4;
    spec.attention_form = form;
    return spec;
}

void set_decay(model::ModelSpec& spec, double gamma) {
    spec.decay = model::ModelSpec::Decay::fixed;
    spec.decay_gamma.assign(spec.heads, gamma);
}

// Nonzero starting biases (b_KV ~ N(0, 0.3²), b_D ~ U(0.2, 1)), so the decayed bias term γ^{i+1} b is exercised.
template <class T>
void init_model(model::Transformer<T>& net, std::uint64_t seed) {
    Rng rng(seed);
    net.init(rng);
    for (const auto& entry : net.layout().entries()) {
        T* p = net.params.data() + entry.offset;
        if (entry.name.find("attn.b_kv") != std::string::npos)
            for (std::size_t i = 0; i < entry.size; ++i) p[i] = static_cast<T>(rng.normal(0.0, 0.3));
        if (entry.name.find("attn.b_d") != std::string::npos)
            for (std::size_t i = 0; i < entry.size; ++i) p[i] = static_cast<T>(rng.uniform(0.2, 1.0));
    }
}

std::vector<std::int32_t> tokens(std::size_t n, std::size_t vocab, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = static_cast<std::int32_t>(rng.uniform_int(vocab));
    return t;
}

// max |a − b| / max |b|
double normwise(const std::vector<double>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double error = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        error = std::max(error, std::abs(a[i] - b[i]));
        scale = std::max(scale, std::abs(b[i]));
    }
    return error / scale;
}

template <class T>
double conversion_error(const model::ModelSpec& spec, std::size_t prompt_length) {
    model::Transformer<T> net(spec);
    init_model(net, 7);
    const auto prompt = tokens(prompt_length, spec.vocab, 8), input = tokens(9, spec.vocab, 9);
    const auto original = icl::read_biases(net);
    const auto with_prompt = icl::logits_with_prompt(net, prompt.data(), prompt.size(), input.data(), input.size());
    const auto converted = icl::converted_logits(net, prompt.data(), prompt.size(), input.data(), input.size(), original);
    return normwise(converted, with_prompt);
}

// One attention layer: the prompt's decayed final state as the biases (Algorithm 1') against the layer on [X'; X],
// and the two controls. control 0: exact; 1: the bias decayed by γ^i instead of γ^{i+1} (off by one); 2: not decayed.
template <class T>
double layer_error(double gamma, bool recurrent, int control) {
    const std::size_t M = 10, N = 7, H = 2, D = 4;
    Rng rng(46);
    testing::AttentionInputs in = testing::random_inputs({nn::FeatureMap::elu1, true, true, true}, {1, M + N, H, D}, rng);
    in.options.decay.assign(H, gamma);
    const std::size_t C = H * D, F = in.shape.features();
    const auto qkv = testing::cast<T>(in.qkv), b_kv = testing::cast<T>(in.b_kv), b_d = testing::cast<T>(in.b_d);
    const auto forward = [&](T* out, nn::LinearAttentionCache<T>& cache, const T* x, const T* kv, const T* d, std::size_t time) {
        nn::AttentionShape shape{1, time, H, D};
        if (recurrent)
            nn::linear_attention_recurrent_forward(out, cache, x, kv, d, static_cast<const T*>(nullptr), shape, in.options);
        else
            nn::linear_attention_forward(out, cache, x, kv, d, static_cast<const T*>(nullptr), shape, in.options);
    };
    std::vector<T> joint((M + N) * C), converted(N * C);
    nn::LinearAttentionCache<T> cache;
    forward(joint.data(), cache, qkv.data(), b_kv.data(), b_d.data(), M + N);
    // Algorithm 1': S_{M-1}, z_{M-1} of the prompt (decayed), then b'_KV = R_{-M} S_{M-1}, b'_D = z_{M-1}
    std::vector<T> state(H * F * D), key_sum(H * F), column(F), rotated(F), prompt_out(M * C);
    forward(prompt_out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), M);  // (fills the cache of the prompt)
    nn::linear_attention_final_state(state.data(), key_sum.data(), cache, qkv.data(), b_kv.data(), b_d.data(),
                                     nn::AttentionShape{1, M, H, D}, in.options.decay);
    for (std::size_t h = 0; h < H; ++h)
        for (std::size_t d = 0; d < D; ++d) {
            for (std::size_t f = 0; f < F; ++f) column[f] = state[(h * F + f) * D + d];
            in.rope->rotate(rotated.data(), column.data(), M, true);
            for (std::size_t f = 0; f < F; ++f) state[(h * F + f) * D + d] = rotated[f];
        }
    if (control == 1)
        for (auto* x : {&state, &key_sum})
            for (auto& value : *x) value /= static_cast<T>(gamma);
    const T* input = qkv.data() + M * 3 * C;
    if (control == 2) {  // out_i = (num0_i + rq_iᵀ b'_KV) / (den0_i + φq_iᵀ b'_D): the bias term without γ^{i+1}
        const std::vector<T> zero_kv(state.size(), T(0)), zero_d(key_sum.size(), T(0));
        forward(converted.data(), cache, input, zero_kv.data(), zero_d.data(), N);
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t i = 0; i < N; ++i) {
                const T* rq = cache.rot_q.data() + (h * N + i) * F;
                const T* pq = cache.phi_q.data() + (h * N + i) * F;
                const T den0 = cache.den[h * N + i];
                T den = den0;
                for (std::size_t f = 0; f < F; ++f) den += pq[f] * key_sum[h * F + f];
                for (std::size_t d = 0; d < D; ++d) {
                    T num = converted[i * C + h * D + d] * den0;
                    for (std::size_t f = 0; f < F; ++f) num += rq[f] * state[(h * F + f) * D + d];
                    converted[i * C + h * D + d] = num / den;
                }
            }
    } else {
        forward(converted.data(), cache, input, state.data(), key_sum.data(), N);
    }
    return normwise(std::vector<double>(converted.begin(), converted.end()),
                    std::vector<double>(joint.begin() + M * C, joint.end()));
}

}  // namespace

TEST_CASE("decayed ICLCA at one layer: exact, and the off-by-one and undecayed biases fail", "[decay][iclca]") {
    for (double gamma : kGammas)
        for (bool recurrent : {false, true}) {
            INFO("gamma " << gamma << (recurrent ? " recurrent" : " quadratic"));
            CHECK(layer_error<double>(gamma, recurrent, 0) <= 1e-12);
            CHECK(layer_error<float>(gamma, recurrent, 0) <= 1e-5);
            if (gamma < 1.0) {  // the controls: the exactness test can fail
                CHECK(layer_error<double>(gamma, recurrent, 1) > 1e-3);
                CHECK(layer_error<double>(gamma, recurrent, 2) > 1e-3);
            }
        }
}

TEST_CASE("decayed ICLCA is exact in fp64 and fp32 for every gamma and both forms", "[decay][iclca]") {
    using Form = model::ModelSpec::AttentionForm;
    struct Kind {
        nn::FeatureMap map;
        bool normalize;
    };
    for (const Kind kind : {Kind{nn::FeatureMap::elu1, true}, Kind{nn::FeatureMap::performer, true},
                            Kind{nn::FeatureMap::identity, false}})
        for (Form form : {Form::quadratic, Form::recurrent})
            for (double gamma : kGammas) {
                DYNAMIC_SECTION(nn::feature_map_name(kind.map) << (form == Form::recurrent ? " recurrent" : " quadratic")
                                                               << " gamma " << gamma) {
                    auto spec = decay_spec(kind.map, kind.normalize, form);
                    set_decay(spec, gamma);
                    CHECK(conversion_error<double>(spec, 13) <= 1e-12);
                    CHECK(conversion_error<float>(spec, 13) <= 1e-5);
                }
            }
}

TEST_CASE("decayed ICLCA is exact with per-head and learned decays", "[decay][iclca]") {
    auto spec = decay_spec(nn::FeatureMap::elu1, true, model::ModelSpec::AttentionForm::quadratic);
    spec.decay = model::ModelSpec::Decay::fixed;
    spec.decay_gamma = {0.6, 0.97};
    CHECK(conversion_error<double>(spec, 11) <= 1e-12);
    spec.decay = model::ModelSpec::Decay::learned;
    spec.decay_gamma.clear();
    for (auto form : {model::ModelSpec::AttentionForm::quadratic, model::ModelSpec::AttentionForm::recurrent}) {
        spec.attention_form = form;
        CHECK(conversion_error<double>(spec, 11) <= 1e-12);
        CHECK(conversion_error<float>(spec, 11) <= 1e-5);
    }
}

TEST_CASE("decayed ICLCA composes: adapters stacked in memory and as files equal the joint prompt", "[decay][iclca]") {
    iclab_test::Scratch scratch;
    for (auto form : {model::ModelSpec::AttentionForm::quadratic, model::ModelSpec::AttentionForm::recurrent})
        for (double gamma : kGammas) {
            INFO("gamma " << gamma << (form == model::ModelSpec::AttentionForm::recurrent ? " recurrent" : " quadratic"));
            auto spec = decay_spec(nn::FeatureMap::elu1, true, form);
            set_decay(spec, gamma);
            model::Transformer<double> net(spec);
            init_model(net, 11);
            const auto first = tokens(7, spec.vocab, 12), second = tokens(6, spec.vocab, 13), input = tokens(8, spec.vocab, 14);
            auto both = first;
            both.insert(both.end(), second.begin(), second.end());
            const auto original = icl::read_biases(net);
            const auto with_both = icl::logits_with_prompt(net, both.data(), both.size(), input.data(), input.size());
            // in memory: X'_2 converted on top of X'_1's adapter
            const auto adapter1 = icl::iclca_convert(net, first.data(), first.size());
            icl::write_biases(net, adapter1);
            const auto stacked = icl::iclca_convert(net, second.data(), second.size());
            icl::write_biases(net, stacked);
            net.forward(input.data(), 1, input.size());
            const std::size_t V = spec.vocab;
            CHECK(normwise(std::vector<double>(net.logits(), net.logits() + input.size() * V), with_both) <= 1e-12);
            // through adapter files: the second records the first as its base, and applying both in order reproduces it
            const icl::Adapter file1 = icl::make_adapter(net, adapter1, first, "", {});
            const icl::Adapter file2 = icl::make_adapter(net, stacked, second, "", {file1.link("a1.h5")});
            icl::write_adapter_file(scratch.path / "a1.h5", file1, true);
            icl::write_adapter_file(scratch.path / "a2.h5", file2, true);
            icl::write_biases(net, original);
            const auto applied = icl::apply_adapter_files(net, {scratch.path / "a1.h5", scratch.path / "a2.h5"});
            CHECK(applied.context == both);
            net.forward(input.data(), 1, input.size());
            CHECK(normwise(std::vector<double>(net.logits(), net.logits() + input.size() * V), with_both) <= 1e-12);
            // an adapter made with one gamma is refused by a model with another (the fingerprint holds gamma)
            if (gamma < 1.0) {
                auto other_spec = spec;
                set_decay(other_spec, gamma * 0.9);
                model::Transformer<double> other(other_spec);
                init_model(other, 11);
                CHECK_THROWS_AS(icl::apply_adapter(other, icl::read_adapter_file(scratch.path / "a1.h5"), {}, "a1.h5"),
                                InputError);
            }
        }
}

TEST_CASE("decayed model: the two forms and the decoder agree, and the learned decay's gradient is right", "[decay]") {
    auto spec = decay_spec(nn::FeatureMap::elu1, true, model::ModelSpec::AttentionForm::quadratic);
    spec.decay = model::ModelSpec::Decay::learned;
    spec.attention_bias_trainable = true;
    model::Transformer<double> quad(spec);
    init_model(quad, 21);
    const std::size_t B = 2, TT = 10, V = spec.vocab;
    const auto x = tokens(B * TT, V, 22), targets = tokens(B * TT, V, 23);
    const std::vector<double> weights(B * TT, 1.0 / static_cast<double>(B * TT));
    // gamma_h = 1 - 2^(-5-h) at initialization
    CHECK(quad.attention_decay(1)[0] == Approx(1.0 - 1.0 / 32.0).epsilon(1e-12));
    CHECK(quad.attention_decay(1)[1] == Approx(1.0 - 1.0 / 64.0).epsilon(1e-12));
    // move θ away from its initialization so every layer's γ differs
    Rng rng(24);
    for (std::size_t l = 0; l < spec.layers; ++l)
        for (std::size_t h = 0; h < spec.heads; ++h) quad.param("blocks." + std::to_string(l) + ".attn.decay_logit")[h] = rng.uniform(-1.0, 2.5);
    auto rec_spec = spec;
    rec_spec.attention_form = model::ModelSpec::AttentionForm::recurrent;
    model::Transformer<double> rec(rec_spec);
    rec.params = quad.params;
    quad.forward(x.data(), B, TT);
    rec.forward(x.data(), B, TT);
    CHECK(normwise(std::vector<double>(rec.logits(), rec.logits() + B * TT * V),
                   std::vector<double>(quad.logits(), quad.logits() + B * TT * V)) <= 1e-12);
    // decoder, one token at a time, against the full forward of sequence 0
    model::TransformerDecoder<double> decoder(quad);
    for (std::size_t t = 0; t < TT; ++t) {
        decoder.append(x.data() + t, 1);
        const std::vector<double> step(decoder.last_logits(), decoder.last_logits() + V);
        CHECK(normwise(step, std::vector<double>(quad.logits() + t * V, quad.logits() + (t + 1) * V)) <= 1e-12);
    }
    // dL/dθ of every layer, both forms, against central differences of the loss
    for (model::Transformer<double>* net : {&quad, &rec}) {
        net->zero_grad();
        net->forward(x.data(), B, TT);
        net->loss(targets.data(), weights.data());
        net->backward(targets.data(), weights.data());
        for (std::size_t l = 0; l < spec.layers; ++l) {
            const std::string name = "blocks." + std::to_string(l) + ".attn.decay_logit";
            std::vector<double> theta(net->param(name), net->param(name) + spec.heads);
            const std::vector<double> analytic(net->grad(name), net->grad(name) + spec.heads);
            const auto loss = [&] {
                std::copy(theta.begin(), theta.end(), net->param(name));
                net->forward(x.data(), B, TT);
                return net->loss(targets.data(), weights.data());
            };
            testing::check_gradient(name, theta, analytic, loss);
            std::copy(theta.begin(), theta.end(), net->param(name));
        }
    }
}

TEST_CASE("model.decay: a scalar, a per-head list or learned, gamma 1 is no decay, bad values name the key", "[decay][config]") {
    iclab_test::Scratch scratch;
    const auto file = scratch.path / "model.yaml";
    { std::ofstream(file) << "model:\n  heads: 2\n  width: 16\n"; }
    config::Schema schema;
    run::add_model_keys(schema);
    const auto spec_of = [&](const std::vector<std::string>& overrides) {
        return run::model_spec_from_config(config::load_config(file.string(), overrides, schema), 11, 32);
    };
    CHECK(spec_of({}).decay == model::ModelSpec::Decay::none);
    const auto scalar = spec_of({"model.decay=0.9"});
    CHECK(scalar.decay == model::ModelSpec::Decay::fixed);
    CHECK(scalar.decay_gamma == std::vector<double>{0.9, 0.9});
    CHECK(spec_of({"model.decay=[0.5, 0.99]"}).decay_gamma == std::vector<double>{0.5, 0.99});
    CHECK(spec_of({"model.decay=learned"}).decay == model::ModelSpec::Decay::learned);
    CHECK(spec_of({"model.decay=none"}).decay == model::ModelSpec::Decay::none);
    // γ = 1: no decay, so the model (layout, fingerprint, bits) is the model without the key
    const auto ones = spec_of({"model.decay=1"});
    CHECK(ones.decay == model::ModelSpec::Decay::none);
    model::Transformer<double> plain(spec_of({})), with_one(ones);
    Rng rng_a(3), rng_b(3);
    plain.init(rng_a);
    with_one.init(rng_b);
    CHECK(icl::model_fingerprint(plain) == icl::model_fingerprint(with_one));
    for (const std::string bad : {"model.decay=1.5", "model.decay=0", "model.decay=-0.5", "model.decay=fast",
                                  "model.decay=[0.9, 0.9, 0.9]", "model.decay=[learned, 0.9]", "model.decay=nan"}) {
        INFO(bad);
        CHECK_THROWS_WITH(spec_of({bad}), Catch::Contains("model.decay"));
        CHECK_THROWS_AS(spec_of({bad}), InputError);
    }
    for (const std::string other : {"model.mask=prefix", "model.attention=softmax", "model.isolate_queries=true"}) {
        INFO(other);
        CHECK_THROWS_WITH(spec_of({"model.decay=0.9", other}), Catch::Contains("model.decay"));
    }
}

}  // namespace iclab_test_iclca_decay
