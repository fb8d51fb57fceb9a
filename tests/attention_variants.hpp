#pragma once
// The attention variants the attention tests run — every feature map x normalizer x RoPE x biases x mask the
// config schema allows — and their random inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "framework/nn/linear_attention.hpp"
#include "tests/gradient_check.hpp"

namespace iclab::testing {

struct Variant {
    nn::FeatureMap feature_map;
    bool normalize, rope, biases;
    nn::MaskKind mask = nn::MaskKind::causal;
    bool isolate_queries = false, query_self = true;
};

inline std::string describe(const Variant& v) {
    return std::string(nn::feature_map_name(v.feature_map)) + (v.normalize ? " normalized" : " unnormalized") +
           (v.rope ? " rope" : " no-rope") + (v.biases ? " biases" : " zero-biases") + " " + nn::mask_kind_name(v.mask) +
           (v.isolate_queries ? (v.query_self ? " isolated-queries" : " isolated-queries-no-self") : "");
}

// Masks: causal, prefix, full, and isolated queries after a causal or a prefix context (paper 003 E.1).
struct MaskVariant {
    nn::MaskKind kind;
    bool isolate, self;
};
inline std::vector<MaskVariant> all_masks() {
    return {{nn::MaskKind::causal, false, true},
            {nn::MaskKind::prefix, false, true},
            {nn::MaskKind::full, false, true},
            {nn::MaskKind::causal, true, true},
            {nn::MaskKind::prefix, true, false}};
}

inline std::vector<nn::FeatureMap> all_feature_maps() {
    return {nn::FeatureMap::elu1, nn::FeatureMap::identity, nn::FeatureMap::relu, nn::FeatureMap::performer};
}

inline std::vector<Variant> all_variants(bool causal_only = false) {
    std::vector<Variant> variants;
    for (auto map : all_feature_maps())
        for (bool normalize : {true, false})
            for (bool rope : {true, false})
                for (bool biases : {true, false})
                    for (const auto& mask : all_masks()) {
                        if (!nn::feature_map_is_nonnegative(map) && normalize) continue;  // rejected by config
                        if (causal_only && !(mask.kind == nn::MaskKind::causal && !mask.isolate)) continue;
                        variants.push_back({map, normalize, rope, biases, mask.kind, mask.isolate, mask.self});
                    }
    return variants;
}

constexpr std::size_t kTestRandomFeatures = 6;  // R of performer variants (even, for RoPE)

// qkv ~ N(0, 0.7²); b_KV ~ N(0, 0.5²) and b_D ~ U(0.1, 1) (keeps the normalizer positive) with biases, zeros
// without; performer directions ~ N(0, 1). The shape's feature width follows the feature map.
struct AttentionInputs {
    nn::AttentionShape shape;
    std::vector<double> qkv, b_kv, b_d, random_features;
    std::shared_ptr<nn::RopeTable> rope;
    nn::LinearAttentionOptions options;
    const double* random() const { return random_features.empty() ? nullptr : random_features.data(); }
};

inline AttentionInputs random_inputs(const Variant& variant, nn::AttentionShape shape, Rng& rng, std::size_t prefix = 0) {
    AttentionInputs in;
    shape.feature_dim = variant.feature_map == nn::FeatureMap::performer ? kTestRandomFeatures : 0;
    in.shape = shape;
    const std::size_t F = shape.features();
    in.qkv = random_vector(shape.batch * shape.time * 3 * shape.width(), rng, 0.7);
    in.b_kv = random_vector(shape.heads * F * shape.head_dim, rng, variant.biases ? 0.5 : 0.0);
    in.b_d.assign(shape.heads * F, 0.0);
    if (variant.biases)
        for (auto& x : in.b_d) x = rng.uniform(0.1, 1.0);
    if (variant.feature_map == nn::FeatureMap::performer) in.random_features = random_vector(shape.head_dim * F, rng);
    in.rope = std::make_shared<nn::RopeTable>(shape.time + 4, F, 10000.0);
    in.options.feature_map = variant.feature_map;
    in.options.performer_input_scale = 0.8;
    in.options.normalize = variant.normalize;
    // ReLU features of q and k can have disjoint supports: then φ(q)ᵀΣφ(k) = 0 exactly, the output is 0/eps and
    // its derivatives scale like 1/eps. A larger eps keeps such positions well conditioned for finite differences.
    if (variant.feature_map == nn::FeatureMap::relu) in.options.eps = 0.1;
    in.options.unnormalized_scale = 0.25;
    in.options.rope = variant.rope ? in.rope.get() : nullptr;
    in.options.mask.kind = variant.mask;
    in.options.mask.isolate_queries = variant.isolate_queries;
    in.options.mask.query_self = variant.query_self;
    in.options.mask.prefix_length = prefix != 0 ? prefix : shape.time / 2;
    return in;
}

// The inputs above are doubles; a float test casts them.
template <class T>
std::vector<T> cast(const std::vector<double>& x) {
    return std::vector<T>(x.begin(), x.end());
}

// Bit-for-bit equality (a NaN equals the same NaN; +0 and -0 differ).
template <class T>
bool same_bits(const T* a, const T* b, std::size_t n) {
    return std::memcmp(a, b, n * sizeof(T)) == 0;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() && same_bits(a.data(), b.data(), a.size());
}

// max |x − y| / max |x| (x must not be all zeros)
inline double max_relative(const std::vector<double>& x, const std::vector<double>& y) {
    REQUIRE(x.size() == y.size());
    double error = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        error = std::max(error, std::abs(x[i] - y[i]));
        scale = std::max(scale, std::abs(x[i]));
    }
    REQUIRE(scale > 0.0);
    return error / scale;
}

}  // namespace iclab::testing
