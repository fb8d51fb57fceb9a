#pragma once
// Inner loops shared by the two forms of causal linearized attention (linear_attention.cpp, the masked
// quadratic form of Eq. 13, and linear_attention_recurrent.cpp, the state form of Eq. 19). Internal to
// framework/nn. All loops are contiguous; none reorders a float sum in a way that depends on threads. Their
// multiply-accumulate steps are fused multiply-adds written out (iclab::multiply_add), as in the GEMM kernel
// (small_gemm.hpp): the same bits on every FMA build (the project compiles with -ffp-contract=off).
#include <algorithm>
#include <cstddef>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/multiply_add.hpp"
#include "framework/core/profile.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::nn::kernels {

// y (n) += alpha x (n), one fused multiply-add per element: no reduction, so the compiler vectorizes it.
template <class T>
inline void axpy(T* y, T alpha, const T* x, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] = multiply_add(alpha, x[i], y[i]);
}

// Σ a_i b_i in kLanes interleaved partial sums, added in a fixed order at the end. A plain float
// reduction cannot be vectorized without -ffast-math (the compiler may not reorder the sum); this one can.
template <class T>
inline T dot_lanes(const T* a, const T* b, std::size_t n) {
    constexpr std::size_t kLanes = 8;
    T lane[kLanes] = {};
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        for (std::size_t k = 0; k < kLanes; ++k) lane[k] = multiply_add(a[i + k], b[i + k], lane[k]);
    T sum = T(0);
    for (; i < n; ++i) sum = multiply_add(a[i], b[i], sum);
    for (std::size_t k = 0; k < kLanes; ++k) sum += lane[k];
    return sum;
}

// out (n) = Σ_r coeff[r] rows[r·stride + c], c < n: a sum of axpys with the sum over r in ascending order,
// accumulated in registers kBlock columns at a time. Plain axpys into out chain every row through a store
// and a reload of out (measured: the whole recurrent forward 1.4x slower at D = F = 32).
template <class T>
inline void combine_rows(T* out, const T* coeff, const T* rows, std::size_t count, std::size_t n, std::size_t stride) {
    constexpr std::size_t kBlock = 32;
    std::size_t c = 0;
    for (; c + kBlock <= n; c += kBlock) {
        T acc[kBlock] = {};
        for (std::size_t r = 0; r < count; ++r)
            for (std::size_t k = 0; k < kBlock; ++k) acc[k] = multiply_add(coeff[r], rows[r * stride + c + k], acc[k]);
        for (std::size_t k = 0; k < kBlock; ++k) out[c + k] = acc[k];
    }
    for (; c < n; ++c) {
        T sum = T(0);
        for (std::size_t r = 0; r < count; ++r) sum = multiply_add(coeff[r], rows[r * stride + c], sum);
        out[c] = sum;
    }
}

inline void check_attention_options(const AttentionShape& shape, const LinearAttentionOptions& options,
                                    const void* random_features) {
    ICLAB_CHECK(options.feature_map != FeatureMap::performer || random_features != nullptr,
                "performer attention needs its random feature matrix");
    ICLAB_CHECK(options.feature_map == FeatureMap::performer || shape.features() == shape.head_dim,
                "elementwise feature maps have F = D, got F = " << shape.features() << ", D = " << shape.head_dim);
    if (options.rope != nullptr) {
        ICLAB_CHECK(options.rope->features() == shape.features(),
                    "RoPE table built for " << options.rope->features() << " features, attention has " << shape.features());
        ICLAB_CHECK(shape.time <= options.rope->max_positions(),
                    "sequence of " << shape.time << " tokens exceeds the RoPE table (" << options.rope->max_positions() << ")");
    }
}

// One head's q, k, v (T, D) read in place in qkv (B, T, 3C), rows 3C apart, and the places of their gradients in d_qkv.
template <class T>
struct HeadInPlace {
    const T *q, *k, *v;
    T *d_q, *d_k, *d_v;
};
template <class T>
inline HeadInPlace<T> head_in_place(const T* qkv, T* d_qkv, std::size_t b, std::size_t h, const AttentionShape& shape) {
    const std::size_t offset = b * shape.time * 3 * shape.width() + h * shape.head_dim, C = shape.width();
    return {qkv + offset, qkv + offset + C, qkv + offset + 2 * C, d_qkv + offset, d_qkv + offset + C, d_qkv + offset + 2 * C};
}

// q, k, v of head h of sequence b, copied out of qkv (B, T, 3C) into contiguous (T, D) buffers.
template <class T>
inline void gather_head(T* q, T* k, T* v, const T* qkv, std::size_t b, std::size_t h, const AttentionShape& shape) {
    const std::size_t TT = shape.time, D = shape.head_dim, C = shape.width();
    for (std::size_t t = 0; t < TT; ++t) {
        const T* token = qkv + (b * TT + t) * 3 * C + h * D;
        std::copy(token, token + D, q + t * D);
        std::copy(token + C, token + C + D, k + t * D);
        std::copy(token + 2 * C, token + 2 * C + D, v + t * D);
    }
}

