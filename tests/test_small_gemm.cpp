// The register-blocked small GEMM (framework/nn/small_gemm.hpp, model.small_gemm: blocked), through the checked
// wrapper nn::gemm: against a naive product in higher precision for every transpose combination, odd sizes,
// strided views and beta 0 / 1 (an error bound, not a tolerance picked to pass); and the model with it on:
// finite-difference gradients (fp64), agreement with the OpenBLAS path, bit-identical across thread counts.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/model/transformer.hpp"
#include "framework/nn/gemm.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_small_gemm {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

// C = alpha op(A) op(B) + beta C0 through nn::gemm with the blocked kernel, on views whose rows are `pad` elements
// longer than the matrix (pad 0: contiguous), against the same product summed in long double. Bound (recursive
// summation, Higham Thm 3.5, plus one rounding each for alpha·s, beta·c and their sum):
//   |Ĉ − C| ≤ γ_{k+3} (|alpha| |op(A)| |op(B)| + |beta| |C0|),  γ_j = j u / (1 − j u),  u the unit roundoff of T.
// Elements outside the views (the padding) must be untouched; with beta = 0, C0 is NaN and must not be read.
template <class T>
void check_blocked_product(std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb, T alpha, T beta, std::size_t pad,
                           Rng& rng) {
    const std::size_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
    const std::size_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
    const T sentinel = T(-12345.5);
    std::vector<T> a(a_rows * lda, sentinel), b(b_rows * ldb, sentinel), c(m * ldc, sentinel);
    for (std::size_t r = 0; r < a_rows; ++r)
        for (std::size_t j = 0; j < a_cols; ++j) a[r * lda + j] = static_cast<T>(rng.normal());
    for (std::size_t r = 0; r < b_rows; ++r)
        for (std::size_t j = 0; j < b_cols; ++j) b[r * ldb + j] = static_cast<T>(rng.normal());
    for (std::size_t r = 0; r < m; ++r)
        for (std::size_t j = 0; j < n; ++j)
            c[r * ldc + j] = beta == T(0) ? std::numeric_limits<T>::quiet_NaN() : static_cast<T>(rng.normal());
    const std::vector<T> c0 = c;
    auto A = [&](std::size_t i, std::size_t p) { return ta ? a[p * lda + i] : a[i * lda + p]; };
    auto B = [&](std::size_t p, std::size_t j) { return tb ? b[j * ldb + p] : b[p * ldb + j]; };
    nn::gemm<T>(nn::strided_matrix(c.data(), m, n, ldc), nn::strided_matrix<const T>(a.data(), a_rows, a_cols, lda),
                nn::strided_matrix<const T>(b.data(), b_rows, b_cols, ldb), ta, tb, alpha, beta, nn::SmallGemm::blocked);
    const double u = std::numeric_limits<T>::epsilon() / 2.0;
    const double gamma = static_cast<double>(k + 3) * u / (1.0 - static_cast<double>(k + 3) * u);
    double worst = 0.0;  // largest |error| / bound
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < ldc; ++j) {
            if (j >= n) {  // padding of C
                REQUIRE(c[i * ldc + j] == sentinel);
                continue;
            }
            long double exact = 0.0L, magnitude = 0.0L;
            for (std::size_t p = 0; p < k; ++p) {
                const long double term = static_cast<long double>(A(i, p)) * static_cast<long double>(B(p, j));
                exact += term;
                magnitude += std::fabs(term);
            }
            const long double c_in = beta == T(0) ? 0.0L : static_cast<long double>(c0[i * ldc + j]);
            exact = static_cast<long double>(alpha) * exact + static_cast<long double>(beta) * c_in;
            const double bound = gamma * static_cast<double>(std::fabs(static_cast<long double>(alpha)) * magnitude +
                                                             std::fabs(static_cast<long double>(beta) * c_in));
            const double error = static_cast<double>(std::fabs(static_cast<long double>(c[i * ldc + j]) - exact));
            REQUIRE(std::isfinite(static_cast<double>(c[i * ldc + j])));
            if (error > bound) {
                INFO("m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb << " beta " << beta << " pad "
                          << pad << " at (" << i << ", " << j << "): error " << error << " bound " << bound);
                REQUIRE(error <= bound);
            }
            if (bound > 0) worst = std::max(worst, error / bound);
        }
    for (std::size_t i = 0; i < a.size(); ++i)
        if (i % lda >= a_cols) REQUIRE(a[i] == sentinel);  // inputs untouched (padding kept)
    CHECK(worst <= 1.0);
}

