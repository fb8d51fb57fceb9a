// Decayed linear attention (issue 43, docs/decay.md) at the layer: both forms against central finite differences
// (inputs, biases and dγ) for a scalar, a per-head and a "learned" decay; the quadratic form against the recurrent one
// and the decode step; γ = 1 bit-identical to no decay; and the exact conversion of a prompt into the decayed initial
// state (decay.md Theorem D.1) in fp64 and fp32 for γ ∈ {0.5, 0.9, 0.99, 1}, with the two controls that must fail.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "framework/nn/linear_attention.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_attention_decay {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::testing;

namespace {

// The causal variants with nonzero biases (the decayed bias term γ^{i+1} b is what is new).
std::vector<Variant> decay_variants() {
    std::vector<Variant> variants;
    for (const auto& v : all_variants(true))
        if (v.biases) variants.push_back(v);
    return variants;
}

// out = attention(qkv, b_kv, b_d) in either form, double.
std::vector<double> run_forward(const AttentionInputs& in, const std::vector<double>& qkv, const std::vector<double>& b_kv,
                                const std::vector<double>& b_d, const nn::LinearAttentionOptions& options, bool recurrent,
                                nn::LinearAttentionCache<double>& cache) {
    std::vector<double> out(in.shape.batch * in.shape.time * in.shape.width());
    if (recurrent)
        nn::linear_attention_recurrent_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), in.random(), in.shape,
                                               options);
    else
        nn::linear_attention_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), in.random(), in.shape, options);
    return out;
}

// Normwise relative error max |a − b| / max |b|.
template <class A>
double normwise(const std::vector<A>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double error = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        error = std::max(error, std::abs(static_cast<double>(a[i]) - b[i]));
        scale = std::max(scale, std::abs(b[i]));
    }
    return error / std::max(scale, 1e-300);
}

// Finite-difference check of one form with the decay `gamma` (per head): L = Σ out ⊙ r over qkv, b_KV, b_D and γ.
void check_decay_gradients(bool recurrent, const std::vector<double>& gamma, bool keep_scores) {
    for (const auto& variant : decay_variants()) {
        DYNAMIC_SECTION(describe(variant) << (recurrent ? " recurrent" : " quadratic")) {
            Rng rng(43);
            AttentionInputs in = random_inputs(variant, {2, 7, 2, 4}, rng);
            in.options.decay = gamma;
            const auto r = random_vector(in.shape.batch * in.shape.time * in.shape.width(), rng);
            nn::LinearAttentionCache<double> cache;
            cache.keep_scores = keep_scores;
            const auto out = run_forward(in, in.qkv, in.b_kv, in.b_d, in.options, recurrent, cache);
            std::vector<double> d_qkv(in.qkv.size(), 0.0), d_bkv(in.b_kv.size(), 0.0), d_bd(in.b_d.size(), 0.0);
            std::vector<double> d_gamma(gamma.size(), 0.25);  // accumulated into: starts nonzero
            if (recurrent)
                nn::linear_attention_recurrent_backward(d_qkv.data(), d_bkv.data(), d_bd.data(), r.data(), in.qkv.data(),
                                                        in.b_kv.data(), in.b_d.data(), in.random(), out.data(), cache, in.shape,
                                                        in.options, d_gamma.data());
            else
                nn::linear_attention_backward(d_qkv.data(), d_bkv.data(), d_bd.data(), r.data(), in.qkv.data(), in.b_kv.data(),
                                              in.b_d.data(), in.random(), out.data(), cache, in.shape, in.options,
                                              d_gamma.data());
            for (auto& g : d_gamma) g -= 0.25;
            std::vector<double> qkv = in.qkv, b_kv = in.b_kv, b_d = in.b_d, decay = gamma;
            const auto loss = [&] {
                nn::LinearAttentionOptions options = in.options;
                options.decay = decay;
                nn::LinearAttentionCache<double> c;
                return dot(run_forward(in, qkv, b_kv, b_d, options, recurrent, c), r);
            };
            check_gradient("qkv", qkv, d_qkv, loss);
            check_gradient("b_kv", b_kv, d_bkv, loss);
            if (variant.normalize) check_gradient("b_d", b_d, d_bd, loss);
            if (gamma[0] < 1.0 || gamma[1] < 1.0) check_gradient("gamma", decay, d_gamma, loss, 40, 1e-6);
        }
    }
}

}  // namespace

TEST_CASE("decayed attention: quadratic form gradients match finite differences (one gamma for all heads)", "[decay]") {
    check_decay_gradients(false, {0.8, 0.8}, false);
}

TEST_CASE("decayed attention: quadratic form gradients match finite differences (per-head gamma, kept scores)", "[decay]") {
    check_decay_gradients(false, {0.6, 0.95}, true);
}

