// The causal triangle of the blocked per-(batch, head) products (small_gemm.hpp Triangle, LinearAttentionOptions::
// causal_triangle; issue 23): S and dS only on and below the diagonal, S v / dS rk / Sᵀ d_num / dSᵀ rq without their
// zero terms. Against the full blocked products: forward output and every gradient (d_qkv, d_b_kv, d_b_d) equal byte
// for byte in float and double, T a multiple of the tiles and not, kept and recomputed scores, every causal variant
// (feature map, normalizer, RoPE, b_KV zero or not); the kept scores' tiles above the diagonal are shown never written
// (a NaN left there would reach the gradients if a product read it). Then finite differences of the triangle path.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "framework/nn/linear_attention.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_attention_triangle {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::testing;

namespace {

template <class T>
struct Run {
    std::vector<T> out, d_qkv, d_b_kv, d_b_d, scores;
};

// Forward and backward with the blocked kernel; kept scores start as NaN (never-written entries stay NaN).
template <class T>
Run<T> run_blocked(const AttentionInputs& in, const std::vector<double>& d_out, bool triangle, bool keep_scores) {
    nn::LinearAttentionOptions options = in.options;
    options.small_gemm = nn::SmallGemm::blocked;
    options.causal_triangle = triangle;
    const std::vector<T> qkv = cast<T>(in.qkv), b_kv = cast<T>(in.b_kv), b_d = cast<T>(in.b_d), random = cast<T>(in.random_features),
                         dy = cast<T>(d_out);
    const T* r = random.empty() ? nullptr : random.data();
    const nn::AttentionShape& s = in.shape;
    Run<T> run;
    run.out.resize(dy.size());
    run.d_qkv.assign(qkv.size(), std::numeric_limits<T>::quiet_NaN());  // overwritten in full
    run.d_b_kv.assign(b_kv.size(), T(0.25));                            // accumulated into
    run.d_b_d.assign(b_d.size(), T(0.25));
    nn::LinearAttentionCache<T> cache;
    cache.keep_scores = keep_scores;
    if (keep_scores) cache.scores.assign(s.batch * s.heads * s.time * s.time, std::numeric_limits<T>::quiet_NaN());
    nn::linear_attention_forward(run.out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), r, s, options);
    nn::linear_attention_backward(run.d_qkv.data(), run.d_b_kv.data(), run.d_b_d.data(), dy.data(), qkv.data(), b_kv.data(),
                                  b_d.data(), r, run.out.data(), cache, s, options);
    run.scores = cache.scores;
    return run;
}

template <class T>
void check_triangle_equals_full(const Variant& variant, std::size_t time, std::size_t head_dim) {
    Rng rng(71 + time);
    const AttentionInputs in = random_inputs(variant, nn::AttentionShape{2, time, 2, head_dim}, rng);
    const std::vector<double> d_out = random_vector(in.shape.batch * time * in.shape.width(), rng);
    for (bool keep : {true, false}) {
        INFO(describe(variant) << " T " << time << " D " << head_dim << (keep ? " kept" : " recomputed") << " scores, "
                               << (sizeof(T) == 4 ? "float" : "double"));
        const Run<T> full = run_blocked<T>(in, d_out, false, keep), triangle = run_blocked<T>(in, d_out, true, keep);
        CHECK(same_bits(full.out, triangle.out));
        CHECK(same_bits(full.d_qkv, triangle.d_qkv));
        CHECK(same_bits(full.d_b_kv, triangle.d_b_kv));
        CHECK(same_bits(full.d_b_d, triangle.d_b_d));
        bool finite = true;  // the compared values are real numbers (no NaN compared with NaN)
        for (const auto* v : {&full.out, &full.d_qkv, &full.d_b_kv, &full.d_b_d})
            for (T x : *v) finite = finite && std::isfinite(static_cast<double>(x));
        CHECK(finite);
        if (!keep) continue;
        // kept scores: the full path's S is zero above the diagonal; the triangle's equals it on and below the diagonal
        // and in every tile it wrote, and at T = 64 leaves entries far above the diagonal unwritten (still NaN)
        std::size_t unwritten = 0, unwritten_below = 0, differ = 0, above_nonzero = 0;
        for (std::size_t bh = 0; bh < in.shape.batch * in.shape.heads; ++bh)
            for (std::size_t i = 0; i < time; ++i)
                for (std::size_t j = 0; j < time; ++j) {
                    const std::size_t e = (bh * time + i) * time + j;
                    if (j > i) above_nonzero += !(full.scores[e] == T(0) && !std::signbit(full.scores[e]));
                    if (std::isnan(static_cast<double>(triangle.scores[e]))) {
                        ++unwritten;
                        unwritten_below += j <= i;
                    } else {
                        differ += std::memcmp(&full.scores[e], &triangle.scores[e], sizeof(T)) != 0;
                    }
                }
        CHECK(above_nonzero == 0);
        CHECK(unwritten_below == 0);
        CHECK(differ == 0);
        if (time == 64) CHECK(unwritten > 0);  // whole tiles skipped (tiles of at most 8 rows and 32 columns)
    }
}

}  // namespace

TEST_CASE("causal triangle of the blocked attention products equals the full blocked products byte for byte",
          "[attention][small_gemm][triangle]") {
    for (const Variant& variant : all_variants(true))
        for (std::size_t time : {std::size_t(64), std::size_t(30), std::size_t(17), std::size_t(1)})
            for (std::size_t head_dim : {std::size_t(32), std::size_t(4)}) {
                if (head_dim == 4 && time == 64) continue;  // the small head: the odd lengths suffice
                check_triangle_equals_full<float>(variant, time, head_dim);
                check_triangle_equals_full<double>(variant, time, head_dim);
            }
}

TEST_CASE("causal triangle of the blocked attention matches finite differences (fp64)", "[attention][gradients][triangle]") {
    for (const Variant& variant : all_variants(true)) {
        for (std::size_t time : {std::size_t(19), std::size_t(6)}) {
            DYNAMIC_SECTION(describe(variant) << " T " << time) {
                Rng rng(29);
                AttentionInputs in = random_inputs(variant, {2, time, 2, 4}, rng, 4);
                in.options.small_gemm = nn::SmallGemm::blocked;
                REQUIRE(in.options.causal_triangle);
                const auto r = random_vector(in.shape.batch * time * in.shape.width(), rng);
                std::vector<double> out(r.size());
                nn::LinearAttentionCache<double> cache;
                cache.keep_scores = true;
                auto loss = [&] {
                    nn::linear_attention_forward(out.data(), cache, in.qkv.data(), in.b_kv.data(), in.b_d.data(), in.random(),
                                                 in.shape, in.options);
                    return dot(out, r);
                };
                loss();
                std::vector<double> d_qkv(in.qkv.size(), std::numeric_limits<double>::quiet_NaN());
                std::vector<double> d_b_kv(in.b_kv.size(), 0.0), d_b_d(in.b_d.size(), 0.0);
                nn::linear_attention_backward(d_qkv.data(), d_b_kv.data(), d_b_d.data(), r.data(), in.qkv.data(), in.b_kv.data(),
                                              in.b_d.data(), in.random(), out.data(), cache, in.shape, in.options);
                check_gradient("attention.qkv", in.qkv, d_qkv, loss, 80);
                check_gradient("attention.b_kv", in.b_kv, d_b_kv, loss);
                if (variant.normalize) check_gradient("attention.b_d", in.b_d, d_b_d, loss);
            }
        }
    }
}

}  // namespace iclab_test_attention_triangle