// The causal triangles (small_gemm.hpp Triangle) against the full blocked product on the same data, byte for byte.
// lower_a / upper_a: a square op(A) (m, m) with exact zeros on its masked side, and NaN where a row panel must not read
// (p ≥ its last row + 1, resp. p < its first row); lower_out: the full product with its j > i entries set to +0, on an
// output filled with NaN first (entries above the diagonal are +0 or, in tiles skipped whole, still NaN).
template <class T>
void check_triangles(std::size_t m, std::size_t n, bool ta, bool tb, T beta, Rng& rng) {
    const T nan = std::numeric_limits<T>::quiet_NaN();
    const std::size_t Mr = nn::detail::kSmallMr;
    auto same = [](const std::vector<T>& x, const std::vector<T>& y) { return std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0; };
    std::vector<T> b(m * n), c0(m * n);  // op(B) (m, n) stored (n, m) when transposed
    for (auto& x : b) x = static_cast<T>(rng.normal());
    for (auto& x : c0) x = static_cast<T>(rng.normal());
    const std::size_t ldb = tb ? m : n;
    for (const nn::Triangle triangle : {nn::Triangle::lower_a, nn::Triangle::upper_a}) {
        std::vector<T> a(m * m), a_poisoned(m * m);  // op(A)[i, p] at a[i·m + p], or a[p·m + i] when transposed
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t p = 0; p < m; ++p) {
                const bool zero = triangle == nn::Triangle::lower_a ? p > i : p < i;
                const bool unread = triangle == nn::Triangle::lower_a ? p >= (i / Mr + 1) * Mr : p < (i / Mr) * Mr;
                const T value = zero ? T(0) : static_cast<T>(rng.normal());
                a[ta ? p * m + i : i * m + p] = value;
                a_poisoned[ta ? p * m + i : i * m + p] = unread ? nan : value;
            }
        std::vector<T> full = c0, part = c0;
        nn::small_gemm_blocked(full.data(), n, a.data(), m, b.data(), ldb, m, n, m, ta, tb, T(1), beta);
        nn::small_gemm_blocked(part.data(), n, a_poisoned.data(), m, b.data(), ldb, m, n, m, ta, tb, T(1), beta, triangle);
        INFO("m " << m << " n " << n << " ta " << ta << " tb " << tb << " beta " << beta << " triangle " << static_cast<int>(triangle));
        CHECK(same(full, part));
    }
    // lower_out: C (m, n) = op(A) (m, k) op(B) (k, n), entries j > i masked
    const std::size_t k = 5 + m % 7;
    std::vector<T> a(m * k), bk(k * n);
    for (auto& x : a) x = static_cast<T>(rng.normal());
    for (auto& x : bk) x = static_cast<T>(rng.normal());
    std::vector<T> full = c0, part(m * n, nan);
    nn::small_gemm_blocked(full.data(), n, a.data(), ta ? m : k, bk.data(), tb ? k : n, m, n, k, ta, tb, T(1), T(0));
    nn::small_gemm_blocked(part.data(), n, a.data(), ta ? m : k, bk.data(), tb ? k : n, m, n, k, ta, tb, T(1), T(0),
                           nn::Triangle::lower_out);
    std::size_t differ = 0, not_masked = 0, unwritten = 0;
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            const T x = part[i * n + j];
            if (j <= i) differ += std::memcmp(&x, &full[i * n + j], sizeof(T)) != 0;
            else not_masked += !(std::isnan(x) || (x == T(0) && !std::signbit(x)));
            unwritten += std::isnan(x);
        }
    INFO("lower_out m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb);
    CHECK(differ == 0);
    CHECK(not_masked == 0);
    if (m >= 64 && n > 32) CHECK(unwritten > 0);  // the tiles of columns ≥ 32 for rows < 8 were skipped
}

// The kernel's contract (small_gemm.hpp): every element is one chain of multiply-adds over p = 0..k-1 in order, from
// +0, then alpha·acc (+ beta·C by one more multiply-add). Checked byte for byte against that chain written as a scalar
// loop, for sums shorter than, equal to and longer than one chunk of terms (kSmallKc: a long sum is run a chunk at a
// time over all tiles, its partial sums kept between chunks), edge panels and strided rows included.
template <class T>
void check_summation_order(std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb, T alpha, T beta, Rng& rng) {
    const std::size_t pad = 3, a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
    const std::size_t lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
    std::vector<T> a(a_rows * lda), b(b_rows * ldb), c(m * ldc);
    for (auto* v : {&a, &b, &c})
        for (auto& x : *v) x = static_cast<T>(rng.normal());
    std::vector<T> expected = c;
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            T acc = T(0);
            for (std::size_t p = 0; p < k; ++p)
                acc = nn::detail::multiply_add(ta ? a[p * lda + i] : a[i * lda + p], tb ? b[j * ldb + p] : b[p * ldb + j], acc);
            T& y = expected[i * ldc + j];
            y = beta == T(0) ? alpha * acc : nn::detail::multiply_add(beta, y, alpha * acc);
        }
    nn::small_gemm_blocked(c.data(), ldc, a.data(), lda, b.data(), ldb, m, n, k, ta, tb, alpha, beta);
    INFO("m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb << " alpha " << alpha << " beta " << beta);
    CHECK(std::memcmp(c.data(), expected.data(), c.size() * sizeof(T)) == 0);
}

