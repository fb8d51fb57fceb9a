// Softmax attention reading q, k, v and d_out in place and writing out and d_qkv in place (issue 23), against the path it
// replaced, written out here: per-head rows gathered into buffers (gather_head), RoPE or a copy into (T, D) buffers, the
// per-head products on contiguous buffers (OpenBLAS or the blocked kernel, as the options say), the output copied out, and d_q, d_k, d_v added with
// scatter_head into a zeroed d_qkv. Equal byte for byte in float and double, every mask, RoPE on and off, with rows of
// exact zeros in q, k and d_out (the zero patterns of the last layer's non-loss positions). The gradients themselves are
// checked against finite differences in test_softmax_attention.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "framework/nn/attention_kernels.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/softmax_attention.hpp"
#include "tests/attention_variants.hpp"

namespace iclab_test_softmax_attention_in_place {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::testing;

namespace {

template <class T>
void rotate_or_copy(T* out, const T* in, std::size_t time, std::size_t D, const nn::RopeTable* rope, bool inverse) {
    for (std::size_t t = 0; t < time; ++t) {
        if (rope != nullptr)
            rope->rotate(out + t * D, in + t * D, t, inverse);
        else
            std::copy(in + t * D, in + (t + 1) * D, out + t * D);
    }
}

// The gather / scatter form (no prompt): out (B, T, C), probs (B, H, T, T), and d_qkv accumulated into zeros.
template <class T>
void reference(std::vector<T>& out, std::vector<T>& d_qkv, const std::vector<T>& qkv, const std::vector<T>& d_out,
               const nn::AttentionShape& shape, const nn::SoftmaxAttentionOptions<T>& options) {
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, C = shape.width();
    const T scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(D)));
    const nn::SmallGemm kernel = options.small_gemm;
    out.assign(B * TT * C, T(0));
    d_qkv.assign(B * TT * 3 * C, T(0));
    std::vector<T> q(TT * D), k(TT * D), v(TT * D), rq(TT * D), rk(TT * D), head_out(TT * D), d_o(TT * D), probs(TT * TT),
        d_probs(TT * TT), d_rq(TT * D), d_rk(TT * D), d_q(TT * D), d_k(TT * D), d_v(TT * D);
    using nn::matrix;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            nn::kernels::gather_head(q.data(), k.data(), v.data(), qkv.data(), b, h, shape);
            rotate_or_copy(rq.data(), q.data(), TT, D, options.rope, false);
            rotate_or_copy(rk.data(), k.data(), TT, D, options.rope, false);
            nn::gemm<T>(matrix(probs.data(), TT, TT), matrix<const T>(rq.data(), TT, D), matrix<const T>(rk.data(), TT, D),
                        false, true, scale, T(0), kernel);
            for (std::size_t i = 0; i < TT; ++i) {
                T* row = probs.data() + i * TT;
                T highest = -std::numeric_limits<T>::infinity();
                for (std::size_t j = 0; j < TT; ++j)
                    if (options.mask.visible(i, j, TT)) highest = std::max(highest, row[j]);
                T total = T(0);
                for (std::size_t j = 0; j < TT; ++j) {
                    row[j] = options.mask.visible(i, j, TT) ? std::exp(row[j] - highest) : T(0);
                    total += row[j];
                }
                const T inverse = total > T(0) ? T(1) / total : T(0);
                for (std::size_t j = 0; j < TT; ++j) row[j] *= inverse;
            }
            nn::gemm<T>(matrix(head_out.data(), TT, D), matrix<const T>(probs.data(), TT, TT), matrix<const T>(v.data(), TT, D),
                        false, false, T(1), T(0), kernel);
            for (std::size_t t = 0; t < TT; ++t) {
                std::copy(head_out.begin() + t * D, head_out.begin() + (t + 1) * D, out.begin() + (b * TT + t) * C + h * D);
                std::copy(d_out.begin() + (b * TT + t) * C + h * D, d_out.begin() + (b * TT + t) * C + (h + 1) * D,
                          d_o.begin() + t * D);
            }
            nn::gemm<T>(matrix(d_probs.data(), TT, TT), matrix<const T>(d_o.data(), TT, D), matrix<const T>(v.data(), TT, D),
                        false, true, T(1), T(0), kernel);
            nn::gemm<T>(matrix(d_v.data(), TT, D), matrix<const T>(probs.data(), TT, TT), matrix<const T>(d_o.data(), TT, D),
                        true, false, T(1), T(0), kernel);
            for (std::size_t i = 0; i < TT; ++i) {
                const T* p = probs.data() + i * TT;
                T* dp = d_probs.data() + i * TT;
                const T inner = nn::kernels::dot_lanes(p, dp, TT);
                for (std::size_t j = 0; j < TT; ++j) dp[j] = p[j] * (dp[j] - inner);
            }
            nn::gemm<T>(matrix(d_rq.data(), TT, D), matrix<const T>(d_probs.data(), TT, TT), matrix<const T>(rk.data(), TT, D),
                        false, false, scale, T(0), kernel);
            nn::gemm<T>(matrix(d_rk.data(), TT, D), matrix<const T>(d_probs.data(), TT, TT), matrix<const T>(rq.data(), TT, D),
                        true, false, scale, T(0), kernel);
            rotate_or_copy(d_q.data(), d_rq.data(), TT, D, options.rope, true);
            rotate_or_copy(d_k.data(), d_rk.data(), TT, D, options.rope, true);
            nn::kernels::scatter_head(d_qkv.data(), d_q.data(), d_k.data(), d_v.data(), b, h, shape);
        }
}

