#include "framework/core/profile.hpp"
#include "framework/nn/linear_attention.hpp"

#include <algorithm>

#include "framework/core/check.hpp"
#include "framework/nn/attention_decay.hpp"
#include "framework/nn/attention_kernels.hpp"
#include "framework/nn/gemm.hpp"

namespace iclab::nn {

using namespace kernels;

namespace {
// The triangles (small_gemm.hpp) the per-(batch, head) products use: with the blocked kernel and the plain causal mask,
// S and dS (lower_out) only on and below the diagonal, and the products reading them (S v, dS rk: lower_a; Sᵀ d_num,
// dSᵀ rq: upper_a) without their zero terms, bit-identical to the full products; otherwise Triangle::none.
auto causal_triangle(const LinearAttentionOptions& options) {
    const bool on = options.small_gemm == SmallGemm::blocked && options.causal_triangle && options.mask.plain_causal();
    return [on](Triangle triangle) { return on ? triangle : Triangle::none; };
}
}  // namespace

template <class T>
void linear_attention_forward(T* out, LinearAttentionCache<T>& cache, const T* qkv, const T* b_kv, const T* b_d,
                              const T* random_features, const AttentionShape& shape, const LinearAttentionOptions& options) {
    const profile::Scope scope(profile::Kind::attention);
    check_attention_options(shape, options, random_features);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    cache.resize(shape);
    const T eps = static_cast<T>(options.eps);
    const T fixed_den = static_cast<T>(1.0 / options.unnormalized_scale);
    const FeatureMapParams<T> map = feature_map_params(shape, options, random_features);
    const SmallGemm sg = options.small_gemm;  // the per-(batch, head) products' kernel (model.small_gemm)
    const auto tri = causal_triangle(options);  // the causal structure its products may skip (blocked kernel only)
    const std::vector<unsigned char>& skipped_bkv = skipped_bias_heads(b_kv, shape, options);  // per head h
    check_decay(shape, options);
    const std::vector<T> powers = decay_powers<T>(options, TT + 1);  // (H, T + 1) γ_h^n; empty without decay
#pragma omp parallel
    {
        // per-thread scratch kept between calls (no allocation inside a training step); every element is written
        // before it is read
        thread_local std::vector<T> num, key_sum, scores, x_rows;
        num.resize(TT * D);
        key_sum.resize(F);
        scores.resize(TT * TT);
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
            const T* gamma_n = powers.empty() ? nullptr : powers.data() + h * (TT + 1);  // γ^n (decay.md Eq. D3)
            // q, k, v of this head read in place: rows 3C apart in qkv (B, T, 3C)
            const T* q = qkv + b * TT * 3 * C + h * D;
            const T* k = q + C;
            const T* v = q + 2 * C;
            // Features of every position first: φ, then R_t φ (Definition B.1).
            head_features(phi_q, rot_q, q, 3 * C, shape, options, map, x_rows);
            head_features(phi_k, rot_k, k, 3 * C, shape, options, map, x_rows);
            // Numerator (Eq. 13) with two GEMMs: S = mask ⊙ (rq rkᵀ) (T, T);  num = rq b_KV + S v  (T, D)
            T* S = cache.keep_scores ? cache.scores.data() + bh * TT * TT : scores.data();
            gemm<T>(matrix(S, TT, TT), matrix<const T>(rot_q, TT, F), matrix<const T>(rot_k, TT, F), false, true, T(1),
                    T(0), sg, tri(Triangle::lower_out));
            if (tri(Triangle::lower_out) == Triangle::none) apply_mask(S, TT, options.mask);  // else masked as written
            if (gamma_n != nullptr) decay_scores(S, TT, gamma_n);  // S_ij γ^{i-j}
            // b_KV = 0 (its initial value; frozen unless model.attention_bias_trainable): rq b_KV is +0 throughout and
            // S v + (+0) has the bits of S v written with β = 0, so the first product is skipped (bias_kv_is_zero)
            const bool with_bkv = !skipped_bkv[h];
            if (with_bkv) {
                gemm<T>(matrix(num.data(), TT, D), matrix<const T>(rot_q, TT, F), matrix<const T>(head_bkv, F, D), false,
                        false, T(1), T(0), sg);
                if (gamma_n != nullptr) scale_rows(num.data(), TT, D, gamma_n + 1);  // γ^{i+1} rq_i b_KV (decay.md Eq. D3)
            }
            gemm<T>(matrix(num.data(), TT, D), matrix<const T>(S, TT, TT), strided_matrix(v, TT, D, 3 * C), false, false, T(1),
                    with_bkv ? T(1) : T(0), sg, tri(Triangle::lower_a));
            if (options.normalize && gamma_n != nullptr)
                decayed_normalizer_forward(den, phi_q, phi_k, b_d + h * F, TT, F, eps, gamma_n[1], key_sum);
            else if (options.normalize)
                normalizer_forward(den, phi_q, phi_k, b_d + h * F, TT, F, options.mask, eps, key_sum);
            else
                std::fill(den, den + TT, fixed_den);
            for (std::size_t i = 0; i < TT; ++i) {
                T* o = out + (b * TT + i) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) o[d] = num[i * D + d] / den[i];
            }
        }
    }
}

