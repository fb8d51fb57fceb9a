// Passes moved into parallel regions for the 2-thread step (issue 23, docs/performance.md): the GEMM epilogue and side
// work (framework/nn/gemm.hpp GemmExtras), products written with β = 0 instead of accumulated into zeroed buffers,
// linear_forward's bias and residual adds in the product's region, linear_backward's bias gradient by column chunks,
// LayerNorm backward writing d_in and summing its parameter gradients in registers, the optimizer's one region over
// the flat buffer, attention's b_KV / b_D gradient reduction. Each must give the bits of the serial passes it replaced,
// at 1 and at 2 threads (compared as bytes: -0 and +0 differ here, as NaN payloads would).
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/model/parameters.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/layers.hpp"
#include "framework/train/optimizer.hpp"

namespace iclab_test_parallel_passes {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}
template <class T>
std::vector<T> normal_vector(std::size_t n, Rng& rng, double scale = 1.0) {
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(rng.normal(0.0, scale));
    return v;
}
// Runs body() with 1 and with 2 OpenMP threads; returns the two results.
template <class Body>
auto at_one_and_two_threads(Body body) {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    auto one = body();
    omp_set_num_threads(2);
    auto two = body();
    omp_set_num_threads(saved);
    return std::make_pair(one, two);
}
struct Shape {
    std::size_t m, n, k;
};
// every path of gemm_compute: one call (m <= 128), row blocks (m > 128), inner blocks (m <= 128, k > 1024), k = 0
const Shape kShapes[] = {{50, 37, 20}, {300, 37, 20}, {64, 40, 3000}, {300, 20, 0}};
}  // namespace

TEMPLATE_TEST_CASE("gemm with beta 0 equals the product accumulated into a zeroed buffer, bit for bit", "[gemm][parallel]",
                   float, double) {
    using T = TestType;
    Rng rng(71);
    for (const Shape& s : kShapes)
        for (bool ta : {false, true})
            for (T alpha : {T(1), T(-1)}) {
                auto a = normal_vector<T>(s.m * s.k, rng), b = normal_vector<T>(s.k * s.n, rng);
                // a row of op(a) zero: with alpha = -1 its products are -0 · ..., whose sum must come out as in the
                // zeroed buffer (+0), not -0
                for (std::size_t p = 0; p < s.k; ++p) a[ta ? p * s.m + 3 : 3 * s.k + p] = T(0);
                const auto op_a = nn::matrix<const T>(a.data(), ta ? s.k : s.m, ta ? s.m : s.k);
                const auto op_b = nn::matrix<const T>(b.data(), s.k, s.n);
                auto results = at_one_and_two_threads([&] {
                    std::vector<T> zeroed(s.m * s.n, T(0)), written(s.m * s.n, T(7));
                    nn::gemm<T>(nn::matrix(zeroed.data(), s.m, s.n), op_a, op_b, ta, false, alpha, T(1));
                    nn::gemm<T>(nn::matrix(written.data(), s.m, s.n), op_a, op_b, ta, false, alpha, T(0));
                    CHECK(same_bits(zeroed, written));
                    return written;
                });
                CHECK(same_bits(results.first, results.second));
            }
}

TEMPLATE_TEST_CASE("gemm's epilogue and side work give the bits of passes run after the product, at 1 and 2 threads",
                   "[gemm][parallel]", float, double) {
    using T = TestType;
    Rng rng(72);
    for (const Shape& s : kShapes)
        for (T beta : {T(0), T(1)}) {
            const auto a = normal_vector<T>(s.m * s.k, rng), b = normal_vector<T>(s.k * s.n, rng);
            const auto c0 = normal_vector<T>(s.m * s.n, rng), bias = normal_vector<T>(s.n, rng);
            const auto side_in = normal_vector<T>(s.m * 19, rng);
            // reference: the product, then the epilogue's adds over all rows, then column sums in row order
            std::vector<T> expect = c0, expect_sums(19, T(0.25));
            nn::gemm<T>(nn::matrix(expect.data(), s.m, s.n), nn::matrix<const T>(a.data(), s.m, s.k),
                        nn::matrix<const T>(b.data(), s.k, s.n), false, false, T(1), beta);
            for (std::size_t r = 0; r < s.m; ++r)
                for (std::size_t c = 0; c < s.n; ++c) expect[r * s.n + c] += bias[c];
            for (std::size_t r = 0; r < s.m; ++r)
                for (std::size_t c = 0; c < 19; ++c) expect_sums[c] += side_in[r * 19 + c];
            auto results = at_one_and_two_threads([&] {
                std::vector<T> out = c0, sums(19, T(0.25));
                std::vector<int> seen(s.m, 0);
                nn::GemmExtras<T> extras;
                extras.epilogue = [&](std::size_t first, std::size_t rows) {
                    for (std::size_t r = first; r < first + rows; ++r) {
                        ++seen[r];
                        for (std::size_t c = 0; c < s.n; ++c) out[r * s.n + c] += bias[c];
                    }
                };
                extras.side_parts = 19;  // one column per part
                extras.side = [&](std::size_t c) {
                    for (std::size_t r = 0; r < s.m; ++r) sums[c] += side_in[r * 19 + c];
                };
                nn::gemm<T>(nn::matrix(out.data(), s.m, s.n), nn::matrix<const T>(a.data(), s.m, s.k),
                            nn::matrix<const T>(b.data(), s.k, s.n), false, false, T(1), beta, extras);
                for (int count : seen) CHECK(count == 1);  // every row passed to the epilogue exactly once
                CHECK(same_bits(out, expect));
                CHECK(same_bits(sums, expect_sums));
                return out;
            });
            CHECK(same_bits(results.first, results.second));
        }
}

