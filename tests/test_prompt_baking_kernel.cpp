// Baking into ICLAA's kernel biases (framework/icl/prompt_baking.hpp, softmax_attention.hpp (K1)-(K6)): the backward
// of softmax attention with a kernel prompt term against central finite differences in b̂_kv, b̂_d and qkv (fp64),
// with controls that a deliberately wrong gradient fails the same bar; the KL objective's gradient through a whole
// model; the zero start's one-sided gradient; baking lowers the KL from the closed form and from zero.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>

#include "framework/core/rng.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/icl/prompt_baking.hpp"
#include "framework/nn/softmax_attention.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_prompt_baking_kernel {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using iclab::testing::random_vector;

namespace {

// The bar of every finite-difference check here: the five-point stencil (−f(2h) + 8f(h) − 8f(−h) + f(−2h)) / 12h
// with h = 3e-4 in fp64 (truncation O(h⁴), rounding ~ 1.5 ε|L|/h), entry error |a − n| / max(|a| + |n|, 1e-4)
// (tests/gradient_check.hpp's measure), max over every entry ≤ 1e-6. Why not gradient_check.hpp's central difference
// at h = 1e-5: on the entries of qkv whose gradient is ~5e-5 its rounding, ε|L|/h ~ 1e-10 absolute against the
// measure's floor 1e-4, is ~1e-6 (measured 2026-11-29 on the learned map's per-sequence unrotated section: 2.8e-7 at
// h = 1e-4, 2.2e-6 at 1e-5, 2.6e-5 at 1e-6: ∝ 1/h, rounding, not a wrong term), and a larger h trades it for
// truncation (2e-5 at h = 1e-4 on prf). The stencil at h = 3e-4 measured ≤ 7.3e-8 on qkv over every section (|a − n| ≤
// 1e-10; at h = 1e-4 rounding shows again, 5e-7; at h = 1e-3 one elu1 entry, 1.7e-6, elu1 being only C¹ at x̃ = 0).
// A gradient wrong by 1e-4 relative (≈ 5e-5) fails the bar (the controls).
constexpr double kStep = 3e-4, kTiny = 1e-4, kBar = 1e-6;

double entry_error(double analytic, double numeric) {
    return std::abs(analytic - numeric) / std::max(std::abs(analytic) + std::abs(numeric), kTiny);
}

// Max entry error of `analytic` against five-point differences of loss() in the values behind `params`.
double max_fd_error(const std::vector<double*>& params, const std::vector<double>& analytic, const std::function<double()>& loss) {
    REQUIRE(params.size() == analytic.size());
    double worst = 0.0;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const double saved = *params[i];
        const auto at = [&](double offset) {
            *params[i] = saved + offset;
            return loss();
        };
        const double numeric = (at(-2.0 * kStep) - 8.0 * at(-kStep) + 8.0 * at(kStep) - at(2.0 * kStep)) / (12.0 * kStep);
        *params[i] = saved;
        worst = std::max(worst, entry_error(analytic[i], numeric));
    }
    return worst;
}

nn::KernelFeatures<double> make_map(const std::string& kind, std::size_t D, Rng& rng) {
    const double scale = std::pow(static_cast<double>(D), -0.25);
    if (kind == "elu1") {
        nn::KernelFeatures<double> map;
        map.kind = nn::KernelMapKind::elu1;
        map.dim = D;
        map.features = D;
        map.input_scale = scale;
        return map;
    }
    nn::KernelFeatures<double> map = nn::random_kernel_features<double>(D, 6, kind == "orf", scale, rng);
    if (kind == "learned") {  // the learned map's form: λ = 0, its own offsets
        map.lambda = 0.0;
        for (auto& c : map.c) c = 0.3 * rng.normal();
    }
    return map;
}

// Random kernel terms of one head: b̂_d ∈ (0.1, 1), b̂_kv ~ N(0, 1), log scales ~ N(0, 0.5²).
nn::SoftmaxPromptHead<double> random_head(const nn::KernelFeatures<double>& map, std::size_t D, Rng& rng) {
    nn::SoftmaxPromptHead<double> head;
    head.features = &map;
    head.b_d.resize(map.features);
    for (auto& x : head.b_d) x = 0.1 + 0.9 * rng.uniform();
    head.b_kv = random_vector(map.features * D, rng);
    head.log_b_d = 0.5 * rng.normal();
    head.log_b_kv = 0.5 * rng.normal();
    return head;
}

}  // namespace

