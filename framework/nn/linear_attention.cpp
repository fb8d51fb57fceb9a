#include "framework/nn/linear_attention.hpp"

#include <algorithm>

#include "framework/core/check.hpp"
#include "framework/nn/attention_kernels.hpp"
#include "framework/nn/gemm.hpp"

namespace iclab::nn {

using namespace kernels;

namespace {

// Causal mask on a (T, T) score matrix: entries j > i are zero.
template <class T>
inline void mask_upper_triangle(T* scores, std::size_t time) {
    for (std::size_t i = 0; i < time; ++i)
        for (std::size_t j = i + 1; j < time; ++j) scores[i * time + j] = T(0);
}

}  // namespace

template <class T>
void linear_attention_forward(T* out, LinearAttentionCache<T>& cache, const T* qkv, const T* b_kv, const T* b_d,
                              const AttentionShape& shape, const LinearAttentionOptions& options) {
    check_attention_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    cache.resize(shape);
    const T eps = static_cast<T>(options.eps);
    const T fixed_den = static_cast<T>(1.0 / options.unnormalized_scale);

#pragma omp parallel
    {
        std::vector<T> v(TT * D), num(TT * D), key_sum(F), scores(TT * TT);
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            const std::size_t base = bh * TT * F;
            T* phi_q = cache.phi_q.data() + base;
            T* phi_k = cache.phi_k.data() + base;
            T* rot_q = cache.rot_q.data() + base;
            T* rot_k = cache.rot_k.data() + base;
            T* den = cache.den.data() + bh * TT;
            const T* head_bkv = b_kv + h * F * D;  // (F, D)
            const T* head_bd = b_d + h * F;        // (F)
            // Features of every position first: φ, then R_t φ (Definition B.1).
            for (std::size_t t = 0; t < TT; ++t) {
                const T* token = qkv + (b * TT + t) * 3 * C;
                attention_features(phi_q + t * F, phi_k + t * F, rot_q + t * F, rot_k + t * F, token + h * D,
                                   token + C + h * D, t, F, options);
                for (std::size_t d = 0; d < D; ++d) v[t * D + d] = token[2 * C + h * D + d];
            }
            // Numerator (Eq. 13) with two GEMMs: S = tril(rq rkᵀ) (T, T);  num = rq b_KV + S v  (T, D)
            gemm<T>(matrix(scores.data(), TT, TT), matrix<const T>(rot_q, TT, F), matrix<const T>(rot_k, TT, F), false, true);
            mask_upper_triangle(scores.data(), TT);
            gemm<T>(matrix(num.data(), TT, D), matrix<const T>(rot_q, TT, F), matrix<const T>(head_bkv, F, D), false, false);
            gemm<T>(matrix(num.data(), TT, D), matrix<const T>(scores.data(), TT, TT), matrix<const T>(v.data(), TT, D), false,
                    false, T(1), T(1));
            for (std::size_t f = 0; f < F; ++f) key_sum[f] = head_bd[f];  // running Σ_{j≤i} φ(k_j) + b_D
            for (std::size_t i = 0; i < TT; ++i) {
                T denominator = fixed_den;
                if (options.normalize) {
                    axpy(key_sum.data(), T(1), phi_k + i * F, F);
                    denominator = dot_lanes(phi_q + i * F, key_sum.data(), F) + eps;
                }
                den[i] = denominator;
                T* o = out + (b * TT + i) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) o[d] = num[i * D + d] / denominator;
            }
        }
    }
}