// d_qkv (B, T, 3C) += d_q, d_k, d_v (T, D) of head h of sequence b (any of them may be nullptr).
template <class T>
inline void scatter_head(T* d_qkv, const T* d_q, const T* d_k, const T* d_v, std::size_t b, std::size_t h,
                         const AttentionShape& shape) {
    const std::size_t TT = shape.time, D = shape.head_dim, C = shape.width();
    for (std::size_t t = 0; t < TT; ++t) {
        T* token = d_qkv + (b * TT + t) * 3 * C + h * D;
        if (d_q != nullptr) axpy(token, T(1), d_q + t * D, D);
        if (d_k != nullptr) axpy(token + C, T(1), d_k + t * D, D);
        if (d_v != nullptr) axpy(token + 2 * C, T(1), d_v + t * D, D);
    }
}

// Rows of one head: x (T, D) with rows `stride` elements apart (D: a contiguous buffer; 3C: in place in the
// (B·T, 3C) QKV activations, as qkv + (b·T)·3C + part·C + h·D), copied into contiguous rows when `rows` needs it.
template <class T>
inline const T* contiguous_rows(const T* x, std::size_t stride, std::size_t rows, std::size_t D, std::vector<T>& copy) {
    if (stride == D) return x;
    copy.resize(std::max(copy.size(), rows * D));
    for (std::size_t t = 0; t < rows; ++t) std::copy(x + t * stride, x + t * stride + D, copy.data() + t * D);
    return copy.data();
}

// Features of one head's T positions: φ (T, F) of x (T, D) (rows x_stride apart, read in place for the elementwise
// maps), then R_t φ_t (Definition B.1; a copy when RoPE is off). Per element the same arithmetic for any stride.
template <class T>
inline void head_features(T* phi, T* rot, const T* x, std::size_t x_stride, const AttentionShape& shape,
                          const LinearAttentionOptions& options, const FeatureMapParams<T>& map, std::vector<T>& x_rows) {
    const std::size_t TT = shape.time, F = shape.features(), D = shape.head_dim;
    if (map.map == FeatureMap::performer || x_stride == D) {  // performer: one GEMM over the head's rows
        feature_map_forward(phi, contiguous_rows(x, x_stride, TT, D, x_rows), TT, D, map);
    } else {
        // In place, rows x_stride apart (3C: 768 B for the quick model), this is the step's first read of the rows the QKV
        // product wrote; the rows kPrefetchRows ahead are fetched while this one is mapped (a hint: no value changes).
        // Measured on an x86-64-v3 build (scripts/bench/head_features_ab.cpp): the q and k features 20 % faster.
        constexpr std::size_t kPrefetchRows = 8;
        for (std::size_t t = 0; t < TT; ++t) {
            if (t + kPrefetchRows < TT) {
                const T* ahead = x + (t + kPrefetchRows) * x_stride;
                for (std::size_t d = 0; d < D; d += 64 / sizeof(T)) __builtin_prefetch(ahead + d);
                __builtin_prefetch(ahead + D - 1);  // the row's last line when it does not start on one
            }
            feature_map_forward(phi + t * F, x + t * x_stride, 1, D, map);
        }
    }
    const profile::Scope scope(options.rope != nullptr ? profile::Kind::rope : profile::Kind::attention);
    for (std::size_t t = 0; t < TT; ++t) {
        if (options.rope != nullptr)
            options.rope->rotate(rot + t * F, phi + t * F, t, false);
        else
            std::copy(phi + t * F, phi + (t + 1) * F, rot + t * F);
    }
}