TEST_CASE("kernel prompt term: softmax attention backward matches finite differences in b_KV, b_D and qkv, and wrong gradients fail",
          "[prompt_baking][attention][softmax][gradients]") {
    for (const std::string kind : {"prf", "orf", "elu1", "learned"})
        for (const bool rope : {true, false})
            for (const bool per_sequence : {false, true})
                for (const bool rotate_query : {true, false}) {
                    if (!rope && !rotate_query) continue;  // the same function without RoPE
                    DYNAMIC_SECTION(kind << (rope ? " rope" : "") << (per_sequence ? " per sequence" : " shared")
                                         << (rotate_query ? "" : " unrotated query")) {
                        Rng rng(21);
                        const nn::AttentionShape shape{2, 5, 2, 4};
                        const std::size_t D = shape.head_dim, n_heads = per_sequence ? shape.batch * shape.heads : shape.heads;
                        const nn::RopeTable table(16, D, 10000.0);
                        std::vector<nn::KernelFeatures<double>> maps;
                        for (std::size_t h = 0; h < shape.heads; ++h) maps.push_back(make_map(kind, D, rng));
                        std::vector<nn::SoftmaxPromptHead<double>> prompt;
                        for (std::size_t e = 0; e < n_heads; ++e) {
                            prompt.push_back(random_head(maps[e % shape.heads], D, rng));
                            prompt.back().rotate_query = rotate_query;
                        }
                        nn::SoftmaxAttentionOptions<double> options;
                        options.rope = rope ? &table : nullptr;
                        options.prompt = &prompt;
                        std::vector<double> qkv = random_vector(shape.batch * shape.time * 3 * shape.width(), rng, 1.5);
                        const std::vector<double> r = random_vector(shape.batch * shape.time * shape.width(), rng);
                        std::vector<double> out(r.size());
                        nn::SoftmaxAttentionCache<double> cache;
                        const auto loss = [&] {
                            nn::softmax_attention_forward(out.data(), cache, qkv.data(), shape, options);
                            double total = 0.0;
                            for (std::size_t i = 0; i < r.size(); ++i) total += out[i] * r[i];
                            return total;
                        };
                        loss();
                        std::vector<std::vector<double>> d_kv(n_heads), d_d(n_heads);
                        for (std::size_t e = 0; e < n_heads; ++e) {
                            d_kv[e].assign(prompt[e].b_kv.size(), 0.0);
                            d_d[e].assign(prompt[e].b_d.size(), 0.0);
                            prompt[e].d_b_kv = d_kv[e].data();
                            prompt[e].d_b_d = d_d[e].data();
                        }
                        std::vector<double> d_qkv(qkv.size(), std::numeric_limits<double>::quiet_NaN());
                        nn::softmax_attention_backward(d_qkv.data(), r.data(), qkv.data(), cache, shape, options);
                        std::vector<double*> bias_params, d_params, q_params;
                        std::vector<double> bias_grad, d_grad, q_grad, qkv_grad;
                        for (std::size_t e = 0; e < n_heads; ++e) {
                            for (std::size_t i = 0; i < d_kv[e].size(); ++i) bias_params.push_back(&prompt[e].b_kv[i]), bias_grad.push_back(d_kv[e][i]);
                            for (std::size_t i = 0; i < d_d[e].size(); ++i) d_params.push_back(&prompt[e].b_d[i]), d_grad.push_back(d_d[e][i]);
                        }
                        std::vector<double*> qkv_params;
                        for (std::size_t i = 0; i < qkv.size(); ++i) qkv_params.push_back(&qkv[i]), qkv_grad.push_back(d_qkv[i]);
                        const double kv_error = max_fd_error(bias_params, bias_grad, loss);
                        const double d_error = max_fd_error(d_params, d_grad, loss);
                        const double qkv_error = max_fd_error(qkv_params, qkv_grad, loss);
                        INFO("max entry error: b_kv " << kv_error << ", b_d " << d_error << ", qkv " << qkv_error);
                        CHECK(kv_error <= kBar);
                        CHECK(d_error <= kBar);
                        CHECK(qkv_error <= kBar);
                        // Controls: (K3) with the wrong sign; b_KV's gradient off by 1e-4 relative; d qkv without the
                        // map's backward (K5)-(K6) (the heads' features hidden from the backward). Each must fail.
                        std::vector<double> flipped = d_grad, scaled = bias_grad;
                        for (auto& x : flipped) x = -x;
                        for (auto& x : scaled) x *= 1.0 + 1e-4;
                        CHECK(max_fd_error(d_params, flipped, loss) > kBar);
                        CHECK(max_fd_error(bias_params, scaled, loss) > kBar);
                        loss();
                        std::vector<nn::SoftmaxPromptHead<double>> blind = prompt;
                        for (auto& head : blind) head.features = nullptr, head.d_b_kv = head.d_b_d = nullptr;
                        nn::SoftmaxAttentionOptions<double> blind_options = options;
                        blind_options.prompt = &blind;
                        std::vector<double> d_blind(qkv.size());
                        nn::softmax_attention_backward(d_blind.data(), r.data(), qkv.data(), cache, shape, blind_options);
                        CHECK(max_fd_error(qkv_params, d_blind, loss) > kBar);
                    }
                }
}