template <class T>
void linear_attention_backward(T* d_qkv, T* d_b_kv, T* d_b_d, const T* d_out, const T* qkv, const T* b_kv,
                               const T* b_d, const T* out, const LinearAttentionCache<T>& cache,
                               const AttentionShape& shape, const LinearAttentionOptions& options) {
    check_attention_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    // Bias gradients are summed over the batch: each (b, h) writes its own slot, reduced in order below,
    // so the result does not depend on the number of threads.
    std::vector<T> partial_bkv(B * H * F * D, T(0)), partial_bd(B * H * F, T(0));

#pragma omp parallel
    {
        std::vector<T> v(TT * D), d_v(TT * D), d_num(TT * D), d_den(TT);
        std::vector<T> d_rot_q(TT * F), d_rot_k(TT * F), d_phi_q(TT * F), d_phi_k(TT * F), key_sum(F), q_sum(F);
        std::vector<T> d_in(F), scores(TT * TT), d_scores(TT * TT);
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            const std::size_t base = bh * TT * F;
            const T* phi_q = cache.phi_q.data() + base;
            const T* phi_k = cache.phi_k.data() + base;
            const T* rot_q = cache.rot_q.data() + base;
            const T* rot_k = cache.rot_k.data() + base;
            const T* den = cache.den.data() + bh * TT;
            const T* head_bkv = b_kv + h * F * D;
            const T* head_bd = b_d + h * F;
            T* part_bkv = partial_bkv.data() + bh * F * D;
            T* part_bd = partial_bd.data() + bh * F;
            std::fill(d_phi_q.begin(), d_phi_q.end(), T(0));
            std::fill(d_phi_k.begin(), d_phi_k.end(), T(0));
            for (std::size_t t = 0; t < TT; ++t) {
                const T* token = qkv + (b * TT + t) * 3 * C;
                for (std::size_t d = 0; d < D; ++d) v[t * D + d] = token[2 * C + h * D + d];
                // out = num / den:  d_num = d_out / den ;  d_den = -(d_out · out) / den
                const T* dy = d_out + (b * TT + t) * C + h * D;
                const T* y = out + (b * TT + t) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) d_num[t * D + d] = dy[d] / den[t];
                d_den[t] = options.normalize ? -dot_lanes(dy, y, D) / den[t] : T(0);
            }
            // Numerator: num = rq b_KV + S v with S = tril(rq rkᵀ), recomputed rather than cached (T² per head).
            //   dS = tril(d_num vᵀ);  d rq = dS rk + d_num b_KVᵀ;  d rk = dSᵀ rq;  d v = Sᵀ d_num;  d b_KV += rqᵀ d_num
            gemm<T>(matrix(scores.data(), TT, TT), matrix<const T>(rot_q, TT, F), matrix<const T>(rot_k, TT, F), false, true);
            mask_upper_triangle(scores.data(), TT);
            gemm<T>(matrix(d_scores.data(), TT, TT), matrix<const T>(d_num.data(), TT, D), matrix<const T>(v.data(), TT, D),
                    false, true);
            mask_upper_triangle(d_scores.data(), TT);
            gemm<T>(matrix(d_rot_q.data(), TT, F), matrix<const T>(d_scores.data(), TT, TT), matrix<const T>(rot_k, TT, F),
                    false, false);
            gemm<T>(matrix(d_rot_q.data(), TT, F), matrix<const T>(d_num.data(), TT, D), matrix<const T>(head_bkv, F, D), false,
                    true, T(1), T(1));
            gemm<T>(matrix(d_rot_k.data(), TT, F), matrix<const T>(d_scores.data(), TT, TT), matrix<const T>(rot_q, TT, F), true,
                    false);
            gemm<T>(matrix(d_v.data(), TT, D), matrix<const T>(scores.data(), TT, TT), matrix<const T>(d_num.data(), TT, D), true,
                    false);
            gemm<T>(matrix(part_bkv, F, D), matrix<const T>(rot_q, TT, F), matrix<const T>(d_num.data(), TT, D), true, false);
            // Denominator: den_i = φq_i · (Σ_{j≤i} φk_j + b_D) + eps
            if (options.normalize) {
                for (std::size_t f = 0; f < F; ++f) key_sum[f] = head_bd[f];
                for (std::size_t i = 0; i < TT; ++i) {
                    axpy(key_sum.data(), T(1), phi_k + i * F, F);
                    axpy(d_phi_q.data() + i * F, d_den[i], key_sum.data(), F);
                    axpy(part_bd, d_den[i], phi_q + i * F, F);
                }
                // d φk_j = Σ_{i≥j} d_den_i φq_i : a suffix sum, O(T·F)
                for (std::size_t f = 0; f < F; ++f) q_sum[f] = T(0);
                for (std::size_t j = TT; j-- > 0;) {
                    axpy(q_sum.data(), d_den[j], phi_q + j * F, F);
                    axpy(d_phi_k.data() + j * F, T(1), q_sum.data(), F);
                }
            }
            // Back through RoPE (d φ += R_tᵀ d rot) and φ into d_qkv.
            for (std::size_t t = 0; t < TT; ++t) {
                const T* token = qkv + (b * TT + t) * 3 * C;
                T* d_token = d_qkv + (b * TT + t) * 3 * C;
                rope_backward(d_phi_q.data() + t * F, d_rot_q.data() + t * F, d_in.data(), t, F, options);
                rope_backward(d_phi_k.data() + t * F, d_rot_k.data() + t * F, d_in.data(), t, F, options);
                feature_map_backward(d_token + h * D, d_phi_q.data() + t * F, token + h * D, F, options.feature_map);
                feature_map_backward(d_token + C + h * D, d_phi_k.data() + t * F, token + C + h * D, F,
                                     options.feature_map);
                for (std::size_t d = 0; d < D; ++d) d_token[2 * C + h * D + d] += d_v[t * D + d];
            }
        }
    }
    reduce_bias_gradients(d_b_kv, d_b_d, partial_bkv, partial_bd, B, H, F, D);
}

template void linear_attention_forward<float>(float*, LinearAttentionCache<float>&, const float*, const float*,
                                              const float*, const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_forward<double>(double*, LinearAttentionCache<double>&, const double*, const double*,
                                               const double*, const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                               const float*, const float*, const LinearAttentionCache<float>&,
                                               const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_backward<double>(double*, double*, double*, const double*, const double*,
                                                const double*, const double*, const double*,
                                                const LinearAttentionCache<double>&, const AttentionShape&,
                                                const LinearAttentionOptions&);

}  // namespace iclab::nn
