#include "framework/nn/softmax_attention.hpp"

#include <cmath>
#include <limits>

#include "framework/nn/attention_kernels.hpp"
#include "framework/nn/gemm.hpp"

namespace iclab::nn {

using namespace kernels;

namespace {

double score_scale(const AttentionShape& shape, const SoftmaxAttentionOptions& options) {
    return options.scale > 0.0 ? options.scale : 1.0 / std::sqrt(static_cast<double>(shape.head_dim));
}

template <class T>
void rotate_rows(T* rot, const T* x, std::size_t time, std::size_t D, const RopeTable* rope, bool inverse) {
    for (std::size_t t = 0; t < time; ++t) {
        if (rope != nullptr)
            rope->rotate(rot + t * D, x + t * D, t, inverse);
        else
            std::copy(x + t * D, x + (t + 1) * D, rot + t * D);
    }
}

void check_options(const AttentionShape& shape, const SoftmaxAttentionOptions& options) {
    if (options.rope != nullptr) {
        ICLAB_CHECK(options.rope->features() == shape.head_dim,
                    "RoPE table built for " << options.rope->features() << " features, attention has " << shape.head_dim);
        ICLAB_CHECK(shape.time <= options.rope->max_positions(),
                    "sequence of " << shape.time << " tokens exceeds the RoPE table (" << options.rope->max_positions() << ")");
    }
}

}  // namespace

template <class T>
void softmax_attention_forward(T* out, SoftmaxAttentionCache<T>& cache, const T* qkv, const AttentionShape& shape,
                               const SoftmaxAttentionOptions& options) {
    check_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, C = shape.width();
    cache.resize(shape);
    const T scale = static_cast<T>(score_scale(shape, options));
#pragma omp parallel
    {
        std::vector<T> q(TT * D), k(TT * D), v(TT * D), head_out(TT * D);
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            T* rot_q = cache.rot_q.data() + bh * TT * D;
            T* rot_k = cache.rot_k.data() + bh * TT * D;
            T* probs = cache.probs.data() + bh * TT * TT;
            gather_head(q.data(), k.data(), v.data(), qkv, b, h, shape);
            rotate_rows(rot_q, q.data(), TT, D, options.rope, false);
            rotate_rows(rot_k, k.data(), TT, D, options.rope, false);
            gemm<T>(matrix(probs, TT, TT), matrix<const T>(rot_q, TT, D), matrix<const T>(rot_k, TT, D), false, true, scale);
            for (std::size_t i = 0; i < TT; ++i) {  // row softmax over the visible keys, max-shifted
                T* row = probs + i * TT;
                T highest = -std::numeric_limits<T>::infinity();
                for (std::size_t j = 0; j < TT; ++j)
                    if (options.mask.visible(i, j, TT)) highest = std::max(highest, row[j]);
                T total = T(0);
                for (std::size_t j = 0; j < TT; ++j) {
                    row[j] = options.mask.visible(i, j, TT) ? std::exp(row[j] - highest) : T(0);
                    total += row[j];
                }
                const T inverse = total > T(0) ? T(1) / total : T(0);  // no visible key: the output is 0
                for (std::size_t j = 0; j < TT; ++j) row[j] *= inverse;
            }
            gemm<T>(matrix(head_out.data(), TT, D), matrix<const T>(probs, TT, TT), matrix<const T>(v.data(), TT, D), false, false);
            for (std::size_t t = 0; t < TT; ++t)
                std::copy(head_out.data() + t * D, head_out.data() + (t + 1) * D, out + (b * TT + t) * C + h * D);
        }
    }
}

template <class T>
void softmax_attention_backward(T* d_qkv, const T* d_out, const T* qkv, const SoftmaxAttentionCache<T>& cache,
                                const AttentionShape& shape, const SoftmaxAttentionOptions& options) {
    check_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, C = shape.width();
    const T scale = static_cast<T>(score_scale(shape, options));
#pragma omp parallel
    {
        std::vector<T> q(TT * D), k(TT * D), v(TT * D), d_o(TT * D), d_rot_q(TT * D), d_rot_k(TT * D), d_q(TT * D),
            d_k(TT * D), d_v(TT * D), d_probs(TT * TT);
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            const T* rot_q = cache.rot_q.data() + bh * TT * D;
            const T* rot_k = cache.rot_k.data() + bh * TT * D;
            const T* probs = cache.probs.data() + bh * TT * TT;
            gather_head(q.data(), k.data(), v.data(), qkv, b, h, shape);
            for (std::size_t t = 0; t < TT; ++t)
                std::copy(d_out + (b * TT + t) * C + h * D, d_out + (b * TT + t) * C + (h + 1) * D, d_o.data() + t * D);
            // out = P v:  dP = d_out vᵀ;  d v = Pᵀ d_out
            gemm<T>(matrix(d_probs.data(), TT, TT), matrix<const T>(d_o.data(), TT, D), matrix<const T>(v.data(), TT, D), false, true);
            gemm<T>(matrix(d_v.data(), TT, D), matrix<const T>(probs, TT, TT), matrix<const T>(d_o.data(), TT, D), true, false);
            // softmax: d s_ij = p_ij (dP_ij − Σ_j' p_ij' dP_ij'); the scale folds into the next products
            for (std::size_t i = 0; i < TT; ++i) {
                const T* p = probs + i * TT;
                T* dp = d_probs.data() + i * TT;
                const T inner = dot_lanes(p, dp, TT);
                for (std::size_t j = 0; j < TT; ++j) dp[j] = p[j] * (dp[j] - inner);
            }
            // s = scale · rq rkᵀ:  d rq = scale · dS rk;  d rk = scale · dSᵀ rq
            gemm<T>(matrix(d_rot_q.data(), TT, D), matrix<const T>(d_probs.data(), TT, TT), matrix<const T>(rot_k, TT, D), false,
                    false, scale);
            gemm<T>(matrix(d_rot_k.data(), TT, D), matrix<const T>(d_probs.data(), TT, TT), matrix<const T>(rot_q, TT, D), true,
                    false, scale);
            rotate_rows(d_q.data(), d_rot_q.data(), TT, D, options.rope, true);  // d q_t = R_tᵀ d rq_t
            rotate_rows(d_k.data(), d_rot_k.data(), TT, D, options.rope, true);
            scatter_head(d_qkv, d_q.data(), d_k.data(), d_v.data(), b, h, shape);
        }
    }
}

template void softmax_attention_forward<float>(float*, SoftmaxAttentionCache<float>&, const float*, const AttentionShape&,
                                               const SoftmaxAttentionOptions&);
template void softmax_attention_forward<double>(double*, SoftmaxAttentionCache<double>&, const double*,
                                                const AttentionShape&, const SoftmaxAttentionOptions&);
template void softmax_attention_backward<float>(float*, const float*, const float*, const SoftmaxAttentionCache<float>&,
                                                const AttentionShape&, const SoftmaxAttentionOptions&);
template void softmax_attention_backward<double>(double*, const double*, const double*,
                                                 const SoftmaxAttentionCache<double>&, const AttentionShape&,
                                                 const SoftmaxAttentionOptions&);

}  // namespace iclab::nn