TEST_CASE("kernel prompt term: at b_KV = b_D = 0 the b_D gradient is the one-sided limit from b_D > 0", "[prompt_baking][gradients]") {
    Rng rng(5);
    const nn::AttentionShape shape{1, 4, 2, 4};
    const nn::RopeTable table(16, 4, 10000.0);
    std::vector<nn::KernelFeatures<double>> maps{make_map("prf", 4, rng), make_map("prf", 4, rng)};
    std::vector<nn::SoftmaxPromptHead<double>> prompt{random_head(maps[0], 4, rng), random_head(maps[1], 4, rng)};
    std::vector<std::vector<double>> d_d(2);
    for (std::size_t h = 0; h < 2; ++h) {
        std::fill(prompt[h].b_kv.begin(), prompt[h].b_kv.end(), 0.0);
        std::fill(prompt[h].b_d.begin(), prompt[h].b_d.end(), 0.0);
        d_d[h].assign(prompt[h].b_d.size(), 0.0);
        prompt[h].d_b_d = d_d[h].data();
    }
    nn::SoftmaxAttentionOptions<double> options;
    options.rope = &table;
    options.prompt = &prompt;
    const std::vector<double> qkv = random_vector(shape.time * 3 * shape.width(), rng, 1.5);
    const std::vector<double> r = random_vector(shape.time * shape.width(), rng);
    std::vector<double> out(r.size()), d_qkv(qkv.size());
    nn::SoftmaxAttentionCache<double> cache;
    const auto loss = [&] {
        nn::softmax_attention_forward(out.data(), cache, qkv.data(), shape, options);
        double total = 0.0;
        for (std::size_t i = 0; i < r.size(); ++i) total += out[i] * r[i];
        return total;
    };
    const double at_zero = loss();
    nn::softmax_attention_backward(d_qkv.data(), r.data(), qkv.data(), cache, shape, options);
    double worst = 0.0, largest = 0.0;
    const double h = 1e-7;  // forward difference: truncation O(h) relative
    for (std::size_t e = 0; e < 2; ++e)
        for (std::size_t i = 0; i < prompt[e].b_d.size(); ++i) {
            prompt[e].b_d[i] = h;
            const double numeric = (loss() - at_zero) / h;
            prompt[e].b_d[i] = 0.0;
            worst = std::max(worst, entry_error(d_d[e][i], numeric));
            largest = std::max(largest, std::abs(d_d[e][i]));
        }
    INFO("max entry error " << worst << ", largest gradient " << largest);
    CHECK(largest > 1e-3);  // the zero start moves: its gradient is not 0
    CHECK(worst <= 1e-5);
}

namespace {

model::ModelSpec small_softmax_spec() {
    model::ModelSpec spec;
    spec.vocab = 52;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 2;
    spec.mlp = false;
    spec.max_seq_len = 32;
    spec.attention = model::ModelSpec::Attention::softmax;
    spec.init_std = 0.3;
    return spec;
}

std::vector<std::int32_t> random_tokens(std::size_t n, Rng& rng) {
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = static_cast<std::int32_t>(rng.uniform_int(52));
    return t;
}

icl::LayerHeadMaps random_maps(const model::ModelSpec& spec, const std::string& kind, Rng& rng) {
    icl::LayerHeadMaps maps(spec.layers);
    for (auto& layer : maps)
        for (std::size_t h = 0; h < spec.heads; ++h) layer.push_back(make_map(kind, spec.head_dim(), rng));
    return maps;
}

}  // namespace

