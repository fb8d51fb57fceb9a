#pragma once
// What attention does with a read adapter, in small, for the adapter fuzzers (fuzz_adapter_reader.cpp,
// fuzz_adapter_fields.cpp): a reader that lets inconsistent shapes through is caught by ASan here, not in predict.
#include <cmath>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/nn/kernel_features.hpp"

namespace iclab::fuzz {

// What attention does with a read ICLAA adapter, in small: features of a query, dotted with b_D and b_KV.
inline double use_iclaa(const icl::IclaaAdapter& adapter) {
    double sum = 0.0;
    for (std::size_t l = 0; l < adapter.layers; ++l)
        for (std::size_t h = 0; h < adapter.heads; ++h) {
            const nn::SoftmaxPromptHead<double>& term = adapter.terms.at(l).at(h);
            const nn::KernelFeatures<double>& map = *term.features;
            std::vector<double> x(map.dim, 0.5), phi(map.features);
            const double shift = nn::kernel_features(phi.data(), x.data(), map);
            ICLAB_CHECK(term.b_d.size() == map.features && term.b_kv.size() == map.features * map.dim, "term shapes");
            ICLAB_CHECK(term.cache_length == adapter.keep_tokens && term.cache_keys.size() == term.cache_length * map.dim &&
                            term.cache_values.size() == term.cache_keys.size(), "hybrid cache shapes");
            for (std::size_t r = 0; r < map.features; ++r) sum += phi[r] * (term.b_d[r] + term.b_kv[r * map.dim]);
            for (std::size_t i = 0; i < term.cache_keys.size(); ++i) sum += term.cache_keys[i] * term.cache_values[i];
            sum += shift * 0.0;
        }
    return sum;
}

inline double use_iclca(const icl::Adapter& adapter) {
    double sum = 0.0;
    for (std::size_t l = 0; l < adapter.layers; ++l) {
        ICLAB_CHECK(adapter.biases.b_kv.at(l).size() == adapter.heads * adapter.feature_dim * adapter.head_dim, "b_kv shape");
        ICLAB_CHECK(adapter.biases.b_d.at(l).size() == adapter.heads * adapter.feature_dim, "b_d shape");
        for (double x : adapter.biases.b_kv[l]) sum += x;
        for (double x : adapter.biases.b_d[l]) sum += x;
    }
    return sum;
}

}  // namespace iclab::fuzz
