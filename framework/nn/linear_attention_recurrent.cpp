#include "framework/core/profile.hpp"
#include "framework/nn/linear_attention_recurrent.hpp"

#include <algorithm>

#include "framework/core/check.hpp"
#include "framework/nn/attention_decay.hpp"
#include "framework/nn/attention_kernels.hpp"

namespace iclab::nn {

using namespace kernels;

namespace {
void check_recurrent(const LinearAttentionOptions& options) {
    ICLAB_CHECK(options.mask.plain_causal(), "the recurrent form computes causal attention only, not the "
                                                 << mask_kind_name(options.mask.kind) << " mask"
                                                 << (options.mask.isolate_queries ? " with isolated queries" : ""));
}
}  // namespace

template <class T>
void linear_attention_recurrent_forward(T* out, LinearAttentionStateCache<T>& cache, const T* qkv, const T* b_kv,
                                        const T* b_d, const T* random_features, const AttentionShape& shape,
                                        const LinearAttentionOptions& options) {
    const profile::Scope scope(profile::Kind::attention);
    check_attention_options(shape, options, random_features);
    check_recurrent(options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    cache.resize(shape);
    const T eps = static_cast<T>(options.eps);
    const T fixed_den = static_cast<T>(1.0 / options.unnormalized_scale);
    const FeatureMapParams<T> map = feature_map_params(shape, options, random_features);
    check_decay(shape, options);
    const bool decayed = !options.decay.empty();

#pragma omp parallel
    {
        std::vector<T> q(TT * D), k(TT * D), v(TT * D), state(F * D), key_sum(F), num(D), x_rows;  // S_i (F, D), num_i (D)
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            const std::size_t base = bh * TT * F;
            T* phi_q = cache.phi_q.data() + base;
            T* phi_k = cache.phi_k.data() + base;
            T* rot_q = cache.rot_q.data() + base;
            T* rot_k = cache.rot_k.data() + base;
            T* den = cache.den.data() + bh * TT;
            gather_head(q.data(), k.data(), v.data(), qkv, b, h, shape);
            head_features(phi_q, rot_q, q.data(), D, shape, options, map, x_rows);
            head_features(phi_k, rot_k, k.data(), D, shape, options, map, x_rows);
            // z_i: den_i = φ(q_i)ᵀ z_i + eps with z_{-1} = b_D, z_i = [γ] z_{i-1} + φ(k_i)   (Eq. 13, 19; decay.md D1)
            const T gamma = decayed ? static_cast<T>(options.decay[h]) : T(1);
            if (options.normalize && decayed)
                decayed_normalizer_forward(den, phi_q, phi_k, b_d + h * F, TT, F, eps, gamma, key_sum);
            else if (options.normalize)
                normalizer_forward(den, phi_q, phi_k, b_d + h * F, TT, F, options.mask, eps, key_sum);
            else
                std::fill(den, den + TT, fixed_den);
            std::copy(b_kv + h * F * D, b_kv + (h + 1) * F * D, state.begin());  // S_{-1} = b_KV   (Eq. 19 with §7's s_0)
            for (std::size_t i = 0; i < TT; ++i) {
                const T* rk = rot_k + i * F;
                if (decayed) scale(state.data(), F * D, gamma);  // γ S_{i-1}   (decay.md Eq. D1)
                // S_i = S_{i-1} + R_i φ(k_i) v_iᵀ   (Eq. 19): one axpy over d per row f
                for (std::size_t f = 0; f < F; ++f) axpy(state.data() + f * D, rk[f], v.data() + i * D, D);
                // num_i = (R_i φ(q_i))ᵀ S_i = Σ_f (R_i φ(q_i))_f S_i[f, :]   (Eq. 13 numerator)
                combine_rows(num.data(), rot_q + i * F, state.data(), F, D, D);
                T* o = out + (b * TT + i) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) o[d] = num[d] / den[i];
            }
        }
    }
}