template <class T>
void check_summation_orders(std::uint64_t seed) {
    Rng rng(seed);
    const std::size_t Kc = nn::detail::kSmallKc;
    // the copied paths are taken for the fourth shape (check_summation_order's rows are 3 elements longer than the matrix)
    const std::size_t wide = 2 * nn::detail::kSmallNc + 45;
    REQUIRE(nn::detail::copy_b_pays(40, wide, 2 * Kc, (wide + 3) * sizeof(T)));
    REQUIRE(nn::detail::copy_a_pays(40, wide, 2 * Kc));
    REQUIRE(nn::detail::copy_a_pays(40, 150, 2 * Kc));  // op(A)ᵀ copied from n = 128 on: the fifth shape
    for (const std::size_t k : {std::size_t(1), std::size_t(37), Kc - 1, Kc, Kc + 1, 2 * Kc + 19, 4 * Kc})
        // the third shape spans three column blocks (kSmallNc) of tiles, the last one partial; the fourth too, with rows
        // enough that op(B) (rows > 1 KB apart) and op(A)ᵀ are copied into panels (detail::copy_b_pays / copy_a_pays); the
        // fifth copies op(A)ᵀ with fewer than 256 columns (op(B): in place in float, copied in double, edge panel copied)
        for (const auto& [m, n] : {std::pair<std::size_t, std::size_t>{19, 45}, {64, 64}, {19, 2 * nn::detail::kSmallNc + 45},
                                   {40, 2 * nn::detail::kSmallNc + 45}, {40, 150}})
            for (int t = 0; t < 4; ++t)
                check_summation_order<T>(m, n, k, t & 1, t & 2, t == 3 ? T(0.5) : T(1), t == 2 ? T(-0.75) : T(0), rng);
}

template <class T>
void check_all_shapes(std::uint64_t seed) {
    Rng rng(seed);
    const std::size_t sizes[] = {1, 3, 17, 63, 65};
    for (std::size_t m : sizes)
        for (std::size_t n : sizes)
            for (std::size_t k : sizes)
                for (bool ta : {false, true})
                    for (bool tb : {false, true}) {
                        const std::size_t pad = (m + n + k) % 2 == 0 ? 0 : 5;  // contiguous and strided views
                        check_blocked_product<T>(m, n, k, ta, tb, T(1), T(0), pad, rng);
                        check_blocked_product<T>(m, n, k, ta, tb, T(0.5), T(1), 7 - pad, rng);
                    }
}

// A small induction-head-like model: linear attention (elu1, kernel normalizer), RoPE, T up to 64, D = 32 in
// compare_kernels (the shapes model.small_gemm routes to the kernel in the configs).
model::ModelSpec spec_with(nn::SmallGemm kernel, std::size_t width, std::size_t heads, std::size_t time) {
    model::ModelSpec spec;
    spec.vocab = 11;
    spec.width = width;
    spec.heads = heads;
    spec.layers = 2;
    spec.max_seq_len = time;
    spec.mlp = false;
    spec.init_std = 0.5;
    spec.attention_form = model::ModelSpec::AttentionForm::quadratic;
    spec.small_gemm = kernel;
    return spec;
}

struct StepResult {
    std::vector<double> logits, grads;
};

template <class T>
StepResult train_step(nn::SmallGemm kernel, std::size_t width, std::size_t heads, std::size_t batch, std::size_t time,
                      bool attention_biases) {
    model::Transformer<T> net(spec_with(kernel, width, heads, time));
    Rng rng(17);
    net.init(rng);
    for (const auto& entry : net.layout().entries()) {  // nonzero b_KV (its products run), positive b_D
        const bool b_d = entry.name.find("attn.b_d") != std::string::npos;
        const bool b_kv = entry.name.find("attn.b_kv") != std::string::npos;
        if (attention_biases && (b_d || b_kv))
            for (std::size_t i = 0; i < entry.size; ++i)
                net.params[entry.offset + i] = static_cast<T>(b_d ? rng.uniform(0.2, 1.0) : rng.normal(0.0, 0.3));
    }
    std::vector<std::int32_t> tokens(batch * time), targets(batch * time);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(11));
    for (auto& t : targets) t = static_cast<std::int32_t>(rng.uniform_int(11));
    std::vector<T> weights(batch * time, T(1) / static_cast<T>(batch * time));
    net.forward(tokens.data(), batch, time);
    net.loss(targets.data(), weights.data());
    net.zero_grad();
    net.backward(targets.data(), weights.data());
    StepResult r;
    r.logits.assign(net.logits(), net.logits() + batch * time * 11);
    r.grads.assign(net.grads.begin(), net.grads.end());
    return r;
}