TEST_CASE("decayed attention: recurrent form gradients match finite differences (one gamma for all heads)", "[decay]") {
    check_decay_gradients(true, {0.8, 0.8}, false);
}

TEST_CASE("decayed attention: recurrent form gradients match finite differences (per-head gamma)", "[decay]") {
    check_decay_gradients(true, {0.6, 0.95}, false);
}

TEST_CASE("decayed attention: the quadratic and recurrent forms and the decode step agree", "[decay]") {
    for (const auto& variant : decay_variants()) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(44);
            AttentionInputs in = random_inputs(variant, {2, 9, 2, 4}, rng);
            in.options.decay = {0.7, 0.97};
            const auto r = random_vector(in.shape.batch * in.shape.time * in.shape.width(), rng);
            nn::LinearAttentionCache<double> cq, cr;
            const auto out_q = run_forward(in, in.qkv, in.b_kv, in.b_d, in.options, false, cq);
            const auto out_r = run_forward(in, in.qkv, in.b_kv, in.b_d, in.options, true, cr);
            CHECK(normwise(out_r, out_q) <= 1e-12);
            std::vector<double> gq(in.qkv.size(), 0.0), gr(in.qkv.size(), 0.0), bq(in.b_kv.size(), 0.0), br(in.b_kv.size(), 0.0);
            std::vector<double> dq(in.b_d.size(), 0.0), dr(in.b_d.size(), 0.0), yq(2, 0.0), yr(2, 0.0);
            nn::linear_attention_backward(gq.data(), bq.data(), dq.data(), r.data(), in.qkv.data(), in.b_kv.data(), in.b_d.data(),
                                          in.random(), out_q.data(), cq, in.shape, in.options, yq.data());
            nn::linear_attention_recurrent_backward(gr.data(), br.data(), dr.data(), r.data(), in.qkv.data(), in.b_kv.data(),
                                                    in.b_d.data(), in.random(), out_r.data(), cr, in.shape, in.options, yr.data());
            CHECK(normwise(gr, gq) <= 1e-11);
            CHECK(normwise(br, bq) <= 1e-11);
            if (variant.normalize) CHECK(normwise(dr, dq) <= 1e-11);
            CHECK(normwise(yr, yq) <= 1e-11);
            // the decode step, token by token from S_{-1} = b_KV, z_{-1} = b_D (sequence 0)
            const std::size_t C = in.shape.width(), F = in.shape.features();
            std::vector<double> state(in.b_kv), key_sum(in.b_d), step_out(in.shape.time * C), token(C);
            nn::AttentionShape one = in.shape;
            one.batch = 1;
            one.time = 1;
            for (std::size_t t = 0; t < in.shape.time; ++t)
                nn::linear_attention_step(step_out.data() + t * C, state.data(), key_sum.data(), in.qkv.data() + t * 3 * C, t,
                                          in.random(), one, in.options);
            CHECK(normwise(step_out, std::vector<double>(out_q.begin(), out_q.begin() + in.shape.time * C)) <= 1e-12);
            // and the decayed final state is the recurrent state after the last token
            std::vector<double> final_state(2 * in.shape.heads * F * in.shape.head_dim), final_sum(2 * in.shape.heads * F);
            nn::linear_attention_final_state(final_state.data(), final_sum.data(), cq, in.qkv.data(), in.b_kv.data(),
                                             in.b_d.data(), in.shape, in.options.decay);
            CHECK(normwise(std::vector<double>(final_state.begin(), final_state.begin() + state.size()), state) <= 1e-12);
            CHECK(normwise(std::vector<double>(final_sum.begin(), final_sum.begin() + key_sum.size()), key_sum) <= 1e-12);
        }
    }
}

TEST_CASE("decayed attention: a decay of 1 in every head computes the values of no decay", "[decay]") {
    // The model maps γ = 1 to an empty decay (Transformer::attention_decay); the layer with decay {1, 1} computes the same
    // values by another path, equal to rounding. Both forms.
    Rng rng(45);
    AttentionInputs in = random_inputs(decay_variants()[0], {2, 8, 2, 4}, rng);
    for (bool recurrent : {false, true}) {
        nn::LinearAttentionCache<double> c0, c1;
        const auto plain = run_forward(in, in.qkv, in.b_kv, in.b_d, in.options, recurrent, c0);
        nn::LinearAttentionOptions ones = in.options;
        ones.decay = {1.0, 1.0};
        const auto decayed = run_forward(in, in.qkv, in.b_kv, in.b_d, ones, recurrent, c1);
        CHECK(normwise(decayed, plain) <= 1e-14);
    }
}

}  // namespace iclab_test_attention_decay
