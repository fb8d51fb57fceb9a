// Linearized attention (paper 000 Eq. 13): forward against a direct transcription of the equation with
// explicit rotation matrices, and backward against finite differences, for every variant.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/nn/linear_attention.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

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

double phi(double x, nn::FeatureMap map) { return map == nn::FeatureMap::identity ? x : (x > 0 ? x + 1 : std::exp(x)); }

// Eq. 13 transcribed: O_i = (R_i φ(q_i))ᵀ [Σ_{j≤i} R_j φ(k_j) v_jᵀ + b_KV] / (φ(q_i)ᵀ[Σ_{j≤i} φ(k_j) + b_D] + eps)
std::vector<double> reference_attention(const std::vector<double>& qkv, const std::vector<double>& b_kv,
                                        const std::vector<double>& b_d, const nn::AttentionShape& s,
                                        const nn::LinearAttentionOptions& o, double base) {
    const std::size_t C = s.width(), D = s.head_dim, F = D;
    std::vector<double> out(s.batch * s.time * C);
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i = 0; i < s.time; ++i) {
                auto feature = [&](std::size_t t, std::size_t part) {
                    std::vector<double> f(F);
                    for (std::size_t d = 0; d < F; ++d) f[d] = phi(qkv[(b * s.time + t) * 3 * C + part * C + h * D + d], o.feature_map);
                    return f;
                };
                auto rotate = [&](const std::vector<double>& x, std::size_t m) {
                    if (o.rope == nullptr) return x;
                    const auto R = rotation_matrix(m, F, base);
                    std::vector<double> y(F, 0.0);
                    for (std::size_t r = 0; r < F; ++r)
                        for (std::size_t c = 0; c < F; ++c) y[r] += R[r * F + c] * x[c];
                    return y;
                };
                std::vector<double> A(F * D);  // Σ_j R_j φ(k_j) v_jᵀ + b_KV
                for (std::size_t e = 0; e < F * D; ++e) A[e] = b_kv[h * F * D + e];
                std::vector<double> z(F);  // Σ_j φ(k_j) + b_D
                for (std::size_t f = 0; f < F; ++f) z[f] = b_d[h * F + f];
                for (std::size_t j = 0; j <= i; ++j) {
                    const auto k = feature(j, 1), rk = rotate(k, j);
                    for (std::size_t f = 0; f < F; ++f) {
                        z[f] += k[f];
                        for (std::size_t d = 0; d < D; ++d) A[f * D + d] += rk[f] * qkv[(b * s.time + j) * 3 * C + 2 * C + h * D + d];
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

}  // namespace

TEST_CASE("linearized attention forward equals Eq. 13 written out", "[attention]") {
    const nn::AttentionShape shape{2, 7, 2, 4};
    const double base = 10000.0;
    nn::RopeTable rope(16, shape.features(), base);
    for (const auto& variant : all_variants()) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(11);
            AttentionInputs inputs = random_inputs(variant, shape, rope, rng);
            auto& qkv = inputs.qkv;
            auto& b_kv = inputs.b_kv;
            auto& b_d = inputs.b_d;
            const auto& options = inputs.options;
            std::vector<double> out(shape.batch * shape.time * shape.width());
            nn::LinearAttentionCache<double> cache;
            nn::linear_attention_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), shape, options);
            const auto expected = reference_attention(qkv, b_kv, b_d, shape, options, base);
            double max_error = 0.0;
            for (std::size_t i = 0; i < out.size(); ++i)
                max_error = std::max(max_error, std::abs(out[i] - expected[i]) / (std::abs(expected[i]) + 1e-12));
            CHECK(max_error < 1e-11);
        }
    }
}

TEST_CASE("linearized attention backward matches finite differences for every variant", "[attention][gradients]") {
    const nn::AttentionShape shape{2, 6, 2, 4};
    nn::RopeTable rope(8, shape.features(), 10000.0);
    for (const auto& variant : all_variants()) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(21);
            AttentionInputs inputs = random_inputs(variant, shape, rope, rng);
            auto& qkv = inputs.qkv;
            auto& b_kv = inputs.b_kv;
            auto& b_d = inputs.b_d;
            const auto& options = inputs.options;
            const auto r = random_vector(shape.batch * shape.time * shape.width(), rng);
            std::vector<double> out(r.size());
            nn::LinearAttentionCache<double> cache;
            auto loss = [&] {
                nn::linear_attention_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), shape, options);
                return dot(out, r);
            };
            loss();
            std::vector<double> d_qkv(qkv.size(), 0.0), d_b_kv(b_kv.size(), 0.0), d_b_d(b_d.size(), 0.0);
            nn::linear_attention_backward(d_qkv.data(), d_b_kv.data(), d_b_d.data(), r.data(), qkv.data(), b_kv.data(),
                                          b_d.data(), out.data(), cache, shape, options);
            check_gradient("attention.qkv", qkv, d_qkv, loss, 80);
            check_gradient("attention.b_kv", b_kv, d_b_kv, loss);
            if (variant.normalize) check_gradient("attention.b_d", b_d, d_b_d, loss);
        }
    }
}

TEST_CASE("causal: attention outputs do not depend on later tokens", "[attention]") {
    const nn::AttentionShape shape{1, 6, 2, 4};
    nn::RopeTable rope(8, shape.features(), 10000.0);
    Rng rng(31);
    auto qkv = random_vector(shape.time * 3 * shape.width(), rng);
    std::vector<double> b_kv(shape.heads * 16, 0.0), b_d(shape.heads * 4, 0.0);
    nn::LinearAttentionOptions options;
    options.rope = &rope;
    std::vector<double> out1(shape.time * shape.width()), out2(out1.size());
    nn::LinearAttentionCache<double> cache;
    nn::linear_attention_forward(out1.data(), cache, qkv.data(), b_kv.data(), b_d.data(), shape, options);
    for (std::size_t c = 0; c < 3 * shape.width(); ++c) qkv[4 * 3 * shape.width() + c] += 1.0;  // perturb token 4
    nn::linear_attention_forward(out2.data(), cache, qkv.data(), b_kv.data(), b_d.data(), shape, options);
    for (std::size_t t = 0; t < shape.time; ++t)
        for (std::size_t c = 0; c < shape.width(); ++c) {
            const double diff = std::abs(out1[t * shape.width() + c] - out2[t * shape.width() + c]);
            if (t < 4) CHECK(diff == 0.0);
        }
    double later = 0.0;
    for (std::size_t c = 0; c < shape.width(); ++c) later += std::abs(out1[4 * shape.width() + c] - out2[4 * shape.width() + c]);
    CHECK(later > 1e-6);
}
