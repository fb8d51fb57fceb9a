#include "framework/nn/linear_attention_recurrent.hpp"

#include <algorithm>

#include "framework/core/check.hpp"
#include "framework/nn/attention_kernels.hpp"

namespace iclab::nn {

using namespace kernels;

template <class T>
void linear_attention_recurrent_forward(T* out, LinearAttentionStateCache<T>& cache, const T* qkv, const T* b_kv,
                                        const T* b_d, const AttentionShape& shape, const LinearAttentionOptions& options) {
    check_attention_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    cache.resize(shape);
    const T eps = static_cast<T>(options.eps);
    const T fixed_den = static_cast<T>(1.0 / options.unnormalized_scale);

#pragma omp parallel
    {
        std::vector<T> state(F * D), key_sum(F), num(D);  // S_i (F, D), z_i (F), num_i (D)
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            const std::size_t base = bh * TT * F;
            T* den = cache.den.data() + bh * TT;
            std::copy(b_kv + h * F * D, b_kv + (h + 1) * F * D, state.begin());  // S_{-1} = b_KV   (Eq. 19 with §7's s_0)
            std::copy(b_d + h * F, b_d + (h + 1) * F, key_sum.begin());          // z_{-1} = b_D
            for (std::size_t i = 0; i < TT; ++i) {
                const T* token = qkv + (b * TT + i) * 3 * C;
                const T* v = token + 2 * C + h * D;
                T* phi_q = cache.phi_q.data() + base + i * F;
                T* phi_k = cache.phi_k.data() + base + i * F;
                T* rot_q = cache.rot_q.data() + base + i * F;
                T* rot_k = cache.rot_k.data() + base + i * F;
                attention_features(phi_q, phi_k, rot_q, rot_k, token + h * D, token + C + h * D, i, F, options);
                // S_i = S_{i-1} + R_i φ(k_i) v_iᵀ   (Eq. 19): one axpy over d per row f
                for (std::size_t f = 0; f < F; ++f) axpy(state.data() + f * D, rot_k[f], v, D);
                // num_i = (R_i φ(q_i))ᵀ S_i = Σ_f (R_i φ(q_i))_f S_i[f, :]   (Eq. 13 numerator)
                combine_rows(num.data(), rot_q, state.data(), F, D, D);
                T denominator = fixed_den;
                if (options.normalize) {  // den_i = φ(q_i)ᵀ z_i + eps, z_i = z_{i-1} + φ(k_i)   (Eq. 13, 19)
                    axpy(key_sum.data(), T(1), phi_k, F);
                    denominator = dot_lanes(phi_q, key_sum.data(), F) + eps;
                }
                den[i] = denominator;
                T* o = out + (b * TT + i) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) o[d] = num[d] / denominator;
            }
        }
    }
}