TEMPLATE_TEST_CASE("linear layer: fused bias/residual adds, written d_in and chunked bias gradient keep the serial bits",
                   "[layers][parallel]", float, double) {
    using T = TestType;
    Rng rng(73);
    for (const Shape& s : {Shape{300, 24, 70}, Shape{40, 24, 37}, Shape{2100, 70, 16}}) {  // N, I, O
        const std::size_t N = s.m, I = s.n, O = s.k;
        const auto in = normal_vector<T>(N * I, rng), w = normal_vector<T>(I * O, rng), bias = normal_vector<T>(O, rng);
        const auto residual = normal_vector<T>(N * O, rng), d_out = normal_vector<T>(N * O, rng);
        // reference: the passes as they were before (product, bias add, residual add; zeroed d_in accumulated into,
        // bias gradient summed over rows in a plain serial loop after the products)
        std::vector<T> y_ref(N * O);
        nn::gemm<T>(nn::matrix(y_ref.data(), N, O), nn::matrix(in.data(), N, I), nn::matrix(w.data(), I, O), false, false);
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t o = 0; o < O; ++o) y_ref[n * O + o] += bias[o];
        for (std::size_t i = 0; i < N * O; ++i) y_ref[i] += residual[i];
        std::vector<T> d_in_ref(N * I, T(0)), d_w_ref(I * O, T(0.5)), d_b_ref(O, T(-0.25));
        nn::gemm<T>(nn::matrix(d_in_ref.data(), N, I), nn::matrix(d_out.data(), N, O), nn::matrix(w.data(), I, O), false, true,
                    T(1), T(1));
        nn::gemm<T>(nn::matrix(d_w_ref.data(), I, O), nn::matrix(in.data(), N, I), nn::matrix(d_out.data(), N, O), true, false,
                    T(1), T(1));
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t o = 0; o < O; ++o) d_b_ref[o] += d_out[n * O + o];
        auto results = at_one_and_two_threads([&] {
            std::vector<T> y(N * O, T(3)), d_in(N * I, T(9)), d_w(I * O, T(0.5)), d_b(O, T(-0.25));
            nn::linear_forward(y.data(), in.data(), w.data(), bias.data(), N, I, O, residual.data());
            nn::linear_backward(d_in.data(), d_w.data(), d_b.data(), d_out.data(), in.data(), w.data(), N, I, O, false);
            CHECK(same_bits(y, y_ref));
            CHECK(same_bits(d_in, d_in_ref));
            CHECK(same_bits(d_w, d_w_ref));
            CHECK(same_bits(d_b, d_b_ref));
            // without d_in the bias gradient runs in the weight-gradient product's region
            std::vector<T> d_w2(I * O, T(0.5)), d_b2(O, T(-0.25));
            nn::linear_backward<T>(nullptr, d_w2.data(), d_b2.data(), d_out.data(), in.data(), w.data(), N, I, O);
            CHECK(same_bits(d_w2, d_w_ref));
            CHECK(same_bits(d_b2, d_b_ref));
            return d_b;
        });
        CHECK(same_bits(results.first, results.second));
    }
}

