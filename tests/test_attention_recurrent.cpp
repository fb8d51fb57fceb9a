// Recurrent-state form of linearized attention (paper 000 Eq. 19) against the masked quadratic form of
// Eq. 13 (linear_attention.hpp) for every variant, against finite differences, and in float vs double.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "framework/nn/linear_attention.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_attention_recurrent {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using iclab::testing::check_gradient;
using iclab::testing::dot;
using iclab::testing::random_vector;
using namespace iclab::testing;

namespace {

// Normwise relative error max_i |a_i - b_i| / max_i |b_i|. Not per entry: an entry that is a near-zero
// difference of O(1) terms carries an O(eps) absolute error that any two summation orders disagree on, so
// a per-entry relative error has no bound (measured: 7e-12 on some seeds for fp64 forwards that agree
// normwise to 1e-15). Any error in the formulas still shows as O(1).
template <class A>
double normwise_error(const std::vector<A>& a, const std::vector<double>& b) {
    REQUIRE(a.size() == b.size());
    double error = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        error = std::max(error, std::abs(static_cast<double>(a[i]) - b[i]));
        scale = std::max(scale, std::abs(b[i]));
    }
    return error / std::max(scale, 1e-300);  // both all-zero (d b_D when unnormalized): 0
}

// Forward and backward of the recurrent form in scalar type T. Gradients start from `initial_*`
// (nonzero, so that overwriting instead of accumulating is caught).
template <class T>
struct Result {
    std::vector<T> out, d_qkv, d_b_kv, d_b_d;
};

template <class T>
Result<T> run_recurrent(const AttentionInputs& in, const std::vector<double>& r, const std::vector<double>& initial_qkv,
                        const std::vector<double>& initial_bkv, const std::vector<double>& initial_bd,
                        const nn::AttentionShape& shape) {
    const auto qkv = cast<T>(in.qkv), b_kv = cast<T>(in.b_kv), b_d = cast<T>(in.b_d), d_out = cast<T>(r);
    const auto random = cast<T>(in.random_features);
    const T* random_features = random.empty() ? nullptr : random.data();
    Result<T> res{std::vector<T>(r.size()), cast<T>(initial_qkv), cast<T>(initial_bkv), cast<T>(initial_bd)};
    nn::LinearAttentionStateCache<T> cache;
    nn::linear_attention_recurrent_forward(res.out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), random_features, shape,
                                           in.options);
    nn::linear_attention_recurrent_backward(res.d_qkv.data(), res.d_b_kv.data(), res.d_b_d.data(), d_out.data(), qkv.data(),
                                            b_kv.data(), b_d.data(), random_features, res.out.data(), cache, shape, in.options);
    return res;
}

// Every variant at one shape: forward outputs and backward gradients of both forms, same inputs and same r.
void compare_with_quadratic(const nn::AttentionShape& base_shape) {
    for (const auto& variant : all_variants(true)) {
        DYNAMIC_SECTION(describe(variant) << " D=" << base_shape.head_dim) {
            Rng rng(41);
            const AttentionInputs in = random_inputs(variant, base_shape, rng);
            const nn::AttentionShape& shape = in.shape;
            const auto r = random_vector(shape.batch * shape.time * shape.width(), rng);
            const auto g_qkv = random_vector(in.qkv.size(), rng), g_bkv = random_vector(in.b_kv.size(), rng),
                       g_bd = random_vector(in.b_d.size(), rng);
            // the quadratic form (reference)
            std::vector<double> out(r.size()), d_qkv = g_qkv, d_b_kv = g_bkv, d_b_d = g_bd;
            nn::LinearAttentionCache<double> cache;
            nn::linear_attention_forward(out.data(), cache, in.qkv.data(), in.b_kv.data(), in.b_d.data(), in.random(), shape,
                                         in.options);
            nn::linear_attention_backward(d_qkv.data(), d_b_kv.data(), d_b_d.data(), r.data(), in.qkv.data(), in.b_kv.data(),
                                          in.b_d.data(), in.random(), out.data(), cache, shape, in.options);
            for (std::size_t i = 0; i < d_qkv.size(); ++i) d_qkv[i] += g_qkv[i];  // the quadratic form overwrites d_qkv
            const auto rec = run_recurrent<double>(in, r, g_qkv, g_bkv, g_bd, shape);
            CHECK(normwise_error(rec.out, out) <= 1e-12);
            CHECK(normwise_error(rec.d_qkv, d_qkv) <= 1e-10);
            CHECK(normwise_error(rec.d_b_kv, d_b_kv) <= 1e-10);
            CHECK(normwise_error(rec.d_b_d, d_b_d) <= 1e-10);
        }
    }
}
}  // namespace