using testing::max_relative;

}  // namespace

TEST_CASE("blocked small gemm is within the summation error bound of the exact product (fp32)", "[gemm][small_gemm]") {
    check_all_shapes<float>(31);
}

TEST_CASE("blocked small gemm is within the summation error bound of the exact product (fp64)", "[gemm][small_gemm]") {
    check_all_shapes<double>(32);
}

TEST_CASE("blocked small gemm sums every element in order p = 0..k-1, long sums in chunks included", "[gemm][small_gemm]") {
    check_summation_orders<float>(41);
    check_summation_orders<double>(42);
}

TEST_CASE("blocked small gemm's causal triangles equal the full product byte for byte", "[gemm][small_gemm][triangle]") {
    Rng rng(33);
    for (std::size_t m : {1, 3, 8, 17, 63, 64, 65})
        for (std::size_t n : {1, 5, 32, 33})
            for (bool ta : {false, true})
                for (bool tb : {false, true}) {
                    check_triangles<float>(m, n, ta, tb, 0.0f, rng);
                    check_triangles<float>(m, n, ta, tb, 1.0f, rng);
                    check_triangles<double>(m, n, ta, tb, 0.0, rng);
                    check_triangles<double>(m, n, ta, tb, 1.0, rng);
                }
}

namespace {
// transpose_copy (the op(B)ᵀ panels, blocks transposed in registers) against the scalar loop: every element of the
// output's rows, and the padding between them left alone, for shapes around the 8×8 / 4×4 block sides and row strides.
template <class T>
void check_transpose_copy(Rng& rng) {
    for (std::size_t cols : {1, 3, 4, 7, 8, 9, 16, 20, 32, 33})
        for (std::size_t k : {1, 4, 5, 8, 12, 30, 32, 64, 67})
            for (std::size_t in_pad : {0, 3})
                for (std::size_t out_pad : {0, 5}) {
                    const std::size_t ld_in = k + in_pad, ld_out = cols + out_pad;
                    std::vector<T> in(cols * ld_in);
                    for (auto& x : in) x = static_cast<T>(rng.normal());
                    std::vector<T> fast(k * ld_out, T(-7)), slow(k * ld_out, T(-7));
                    nn::detail::transpose_copy(fast.data(), ld_out, in.data(), ld_in, cols, k);
                    nn::detail::transpose_scalar(slow.data(), ld_out, in.data(), ld_in, cols, k);
                    INFO("cols " << cols << " k " << k << " ld_in " << ld_in << " ld_out " << ld_out);
                    REQUIRE(std::memcmp(fast.data(), slow.data(), fast.size() * sizeof(T)) == 0);
                    for (std::size_t p = 0; p < k; ++p)  // and the scalar loop is the transpose
                        for (std::size_t c = 0; c < cols; ++c) REQUIRE(slow[p * ld_out + c] == in[c * ld_in + p]);
                }
}
}  // namespace

TEST_CASE("blocked small gemm's transposed panels equal the scalar transpose", "[gemm][small_gemm]") {
    Rng rng(34);
    check_transpose_copy<float>(rng);
    check_transpose_copy<double>(rng);
}