// d_x (T, D) = ∂/∂x of the features' contribution: d φ_t (T, F) += R_tᵀ d rot_t, then back through φ.
// d_phi is modified in place. x has rows x_stride apart (see head_features). d_x is overwritten: contiguous (d_x_stride
// = D) with d_x = 0 + (∂φ/∂x)ᵀ d φ (a zeroed buffer accumulated into); strided (in place in d_qkv) with 0 + that, the
// value scatter_head leaves in a zeroed d_qkv, bit for bit.
template <class T>
inline void head_features_backward(T* d_x, std::size_t d_x_stride, T* d_phi, const T* d_rot, const T* x, std::size_t x_stride,
                                   const T* phi, const AttentionShape& shape, const LinearAttentionOptions& options,
                                   const FeatureMapParams<T>& map, std::vector<T>& scratch, std::vector<T>& x_rows) {
    const std::size_t TT = shape.time, F = shape.features(), D = shape.head_dim;
    scratch.resize(std::max(scratch.size(), F));
    {
        const profile::Scope scope(options.rope != nullptr ? profile::Kind::rope : profile::Kind::attention);
        for (std::size_t t = 0; t < TT; ++t) {
            if (options.rope != nullptr) {
                options.rope->rotate(scratch.data(), d_rot + t * F, t, true);
                axpy(d_phi + t * F, T(1), scratch.data(), F);
            } else {
                axpy(d_phi + t * F, T(1), d_rot + t * F, F);
            }
        }
    }
    if (map.map == FeatureMap::performer || (x_stride == D && d_x_stride == D)) {
        x_rows.resize(std::max(x_rows.size(), 2 * TT * D));  // [x rows | d_x rows]: no reallocation below
        const T* x_flat = contiguous_rows(x, x_stride, TT, D, x_rows);
        if (d_x_stride == D) {
            std::fill(d_x, d_x + TT * D, T(0));
            feature_map_backward(d_x, d_phi, x_flat, phi, TT, D, map, scratch);
            return;
        }
        // performer into strided rows: through a contiguous buffer (after x_rows's rows)
        T* flat = x_rows.data() + TT * D;
        std::fill(flat, flat + TT * D, T(0));
        feature_map_backward(flat, d_phi, x_flat, phi, TT, D, map, scratch);
        for (std::size_t t = 0; t < TT; ++t)
            for (std::size_t d = 0; d < D; ++d) d_x[t * d_x_stride + d] = T(0) + flat[t * D + d];
        return;
    }
    // elementwise maps row by row, in place: d_x_t = 0 + (∂φ/∂x_t)ᵀ d φ_t (the bits of feature_map_backward into a
    // zeroed row), then + 0 (scatter_head's add into the zeroed d_qkv), in one pass per row
    for (std::size_t t = 0; t < TT; ++t)
        feature_map_backward_fresh(d_x + t * d_x_stride, d_phi + t * F, x + t * x_stride, phi + t * F, D, map.map);
}

// Whether a head's b_KV (F, D) is all zeros. Then the products with it, rq b_KV (forward) and d_num b_KVᵀ (backward),
// are +0 in every element (each a sum of products with 0, accumulated from +0) and adding them to a product written
// with β = 0 (which is never -0) changes no bit: the kernels skip them. (A non-finite rq or d_num would have made
// them NaN; such a step has a non-finite loss either way.)
template <class T>
inline bool bias_kv_is_zero(const T* head_bkv, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (head_bkv[i] != T(0)) return false;
    return true;
}

// Per head h, whether the products with its b_KV are skipped (options.skip_zero_bias_kv and bias_kv_is_zero): checked
// once per call for the H heads instead of once per (batch, head) (a scalar pass over F·D values: ~8 % of the forward's
// own samples and ~20 % of the backward's when repeated per (b, h)). The flags live in a per-calling-thread buffer kept
// between calls (no allocation in a step); the reference stays valid until that thread's next call.
template <class T>
inline const std::vector<unsigned char>& skipped_bias_heads(const T* b_kv, const AttentionShape& shape,
                                                            const LinearAttentionOptions& options) {
    thread_local std::vector<unsigned char> skipped;
    const std::size_t FD = shape.features() * shape.head_dim;
    skipped.resize(shape.heads);
    for (std::size_t h = 0; h < shape.heads; ++h)
        skipped[h] = options.skip_zero_bias_kv && bias_kv_is_zero(b_kv + h * FD, FD) ? 1 : 0;
    return skipped;
}

// Zeroes the entries of a (T, T) score matrix whose key j the query i does not see.
template <class T>
inline void apply_mask(T* scores, std::size_t time, const AttentionMask& mask) {
    for (std::size_t i = 0; i < time; ++i) {
        const std::size_t visible = mask.visible_prefix(i, time);
        T* row = scores + i * time;
        if (mask.self_extra(i, time) && i >= visible) {  // keys [visible, time) except i itself
            std::fill(row + visible, row + i, T(0));
            std::fill(row + i + 1, row + time, T(0));
        } else {
            std::fill(row + visible, row + time, T(0));
        }
    }
}

// Kernel normalizer of Eq. 13 under a mask:  den_i = φ(q_i)ᵀ [ Σ_{j∈V(i)} φ(k_j) + b_D ] + eps   (one head).
// V(i) = [0, visible_prefix(i)) ∪ self: visible_prefix is non-decreasing, so one running key sum serves.
template <class T>
inline void normalizer_forward(T* den, const T* phi_q, const T* phi_k, const T* head_bd, std::size_t time, std::size_t F,
                               const AttentionMask& mask, T eps, std::vector<T>& key_sum) {
    key_sum.assign(head_bd, head_bd + F);
    std::size_t summed = 0;
    for (std::size_t i = 0; i < time; ++i) {
        for (const std::size_t visible = mask.visible_prefix(i, time); summed < visible; ++summed)
            axpy(key_sum.data(), T(1), phi_k + summed * F, F);
        T value = dot_lanes(phi_q + i * F, key_sum.data(), F);
        if (mask.self_extra(i, time)) value += dot_lanes(phi_q + i * F, phi_k + i * F, F);
        den[i] = value + eps;
    }
}

