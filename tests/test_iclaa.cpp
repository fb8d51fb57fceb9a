// ICLAA (paper 000 §5, Eq. 17-18; spec iclaa.md §1.2-1.4, §2.6): the exact prompt cache reproduces the model with
// the prompt to fp64 rounding; kernel features estimate exp(x̃ᵀỹ) without bias, with an error falling as F^{-1/2}
// through a whole model; mis-rotated conventions do not converge; the log-domain path stays finite where a direct
// exp overflows.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/core/measure.hpp"
#include "framework/icl/iclaa.hpp"

namespace iclab_test_iclaa {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

model::ModelSpec softmax_spec(bool rope, bool mlp, double init_std) {
    model::ModelSpec spec;
    spec.vocab = 13;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 3;
    spec.max_seq_len = 48;
    spec.mlp = mlp;
    spec.attention = model::ModelSpec::Attention::softmax;
    spec.rope = rope;
    spec.init_std = init_std;
    return spec;
}

std::vector<std::int32_t> random_tokens(std::size_t n, std::size_t vocab, Rng& rng) {
    std::vector<std::int32_t> tokens(n);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(vocab));
    return tokens;
}

// M_old on [X'; X], logits at X's positions (B = 1).
std::vector<double> reference_logits(model::Transformer<double>& net, const std::vector<std::int32_t>& prompt,
                                     const std::vector<std::int32_t>& input) {
    std::vector<std::int32_t> whole = prompt;
    whole.insert(whole.end(), input.begin(), input.end());
    net.forward(whole.data(), 1, whole.size());
    const std::size_t V = net.spec().vocab;
    return std::vector<double>(net.logits() + prompt.size() * V, net.logits() + whole.size() * V);
}

icl::LayerHeadMaps random_maps(const model::ModelSpec& spec, std::size_t F, bool orthogonal, Rng& rng) {
    const std::size_t D = spec.head_dim();
    icl::LayerHeadMaps maps(spec.layers);
    for (auto& layer : maps) {
        const auto map = nn::random_kernel_features<double>(D, F, orthogonal, std::pow(static_cast<double>(D), -0.25), rng);
        layer.assign(spec.heads, map);  // one draw per layer, shared by its heads
    }
    return maps;
}

// Mean over pairs of ‖L_iclaa − L_ref‖ / ‖L_ref‖ with PRF features of F, for one feature seed.
double kernel_error(model::Transformer<double>& net, std::size_t F, icl::RopeConvention convention, std::uint64_t seed,
                    std::size_t pairs) {
    Rng data(1234), features(seed);
    double total = 0.0;
    for (std::size_t n = 0; n < pairs; ++n) {
        const auto prompt = random_tokens(12, net.spec().vocab, data), input = random_tokens(8, net.spec().vocab, data);
        const auto reference = reference_logits(net, prompt, input);
        const auto kv = icl::capture_prompt_keys_values(net, prompt.data(), 1, prompt.size());
        const auto maps = random_maps(net.spec(), F, false, features);
        auto terms = icl::empty_prompt_terms(net.spec().layers, net.spec().heads);
        icl::add_kernel_terms(terms, 0, kv, 0, maps, net.rope(), convention);
        const auto logits = icl::logits_with_terms(net, terms, input.data(), 1, input.size());
        total += relative_error(logits.data(), reference.data(), reference.size());
    }
    return total / static_cast<double>(pairs);
}

}  // namespace

TEST_CASE("ICLAA exact prompt cache reproduces the model with the prompt to fp64 rounding", "[iclaa]") {
    for (const bool rope : {true, false})
        for (const bool mlp : {true, false}) {
            CAPTURE(rope, mlp);
            const model::ModelSpec spec = softmax_spec(rope, mlp, 0.4);
            model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
            Rng rng(7);
            net.init(rng);
            const std::size_t B = 3, M = 11, N = 9;
            std::vector<std::int32_t> prompts, inputs;
            std::vector<std::vector<double>> references;
            for (std::size_t b = 0; b < B; ++b) {
                const auto prompt = random_tokens(M, spec.vocab, rng), input = random_tokens(N, spec.vocab, rng);
                references.push_back(reference_logits(net, prompt, input));
                prompts.insert(prompts.end(), prompt.begin(), prompt.end());
                inputs.insert(inputs.end(), input.begin(), input.end());
            }
            const auto kv = icl::capture_prompt_keys_values(net, prompts.data(), B, M);
            // all B prompts at once, one per sequence of the batch
            auto terms = icl::empty_prompt_terms(spec.layers, B * spec.heads);
            for (std::size_t b = 0; b < B; ++b) icl::add_cache_terms(terms, b, kv, b, icl::CacheSelection::all, 0, net.rope());
            const auto logits = icl::logits_with_terms(net, terms, inputs.data(), B, N);
            const std::size_t V = spec.vocab;
            for (std::size_t b = 0; b < B; ++b)
                CHECK(relative_error(logits.data() + b * N * V, references[b].data(), N * V) <= 1e-12);
            // the negative control: the same cache with keys not rotated to p − M is not the model with the prompt
            if (rope) {
                auto wrong = icl::empty_prompt_terms(spec.layers, spec.heads);
                icl::add_cache_terms(wrong, 0, kv, 0, icl::CacheSelection::all, 0, nullptr);
                const auto bad = icl::logits_with_terms(net, wrong, inputs.data(), 1, N);
                CHECK(relative_error(bad.data(), references[0].data(), N * V) >= 1e-4);
            }
            // empty terms: M_old on X alone, and the model's state is left without terms
            const auto none = icl::logits_with_terms(net, icl::empty_prompt_terms(spec.layers, spec.heads), inputs.data(), 1, N);
            net.forward(inputs.data(), 1, N);
            CHECK(relative_error(none.data(), std::vector<double>(net.logits(), net.logits() + N * V).data(), N * V) == 0.0);
        }
}