TEST_CASE("prompt baking: the KL objective's gradient with respect to the kernel biases matches finite differences through the model",
          "[prompt_baking][gradients]") {
    for (const std::string kind : {"prf", "elu1"}) {
        DYNAMIC_SECTION(kind) {
            model::Transformer<double> model(small_softmax_spec());
            Rng rng(13);
            model.init(rng);
            const auto prompt_tokens = random_tokens(8, rng);
            const icl::BakingData<double> data = icl::make_baking_data(model, prompt_tokens.data(), 8, random_tokens(3 * 6, rng), 3, 6, 2);
            const icl::LayerHeadMaps maps = random_maps(model.spec(), kind, rng);
            icl::KernelTerms<double> terms(model.spec().layers);
            std::vector<double> grads;
            for (std::size_t l = 0; l < maps.size(); ++l)
                for (const auto& map : maps[l]) terms[l].push_back(random_head(map, model.spec().head_dim(), rng));
            std::size_t total = 0;
            for (const auto& layer : terms)
                for (const auto& head : layer) total += head.b_kv.size() + head.b_d.size();
            grads.assign(total, 0.0);
            std::vector<double*> params;
            std::size_t at = 0;
            for (auto& layer : terms)
                for (auto& head : layer) {
                    head.d_b_kv = grads.data() + at;
                    for (auto& x : head.b_kv) params.push_back(&x);
                    at += head.b_kv.size();
                    head.d_b_d = grads.data() + at;
                    for (auto& x : head.b_d) params.push_back(&x);
                    at += head.b_d.size();
                }
            model::Transformer<double> student(model.spec(), model::Transformer<double>::Mode::training);
            student.params = model.params;
            student.set_softmax_prompt(&terms);
            icl::baking_loss(student, data, 0, 3, true);
            const std::vector<double> analytic = grads;
            const auto loss = [&] { return icl::baking_loss(student, data, 0, 3, false); };
            const double error = max_fd_error(params, analytic, loss);
            INFO(kind << ": max entry error " << error << " over " << params.size() << " entries");
            CHECK(error <= kBar);
            std::vector<double> wrong = analytic;  // control: layer 0's gradients with the wrong sign
            for (std::size_t i = 0; i < wrong.size() / 2; ++i) wrong[i] = -wrong[i];
            CHECK(max_fd_error(params, wrong, loss) > kBar);
            student.set_softmax_prompt(nullptr);
        }
    }
}

TEST_CASE("prompt baking: baking into the kernel biases lowers the KL from the closed form and from zero", "[prompt_baking]") {
    model::Transformer<double> model(small_softmax_spec());
    Rng rng(17);
    model.init(rng);
    const auto prompt_tokens = random_tokens(10, rng);
    const icl::BakingData<double> data = icl::make_baking_data(model, prompt_tokens.data(), 10, random_tokens(8 * 6, rng), 8, 6, 4);
    const icl::LayerHeadMaps maps = random_maps(model.spec(), "prf", rng);
    const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(model, prompt_tokens.data(), 1, 10);
    icl::PromptTerms closed = icl::empty_prompt_terms(model.spec().layers, model.spec().heads);
    icl::add_kernel_terms(closed, 0, kv, 0, maps, model.rope(), icl::RopeConvention::rotate_then_map);
    model::Transformer<double> student(model.spec(), model::Transformer<double>::Mode::training);
    student.params = model.params;
    student.set_softmax_prompt(&closed);  // the closed form's KL, computed directly
    const double closed_kl = icl::baking_loss(student, data, 0, 8, false);
    student.set_softmax_prompt(nullptr);
    icl::BakingSettings settings;
    settings.steps = 40;
    settings.batch = 4;
    settings.lr = 3e-2;
    const icl::KernelMaps<double> cast_maps = icl::cast_kernel_maps<double>(maps);
    const icl::KernelTerms<double> start = icl::cast_kernel_terms<double>(closed, cast_maps);
    const auto from_closed = icl::bake_prompt_kernel(student, data, settings, start, icl::KernelStart::closed_form);
    CHECK(from_closed.initial_kl == Approx(closed_kl).epsilon(1e-12));
    CHECK(from_closed.final_kl < 0.9 * from_closed.initial_kl);
    const auto from_zero = icl::bake_prompt_kernel(student, data, settings, start, icl::KernelStart::zero);
    CHECK(from_zero.final_kl < 0.9 * from_zero.initial_kl);
    CHECK(student.params == model.params);  // the model's own parameters are untouched
    for (const auto& layer : from_closed.terms)
        for (const auto& head : layer) {
            CHECK(head.d_b_kv == nullptr);
            for (double x : head.b_d) CHECK(x >= 0.0);  // bias_d nonnegative (default)
        }
    // float32 baking from the same start lowers the KL too
    model::Transformer<float> student32(model.spec(), model::Transformer<float>::Mode::training);
    for (std::size_t i = 0; i < model.params.size(); ++i) student32.params[i] = static_cast<float>(model.params[i]);
    std::vector<std::int32_t> tokens = data.tokens;
    const icl::BakingData<float> data32 = icl::make_baking_data(student32, prompt_tokens.data(), 10, tokens, 8, 6, 4);
    const icl::KernelMaps<float> maps32 = icl::cast_kernel_maps<float>(maps);
    const auto from_closed32 = icl::bake_prompt_kernel(student32, data32, settings, icl::cast_kernel_terms<float>(closed, maps32));
    CHECK(from_closed32.final_kl < 0.9 * from_closed32.initial_kl);
    CHECK_THROWS_AS(icl::check_kernel_baking_assumptions(model::ModelSpec{}), InputError);  // linear attention: refused by name
    CHECK_THROWS_AS(icl::parse_kernel_start("closed"), InputError);
}

}  // namespace iclab_test_prompt_baking_kernel