// D = 36 runs combine_rows' 32-column register block and the tails of both loops; D = 8 only the tails.
TEST_CASE("recurrent attention equals the quadratic form, forward and backward, every variant", "[attention][recurrent]") {
    compare_with_quadratic({2, 37, 2, 8});
    compare_with_quadratic({1, 29, 2, 36});
}

TEST_CASE("recurrent attention backward matches finite differences", "[attention][recurrent][gradients]") {
    for (const Variant& variant : all_variants(true)) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(51);
            AttentionInputs in = random_inputs(variant, {2, 9, 2, 4}, rng);
            const nn::AttentionShape& shape = in.shape;
            const auto r = random_vector(shape.batch * shape.time * shape.width(), rng);
            std::vector<double> out(r.size());
            nn::LinearAttentionStateCache<double> cache;
            auto loss = [&] {
                nn::linear_attention_recurrent_forward(out.data(), cache, in.qkv.data(), in.b_kv.data(), in.b_d.data(),
                                                       in.random(), shape, in.options);
                return dot(out, r);
            };
            loss();
            std::vector<double> d_qkv(in.qkv.size(), 0.0), d_b_kv(in.b_kv.size(), 0.0), d_b_d(in.b_d.size(), 0.0);
            nn::linear_attention_recurrent_backward(d_qkv.data(), d_b_kv.data(), d_b_d.data(), r.data(), in.qkv.data(),
                                                    in.b_kv.data(), in.b_d.data(), in.random(), out.data(), cache, shape,
                                                    in.options);
            check_gradient("recurrent.qkv", in.qkv, d_qkv, loss, 120);
            check_gradient("recurrent.b_kv", in.b_kv, d_b_kv, loss);
            if (variant.normalize) check_gradient("recurrent.b_d", in.b_d, d_b_d, loss);
        }
    }
}

// float against double, normwise (see normwise_error).
TEST_CASE("recurrent attention in float agrees with double", "[attention][recurrent]") {
    for (const Variant& variant : {Variant{nn::FeatureMap::elu1, true, true, true},
                                   Variant{nn::FeatureMap::identity, false, true, true},
                                   Variant{nn::FeatureMap::performer, true, true, true}}) {
        DYNAMIC_SECTION(describe(variant)) {
            Rng rng(61);
            const AttentionInputs in = random_inputs(variant, {2, 37, 2, 8}, rng);
            const nn::AttentionShape& shape = in.shape;
            const auto r = random_vector(shape.batch * shape.time * shape.width(), rng);
            const std::vector<double> z_qkv(in.qkv.size(), 0.0), z_bkv(in.b_kv.size(), 0.0), z_bd(in.b_d.size(), 0.0);
            const auto ref = run_recurrent<double>(in, r, z_qkv, z_bkv, z_bd, shape);
            const auto low = run_recurrent<float>(in, r, z_qkv, z_bkv, z_bd, shape);
            CHECK(normwise_error(low.out, ref.out) <= 1e-4);
            CHECK(normwise_error(low.d_qkv, ref.d_qkv) <= 1e-4);
            CHECK(normwise_error(low.d_b_kv, ref.d_b_kv) <= 1e-4);
            CHECK(normwise_error(low.d_b_d, ref.d_b_d) <= 1e-4);
        }
    }
}

TEST_CASE("recurrent attention results do not depend on the thread count", "[attention][recurrent]") {
    Rng rng(71);
    const AttentionInputs in = random_inputs({nn::FeatureMap::performer, true, true, true}, {5, 11, 3, 8}, rng);
    const nn::AttentionShape& shape = in.shape;
    const auto r = random_vector(shape.batch * shape.time * shape.width(), rng);
    const auto g_qkv = random_vector(in.qkv.size(), rng), g_bkv = random_vector(in.b_kv.size(), rng),
               g_bd = random_vector(in.b_d.size(), rng);
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const auto one = run_recurrent<float>(in, r, g_qkv, g_bkv, g_bd, shape);
    omp_set_num_threads(2);
    const auto two = run_recurrent<float>(in, r, g_qkv, g_bkv, g_bd, shape);
    omp_set_num_threads(saved);
    CHECK(one.out == two.out);
    CHECK(one.d_qkv == two.d_qkv);
    CHECK(one.d_b_kv == two.d_b_kv);
    CHECK(one.d_b_d == two.d_b_d);
}

}  // namespace iclab_test_attention_recurrent