template <class T>
void linear_attention_recurrent_backward(T* d_qkv, T* d_b_kv, T* d_b_d, const T* d_out, const T* qkv, const T* b_kv,
                                         const T* b_d, const T* out, const LinearAttentionStateCache<T>& cache,
                                         const AttentionShape& shape, const LinearAttentionOptions& options) {
    check_attention_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    // Bias gradients are summed over the batch: each (b, h) writes its own slot, reduced in order below,
    // so the result does not depend on the number of threads.
    std::vector<T> partial_bkv(B * H * F * D), partial_bd(B * H * F);

#pragma omp parallel
    {
        std::vector<T> state_t(D * F), d_state(F * D), d_state_t(D * F);  // S_iᵀ (D, F), G_i (F, D), G_iᵀ (D, F)
        std::vector<T> key_sum(F), q_sum(F);                               // z_i, Σ_{t≥i} d_den_t φq_t
        std::vector<T> d_num(TT * D), d_den(TT), d_rot(F), d_phi(F), d_v(D), scratch(F);
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
            // out = num / den:  d_num = d_out / den ;  d_den = -(d_out · out) / den
            for (std::size_t t = 0; t < TT; ++t) {
                const T* dy = d_out + (b * TT + t) * C + h * D;
                const T* y = out + (b * TT + t) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) d_num[t * D + d] = dy[d] / den[t];
                d_den[t] = options.normalize ? -dot_lanes(dy, y, D) / den[t] : T(0);
            }
            // Sweep 1, forward in time, recomputing S_i (held transposed, (D, F), so that S_i d_num_i sums rows):
            //   d rq_i = S_i d_num_i  (b_KV included, as S_{-1} = b_KV);  d φq_i = d_den_i z_i + R_iᵀ d rq_i  -> d_qkv (q)
            for (std::size_t f = 0; f < F; ++f)
                for (std::size_t d = 0; d < D; ++d) state_t[d * F + f] = head_bkv[f * D + d];
            std::copy(b_d + h * F, b_d + (h + 1) * F, key_sum.begin());
            for (std::size_t i = 0; i < TT; ++i) {
                const T* token = qkv + (b * TT + i) * 3 * C;
                T* d_token = d_qkv + (b * TT + i) * 3 * C;
                const T* v = token + 2 * C + h * D;
                for (std::size_t d = 0; d < D; ++d) axpy(state_t.data() + d * F, v[d], rot_k + i * F, F);  // Eq. 19
                combine_rows(d_rot.data(), d_num.data() + i * D, state_t.data(), D, F, F);  // Σ_d d_num_i[d] S_iᵀ[d, :]
                std::fill(d_phi.begin(), d_phi.end(), T(0));
                if (options.normalize) {
                    axpy(key_sum.data(), T(1), phi_k + i * F, F);
                    axpy(d_phi.data(), d_den[i], key_sum.data(), F);
                }
                rope_backward(d_phi.data(), d_rot.data(), scratch.data(), i, F, options);
                feature_map_backward(d_token + h * D, d_phi.data(), token + h * D, F, options.feature_map);
            }
            // Sweep 2, backward in time, with G_i = Σ_{t≥i} R_t φ(q_t) d_num_tᵀ (F, D), the gradient reaching S_i:
            //   d rk_i = G_i v_i ;  d v_i = G_iᵀ R_i φ(k_i) ;  d φk_i = Σ_{t≥i} d_den_t φq_t + R_iᵀ d rk_i
            //   d b_KV = G_0 ;  d b_D = Σ_t d_den_t φq_t      (suffix sums, as in the quadratic form's normalizer)
            std::fill(d_state.begin(), d_state.end(), T(0));
            std::fill(d_state_t.begin(), d_state_t.end(), T(0));
            std::fill(q_sum.begin(), q_sum.end(), T(0));
            for (std::size_t i = TT; i-- > 0;) {
                const T* token = qkv + (b * TT + i) * 3 * C;
                T* d_token = d_qkv + (b * TT + i) * 3 * C;
                const T* v = token + 2 * C + h * D;
                const T* rq = rot_q + i * F;
                const T* rk = rot_k + i * F;
                // G_i = G_{i+1} + R_i φ(q_i) d_num_iᵀ, kept in both layouts so that both products below sum rows
                // (axpys) instead of reducing along rows: a second rank-1 update is cheaper than F horizontal sums.
                for (std::size_t f = 0; f < F; ++f) axpy(d_state.data() + f * D, rq[f], d_num.data() + i * D, D);
                for (std::size_t d = 0; d < D; ++d) axpy(d_state_t.data() + d * F, d_num[i * D + d], rq, F);
                combine_rows(d_rot.data(), v, d_state_t.data(), D, F, F);  // d rk_i = Σ_d v_i[d] G_iᵀ[d, :]
                combine_rows(d_v.data(), rk, d_state.data(), F, D, D);     // d v_i  = Σ_f rk_i[f] G_i[f, :]
                axpy(d_token + 2 * C + h * D, T(1), d_v.data(), D);
                std::fill(d_phi.begin(), d_phi.end(), T(0));
                if (options.normalize) {
                    axpy(q_sum.data(), d_den[i], phi_q + i * F, F);
                    axpy(d_phi.data(), T(1), q_sum.data(), F);
                }
                rope_backward(d_phi.data(), d_rot.data(), scratch.data(), i, F, options);
                feature_map_backward(d_token + C + h * D, d_phi.data(), token + C + h * D, F, options.feature_map);
            }
            std::copy(d_state.begin(), d_state.end(), partial_bkv.begin() + bh * F * D);
            std::copy(q_sum.begin(), q_sum.end(), partial_bd.begin() + bh * F);
        }
    }
    reduce_bias_gradients(d_b_kv, d_b_d, partial_bkv, partial_bd, B, H, F, D);
}

template void linear_attention_recurrent_forward<float>(float*, LinearAttentionStateCache<float>&, const float*,
                                                        const float*, const float*, const AttentionShape&,
                                                        const LinearAttentionOptions&);
template void linear_attention_recurrent_forward<double>(double*, LinearAttentionStateCache<double>&, const double*,
                                                         const double*, const double*, const AttentionShape&,
                                                         const LinearAttentionOptions&);
template void linear_attention_recurrent_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                                         const float*, const float*, const LinearAttentionStateCache<float>&,
                                                         const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_recurrent_backward<double>(double*, double*, double*, const double*, const double*,
                                                          const double*, const double*, const double*,
                                                          const LinearAttentionStateCache<double>&, const AttentionShape&,
                                                          const LinearAttentionOptions&);

}  // namespace iclab::nn
