// The linear-attention kernels reading q, k, v in place in the (B·T, 3C) QKV buffer and writing d_qkv in place
// (issue 23), against the path they replace, written out here: gathered per-head rows, RoPE row by row with
// RopeTable::rotate, d_x accumulated into a zeroed buffer and scattered into a zeroed d_qkv. Equal bit for bit in
// float (and double), every feature map, RoPE on and off. The whole kernels' gradients are checked against finite
// differences in test_attention.cpp (every variant, d_qkv starting as NaN).
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <vector>

#include "framework/nn/attention_kernels.hpp"
#include "tests/attention_variants.hpp"

namespace iclab_test_attention_in_place {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::testing;

namespace {

template <class T>
void check_in_place(const Variant& variant) {
    Rng rng(57);
    const nn::AttentionShape base{2, 9, 3, 4};  // B, T, H, D: C = 12
    const AttentionInputs in = random_inputs(variant, base, rng);
    const nn::AttentionShape& shape = in.shape;
    const std::size_t TT = shape.time, D = shape.head_dim, F = shape.features(), C = shape.width(), H = shape.heads;
    const std::vector<T> qkv = cast<T>(in.qkv), random = cast<T>(in.random_features);
    const nn::FeatureMapParams<T> map = nn::feature_map_params(shape, in.options, random.empty() ? nullptr : random.data());
    std::vector<T> d_qkv_old(qkv.size(), T(0)), d_qkv_new(qkv.size(), T(0));
    std::vector<T> q(TT * D), k(TT * D), v(TT * D), scratch, x_rows;
    for (std::size_t b = 0; b < shape.batch; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            INFO(describe(variant) << " b " << b << " h " << h);
            nn::kernels::gather_head(q.data(), k.data(), v.data(), qkv.data(), b, h, shape);
            const T* q_in_place = qkv.data() + b * TT * 3 * C + h * D;
            // forward features: old (gathered rows, rotate per row) and new (in place, rotate_rows)
            std::vector<T> phi_old(TT * F), rot_old(TT * F), phi_new(TT * F), rot_new(TT * F);
            nn::feature_map_forward(phi_old.data(), q.data(), TT, D, map);
            for (std::size_t t = 0; t < TT; ++t) {
                if (in.options.rope != nullptr)
                    in.options.rope->rotate(rot_old.data() + t * F, phi_old.data() + t * F, t, false);
                else
                    std::copy(phi_old.begin() + t * F, phi_old.begin() + (t + 1) * F, rot_old.begin() + t * F);
            }
            nn::kernels::head_features(phi_new.data(), rot_new.data(), q_in_place, 3 * C, shape, in.options, map, x_rows);
            CHECK(same_bits(phi_old.data(), phi_new.data(), TT * F));
            CHECK(same_bits(rot_old.data(), rot_new.data(), TT * F));
            // backward: d φ += R_tᵀ d rot, then d q; old into a zeroed (T, D) buffer scattered, new in place
            const std::vector<T> d_phi = cast<T>(random_vector(TT * F, rng)), d_rot = cast<T>(random_vector(TT * F, rng));
            std::vector<T> d_phi_old = d_phi, d_phi_new = d_phi, d_q(TT * D, T(0)), row(F);
            for (std::size_t t = 0; t < TT; ++t) {
                if (in.options.rope != nullptr) {
                    in.options.rope->rotate(row.data(), d_rot.data() + t * F, t, true);
                    nn::kernels::axpy(d_phi_old.data() + t * F, T(1), row.data(), F);
                } else {
                    nn::kernels::axpy(d_phi_old.data() + t * F, T(1), d_rot.data() + t * F, F);
                }
            }
            nn::feature_map_backward(d_q.data(), d_phi_old.data(), q.data(), phi_old.data(), TT, D, map, scratch);
            nn::kernels::scatter_head(d_qkv_old.data(), d_q.data(), static_cast<const T*>(nullptr),
                                      static_cast<const T*>(nullptr), b, h, shape);
            nn::kernels::head_features_backward(d_qkv_new.data() + b * TT * 3 * C + h * D, 3 * C, d_phi_new.data(), d_rot.data(),
                                                q_in_place, 3 * C, phi_new.data(), shape, in.options, map, scratch, x_rows);
            CHECK(same_bits(d_phi_old.data(), d_phi_new.data(), TT * F));
        }
    CHECK(same_bits(d_qkv_old.data(), d_qkv_new.data(), qkv.size()));
}

}  // namespace

TEST_CASE("attention features in place equal the gathered path bit for bit", "[attention][in_place]") {
    for (auto map : all_feature_maps())
        for (bool rope : {false, true}) {
            const Variant variant{map, nn::feature_map_is_nonnegative(map), rope, true};
            check_in_place<float>(variant);
            check_in_place<double>(variant);
        }
}

namespace {
template <class T>
struct AttentionRun {
    std::vector<T> out, d_qkv, d_b_kv, d_b_d;
};

template <class T>
AttentionRun<T> run_attention(const AttentionInputs& in, const std::vector<double>& d_out, bool skip_zero_bias_kv) {
    nn::LinearAttentionOptions options = in.options;
    options.skip_zero_bias_kv = skip_zero_bias_kv;
    const std::vector<T> qkv = cast<T>(in.qkv), b_kv = cast<T>(in.b_kv), b_d = cast<T>(in.b_d), random = cast<T>(in.random_features),
                         dy = cast<T>(d_out);
    const T* r = random.empty() ? nullptr : random.data();
    AttentionRun<T> run;
    run.out.resize(dy.size());
    run.d_qkv.resize(qkv.size());
    run.d_b_kv.assign(b_kv.size(), T(0));
    run.d_b_d.assign(b_d.size(), T(0));
    nn::LinearAttentionCache<T> cache;
    cache.keep_scores = true;
    nn::linear_attention_forward(run.out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), r, in.shape, options);
    nn::linear_attention_backward(run.d_qkv.data(), run.d_b_kv.data(), run.d_b_d.data(), dy.data(), qkv.data(), b_kv.data(),
                                  b_d.data(), r, run.out.data(), cache, in.shape, options);
    return run;
}

template <class T>
void check_zero_bias_skip(const Variant& variant) {
    Rng rng(61);
    const AttentionInputs in = random_inputs(variant, nn::AttentionShape{2, 9, 3, 4}, rng);
    for (double x : in.b_kv) REQUIRE(x == 0.0);  // biases off: b_KV = 0, the case the kernels skip
    const std::vector<double> d_out = random_vector(2 * 9 * 12, rng);
    const AttentionRun<T> skipped = run_attention<T>(in, d_out, true), full = run_attention<T>(in, d_out, false);
    INFO(describe(variant));
    CHECK(same_bits(skipped.out.data(), full.out.data(), full.out.size()));
    CHECK(same_bits(skipped.d_qkv.data(), full.d_qkv.data(), full.d_qkv.size()));
    CHECK(same_bits(skipped.d_b_kv.data(), full.d_b_kv.data(), full.d_b_kv.size()));
    CHECK(same_bits(skipped.d_b_d.data(), full.d_b_d.data(), full.d_b_d.size()));
}
}  // namespace

