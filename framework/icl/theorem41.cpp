#include "framework/icl/theorem41.hpp"

#include <algorithm>

#include "framework/nn/gemm.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::icl {

template <class T>
void eq9_attention(std::vector<T>& out, const T* x, std::size_t time, const std::vector<T>& w_qkv, const std::vector<T>& b_kv,
                   std::size_t C, std::size_t H) {
    std::vector<T> qkv(time * 3 * C);  // (time, 3C): [q | k | v] = x W
    nn::gemm<T>(nn::matrix(qkv.data(), time, 3 * C), nn::matrix<const T>(x, time, C), nn::matrix<const T>(w_qkv.data(), C, 3 * C),
                false, false);
    nn::AttentionShape shape;
    shape.batch = 1;
    shape.time = time;
    shape.heads = H;
    shape.head_dim = C / H;
    nn::LinearAttentionOptions options;
    options.feature_map = nn::FeatureMap::identity;
    options.normalize = false;
    options.unnormalized_scale = 1.0;
    options.mask.kind = nn::MaskKind::full;
    const std::vector<T> b_d(H * shape.head_dim, T(0));  // unused without the normalizer
    nn::LinearAttentionCache<T> cache;
    out.assign(time * C, T(0));
    nn::linear_attention_forward(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), static_cast<const T*>(nullptr), shape,
                                 options);
}

template <class T>
std::vector<T> eq11_converted_bias(const T* x_prompt, std::size_t M, const std::vector<T>& w_qkv, const std::vector<T>& b_kv,
                                   std::size_t C, std::size_t H) {
    const std::size_t D = C / H;
    std::vector<T> prompt_qkv(M * 3 * C), k_head(M * D), v_head(M * D);
    nn::gemm<T>(nn::matrix(prompt_qkv.data(), M, 3 * C), nn::matrix<const T>(x_prompt, M, C),
                nn::matrix<const T>(w_qkv.data(), C, 3 * C), false, false);
    std::vector<T> converted = b_kv;
    for (std::size_t h = 0; h < H; ++h) {
        for (std::size_t t = 0; t < M; ++t) {
            const T* row = prompt_qkv.data() + t * 3 * C;
            std::copy(row + C + h * D, row + C + h * D + D, k_head.data() + t * D);
            std::copy(row + 2 * C + h * D, row + 2 * C + h * D + D, v_head.data() + t * D);
        }
        nn::gemm<T>(nn::matrix(converted.data() + h * D * D, D, D), nn::matrix<const T>(k_head.data(), M, D),
                    nn::matrix<const T>(v_head.data(), M, D), true, false, T(1), T(1));
    }
    return converted;
}

template void eq9_attention(std::vector<float>&, const float*, std::size_t, const std::vector<float>&, const std::vector<float>&,
                            std::size_t, std::size_t);
template void eq9_attention(std::vector<double>&, const double*, std::size_t, const std::vector<double>&,
                            const std::vector<double>&, std::size_t, std::size_t);
template std::vector<float> eq11_converted_bias(const float*, std::size_t, const std::vector<float>&, const std::vector<float>&,
                                                std::size_t, std::size_t);
template std::vector<double> eq11_converted_bias(const double*, std::size_t, const std::vector<double>&,
                                                 const std::vector<double>&, std::size_t, std::size_t);

}  // namespace iclab::icl
