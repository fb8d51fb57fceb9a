// Softmax attention with the register-blocked kernel for its per-(batch, head) products (model.small_gemm: blocked,
// framework/nn/small_gemm.hpp) in the cpu2 regression model's shapes (paper 003: vector inputs, prefix mask with isolated
// queries, learned positions, T = 30, 2 heads of D = 32, MLP, pre-LN, shared block): one training step's outputs and
// gradients against the OpenBLAS path, and the same bits with 1 and 2 threads; and the layer without the keys no
// row sees (SoftmaxAttentionOptions::skip_unseen_keys) against the full blocked products, byte for byte. The blocked
// kernel's gradients against finite differences (fp64): test_softmax_attention.cpp, every mask, RoPE on and off.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "framework/model/transformer.hpp"
#include "framework/nn/layers.hpp"
#include "framework/nn/softmax_attention.hpp"
#include "tests/attention_variants.hpp"
#include "tests/gradient_check.hpp"

namespace iclab_test_softmax_attention_blocked {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

model::ModelSpec cpu2_like_spec(nn::SmallGemm kernel, bool rope) {
    model::ModelSpec spec;
    spec.input = model::ModelSpec::Input::vectors;
    spec.input_dim = 9;  // [x; y] with d = 8
    spec.output_dim = 1;
    spec.attention = model::ModelSpec::Attention::softmax;
    spec.positions = model::ModelSpec::Positions::learned;
    spec.mask = nn::MaskKind::prefix;
    spec.isolate_queries = true;
    spec.query_self = false;
    spec.width = 64;
    spec.heads = 2;
    spec.layers = 2;
    spec.shared_layers = true;
    spec.mlp = true;
    spec.final_layernorm = false;
    spec.max_seq_len = 30;
    spec.rope = rope;
    spec.init_std = 0.3;  // larger than the config's 0.02: attention far from uniform, every path carries signal
    spec.small_gemm = kernel;
    return spec;
}

struct StepResult {
    std::vector<double> outputs, grads;
};

// One step of the squared error on the query positions (20 examples, then 10 queries, as the config).
template <class T>
StepResult train_step(nn::SmallGemm kernel, bool rope) {
    const std::size_t B = 4, TT = 30, prefix = 20;
    model::Transformer<T> net(cpu2_like_spec(kernel, rope));
    Rng rng(23);
    net.init(rng);
    net.set_prefix_length(prefix);
    const auto& spec = net.spec();
    std::vector<T> inputs(B * TT * spec.input_dim), targets(B * TT), weights(B * TT), losses(B * TT), d_outputs(B * TT);
    for (auto& x : inputs) x = static_cast<T>(rng.uniform(-1.0, 1.0));
    for (auto& y : targets) y = static_cast<T>(rng.normal());
    for (std::size_t n = 0; n < B * TT; ++n) weights[n] = n % TT >= prefix ? T(1) / T(B * (TT - prefix)) : T(0);
    net.forward(inputs.data(), B, TT);
    nn::squared_error_forward(losses.data(), net.outputs(), targets.data(), weights.data(), B * TT, std::size_t(1));
    net.zero_grad();
    nn::squared_error_backward(d_outputs.data(), net.outputs(), targets.data(), weights.data(), B * TT, std::size_t(1));
    net.backward_outputs(d_outputs.data());
    StepResult r;
    r.outputs.assign(net.outputs(), net.outputs() + B * TT);
    r.grads.assign(net.grads.begin(), net.grads.end());
    return r;
}

using testing::max_relative;

// One forward and backward of the layer (B 3, T 30, H 2, D 32; P = 20) with the blocked kernel, keys no row sees left
// out of the products or not; with `poison`, k and v of the keys j ≥ J are NaN (what the products must not read).
template <class T>
std::vector<T> layer_bytes(const testing::MaskVariant& mask, bool rope, bool skip, bool poison, std::size_t keys) {
    const nn::AttentionShape shape{3, 30, 2, 32};
    const std::size_t TT = shape.time, C = shape.width();
    Rng rng(29);
    std::vector<T> qkv = testing::cast<T>(testing::random_vector(shape.batch * TT * 3 * C, rng, 1.5));
    const std::vector<T> d_out = testing::cast<T>(testing::random_vector(shape.batch * TT * C, rng));
    if (poison)
        for (std::size_t b = 0; b < shape.batch; ++b)
            for (std::size_t j = keys; j < TT; ++j)
                std::fill(qkv.begin() + (b * TT + j) * 3 * C + C, qkv.begin() + (b * TT + j + 1) * 3 * C,
                          std::numeric_limits<T>::quiet_NaN());
    const nn::RopeTable table(TT, shape.head_dim, 10000.0);
    nn::SoftmaxAttentionOptions<T> options;
    options.rope = rope ? &table : nullptr;
    options.mask.kind = mask.kind;
    options.mask.isolate_queries = mask.isolate;
    options.mask.query_self = mask.self;
    options.mask.prefix_length = 20;
    options.small_gemm = nn::SmallGemm::blocked;
    options.skip_unseen_keys = skip;
    std::vector<T> out(shape.batch * TT * C), d_qkv(qkv.size(), std::numeric_limits<T>::quiet_NaN());
    nn::SoftmaxAttentionCache<T> cache;
    nn::softmax_attention_forward(out.data(), cache, qkv.data(), shape, options);
    nn::softmax_attention_backward(d_qkv.data(), d_out.data(), qkv.data(), cache, shape, options);
    out.insert(out.end(), d_qkv.begin(), d_qkv.end());
    out.insert(out.end(), cache.probs.begin(), cache.probs.end());
    if (poison)  // d k and d v of the unseen keys are +0 (d q of those positions is a query's gradient, finite)
        for (std::size_t b = 0; b < shape.batch; ++b)
            for (std::size_t j = keys; j < TT; ++j)
                for (std::size_t c = C; c < 3 * C; ++c) {
                    const T g = d_qkv[(b * TT + j) * 3 * C + c];
                    REQUIRE((g == T(0) && !std::signbit(g)));
                }
    return out;
}

template <class T>
void check_unseen_keys(const testing::MaskVariant& mask, bool rope) {
    // the keys some row sees: [0, J); J = P = 20 only for isolated queries that do not see themselves
    const std::size_t keys = mask.isolate && !mask.self ? 20 : 30;
    const std::vector<T> full = layer_bytes<T>(mask, rope, false, false, keys);
    const std::vector<T> skipped = layer_bytes<T>(mask, rope, true, false, keys);
    CHECK(testing::same_bits(full, skipped));
    if (keys < 30) {  // the products really left the keys j ≥ J out: NaN there reaches nothing
        const std::vector<T> poisoned = layer_bytes<T>(mask, rope, true, true, keys);
        CHECK(testing::same_bits(full, poisoned));
    }
}

}  // namespace

