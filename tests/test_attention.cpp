// Linearized attention (paper 000 Eq. 13) with every feature map and mask: forward against a direct
// transcription of the equation with explicit rotation matrices, backward against finite differences, and
// the dependency structure each mask promises (paper 003 Fig. 5).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "framework/nn/linear_attention.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_attention {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using iclab::testing::check_gradient;
using iclab::testing::dot;
using iclab::testing::random_vector;
using namespace iclab::testing;

namespace {

// Rotation matrix of Definition B.1 written out densely: block p = [[cos mθ, -sin mθ], [sin mθ, cos mθ]].
std::vector<double> rotation_matrix(std::size_t m, std::size_t F, double base) {
    std::vector<double> R(F * F, 0.0);
    for (std::size_t p = 0; p < F / 2; ++p) {
        const double angle = m * std::pow(base, -2.0 * p / F);
        R[(2 * p) * F + 2 * p] = std::cos(angle);
        R[(2 * p) * F + 2 * p + 1] = -std::sin(angle);
        R[(2 * p + 1) * F + 2 * p] = std::sin(angle);
        R[(2 * p + 1) * F + 2 * p + 1] = std::cos(angle);
    }
    return R;
}

// φ of one D-vector, transcribed from feature_map.hpp's definitions (not its code).
std::vector<double> phi(const std::vector<double>& x, const AttentionInputs& in) {
    const std::size_t D = x.size(), F = in.shape.features();
    std::vector<double> f(F);
    switch (in.options.feature_map) {
        case nn::FeatureMap::identity: return x;
        case nn::FeatureMap::elu1:
            for (std::size_t d = 0; d < D; ++d) f[d] = x[d] > 0 ? x[d] + 1 : std::exp(x[d]);
            return f;
        case nn::FeatureMap::relu:
            for (std::size_t d = 0; d < D; ++d) f[d] = std::max(x[d], 0.0);
            return f;
        case nn::FeatureMap::performer: {
            const double s = in.options.performer_input_scale;
            double norm2 = 0.0;
            for (double v : x) norm2 += s * s * v * v;
            for (std::size_t r = 0; r < F; ++r) {
                double wx = 0.0;
                for (std::size_t d = 0; d < D; ++d) wx += in.random_features[d * F + r] * s * x[d];
                f[r] = std::exp(wx - norm2 / 2) / std::sqrt(static_cast<double>(F));
            }
            return f;
        }
    }
    return f;
}

// Eq. 13 transcribed, with V(i) the mask's visible keys:
//   O_i = (R_i φ(q_i))ᵀ [Σ_{j∈V(i)} R_j φ(k_j) v_jᵀ + b_KV] / (φ(q_i)ᵀ[Σ_{j∈V(i)} φ(k_j) + b_D] + eps)
std::vector<double> reference_attention(const AttentionInputs& in) {
    const auto& s = in.shape;
    const auto& o = in.options;
    const std::size_t C = s.width(), D = s.head_dim, F = s.features();
    std::vector<double> out(s.batch * s.time * C);
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i = 0; i < s.time; ++i) {
                auto feature = [&](std::size_t t, std::size_t part) {
                    std::vector<double> x(D);
                    for (std::size_t d = 0; d < D; ++d) x[d] = in.qkv[(b * s.time + t) * 3 * C + part * C + h * D + d];
                    return phi(x, in);
                };
                auto rotate = [&](const std::vector<double>& x, std::size_t m) {
                    if (o.rope == nullptr) return x;
                    const auto R = rotation_matrix(m, F, 10000.0);
                    std::vector<double> y(F, 0.0);
                    for (std::size_t r = 0; r < F; ++r)
                        for (std::size_t c = 0; c < F; ++c) y[r] += R[r * F + c] * x[c];
                    return y;
                };
                std::vector<double> A(F * D);  // Σ_j R_j φ(k_j) v_jᵀ + b_KV
                for (std::size_t e = 0; e < F * D; ++e) A[e] = in.b_kv[h * F * D + e];
                std::vector<double> z(F);  // Σ_j φ(k_j) + b_D
                for (std::size_t f = 0; f < F; ++f) z[f] = in.b_d[h * F + f];
                for (std::size_t j = 0; j < s.time; ++j) {
                    if (!o.mask.visible(i, j, s.time)) continue;
                    const auto k = feature(j, 1), rk = rotate(k, j);
                    for (std::size_t f = 0; f < F; ++f) {
                        z[f] += k[f];
                        for (std::size_t d = 0; d < D; ++d) A[f * D + d] += rk[f] * in.qkv[(b * s.time + j) * 3 * C + 2 * C + h * D + d];
                    }
                }
                const auto q = feature(i, 0), rq = rotate(q, i);
                double den = 1.0 / o.unnormalized_scale;
                if (o.normalize) den = dot(q, z) + o.eps;
                for (std::size_t d = 0; d < D; ++d) {
                    double num = 0.0;
                    for (std::size_t f = 0; f < F; ++f) num += rq[f] * A[f * D + d];
                    out[(b * s.time + i) * C + h * D + d] = num / den;
                }
            }
    return out;
}