TEST_CASE("ICLAA truncated caches keep the chosen keys", "[iclaa]") {
    const model::ModelSpec spec = softmax_spec(true, false, 0.4);
    model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
    Rng rng(3);
    net.init(rng);
    const auto prompt = random_tokens(10, spec.vocab, rng);
    const auto kv = icl::capture_prompt_keys_values(net, prompt.data(), 1, prompt.size());
    for (std::size_t l = 0; l < spec.layers; ++l) {  // column masses of a causal softmax sum to M
        double total = 0.0;
        for (std::size_t p = 0; p < 10; ++p) total += kv.column_mass[l][p];
        CHECK(total == Approx(10.0).epsilon(1e-12));
    }
    auto terms = icl::empty_prompt_terms(spec.layers, spec.heads);
    icl::add_cache_terms(terms, 0, kv, 0, icl::CacheSelection::recent, 3, net.rope());
    CHECK(terms[0][0].cache_length == 3);
    // the 3 most recent keys p = 7, 8, 9, the first rotated by R_{7-10}
    std::vector<double> expected(spec.head_dim());
    net.rope()->rotate(expected.data(), kv.key(0, 0, 0, 7), 3, true);
    for (std::size_t d = 0; d < spec.head_dim(); ++d) CHECK(terms[0][0].cache_keys[d] == Approx(expected[d]).epsilon(1e-14));
    icl::add_cache_terms(terms, 0, kv, 0, icl::CacheSelection::heavy, 4, net.rope());
    CHECK(terms[1][1].cache_length == 4);
}

TEST_CASE("Positive random features estimate exp(x.y) without bias, error falling as F^-1/2", "[iclaa]") {
    const std::size_t D = 8;
    Rng rng(11);
    std::vector<double> x(D), y(D);
    for (std::size_t d = 0; d < D; ++d) {
        x[d] = rng.normal(0.0, 0.3);
        y[d] = rng.normal(0.0, 0.3);
    }
    double exact = 0.0;
    for (std::size_t d = 0; d < D; ++d) exact += x[d] * y[d];
    exact = std::exp(exact);
    for (const bool orthogonal : {false, true}) {
        CAPTURE(orthogonal);
        std::vector<double> rms;
        for (const std::size_t F : {16, 256}) {
            double mean = 0.0, squares = 0.0;
            const int seeds = 400;
            for (int s = 0; s < seeds; ++s) {
                const auto map = nn::random_kernel_features<double>(D, F, orthogonal, 1.0, rng);
                std::vector<double> px(F), py(F);
                const double ax = nn::kernel_features(px.data(), x.data(), map), ay = nn::kernel_features(py.data(), y.data(), map);
                double dot = 0.0;
                for (std::size_t r = 0; r < F; ++r) dot += px[r] * py[r];
                const double estimate = std::exp(ax + ay) * dot;
                mean += estimate / seeds;
                squares += (estimate - exact) * (estimate - exact) / seeds;
            }
            rms.push_back(std::sqrt(squares));
            CHECK(std::abs(mean - exact) <= 4.0 * std::sqrt(squares / seeds));  // unbiased within 4 standard errors
        }
        CHECK(rms[1] / rms[0] == Approx(0.25).margin(0.08));  // √(16/256)
    }
}