TEST_CASE("blocked softmax attention without the keys no row sees equals the full blocked products byte for byte",
          "[attention][softmax][small_gemm]") {
    for (const auto& mask : testing::all_masks())
        for (bool rope : {false, true}) {
            DYNAMIC_SECTION(nn::mask_kind_name(mask.kind) << (mask.isolate ? " isolated" : "")
                                                          << (mask.isolate && !mask.self ? " no-self" : "") << (rope ? " rope" : "")) {
                check_unseen_keys<float>(mask, rope);
                check_unseen_keys<double>(mask, rope);
            }
        }
}

TEST_CASE("softmax model with the blocked small gemm agrees with the openblas path (1e-12 fp64, 1e-5 fp32)",
          "[model][softmax][small_gemm]") {
    // The bars of linear attention's test (test_small_gemm.cpp). Measured here (OpenBLAS Haswell kernel): fp32 outputs
    // 1.3e-6 / 0.9e-6, gradients 2.1e-6 / 2.0e-6 (no RoPE / RoPE), 8-18 ε (ε = 1.2e-7); fp64 0, the same bits (presumably
    // OpenBLAS's dgemm kernel also adds p = 0..k-1 in order with FMA), which the 1e-12 bar does not require.
    for (bool rope : {false, true}) {
        INFO((rope ? "rope" : "no rope"));
        const StepResult o64 = train_step<double>(nn::SmallGemm::openblas, rope);
        const StepResult b64 = train_step<double>(nn::SmallGemm::blocked, rope);
        CHECK(max_relative(o64.outputs, b64.outputs) < 1e-12);
        CHECK(max_relative(o64.grads, b64.grads) < 1e-12);
        const StepResult o32 = train_step<float>(nn::SmallGemm::openblas, rope);
        const StepResult b32 = train_step<float>(nn::SmallGemm::blocked, rope);
        CHECK(max_relative(o32.outputs, b32.outputs) < 1e-5);
        CHECK(max_relative(o32.grads, b32.grads) < 1e-5);
        CHECK(o32.grads != b32.grads);  // the kernel really ran: its sums round differently
    }
}

TEST_CASE("softmax model with the blocked small gemm gives the same bits with 1 and 2 threads",
          "[model][softmax][small_gemm][determinism]") {
    const int saved = omp_get_max_threads();
    for (bool rope : {false, true}) {
        INFO((rope ? "rope" : "no rope"));
        omp_set_num_threads(1);
        const StepResult one = train_step<float>(nn::SmallGemm::blocked, rope);
        omp_set_num_threads(2);
        const StepResult two = train_step<float>(nn::SmallGemm::blocked, rope);
        CHECK(one.outputs == two.outputs);
        CHECK(one.grads == two.grads);
    }
    omp_set_num_threads(saved);
}

}  // namespace iclab_test_softmax_attention_blocked