std::vector<double> forward(const AttentionInputs& in) {
    std::vector<double> out(in.shape.batch * in.shape.time * in.shape.width());
    nn::LinearAttentionCache<double> cache;
    nn::linear_attention_forward(out.data(), cache, in.qkv.data(), in.b_kv.data(), in.b_d.data(), in.random(), in.shape,
                                 in.options);
    return out;
}

}  // namespace

TEST_CASE("linearized attention forward equals Eq. 13 written out", "[attention]") {
    for (const auto& variant : all_variants()) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(11);
            const AttentionInputs inputs = random_inputs(variant, {2, 7, 2, 4}, rng, 3);
            const auto out = forward(inputs);
            const auto expected = reference_attention(inputs);
            double max_error = 0.0, scale = 0.0;
            for (std::size_t i = 0; i < out.size(); ++i) {
                max_error = std::max(max_error, std::abs(out[i] - expected[i]));
                scale = std::max(scale, std::abs(expected[i]));
            }
            CHECK(scale > 0.0);
            CHECK(max_error <= 1e-12 * scale);
        }
    }
}

TEST_CASE("linearized attention backward matches finite differences for every variant", "[attention][gradients]") {
    for (const auto& variant : all_variants()) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(21);
            AttentionInputs in = random_inputs(variant, {2, 6, 2, 4}, rng, 4);
            const auto r = random_vector(in.shape.batch * in.shape.time * in.shape.width(), rng);
            std::vector<double> out(r.size());
            nn::LinearAttentionCache<double> cache;
            auto loss = [&] {
                nn::linear_attention_forward(out.data(), cache, in.qkv.data(), in.b_kv.data(), in.b_d.data(), in.random(),
                                             in.shape, in.options);
                return dot(out, r);
            };
            loss();
            // the bias gradients start nonzero (backward must accumulate them); d_qkv starts as NaN (backward overwrites
            // every element: one it missed stays NaN and fails the check)
            std::vector<double> d_qkv(in.qkv.size(), std::numeric_limits<double>::quiet_NaN());
            std::vector<double> d_b_kv(in.b_kv.size(), 0.5), d_b_d(in.b_d.size(), 0.5);
            nn::linear_attention_backward(d_qkv.data(), d_b_kv.data(), d_b_d.data(), r.data(), in.qkv.data(), in.b_kv.data(),
                                          in.b_d.data(), in.random(), out.data(), cache, in.shape, in.options);
            for (auto* g : {&d_b_kv, &d_b_d})
                for (auto& x : *g) x -= 0.5;
            check_gradient("attention.qkv", in.qkv, d_qkv, loss, 80);
            check_gradient("attention.b_kv", in.b_kv, d_b_kv, loss);
            if (variant.normalize) check_gradient("attention.b_d", in.b_d, d_b_d, loss);
        }
    }
}

namespace {
// How much output position t changes when token `perturbed` changes (all heads, all channels).
std::vector<double> dependence_on(const AttentionInputs& base, std::size_t perturbed) {
    AttentionInputs in = base;
    in.options.rope = base.options.rope;
    const auto before = forward(in);
    const std::size_t C = in.shape.width();
    for (std::size_t c = 0; c < 3 * C; ++c) in.qkv[perturbed * 3 * C + c] += 0.5;
    const auto after = forward(in);
    std::vector<double> change(in.shape.time, 0.0);
    for (std::size_t t = 0; t < in.shape.time; ++t)
        for (std::size_t c = 0; c < C; ++c) change[t] += std::abs(after[t * C + c] - before[t * C + c]);
    return change;
}
}  // namespace