template <class T>
void linear_attention_recurrent_backward(T* d_qkv, T* d_b_kv, T* d_b_d, const T* d_out, const T* qkv, const T* b_kv,
                                         const T* b_d, const T* random_features, const T* out,
                                         const LinearAttentionStateCache<T>& cache, const AttentionShape& shape,
                                         const LinearAttentionOptions& options, T* d_decay) {
    const profile::Scope scope(profile::Kind::attention);
    check_attention_options(shape, options, random_features);
    check_recurrent(options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    const FeatureMapParams<T> map = feature_map_params(shape, options, random_features);
    // Bias gradients are summed over the batch: each (b, h) writes its own slot, reduced in order below,
    // so the result does not depend on the number of threads.
    // kept between calls (no mmap per call); the parallel region below uses the references (shared), not the
    // thread_local names (there: the thread's own)
    thread_local std::vector<T> kept_bkv, kept_bd;
    std::vector<T>& partial_bkv = kept_bkv;
    std::vector<T>& partial_bd = kept_bd;
    partial_bkv.resize(B * H * F * D);  // every slot written below
    partial_bd.assign(B * H * F, T(0));
    check_decay(shape, options);
    const bool decayed = !options.decay.empty(), learned = decayed && d_decay != nullptr;
    std::vector<T> partial_decay(learned ? B * H : 0, T(0));  // dγ per (b, h), reduced in order after the loop

#pragma omp parallel
    {
        std::vector<T> state_t(D * F), d_state(F * D), d_state_t(D * F);  // S_iᵀ (D, F), G_i (F, D), G_iᵀ (D, F)
        std::vector<T> tangent_t(learned ? D * F : 0);                    // U_iᵀ = (∂S_i/∂γ)ᵀ (D, F), learned decay only
        std::vector<T> q(TT * D), k(TT * D), v(TT * D), d_q(TT * D), d_k(TT * D), d_v(TT * D), d_num(TT * D), d_den(TT);
        std::vector<T> d_rot_q(TT * F), d_rot_k(TT * F), d_phi_q(TT * F), d_phi_k(TT * F), key_sum, buckets, scratch, x_rows;
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
            const T gamma = decayed ? static_cast<T>(options.decay[h]) : T(1);
            gather_head(q.data(), k.data(), v.data(), qkv, b, h, shape);
            // out = num / den:  d_num = d_out / den ;  d_den = -(d_out · out) / den
            for (std::size_t t = 0; t < TT; ++t) {
                const T* dy = d_out + (b * TT + t) * C + h * D;
                const T* y = out + (b * TT + t) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) d_num[t * D + d] = dy[d] / den[t];
                d_den[t] = options.normalize ? -dot_lanes(dy, y, D) / den[t] : T(0);
            }
            // Sweep 1, forward in time, recomputing S_i (held transposed, (D, F), so that S_i d_num_i sums rows):
            //   d rq_i = S_i d_num_i  (b_KV included, as S_{-1} = b_KV)
            for (std::size_t f = 0; f < F; ++f)
                for (std::size_t d = 0; d < D; ++d) state_t[d * F + f] = head_bkv[f * D + d];
            // With decay: S_i = γ S_{i-1} + ..., and (learned) U_i = γ U_{i-1} + S_{i-1}, dγ += rq_iᵀ U_i d_num_i (decay.md D7)
            std::fill(tangent_t.begin(), tangent_t.end(), T(0));
            T gamma_sum = T(0);
            for (std::size_t i = 0; i < TT; ++i) {
                if (learned)
                    for (std::size_t e = 0; e < D * F; ++e) tangent_t[e] = multiply_add(gamma, tangent_t[e], state_t[e]);
                if (decayed) scale(state_t.data(), D * F, gamma);
                for (std::size_t d = 0; d < D; ++d) axpy(state_t.data() + d * F, v[i * D + d], rot_k + i * F, F);  // Eq. 19
                combine_rows(d_rot_q.data() + i * F, d_num.data() + i * D, state_t.data(), D, F, F);  // Σ_d d_num_i[d] S_iᵀ[d, :]
                if (learned)
                    for (std::size_t d = 0; d < D; ++d)
                        gamma_sum = multiply_add(d_num[i * D + d], dot_lanes(tangent_t.data() + d * F, rot_q + i * F, F), gamma_sum);
            }
            if (learned) partial_decay[bh] += gamma_sum;
            // Sweep 2, backward in time, with G_i = Σ_{t≥i} R_t φ(q_t) d_num_tᵀ (F, D), the gradient reaching S_i:
            //   d rk_i = G_i v_i ;  d v_i = G_iᵀ R_i φ(k_i) ;  d b_KV = G_0
            std::fill(d_state.begin(), d_state.end(), T(0));
            std::fill(d_state_t.begin(), d_state_t.end(), T(0));
            for (std::size_t i = TT; i-- > 0;) {
                const T* rq = rot_q + i * F;
                if (decayed) {  // G_i = γ G_{i+1} + R_i φ(q_i) d_num_iᵀ   (decay.md Eq. D7)
                    scale(d_state.data(), F * D, gamma);
                    scale(d_state_t.data(), D * F, gamma);
                }
                // G_i = G_{i+1} + R_i φ(q_i) d_num_iᵀ, kept in both layouts so that both products below sum rows
                // (axpys) instead of reducing along rows: a second rank-1 update is cheaper than F horizontal sums.
                for (std::size_t f = 0; f < F; ++f) axpy(d_state.data() + f * D, rq[f], d_num.data() + i * D, D);
                for (std::size_t d = 0; d < D; ++d) axpy(d_state_t.data() + d * F, d_num[i * D + d], rq, F);
                combine_rows(d_rot_k.data() + i * F, v.data() + i * D, d_state_t.data(), D, F, F);  // Σ_d v_i[d] G_iᵀ[d, :]
                combine_rows(d_v.data() + i * D, rot_k + i * F, d_state.data(), F, D, D);           // Σ_f rk_i[f] G_i[f, :]
            }
            std::copy(d_state.begin(), d_state.end(), partial_bkv.begin() + bh * F * D);
            if (decayed) scale(partial_bkv.data() + bh * F * D, F * D, gamma);  // d b_KV = γ G_0 (S_0 = γ b_KV + ...)
            // Normalizer (unrotated features), then back through RoPE and φ into d_qkv.
            if (options.normalize && decayed) {
                decayed_normalizer_backward(d_phi_q.data(), d_phi_k.data(), partial_bd.data() + bh * F,
                                            learned ? &partial_decay[bh] : nullptr, d_den.data(), phi_q, phi_k, b_d + h * F, TT,
                                            F, gamma, key_sum, buckets);
            } else if (options.normalize) {  // writes d φq, d φk (every element)
                normalizer_backward(d_phi_q.data(), d_phi_k.data(), partial_bd.data() + bh * F, d_den.data(), phi_q, phi_k,
                                    b_d + h * F, TT, F, options.mask, key_sum, buckets);
            } else {
                std::fill(d_phi_q.begin(), d_phi_q.end(), T(0));
                std::fill(d_phi_k.begin(), d_phi_k.end(), T(0));
            }
            head_features_backward(d_q.data(), D, d_phi_q.data(), d_rot_q.data(), q.data(), D, phi_q, shape, options, map,
                                   scratch, x_rows);
            head_features_backward(d_k.data(), D, d_phi_k.data(), d_rot_k.data(), k.data(), D, phi_k, shape, options, map,
                                   scratch, x_rows);
            scatter_head(d_qkv, d_q.data(), d_k.data(), d_v.data(), b, h, shape);
        }
        // (after the loop's barrier: every slot written) the threads share the reduction
        reduce_bias_gradients(d_b_kv, d_b_d, partial_bkv, partial_bd, B, H, F, D);
    }
    if (learned) reduce_decay_gradient(d_decay, partial_decay, B, H);
}