// Its backward for one head, given d_den (T):
//   d φq_i = d_den_i [Σ_{j∈V(i)} φk_j + b_D];  d b_D += Σ_i d_den_i φq_i;  d φk_j = Σ_{i: j∈V(i)} d_den_i φq_i.
// The last sum runs over the i with visible_prefix(i) > j (a suffix in i): bucket d_den_i φq_i at
// visible_prefix(i) − 1, then take suffix sums over the buckets. O(T·F).
// d_phi_q, d_phi_k (T, F) are written, every element, with the bits of the same updates accumulated into zeroed
// buffers (0 + the first term, then the others in the same order); d_bd is accumulated. One pass forward in i, one
// backward in j (the suffix sums and d φk together); no zero fills.
template <class T>
inline void normalizer_backward(T* d_phi_q, T* d_phi_k, T* d_bd, const T* d_den, const T* phi_q, const T* phi_k,
                                const T* head_bd, std::size_t time, std::size_t F, const AttentionMask& mask,
                                std::vector<T>& key_sum, std::vector<T>& buckets) {
    key_sum.assign(head_bd, head_bd + F);
    if (buckets.size() < time * F) buckets.resize(time * F);
    T* const ks = key_sum.data();
    std::size_t summed = 0, started = 0;  // buckets [0, started) hold a value; visible_prefix is non-decreasing in i
    for (std::size_t i = 0; i < time; ++i) {
        const std::size_t visible = mask.visible_prefix(i, time);
        for (; summed < visible; ++summed) axpy(ks, T(1), phi_k + summed * F, F);
        const T g = d_den[i];
        const T* pq = phi_q + i * F;
        T* dq = d_phi_q + i * F;
        for (std::size_t f = 0; f < F; ++f) dq[f] = T(0) + g * ks[f];
        axpy(d_bd, g, pq, F);  // d b_D += d_den_i φq_i (one fused multiply-add per element, as every axpy)
        if (visible > 0) {
            T* bucket = buckets.data() + (visible - 1) * F;
            if (visible > started) {  // its first term; the buckets in between receive none (zeros)
                std::fill(buckets.data() + started * F, bucket, T(0));
                for (std::size_t f = 0; f < F; ++f) bucket[f] = T(0) + g * pq[f];
                started = visible;
            } else {
                axpy(bucket, g, pq, F);
            }
        }
        if (mask.self_extra(i, time)) axpy(dq, g, phi_k + i * F, F);
    }
    std::fill(buckets.data() + started * F, buckets.data() + time * F, T(0));
    for (std::size_t j = time; j-- > 0;) {  // suffix sums (bucket_j += bucket_{j+1}), then d φk_j = [0 + self term] + bucket_j
        T* bucket = buckets.data() + j * F;
        if (j + 1 < time) axpy(bucket, T(1), bucket + F, F);
        T* dk = d_phi_k + j * F;
        if (mask.self_extra(j, time)) {
            const T g = d_den[j];
            const T* pq = phi_q + j * F;
            for (std::size_t f = 0; f < F; ++f) dk[f] = T(0) + g * pq[f];
            axpy(dk, T(1), bucket, F);
        } else {
            for (std::size_t f = 0; f < F; ++f) dk[f] = T(0) + bucket[f];
        }
    }
}

// Bias gradients summed over the batch in a fixed order: partial_* hold one slot per (b, h); every element (h, i) is
// summed over b = 0, 1, ... in order (the serial loop's order). Called by every thread of the attention's parallel
// region after its (b, h) loop, the threads share the elements (orphaned worksharing; no barrier at the end). Only
// call it there: outside a region of the caller's own, the loops would bind to an enclosing team.
template <class T>
inline void reduce_bias_gradients(T* d_b_kv, T* d_b_d, const std::vector<T>& partial_bkv, const std::vector<T>& partial_bd,
                                  std::size_t B, std::size_t H, std::size_t F, std::size_t D) {
#pragma omp for schedule(static) nowait
    for (std::size_t h = 0; h < H; ++h) {  // by heads: per b one contiguous pass over the head's F·D (and F) slots
        for (std::size_t b = 0; b < B; ++b) {
            const std::size_t bh = b * H + h;
            for (std::size_t i = 0; i < F * D; ++i) d_b_kv[h * F * D + i] += partial_bkv[bh * F * D + i];
            for (std::size_t f = 0; f < F; ++f) d_b_d[h * F + f] += partial_bd[bh * F + f];
        }
    }
}

}  // namespace iclab::nn::kernels