TEMPLATE_TEST_CASE("layernorm backward: written d_in and register sums of the parameter gradients keep the serial bits",
                   "[layers][parallel]", float, double) {
    using T = TestType;
    Rng rng(74);
    for (const std::size_t C : {std::size_t(64), std::size_t(37), std::size_t(130)}) {
        const std::size_t N = 1000;
        const auto x = normal_vector<T>(N * C, rng, 2.0), gamma = normal_vector<T>(C, rng), beta = normal_vector<T>(C, rng);
        const auto d_out = normal_vector<T>(N * C, rng);
        std::vector<T> y(N * C), mean(N), rstd(N);
        nn::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), N, C);
        // reference: d_in accumulated into zeros; the parameter gradients as the plain serial loop over rows
        std::vector<T> d_in_ref(N * C, T(0)), d_g_ref(C, T(0.5)), d_b_ref(C, T(0.5)), unused_g(C, T(0)), unused_b(C, T(0));
        nn::layernorm_backward(d_in_ref.data(), unused_g.data(), unused_b.data(), d_out.data(), x.data(), gamma.data(),
                               mean.data(), rstd.data(), N, C);
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t c = 0; c < C; ++c) {
                d_g_ref[c] += (x[n * C + c] - mean[n]) * rstd[n] * d_out[n * C + c];
                d_b_ref[c] += d_out[n * C + c];
            }
        auto results = at_one_and_two_threads([&] {
            std::vector<T> d_in(N * C, T(5)), d_g(C, T(0.5)), d_b(C, T(0.5));
            nn::layernorm_backward(d_in.data(), d_g.data(), d_b.data(), d_out.data(), x.data(), gamma.data(), mean.data(),
                                   rstd.data(), N, C, false);
            CHECK(same_bits(d_in, d_in_ref));
            CHECK(same_bits(d_g, d_g_ref));
            CHECK(same_bits(d_b, d_b_ref));
            return d_g;
        });
        CHECK(same_bits(results.first, results.second));
    }
}

TEMPLATE_TEST_CASE("optimizer: one region over the flat buffer in fixed chunks keeps the bits of the per-tensor loops",
                   "[optimizer][parallel]", float, double) {
    using T = TestType;
    // odd sizes, so that chunks of 8192 start and end inside tensors, and a total above the parallel threshold (2^16)
    model::ParameterLayout layout;
    layout.add("a", {7}, true, false, "");
    layout.add("w", {301, 333}, true, true, "");
    layout.add("frozen", {5000}, false, false, "");
    layout.add("b", {1, 33}, true, false, "", true);
    layout.add("v", {50001}, true, true, "");
    Rng rng(75);
    for (auto kind : {train::OptimizerKind::adamw, train::OptimizerKind::adam, train::OptimizerKind::sgd}) {
        train::OptimizerSpec spec;
        spec.kind = kind;
        spec.weight_decay = 0.1;
        spec.momentum = 0.9;
        const auto params0 = normal_vector<T>(layout.total(), rng);
        std::vector<std::vector<T>> grads;
        for (int step = 0; step < 3; ++step) grads.push_back(normal_vector<T>(layout.total(), rng));
        // reference: the per-tensor loops as they were (one loop per tensor, then the projection onto >= 0)
        std::vector<T> p_ref = params0, m(layout.total(), T(0)), v(layout.total(), T(0));
        for (int step = 0; step < 3; ++step) {
            const double lr = 1e-2 * (step + 1);
            const double bias1 = 1.0 - std::pow(spec.beta1, static_cast<double>(step + 1));
            const double bias2 = 1.0 - std::pow(spec.beta2, static_cast<double>(step + 1));
            for (const auto& entry : layout.entries()) {
                if (!entry.trainable) continue;
                const double decay = entry.weight_decay ? spec.weight_decay : 0.0;
                for (std::size_t j = 0; j < entry.size; ++j) {
                    const std::size_t i = entry.offset + j;
                    const T g = grads[step][i];
                    if (kind == train::OptimizerKind::sgd) {
                        const double grad = g + decay * p_ref[i];
                        m[i] = static_cast<T>(spec.momentum * m[i] + grad);
                        p_ref[i] -= static_cast<T>(lr * m[i]);
                        continue;
                    }
                    const bool decoupled = kind == train::OptimizerKind::adamw;
                    const double grad = decoupled ? g : g + decay * p_ref[i];
                    m[i] = static_cast<T>(spec.beta1 * m[i] + (1.0 - spec.beta1) * grad);
                    v[i] = static_cast<T>(spec.beta2 * v[i] + (1.0 - spec.beta2) * grad * grad);
                    const double m_hat = m[i] / bias1, v_hat = v[i] / bias2;
                    double update = m_hat / (std::sqrt(v_hat) + spec.eps);
                    if (decoupled) update += decay * p_ref[i];
                    p_ref[i] -= static_cast<T>(lr * update);
                }
                if (entry.nonnegative)
                    for (std::size_t j = 0; j < entry.size; ++j)
                        p_ref[entry.offset + j] = std::max(p_ref[entry.offset + j], T(0));
            }
        }
        auto results = at_one_and_two_threads([&] {
            train::Optimizer<T> optimizer(spec, layout);
            std::vector<T> p = params0;
            for (int step = 0; step < 3; ++step) optimizer.step(p, grads[step], 1e-2 * (step + 1));
            CHECK(same_bits(p, p_ref));
            CHECK(same_bits(optimizer.first_moment(), m));
            return p;
        });
        CHECK(same_bits(results.first, results.second));
    }
}

}  // namespace iclab_test_parallel_passes