TEST_CASE("model with the blocked small gemm matches finite differences (fp64)", "[gradients][model][small_gemm]") {
    for (bool biases : {false, true}) {
        DYNAMIC_SECTION((biases ? "attention biases" : "zero attention biases")) {
            model::Transformer<double> net(spec_with(nn::SmallGemm::blocked, 8, 2, 8));
            Rng rng(42);
            net.init(rng);
            for (const auto& entry : net.layout().entries()) {
                const bool b_d = entry.name.find("attn.b_d") != std::string::npos;
                const bool b_kv = entry.name.find("attn.b_kv") != std::string::npos;
                if (biases && (b_d || b_kv))
                    for (std::size_t i = 0; i < entry.size; ++i)
                        net.params[entry.offset + i] = b_d ? rng.uniform(0.2, 1.0) : rng.normal(0.0, 0.3);
            }
            const std::size_t B = 2, T = 7;
            std::vector<std::int32_t> tokens(B * T), targets(B * T);
            for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(11));
            for (auto& t : targets) t = static_cast<std::int32_t>(rng.uniform_int(11));
            std::vector<double> weights(B * T);
            for (auto& w : weights) w = rng.uniform(0.0, 0.2);
            auto loss = [&] {
                net.forward(tokens.data(), B, T);
                return net.loss(targets.data(), weights.data());
            };
            loss();
            net.zero_grad();
            net.backward(targets.data(), weights.data());
            for (const auto& entry : net.layout().entries()) {
                if (!biases && entry.name.find("attn.b_") != std::string::npos) continue;  // frozen, not trained
                std::vector<double> values(net.params.begin() + entry.offset, net.params.begin() + entry.offset + entry.size);
                std::vector<double> analytic(net.grads.begin() + entry.offset, net.grads.begin() + entry.offset + entry.size);
                auto loss_at = [&] {
                    std::copy(values.begin(), values.end(), net.params.begin() + entry.offset);
                    return loss();
                };
                testing::check_gradient(entry.name, values, analytic, loss_at, 8);
                std::copy(values.begin(), values.end(), net.params.begin() + entry.offset);
            }
        }
    }
}

TEST_CASE("model with the blocked small gemm agrees with the openblas path (1e-12 fp64, 1e-5 fp32)", "[model][small_gemm]") {
    // T = 64, D = 32 (the configs' per-head shapes) and an odd T = 17
    for (std::size_t time : {std::size_t(64), std::size_t(17)})
        for (bool biases : {false, true}) {
            INFO("T " << time << (biases ? " with" : " without") << " attention biases");
            const StepResult o64 = train_step<double>(nn::SmallGemm::openblas, 64, 2, 3, time, biases);
            const StepResult b64 = train_step<double>(nn::SmallGemm::blocked, 64, 2, 3, time, biases);
            CHECK(max_relative(o64.logits, b64.logits) < 1e-12);
            CHECK(max_relative(o64.grads, b64.grads) < 1e-12);
            const StepResult o32 = train_step<float>(nn::SmallGemm::openblas, 64, 2, 3, time, biases);
            const StepResult b32 = train_step<float>(nn::SmallGemm::blocked, 64, 2, 3, time, biases);
            CHECK(max_relative(o32.logits, b32.logits) < 1e-5);
            CHECK(max_relative(o32.grads, b32.grads) < 1e-5);
            CHECK(o32.grads != b32.grads);  // the kernel really ran: its sums round differently
        }
}

TEST_CASE("model with the blocked small gemm gives the same bits with 1 and 2 threads", "[model][small_gemm][determinism]") {
    const int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    const StepResult one = train_step<float>(nn::SmallGemm::blocked, 64, 2, 4, 64, true);
    omp_set_num_threads(2);
    const StepResult two = train_step<float>(nn::SmallGemm::blocked, 64, 2, 4, 64, true);
    omp_set_num_threads(saved);
    CHECK(one.logits == two.logits);
    CHECK(one.grads == two.grads);
}

TEST_CASE("model bits do not depend on the thread count: 1 to 4 threads, fp32 and fp64, with and without b_KV",
          "[model][small_gemm][determinism]") {
    // 3 and 4 threads share the (batch, head) pairs, rows and GEMM cells unevenly and run over 2 cores here; every run
    // must give the 1-thread bits, with b_KV zero (its products skipped, once-per-head check) and nonzero (run).
    const int saved = omp_get_max_threads();
    for (bool biases : {false, true}) {
        INFO((biases ? "with" : "without") << " attention biases");
        omp_set_num_threads(1);
        const StepResult one = train_step<float>(nn::SmallGemm::blocked, 64, 2, 16, 64, biases);
        const StepResult one64 = train_step<double>(nn::SmallGemm::blocked, 64, 2, 16, 64, biases);
        for (int threads : {2, 3, 4, 3, 4}) {
            INFO(threads << " threads");
            omp_set_num_threads(threads);
            const StepResult many = train_step<float>(nn::SmallGemm::blocked, 64, 2, 16, 64, biases);
            CHECK(many.logits == one.logits);
            CHECK(many.grads == one.grads);
            const StepResult many64 = train_step<double>(nn::SmallGemm::blocked, 64, 2, 16, 64, biases);
            CHECK(many64.logits == one64.logits);
            CHECK(many64.grads == one64.grads);
        }
    }
    omp_set_num_threads(saved);
}

}  // namespace iclab_test_small_gemm