template <class T>
void check_in_place(const MaskVariant& mask, bool with_rope, std::size_t time, std::size_t head_dim, nn::SmallGemm kernel) {
    const nn::AttentionShape shape{3, time, 2, head_dim};
    const std::size_t TT = shape.time, C = shape.width();
    Rng rng(91);
    std::vector<T> qkv = cast<T>(random_vector(shape.batch * TT * 3 * C, rng, 1.5));
    std::vector<T> d_out = cast<T>(random_vector(shape.batch * TT * C, rng));
    // exact zeros: sequence 1's rows 0-2 of q and k (all heads), and d_out at every third position of sequence 2
    for (std::size_t t = 0; t < 3; ++t)
        std::fill(qkv.begin() + (TT + t) * 3 * C, qkv.begin() + (TT + t) * 3 * C + 2 * C, T(0));
    for (std::size_t t = 0; t < TT; t += 3) std::fill(d_out.begin() + (2 * TT + t) * C, d_out.begin() + (2 * TT + t + 1) * C, T(0));
    const nn::RopeTable rope(TT, head_dim, 10000.0);
    nn::SoftmaxAttentionOptions<T> options;
    options.rope = with_rope ? &rope : nullptr;
    options.small_gemm = kernel;
    options.mask.kind = mask.kind;
    options.mask.isolate_queries = mask.isolate;
    options.mask.query_self = mask.self;
    options.mask.prefix_length = TT / 3;
    std::vector<T> out_old, d_qkv_old;
    reference(out_old, d_qkv_old, qkv, d_out, shape, options);
    std::vector<T> out(out_old.size(), std::numeric_limits<T>::quiet_NaN()), d_qkv(qkv.size(), std::numeric_limits<T>::quiet_NaN());
    nn::SoftmaxAttentionCache<T> cache;
    nn::softmax_attention_forward(out.data(), cache, qkv.data(), shape, options);
    nn::softmax_attention_backward(d_qkv.data(), d_out.data(), qkv.data(), cache, shape, options);
    CHECK(same_bits(out_old, out));
    CHECK(same_bits(d_qkv_old, d_qkv));
    std::size_t zeros = 0;
    for (const T x : d_qkv) zeros += x == T(0);
    CHECK(zeros > 0);  // d_out's zero rows make dS's rows zero, hence d q's rows: with RoPE rotated to −0 and back to + 0
}

}  // namespace

TEST_CASE("softmax attention in place gives the bytes of the gather and scatter form", "[attention][softmax][in_place]") {
    for (const auto& mask : all_masks())
        for (bool rope : {false, true}) {
            DYNAMIC_SECTION(nn::mask_kind_name(mask.kind) << (mask.isolate ? " isolated" : "") << (rope ? " rope" : "")) {
                for (const nn::SmallGemm kernel : {nn::SmallGemm::blocked, nn::SmallGemm::openblas}) {
                    INFO("kernel " << (kernel == nn::SmallGemm::blocked ? "blocked" : "openblas"));
                    check_in_place<float>(mask, rope, 30, 32, kernel);  // the cpu2 config's per-head shape
                    check_in_place<float>(mask, rope, 9, 4, kernel);
                    check_in_place<double>(mask, rope, 30, 32, kernel);
                    check_in_place<double>(mask, rope, 9, 4, kernel);
                }
            }
        }
}

}  // namespace iclab_test_softmax_attention_in_place