template <class T>
void linear_attention_backward(T* d_qkv, T* d_b_kv, T* d_b_d, const T* d_out, const T* qkv, const T* b_kv,
                               const T* b_d, const T* random_features, const T* out, const LinearAttentionCache<T>& cache,
                               const AttentionShape& shape, const LinearAttentionOptions& options, T* d_decay) {
    const profile::Scope scope(profile::Kind::attention);
    check_attention_options(shape, options, random_features);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    const FeatureMapParams<T> map = feature_map_params(shape, options, random_features);
    // Bias gradients are summed over the batch: each (b, h) writes its own slot, reduced in order below,
    // so the result does not depend on the number of threads.
    // Kept between calls (a fresh vector of B·H·F·D is an mmap and page faults on every call); the references,
    // not the thread_local names, are used inside the parallel region (there a thread_local name is the thread's own).
    thread_local std::vector<T> kept_bkv, kept_bd;
    std::vector<T>& partial_bkv = kept_bkv;
    std::vector<T>& partial_bd = kept_bd;
    partial_bkv.resize(B * H * F * D);  // every slot written (β = 0) below
    partial_bd.assign(B * H * F, T(0));
    const bool kept_scores = cache.keep_scores && cache.scores.size() == B * H * TT * TT;
    const SmallGemm sg = options.small_gemm;
    const auto tri = causal_triangle(options);
    const std::vector<unsigned char>& skipped_bkv = skipped_bias_heads(b_kv, shape, options);  // per head h
    check_decay(shape, options);
    const std::vector<T> powers = decay_powers<T>(options, TT + 1);  // (H, T + 1) γ_h^n; empty without decay
    const bool learned = d_decay != nullptr && !powers.empty();
    std::vector<T> partial_decay(learned ? B * H : 0, T(0));  // dγ per (b, h), reduced in order after the loop
#pragma omp parallel
    {
        thread_local std::vector<T> d_num, d_den, d_rot_q, d_rot_k, d_phi_q, d_phi_k, key_sum, buckets, scratch, x_rows, scores,
            d_scores, d_num_decayed, bias_rows;  // kept between calls; every element is written before it is read
        d_num.resize(TT * D);
        for (auto* buffer : {&d_rot_q, &d_rot_k, &d_phi_q, &d_phi_k}) buffer->resize(TT * F);
        d_den.resize(TT);
        key_sum.resize(F);
        scores.resize(TT * TT);
        d_scores.resize(TT * TT);
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
            const T* gamma_n = powers.empty() ? nullptr : powers.data() + h * (TT + 1);
            T* part_bkv = partial_bkv.data() + bh * F * D;
            T* part_bd = partial_bd.data() + bh * F;
            // q, k, v of this head read in place (rows 3C apart), and their gradients written in place into d_qkv
            const auto [q, k, v, d_q, d_k, d_v] = head_in_place(qkv, d_qkv, b, h, shape);
            for (std::size_t t = 0; t < TT; ++t) {
                // out = num / den:  d_num = d_out / den ;  d_den = -(d_out · out) / den
                const T* dy = d_out + (b * TT + t) * C + h * D;
                const T* y = out + (b * TT + t) * C + h * D;
                for (std::size_t d = 0; d < D; ++d) d_num[t * D + d] = dy[d] / den[t];
                d_den[t] = options.normalize ? -dot_lanes(dy, y, D) / den[t] : T(0);
            }
            // Numerator: num = rq b_KV + S v with S = mask ⊙ (rq rkᵀ), forward's (keep_scores) or recomputed.
            //   dS = mask ⊙ (d_num vᵀ);  d rq = dS rk + d_num b_KVᵀ;  d rk = dSᵀ rq;  d v = Sᵀ d_num;  d b_KV += rqᵀ d_num
            const T* S = scores.data();
            if (kept_scores) {
                S = cache.scores.data() + bh * TT * TT;
            } else {
                gemm<T>(matrix(scores.data(), TT, TT), matrix<const T>(rot_q, TT, F), matrix<const T>(rot_k, TT, F), false,
                        true, T(1), T(0), sg, tri(Triangle::lower_out));
                if (tri(Triangle::lower_out) == Triangle::none) apply_mask(scores.data(), TT, options.mask);
                if (gamma_n != nullptr) decay_scores(scores.data(), TT, gamma_n);
            }
            gemm<T>(matrix(d_scores.data(), TT, TT), matrix<const T>(d_num.data(), TT, D), strided_matrix(v, TT, D, 3 * C),
                    false, true, T(1), T(0), sg, tri(Triangle::lower_out));
            if (tri(Triangle::lower_out) == Triangle::none) apply_mask(d_scores.data(), TT, options.mask);
            // With decay (decay.md Eq. D6): dγ from the scores, then dS ⊙ γ^{i-j} is the gradient of the undecayed
            // rq rkᵀ; the bias term γ^{i+1} rq_i b_KV reads d_num_i γ^{i+1} (d_num_bias).
            const T* d_num_bias = d_num.data();
            if (gamma_n != nullptr) {
                if (learned) partial_decay[bh] += decay_score_gradient(d_scores.data(), S, TT, gamma_n[1]);
                decay_scores(d_scores.data(), TT, gamma_n);
                d_num_decayed.assign(d_num.begin(), d_num.end());
                scale_rows(d_num_decayed.data(), TT, D, gamma_n + 1);
                d_num_bias = d_num_decayed.data();
                if (learned && !skipped_bkv[h]) {  // Σ_i (i+1) γ^i (rq_i b_KV)·d_num_i = Σ_i (i+1)/γ (rq_i b_KV)·d_num_bias_i
                    bias_rows.resize(TT * D);
                    gemm<T>(matrix(bias_rows.data(), TT, D), matrix<const T>(rot_q, TT, F), matrix<const T>(head_bkv, F, D),
                            false, false, T(1), T(0), sg);
                    T sum = T(0);
                    for (std::size_t i = 0; i < TT; ++i)
                        sum = multiply_add(static_cast<T>(i + 1), dot_lanes(bias_rows.data() + i * D, d_num_bias + i * D, D), sum);
                    partial_decay[bh] += sum / gamma_n[1];
                }
            }
            gemm<T>(matrix(d_rot_q.data(), TT, F), matrix<const T>(d_scores.data(), TT, TT), matrix<const T>(rot_k, TT, F),
                    false, false, T(1), T(0), sg, tri(Triangle::lower_a));
            if (!skipped_bkv[h])  // else + (+0): skipped (forward)
                gemm<T>(matrix(d_rot_q.data(), TT, F), matrix<const T>(d_num_bias, TT, D), matrix<const T>(head_bkv, F, D),
                        false, true, T(1), T(1), sg);
            gemm<T>(matrix(d_rot_k.data(), TT, F), matrix<const T>(d_scores.data(), TT, TT), matrix<const T>(rot_q, TT, F), true,
                    false, T(1), T(0), sg, tri(Triangle::upper_a));
            // d v written in place (β = 0: the values of the separate buffer that scatter_head added to a zeroed d_qkv)
            gemm<T>(strided_matrix(d_v, TT, D, 3 * C), matrix<const T>(S, TT, TT), matrix<const T>(d_num.data(), TT, D), true,
                    false, T(1), T(0), sg, tri(Triangle::upper_a));
            gemm<T>(matrix(part_bkv, F, D), matrix<const T>(rot_q, TT, F), matrix<const T>(d_num_bias, TT, D), true, false,
                    T(1), T(0), sg);
            // Denominator (kernel normalizer) contributions go straight to d φ (it uses unrotated features).
            if (options.normalize && gamma_n != nullptr) {
                decayed_normalizer_backward(d_phi_q.data(), d_phi_k.data(), part_bd, learned ? &partial_decay[bh] : nullptr,
                                            d_den.data(), phi_q, phi_k, b_d + h * F, TT, F, gamma_n[1], key_sum, buckets);
            } else if (options.normalize) {  // writes d φq, d φk (every element)
                normalizer_backward(d_phi_q.data(), d_phi_k.data(), part_bd, d_den.data(), phi_q, phi_k, b_d + h * F, TT, F,
                                    options.mask, key_sum, buckets);
            } else {
                std::fill(d_phi_q.begin(), d_phi_q.end(), T(0));
                std::fill(d_phi_k.begin(), d_phi_k.end(), T(0));
            }
            // Back through RoPE (d φ += R_tᵀ d rot) and φ into d_qkv.
            head_features_backward(d_q, 3 * C, d_phi_q.data(), d_rot_q.data(), q, 3 * C, phi_q, shape, options, map, scratch,
                                   x_rows);
            head_features_backward(d_k, 3 * C, d_phi_k.data(), d_rot_k.data(), k, 3 * C, phi_k, shape, options, map, scratch,
                                   x_rows);
        }
        // (after the loop's barrier: every slot written) the threads share the reduction
        reduce_bias_gradients(d_b_kv, d_b_d, partial_bkv, partial_bd, B, H, F, D);
    }
    if (learned) reduce_decay_gradient(d_decay, partial_decay, B, H);
}