template <class T>
void linear_attention_step(T* out, T* state, T* key_sum, const T* qkv, std::size_t position, const T* random_features,
                           const AttentionShape& shape, const LinearAttentionOptions& options) {
    check_attention_options(shape, options, random_features);
    check_recurrent(options);
    check_decay(shape, options);
    ICLAB_CHECK(options.rope == nullptr || position < options.rope->max_positions(),
                "position " << position << " is beyond the RoPE table (" << options.rope->max_positions() << ")");
    const std::size_t H = shape.heads, D = shape.head_dim, F = shape.features(), C = shape.width();
    const FeatureMapParams<T> map = feature_map_params(shape, options, random_features);
    std::vector<T> phi_q(F), phi_k(F), rot_q(F), rot_k(F), num(D);
    for (std::size_t h = 0; h < H; ++h) {
        const T* q = qkv + h * D;
        const T* k = qkv + C + h * D;
        const T* v = qkv + 2 * C + h * D;
        feature_map_forward(phi_q.data(), q, 1, D, map);
        feature_map_forward(phi_k.data(), k, 1, D, map);
        if (options.rope != nullptr) {
            options.rope->rotate(rot_q.data(), phi_q.data(), position, false);
            options.rope->rotate(rot_k.data(), phi_k.data(), position, false);
        } else {
            rot_q = phi_q;
            rot_k = phi_k;
        }
        T* head_state = state + h * F * D;
        T* head_sum = key_sum + h * F;
        if (!options.decay.empty()) {  // γ S_{i-1}, γ z_{i-1}   (decay.md Eq. D1)
            const T gamma = static_cast<T>(options.decay[h]);
            scale(head_state, F * D, gamma);
            scale(head_sum, F, gamma);
        }
        // S_i = S_{i-1} + R_i φ(k_i) v_iᵀ ;  z_i = z_{i-1} + φ(k_i)   (Eq. 19)
        for (std::size_t f = 0; f < F; ++f) axpy(head_state + f * D, rot_k[f], v, D);
        axpy(head_sum, T(1), phi_k.data(), F);
        // num_i = (R_i φ(q_i))ᵀ S_i ;  den_i = φ(q_i)ᵀ z_i + eps   (Eq. 13)
        combine_rows(num.data(), rot_q.data(), head_state, F, D, D);
        const T den = options.normalize ? dot_lanes(phi_q.data(), head_sum, F) + static_cast<T>(options.eps)
                                        : static_cast<T>(1.0 / options.unnormalized_scale);
        for (std::size_t d = 0; d < D; ++d) out[h * D + d] = num[d] / den;
    }
}

template void linear_attention_step<float>(float*, float*, float*, const float*, std::size_t, const float*,
                                           const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_step<double>(double*, double*, double*, const double*, std::size_t, const double*,
                                            const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_recurrent_forward<float>(float*, LinearAttentionStateCache<float>&, const float*,
                                                        const float*, const float*, const float*,
                                                        const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_recurrent_forward<double>(double*, LinearAttentionStateCache<double>&, const double*,
                                                         const double*, const double*, const double*,
                                                         const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_recurrent_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                                         const float*, const float*, const float*,
                                                         const LinearAttentionStateCache<float>&,
                                                         const AttentionShape&, const LinearAttentionOptions&, float*);
template void linear_attention_recurrent_backward<double>(double*, double*, double*, const double*, const double*,
                                                          const double*, const double*, const double*,
                                                          const double*, const LinearAttentionStateCache<double>&, const AttentionShape&,
                                                          const LinearAttentionOptions&, double*);

}  // namespace iclab::nn
