// Exact softmax attention: forward against the formula written out, backward against finite differences,
// for every mask with and without RoPE, and both kernels of the per-head products (model.small_gemm).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "framework/nn/softmax_attention.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_softmax_attention {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::testing;

namespace {

struct SoftmaxCase {
    nn::AttentionShape shape{2, 7, 2, 4};
    std::vector<double> qkv;
    nn::RopeTable rope{16, 4, 10000.0};
    nn::SoftmaxAttentionOptions<double> options;
};

SoftmaxCase make_case(const MaskVariant& mask, bool rope, Rng& rng) {
    SoftmaxCase c;
    c.qkv = random_vector(c.shape.batch * c.shape.time * 3 * c.shape.width(), rng, 1.5);
    c.options.rope = rope ? &c.rope : nullptr;
    c.options.mask.kind = mask.kind;
    c.options.mask.isolate_queries = mask.isolate;
    c.options.mask.query_self = mask.self;
    c.options.mask.prefix_length = 3;
    return c;
}

std::vector<double> run(const SoftmaxCase& c, const std::vector<double>& qkv) {
    std::vector<double> out(c.shape.batch * c.shape.time * c.shape.width());
    nn::SoftmaxAttentionCache<double> cache;
    nn::softmax_attention_forward(out.data(), cache, qkv.data(), c.shape, c.options);
    return out;
}

// out_i = Σ_{j∈V(i)} exp(s_ij) v_j / Σ_{j∈V(i)} exp(s_ij),  s_ij = (R_i q_i)·(R_j k_j) / √D
std::vector<double> reference(const SoftmaxCase& c) {
    const auto& s = c.shape;
    const std::size_t C = s.width(), D = s.head_dim;
    std::vector<double> out(s.batch * s.time * C, 0.0);
    auto vec = [&](std::size_t b, std::size_t t, std::size_t part, std::size_t h) {
        std::vector<double> x(D), y(D);
        for (std::size_t d = 0; d < D; ++d) x[d] = c.qkv[(b * s.time + t) * 3 * C + part * C + h * D + d];
        if (c.options.rope == nullptr || part == 2) return x;
        for (std::size_t p = 0; p < D / 2; ++p) {  // Definition B.1, pair p rotated by t·θ_p
            const double a = t * std::pow(10000.0, -2.0 * p / D);
            y[2 * p] = std::cos(a) * x[2 * p] - std::sin(a) * x[2 * p + 1];
            y[2 * p + 1] = std::sin(a) * x[2 * p] + std::cos(a) * x[2 * p + 1];
        }
        return y;
    };
    for (std::size_t b = 0; b < s.batch; ++b)
        for (std::size_t h = 0; h < s.heads; ++h)
            for (std::size_t i = 0; i < s.time; ++i) {
                double total = 0.0;
                std::vector<double> acc(D, 0.0);
                for (std::size_t j = 0; j < s.time; ++j) {
                    if (!c.options.mask.visible(i, j, s.time)) continue;
                    const double w = std::exp(dot(vec(b, i, 0, h), vec(b, j, 1, h)) / std::sqrt(double(D)));
                    total += w;
                    const auto v = vec(b, j, 2, h);
                    for (std::size_t d = 0; d < D; ++d) acc[d] += w * v[d];
                }
                for (std::size_t d = 0; d < D; ++d) out[(b * s.time + i) * C + h * D + d] = total > 0 ? acc[d] / total : 0.0;
            }
    return out;
}

const char* kernel_name(nn::SmallGemm kernel) { return kernel == nn::SmallGemm::blocked ? " blocked" : " openblas"; }

}  // namespace

TEST_CASE("softmax attention equals the formula written out, every mask and kernel", "[attention][softmax]") {
    for (const auto& mask : all_masks())
        for (bool rope : {true, false})
            for (const nn::SmallGemm kernel : {nn::SmallGemm::openblas, nn::SmallGemm::blocked}) {
                DYNAMIC_SECTION(nn::mask_kind_name(mask.kind) << (mask.isolate ? " isolated" : "") << (rope ? " rope" : "")
                                                              << kernel_name(kernel)) {
                    Rng rng(5);
                    SoftmaxCase c = make_case(mask, rope, rng);
                    c.options.small_gemm = kernel;
                    const auto out = run(c, c.qkv), expected = reference(c);
                    for (std::size_t i = 0; i < out.size(); ++i) CHECK(std::abs(out[i] - expected[i]) <= 1e-12);
                }
            }
}

TEST_CASE("softmax attention backward matches finite differences, every mask and kernel", "[attention][softmax][gradients]") {
    for (const auto& mask : all_masks())
        for (bool rope : {true, false})
            for (const nn::SmallGemm kernel : {nn::SmallGemm::openblas, nn::SmallGemm::blocked}) {
                DYNAMIC_SECTION(nn::mask_kind_name(mask.kind) << (mask.isolate ? " isolated" : "") << (rope ? " rope" : "")
                                                              << kernel_name(kernel)) {
                    Rng rng(6);
                    SoftmaxCase c = make_case(mask, rope, rng);
                    c.options.small_gemm = kernel;
                    const auto r = random_vector(c.shape.batch * c.shape.time * c.shape.width(), rng);
                    std::vector<double> qkv = c.qkv, out(r.size());
                    nn::SoftmaxAttentionCache<double> cache;
                    auto loss = [&] {
                        nn::softmax_attention_forward(out.data(), cache, qkv.data(), c.shape, c.options);
                        return dot(out, r);
                    };
                    loss();
                    // backward writes every element of d_qkv (NaN before: any element left unwritten fails the check)
                    std::vector<double> d_qkv(qkv.size(), std::numeric_limits<double>::quiet_NaN());
                    nn::softmax_attention_backward(d_qkv.data(), r.data(), qkv.data(), cache, c.shape, c.options);
                    check_gradient("softmax.qkv", qkv, d_qkv, loss, 120);
                }
            }
}

}  // namespace iclab_test_softmax_attention