TEST_CASE("attention with b_KV = 0 skips its products without changing a bit", "[attention][in_place]") {
    for (const Variant& variant : all_variants())
        if (!variant.biases) {
            check_zero_bias_skip<float>(variant);
            check_zero_bias_skip<double>(variant);
        }
}

namespace {
// The accumulating normalizer backward that normalizer_backward replaced (written out: zeroed d φ buffers, a zeroed
// bucket buffer, suffix sums, then d φk += buckets).
template <class T>
void normalizer_backward_accumulating(T* d_phi_q, T* d_phi_k, T* d_bd, const T* d_den, const T* phi_q, const T* phi_k,
                                      const T* head_bd, std::size_t time, std::size_t F, const nn::AttentionMask& mask) {
    using nn::kernels::axpy;
    std::fill(d_phi_q, d_phi_q + time * F, T(0));
    std::fill(d_phi_k, d_phi_k + time * F, T(0));
    std::vector<T> key_sum(head_bd, head_bd + F), buckets(time * F, T(0));
    std::size_t summed = 0;
    for (std::size_t i = 0; i < time; ++i) {
        const std::size_t visible = mask.visible_prefix(i, time);
        for (; summed < visible; ++summed) axpy(key_sum.data(), T(1), phi_k + summed * F, F);
        axpy(d_phi_q + i * F, d_den[i], key_sum.data(), F);
        axpy(d_bd, d_den[i], phi_q + i * F, F);
        if (visible > 0) axpy(buckets.data() + (visible - 1) * F, d_den[i], phi_q + i * F, F);
        if (mask.self_extra(i, time)) {
            axpy(d_phi_q + i * F, d_den[i], phi_k + i * F, F);
            axpy(d_phi_k + i * F, d_den[i], phi_q + i * F, F);
        }
    }
    for (std::size_t j = time; j-- > 1;) axpy(buckets.data() + (j - 1) * F, T(1), buckets.data() + j * F, F);
    for (std::size_t j = 0; j < time; ++j) axpy(d_phi_k + j * F, T(1), buckets.data() + j * F, F);
}

template <class T>
void check_fused_backward_passes(std::size_t time, std::size_t F, const MaskVariant& mask_variant, std::size_t prefix) {
    Rng rng(83 + time);
    nn::AttentionMask mask;
    mask.kind = mask_variant.kind;
    mask.isolate_queries = mask_variant.isolate;
    mask.query_self = mask_variant.self;
    mask.prefix_length = prefix;
    const std::vector<T> phi_q = cast<T>(random_vector(time * F, rng)), phi_k = cast<T>(random_vector(time * F, rng)),
                         d_den = cast<T>(random_vector(time, rng)), head_bd = cast<T>(random_vector(F, rng));
    std::vector<T> q_old(time * F), k_old(time * F), bd_old(F, T(0.5));
    std::vector<T> q_new(time * F, std::numeric_limits<T>::quiet_NaN()), k_new = q_new, bd_new = bd_old;
    std::vector<T> key_sum, buckets(time * F + 3, std::numeric_limits<T>::quiet_NaN());  // stale contents: written first
    normalizer_backward_accumulating(q_old.data(), k_old.data(), bd_old.data(), d_den.data(), phi_q.data(), phi_k.data(),
                                     head_bd.data(), time, F, mask);
    nn::kernels::normalizer_backward(q_new.data(), k_new.data(), bd_new.data(), d_den.data(), phi_q.data(), phi_k.data(),
                                     head_bd.data(), time, F, mask, key_sum, buckets);
    INFO("T " << time << " F " << F << " mask " << nn::mask_kind_name(mask.kind) << (mask.isolate_queries ? " isolated" : "")
              << " prefix " << prefix);
    CHECK(same_bits(q_old.data(), q_new.data(), q_old.size()));
    CHECK(same_bits(k_old.data(), k_new.data(), k_old.size()));
    CHECK(same_bits(bd_old.data(), bd_new.data(), bd_old.size()));
    // elementwise feature maps' backward row, written in one pass against fill + feature_map_backward + (0 +)
    const std::vector<T> x = cast<T>(random_vector(time * F, rng)), d_phi = cast<T>(random_vector(time * F, rng));
    for (auto map : {nn::FeatureMap::elu1, nn::FeatureMap::identity, nn::FeatureMap::relu}) {
        nn::FeatureMapParams<T> params;
        params.map = map;
        std::vector<T> phi(time * F), old_rows(time * F, T(0)), new_rows(time * F, std::numeric_limits<T>::quiet_NaN()), scratch;
        nn::feature_map_forward(phi.data(), x.data(), time, F, params);
        for (std::size_t t = 0; t < time; ++t) {
            nn::feature_map_backward(old_rows.data() + t * F, d_phi.data() + t * F, x.data() + t * F, phi.data() + t * F, 1, F,
                                     params, scratch);
            for (std::size_t f = 0; f < F; ++f) old_rows[t * F + f] = T(0) + old_rows[t * F + f];
            nn::feature_map_backward_fresh(new_rows.data() + t * F, d_phi.data() + t * F, x.data() + t * F, phi.data() + t * F,
                                           F, map);
        }
        INFO(nn::feature_map_name(map));
        CHECK(same_bits(old_rows.data(), new_rows.data(), old_rows.size()));
    }
}
}  // namespace

TEST_CASE("normalizer backward and feature backward rows written in one pass equal the accumulating forms bit for bit",
          "[attention][in_place]") {
    for (const MaskVariant& mask : all_masks())
        for (std::size_t time : {std::size_t(1), std::size_t(9), std::size_t(64)})
            for (std::size_t F : {std::size_t(4), std::size_t(32)}) {
                check_fused_backward_passes<float>(time, F, mask, time / 2);
                check_fused_backward_passes<double>(time, F, mask, time / 2);
                check_fused_backward_passes<float>(time, F, mask, 0);
            }
}

}  // namespace iclab_test_attention_in_place