template <class T>
void linear_attention_final_state(T* state, T* key_sum, const LinearAttentionCache<T>& cache, const T* qkv, const T* b_kv,
                                  const T* b_d, const AttentionShape& shape, const std::vector<double>& decay) {
    ICLAB_CHECK(decay.empty() || decay.size() == shape.heads, "attention decay: " << decay.size() << " values for "
                                                                                  << shape.heads << " heads");
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, F = shape.features();
    const std::size_t C = shape.width();
    for (std::size_t bh = 0; bh < B * H; ++bh) {
        const std::size_t b = bh / H, h = bh % H;
        T* S = state + bh * F * D;
        T* z = key_sum + bh * F;
        std::copy(b_kv + h * F * D, b_kv + (h + 1) * F * D, S);  // S_{-1} = b_KV
        std::copy(b_d + h * F, b_d + (h + 1) * F, z);            // z_{-1} = b_D
        const T gamma = decay.empty() ? T(1) : static_cast<T>(decay[h]);
        for (std::size_t j = 0; j < TT; ++j) {                   // S_j = [γ] S_{j-1} + R_j φ(k_j) v_jᵀ  (Eq. 19, decay.md D1)
            if (!decay.empty()) {
                scale(S, F * D, gamma);
                scale(z, F, gamma);
            }
            const T* rk = cache.rot_k.data() + (bh * TT + j) * F;
            const T* v = qkv + (b * TT + j) * 3 * C + 2 * C + h * D;
            for (std::size_t f = 0; f < F; ++f) axpy(S + f * D, rk[f], v, D);
            axpy(z, T(1), cache.phi_k.data() + (bh * TT + j) * F, F);
        }
    }
}

template void linear_attention_final_state<float>(float*, float*, const LinearAttentionCache<float>&, const float*,
                                                  const float*, const float*, const AttentionShape&,
                                                  const std::vector<double>&);
template void linear_attention_final_state<double>(double*, double*, const LinearAttentionCache<double>&, const double*,
                                                   const double*, const double*, const AttentionShape&,
                                                   const std::vector<double>&);
template void linear_attention_forward<float>(float*, LinearAttentionCache<float>&, const float*, const float*,
                                              const float*, const float*, const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_forward<double>(double*, LinearAttentionCache<double>&, const double*, const double*,
                                               const double*, const double*, const AttentionShape&, const LinearAttentionOptions&);
template void linear_attention_backward<float>(float*, float*, float*, const float*, const float*, const float*,
                                               const float*, const float*, const float*, const LinearAttentionCache<float>&,
                                               const AttentionShape&, const LinearAttentionOptions&, float*);
template void linear_attention_backward<double>(double*, double*, double*, const double*, const double*,
                                                const double*, const double*, const double*,
                                                const double*, const LinearAttentionCache<double>&, const AttentionShape&,
                                                const LinearAttentionOptions&, double*);

}  // namespace iclab::nn
