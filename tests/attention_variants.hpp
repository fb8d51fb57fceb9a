#pragma once
// The attention variants every attention test runs (all feature maps x normalizer x RoPE x biases that the
// config schema allows) and their random inputs.
#include <string>
#include <vector>

#include "framework/nn/linear_attention.hpp"
#include "tests/gradient_check.hpp"

namespace iclab::testing {

struct Variant {
    nn::FeatureMap feature_map;
    bool normalize, rope, biases;
};

inline std::string describe(const Variant& v) {
    return std::string(nn::feature_map_name(v.feature_map)) + (v.normalize ? " normalized" : " unnormalized") +
           (v.rope ? " rope" : " no-rope") + (v.biases ? " biases" : " zero-biases");
}

inline std::vector<Variant> all_variants() {
    std::vector<Variant> variants;
    for (auto map : {nn::FeatureMap::elu1, nn::FeatureMap::identity})
        for (bool normalize : {true, false})
            for (bool rope : {true, false})
                for (bool biases : {true, false}) {
                    if (map == nn::FeatureMap::identity && normalize) continue;  // denominator not positive: rejected by config
                    variants.push_back({map, normalize, rope, biases});
                }
    return variants;
}

// qkv ~ N(0, 1); b_KV ~ N(0, 0.25) and b_D ~ U(0.1, 1) (keeps the normalizer positive) with biases, zeros without.
struct AttentionInputs {
    std::vector<double> qkv, b_kv, b_d;
    nn::LinearAttentionOptions options;
};

inline AttentionInputs random_inputs(const Variant& variant, const nn::AttentionShape& shape, const nn::RopeTable& rope, Rng& rng) {
    AttentionInputs in;
    in.qkv = random_vector(shape.batch * shape.time * 3 * shape.width(), rng);
    in.b_kv = random_vector(shape.heads * shape.features() * shape.head_dim, rng, variant.biases ? 0.5 : 0.0);
    in.b_d.assign(shape.heads * shape.features(), 0.0);
    if (variant.biases)
        for (auto& x : in.b_d) x = rng.uniform(0.1, 1.0);
    in.options.feature_map = variant.feature_map;
    in.options.normalize = variant.normalize;
    in.options.unnormalized_scale = 0.25;
    in.options.rope = variant.rope ? &rope : nullptr;
    return in;
}

}  // namespace iclab::testing