TEST_CASE("ICLAA rotate-then-map converges as F^-1/2 through a model, mis-rotated conventions do not", "[iclaa]") {
    const model::ModelSpec spec = softmax_spec(true, true, 0.05);
    model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
    Rng rng(5);
    net.init(rng);
    std::vector<double> errors;
    const std::size_t Fs[] = {64, 1024, 16384};
    for (const std::size_t F : Fs) {
        double mean = 0.0;
        for (std::uint64_t seed = 1; seed <= 3; ++seed) mean += kernel_error(net, F, icl::RopeConvention::rotate_then_map, seed, 4) / 3;
        errors.push_back(mean);
    }
    const double slope = (std::log(errors[2]) - std::log(errors[0])) / (std::log(16384.0) - std::log(64.0));
    CAPTURE(errors[0], errors[1], errors[2], slope);
    CHECK(slope <= -0.4);
    CHECK(slope >= -0.6);
    for (const auto convention : {icl::RopeConvention::absolute_prompt_positions, icl::RopeConvention::unrotated}) {
        CAPTURE(icl::rope_convention_name(convention));
        const double wrong = kernel_error(net, 16384, convention, 1, 4);
        CHECK(wrong >= 5.0 * errors[2]);  // a biased estimate: stays far above the converging one at the same F
    }
}

TEST_CASE("ICLAA log-domain kernel terms stay finite in fp32 where a direct exp overflows", "[iclaa]") {
    // keys and queries so large that w_rᵀk̃ reaches ~100: exp overflows float (e^88.7), the shifted sums do not
    const std::size_t D = 8, F = 64;
    Rng rng(9);
    auto map64 = nn::random_kernel_features<double>(D, F, false, 1.0, rng);
    nn::KernelFeatures<float> map32;
    map32.dim = D;
    map32.features = F;
    map32.w.assign(map64.w.begin(), map64.w.end());
    map32.c.assign(map64.c.begin(), map64.c.end());
    std::vector<double> x(D);
    for (auto& e : x) e = rng.normal(0.0, 20.0);
    std::vector<float> xf(x.begin(), x.end());
    std::vector<double> p64(F);
    std::vector<float> p32(F);
    const double a64 = nn::kernel_features(p64.data(), x.data(), map64);
    const float a32 = nn::kernel_features(p32.data(), xf.data(), map32);
    double top_linear = -1e300;
    for (std::size_t r = 0; r < F; ++r) {
        double z = 0.0;
        for (std::size_t d = 0; d < D; ++d) z += map64.w[d * F + r] * x[d];
        top_linear = std::max(top_linear, z);
    }
    CHECK(top_linear > 88.8);
    REQUIRE(std::isfinite(a32));
    CHECK(static_cast<double>(a32) == Approx(a64).epsilon(1e-5));
    double diff = 0.0;
    for (std::size_t r = 0; r < F; ++r) diff = std::max(diff, std::abs(static_cast<double>(p32[r]) - p64[r]));
    CHECK(diff <= 1e-5);
}

TEST_CASE("ICLAA closed form: a NaN prompt key makes its head's terms NaN, never 'no prompt'", "[iclaa][nan]") {
    // issue 45: the shift G = max_p A_p and the tops of b_D, b_KV dropped a NaN (std::max, std::max_element), so the
    // head's terms were zeroed as if the prompt were empty, the logits came out finite and the G claims scored them
    const model::ModelSpec spec = softmax_spec(true, false, 0.4);
    model::Transformer<double> net(spec, model::Transformer<double>::Mode::inference);
    Rng rng(11);
    net.init(rng);
    const auto prompt = random_tokens(10, spec.vocab, rng);
    auto kv = icl::capture_prompt_keys_values(net, prompt.data(), 1, prompt.size());
    const auto maps = random_maps(spec, 16, false, rng);
    auto clean = icl::empty_prompt_terms(spec.layers, spec.heads);
    icl::add_kernel_terms(clean, 0, kv, 0, maps, net.rope(), icl::RopeConvention::rotate_then_map);
    for (const auto& layer : clean)
        for (const auto& head : layer) {
            CHECK(std::isfinite(head.log_b_d));
            for (double x : head.b_d) CHECK(std::isfinite(x));
        }
    kv.keys[0][2] = std::numeric_limits<double>::quiet_NaN();  // layer 0, head 0, position 0, coordinate 2
    auto poisoned = icl::empty_prompt_terms(spec.layers, spec.heads);
    icl::add_kernel_terms(poisoned, 0, kv, 0, maps, net.rope(), icl::RopeConvention::rotate_then_map);
    const auto& head = poisoned[0].at(0);
    CHECK(std::isnan(head.log_b_d));
    CHECK(std::isnan(head.log_b_kv));
    CHECK(std::all_of(head.b_d.begin(), head.b_d.end(), [](double x) { return std::isnan(x); }));
    // the other heads are untouched
    CHECK(std::isfinite(poisoned[0].at(1).log_b_d));
    CHECK(poisoned[0].at(1).b_d == clean[0].at(1).b_d);
}

}  // namespace iclab_test_iclaa
