#pragma once
// Internal to framework/icl/gd_dual_*.cpp: random draws, column blocks, feature maps and one attention call.
#include <cstddef>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/nn/attention_mask.hpp"
#include "framework/nn/feature_map.hpp"
#include "framework/nn/layers.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::icl::detail {

// Drawn in double and rounded to T, so fp32 and fp64 instances of one seed are the same instance.
template <class T>
std::vector<T> normal_draws(std::size_t n, Rng& rng, double stddev) {
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(rng.normal(0.0, stddev));
    return v;
}
template <class T>
std::vector<T> uniform_draws(std::size_t n, Rng& rng, double lo, double hi) {
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(rng.uniform(lo, hi));
    return v;
}

// Columns [first, first + cols) of the rows [row0, row0 + rows) of a matrix with `stride` columns.
template <class T>
std::vector<T> block(const std::vector<T>& a, std::size_t stride, std::size_t row0, std::size_t rows, std::size_t first,
                     std::size_t cols) {
    std::vector<T> out(rows * cols);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) out[r * cols + c] = a[(row0 + r) * stride + first + c];
    return out;
}

template <class T>
nn::FeatureMapParams<T> feature_params(nn::FeatureMap map, const std::vector<T>& random, std::size_t features,
                                       double input_scale = 1.0) {
    nn::FeatureMapParams<T> p;
    p.map = map;
    p.random = map == nn::FeatureMap::performer ? random.data() : nullptr;
    p.random_features = map == nn::FeatureMap::performer ? features : 0;
    p.input_scale = input_scale;  // performer's s (feature_map.hpp); 004 folds its temperature into the projections
    return p;
}

// φ (rows, F) of x (rows, D): the same function the attention layer applies (rule 3).
template <class T>
std::vector<T> features_of(const std::vector<T>& x, std::size_t rows, std::size_t D, const nn::FeatureMapParams<T>& p) {
    std::vector<T> phi(rows * (p.map == nn::FeatureMap::performer ? p.random_features : D));
    nn::feature_map_forward(phi.data(), x.data(), rows, D, p);
    return phi;
}

inline nn::AttentionShape shape_of(std::size_t time, std::size_t width, std::size_t heads, nn::FeatureMap map,
                                   std::size_t features) {
    nn::AttentionShape shape;
    shape.batch = 1;
    shape.time = time;
    shape.heads = heads;
    shape.head_dim = width / heads;
    shape.feature_dim = map == nn::FeatureMap::performer ? features : 0;
    return shape;
}

// One iclab linear attention layer on qkv (T, 3C) with H heads of width D = C/H: out (T, C).
template <class T>
std::vector<T> attention(const std::vector<T>& qkv, std::size_t time, std::size_t width, std::size_t heads,
                         nn::FeatureMap map, const std::vector<T>& random, std::size_t features, bool normalize,
                         const nn::AttentionMask& mask, nn::LinearAttentionCache<T>& cache, double input_scale = 1.0) {
    const nn::AttentionShape shape = shape_of(time, width, heads, map, features);
    nn::LinearAttentionOptions options;
    options.feature_map = map;
    options.performer_input_scale = input_scale;
    options.normalize = normalize;
    options.eps = 0.0;  // exact kernel normalizer D (paper 004 Eq. 2)
    options.unnormalized_scale = 1.0;
    options.mask = mask;
    const std::size_t F = shape.features();
    std::vector<T> out(time * width), b_kv(heads * F * shape.head_dim, T(0)), b_d(heads * F, T(0));
    nn::linear_attention_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(),
                                 map == nn::FeatureMap::performer ? random.data() : nullptr, shape, options);
    return out;
}

// qkv (T, 3C) = x (T, C) · w_qkv (C, 3C)  (Linear, no bias)
template <class T>
std::vector<T> project(const std::vector<T>& x, std::size_t time, const std::vector<T>& w, std::size_t in, std::size_t out_dim) {
    std::vector<T> out(time * out_dim);
    nn::linear_forward(out.data(), x.data(), w.data(), static_cast<const T*>(nullptr), time, in, out_dim);
    return out;
}

}  // namespace iclab::icl::detail