TEST_CASE("linearized attention backward from kept scores equals backward that recomputes them, bit for bit", "[attention]") {
    // Training keeps S = mask ⊙ (rq rkᵀ) from forward (LinearAttentionCache::keep_scores); inference recomputes them.
    for (const auto& variant : all_variants()) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(23);
            AttentionInputs in = random_inputs(variant, {2, 7, 2, 4}, rng, 4);
            std::vector<float> qkv(in.qkv.begin(), in.qkv.end()), b_kv(in.b_kv.begin(), in.b_kv.end()),
                b_d(in.b_d.begin(), in.b_d.end());
            std::vector<float> random;
            if (in.random() != nullptr) random.assign(in.random(), in.random() + in.shape.head_dim * in.shape.features());
            const float* random_ptr = random.empty() ? nullptr : random.data();
            std::vector<float> d_out(in.shape.batch * in.shape.time * in.shape.width());
            for (auto& x : d_out) x = static_cast<float>(rng.normal(0.0, 1.0));
            std::vector<std::vector<float>> grads;
            for (const bool keep : {false, true}) {
                nn::LinearAttentionCache<float> cache;
                cache.keep_scores = keep;
                std::vector<float> out(d_out.size());
                nn::linear_attention_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), random_ptr, in.shape,
                                             in.options);
                CHECK(cache.scores.size() == (keep ? in.shape.batch * in.shape.heads * in.shape.time * in.shape.time : 0));
                std::vector<float> d_qkv(qkv.size(), 0.f), d_b_kv(b_kv.size(), 0.f), d_b_d(b_d.size(), 0.f);
                nn::linear_attention_backward(d_qkv.data(), d_b_kv.data(), d_b_d.data(), d_out.data(), qkv.data(), b_kv.data(),
                                              b_d.data(), random_ptr, out.data(), cache, in.shape, in.options);
                d_qkv.insert(d_qkv.end(), d_b_kv.begin(), d_b_kv.end());
                d_qkv.insert(d_qkv.end(), d_b_d.begin(), d_b_d.end());
                grads.push_back(d_qkv);
            }
            REQUIRE(grads[0].size() == grads[1].size());
            std::size_t differ = 0;
            double largest = 0.0;
            for (std::size_t i = 0; i < grads[0].size(); ++i) {
                differ += grads[0][i] != grads[1][i];
                largest = std::max(largest, std::abs(static_cast<double>(grads[0][i])));
            }
            CHECK(differ == 0);
            CHECK(largest > 0.0);  // the comparison is not between two zero buffers
        }
    }
}

TEST_CASE("masks: each position depends on exactly the tokens its mask shows it", "[attention][mask]") {
    // T = 8, prefix P = 4: context positions 0-3, then 4-7.
    for (auto map : all_feature_maps())
        for (const auto& mask : all_masks()) {
            const Variant variant{map, nn::feature_map_is_nonnegative(map), true, true, mask.kind, mask.isolate, mask.self};
            DYNAMIC_SECTION(describe(variant)) {
                Rng rng(31);
                const AttentionInputs in = random_inputs(variant, {1, 8, 2, 4}, rng, 4);
                for (std::size_t j = 0; j < 8; ++j) {
                    const auto change = dependence_on(in, j);
                    for (std::size_t i = 0; i < 8; ++i) {
                        INFO("output " << i << ", perturbed token " << j);
                        // ReLU features can be exactly zero, which legitimately cuts a dependence: for ReLU only
                        // the absence of forbidden dependences is checked.
                        if (!in.options.mask.visible(i, j, 8) && i != j)
                            CHECK(change[i] == 0.0);
                        else if (map != nn::FeatureMap::relu)
                            CHECK(change[i] > 1e-8);
                    }
                }
                // what the masks promise, spelled out for the prefix mask: the prefix sees itself in both
                // directions and nothing after it; later positions see everything before them
                if (mask.kind == nn::MaskKind::prefix && !mask.isolate) {
                    CHECK(in.options.mask.visible(0, 3, 8));
                    CHECK_FALSE(in.options.mask.visible(3, 4, 8));
                    CHECK(in.options.mask.visible(6, 5, 8));
                    CHECK_FALSE(in.options.mask.visible(5, 6, 8));
                }
            }
        }
}

}  // namespace iclab_test_attention
