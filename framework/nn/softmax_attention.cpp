#include "framework/core/profile.hpp"
#include "framework/nn/softmax_attention.hpp"

#include <cmath>
#include <limits>

#include "framework/nn/attention_kernels.hpp"
#include "framework/nn/gemm.hpp"

namespace iclab::nn {

using namespace kernels;

namespace {

template <class T>
double score_scale(const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options) {
    return options.scale > 0.0 ? options.scale : 1.0 / std::sqrt(static_cast<double>(shape.head_dim));
}

// rot (T, D) row t = R_t x_t (RoPE; inverse: R_tᵀ), rows rot_stride and x_stride elements apart (D: contiguous; 3C: one
// head's rows in place in qkv / d_qkv).
template <class T>
void rotate_rows(T* rot, std::size_t rot_stride, const T* x, std::size_t x_stride, std::size_t time, const RopeTable& rope,
                 bool inverse) {
    const profile::Scope scope(profile::Kind::rope);
    for (std::size_t t = 0; t < time; ++t) rope.rotate(rot + t * rot_stride, x + t * x_stride, t, inverse);
}

// J: the keys some row sees are [0, J) (every mask: attention_mask.hpp); the products may leave out keys j ≥ J with the
// blocked kernel (SoftmaxAttentionOptions::skip_unseen_keys), J = T otherwise. Isolated queries that do not see
// themselves (the paper 003 configs): J = P. Without keys j ≥ J, with p_ij = +0 (j ≥ J) exactly:
//   S, dP: only columns j < J are computed (the others are never read: softmax fills P's with +0, dP's are set to +0);
//   P v, dS rk: sums over j < J, the full product's sums without their trailing +0·x terms (the argument of
//     small_gemm.hpp's Triangle::lower_a: the same bits; the blocked kernel adds j = 0, 1, ... in order);
//   d v = Pᵀ d_out, d rk = dSᵀ rq: rows j < J; rows j ≥ J are sums of ±0 terms from +0, i.e. +0, written as such.
template <class T>
std::size_t product_keys(const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options) {
    const std::size_t TT = shape.time;
    if (options.small_gemm != SmallGemm::blocked || !options.skip_unseen_keys) return TT;
    std::size_t keys = 0;
    for (std::size_t i = 0; i < TT; ++i)
        keys = std::max(keys, options.mask.self_extra(i, TT) ? std::max(i + 1, options.mask.visible_prefix(i, TT))
                                                             : options.mask.visible_prefix(i, TT));
    return keys;
}

template <class T>
void check_options(const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options) {
    if (options.rope != nullptr) {
        ICLAB_CHECK(options.rope->features() == shape.head_dim,
                    "RoPE table built for " << options.rope->features() << " features, attention has " << shape.head_dim);
        ICLAB_CHECK(shape.time <= options.rope->max_positions(),
                    "sequence of " << shape.time << " tokens exceeds the RoPE table (" << options.rope->max_positions() << ")");
    }
    if (options.prompt != nullptr) {
        const std::size_t n = options.prompt->size();
        ICLAB_CHECK(n == shape.heads || n == shape.batch * shape.heads,
                    "a prompt needs one entry per head or per sequence and head, got " << n);
        for (const auto& head : *options.prompt) {
            ICLAB_CHECK(head.cache_keys.size() == head.cache_length * shape.head_dim &&
                            head.cache_values.size() == head.cache_length * shape.head_dim,
                        "prompt cache of " << head.cache_length << " tokens has the wrong size");
            if (head.features != nullptr)
                ICLAB_CHECK(head.features->dim == shape.head_dim && head.b_d.size() == head.features->features &&
                                head.b_kv.size() == head.features->features * shape.head_dim,
                            "prompt kernel biases do not fit F = " << head.features->features << ", D = " << shape.head_dim);
        }
    }
}

// The prompt's part of query q's attention (spec iclaa.md (A2), (A4)): un-normalized mass e^{shift}·mass and
// numerator e^{shift}·num (D). shift = −inf when the prompt adds nothing.
template <class T>
struct PromptPart {
    T shift = -std::numeric_limits<T>::infinity();
    T mass = T(0);
    std::vector<T> num, scores, phi;
    // The kernel part for the backward ((K1)-(K5)): A = max log φ_r(q̃) (phi = φ̂), and whether the term is on
    // (φᵀb_D > 0), at its edge (= 0: adds nothing, the gradient is the limit from > 0) or off (< 0, or no kernel).
    enum class Kernel { off, edge, on } kernel = Kernel::off;
    T A = -std::numeric_limits<T>::infinity();
};

template <class T>
void prompt_part(PromptPart<T>& part, const T* rot_q, const T* q, const SoftmaxPromptHead<T>& head, std::size_t D, T scale) {
    part.num.assign(D, T(0));
    part.mass = T(0);
    part.shift = -std::numeric_limits<T>::infinity();
    part.kernel = PromptPart<T>::Kernel::off;
    const std::size_t K = head.cache_length;
    if (K > 0) {  // exact cache: Σ_p e^{s'_p − m} [v'_p; 1]
        part.scores.resize(K);
        for (std::size_t p = 0; p < K; ++p) {
            part.scores[p] = scale * kernels::dot_lanes(rot_q, head.cache_keys.data() + p * D, D);
            part.shift = std::max(part.shift, part.scores[p]);
        }
        for (std::size_t p = 0; p < K; ++p) {
            const T e = std::exp(part.scores[p] - part.shift);
            part.mass += e;
            kernels::axpy(part.num.data(), e, head.cache_values.data() + p * D, D);
        }
    }
    if (head.features == nullptr) return;
    // kernel: φ(q̃)ᵀb_D = e^{A + log_b_d}·Σ_r φ̂_r b̂_d,r ;  φ(q̃)ᵀb_KV = e^{A + log_b_kv}·Σ_r φ̂_r b̂_kv,r
    const std::size_t F = head.features->features;
    part.phi.resize(F);
    const T A = kernel_features(part.phi.data(), head.rotate_query ? rot_q : q, *head.features);
    const T den = kernels::dot_lanes(part.phi.data(), head.b_d.data(), F);
    part.A = A;
    if (std::isfinite(A)) part.kernel = den > T(0) ? PromptPart<T>::Kernel::on : den == T(0) ? PromptPart<T>::Kernel::edge : PromptPart<T>::Kernel::off;
    if (!(den > T(0)) || !std::isfinite(A)) return;  // a non-positive kernel mass adds nothing (positive maps: never)
    const T shift = A + head.log_b_d + std::log(den);
    const T top = std::max(part.shift, shift);
    const T old_factor = std::exp(part.shift - top);  // 0 when there was no cache
    for (auto& x : part.num) x *= old_factor;
    part.mass = part.mass * old_factor + std::exp(shift - top);
    // numerator in units of e^{top}: e^{A + log_b_kv − top} Σ_r φ̂_r b̂_kv,r
    const T factor = std::exp(A + head.log_b_kv - top);
    for (std::size_t r = 0; r < F; ++r)
        if (part.phi[r] != T(0)) kernels::axpy(part.num.data(), factor * part.phi[r], head.b_kv.data() + r * D, D);
    part.shift = top;
}

// The forward's record of a prompt row for the backward (SoftmaxAttentionCache::prompt_*): u_i, φ̂_i and (c^kv_i,
// c^d_i) of (K1), the coefficients 0 where the kernel term is off. Written only; no forward value depends on it.
template <class T>
void resize_prompt_storage(SoftmaxAttentionCache<T>& cache, const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options) {
    std::size_t F = 0;
    if (options.prompt != nullptr)
        for (const auto& head : *options.prompt)
            if (head.features != nullptr) F = std::max(F, head.features->features);
    const std::size_t rows = options.prompt != nullptr ? shape.batch * shape.heads * shape.time : 0;
    cache.prompt_features = F;
    cache.prompt_out.resize(rows * shape.head_dim);
    cache.prompt_phi.resize(rows * F);
    cache.prompt_coef.resize(rows * 2);
}

template <class T>
void store_prompt_row(SoftmaxAttentionCache<T>& cache, std::size_t row, const T* u, const PromptPart<T>& part,
                      const SoftmaxPromptHead<T>& head, T highest, T inverse, std::size_t D) {
    std::copy(u, u + D, cache.prompt_out.data() + row * D);
    const std::size_t F = cache.prompt_features;
    T* phi = cache.prompt_phi.data() + row * F;
    T* coef = cache.prompt_coef.data() + row * 2;
    std::fill(phi, phi + F, T(0));
    coef[0] = coef[1] = T(0);
    if (part.kernel == PromptPart<T>::Kernel::off) return;
    std::copy(part.phi.begin(), part.phi.begin() + head.features->features, phi);
    coef[0] = std::exp(part.A + head.log_b_kv - highest) * inverse;  // c^kv_i
    coef[1] = std::exp(part.A + head.log_b_d - highest) * inverse;   // c^d_i
}

// (K6): dx += ∂L/∂x of the map's log-features at x, given γ_r = ∂L/∂log φ_r (F). x̃ = s·x;
//   exp_linear  log φ_r = w_rᵀx̃ + c_r − λ‖x̃‖²/2  ⇒  ∂L/∂x = s Σ_r γ_r (w_r − λ x̃)
//   elu1        log φ_d = log(elu(x̃_d) + 1)     ⇒  ∂L/∂x_d = s γ_d (x̃_d > 0 ? 1/(x̃_d + 1) : 1)
template <class T>
void kernel_features_backward(T* dx, const T* x, const T* gamma, const KernelFeatures<T>& map) {
    const std::size_t D = map.dim, F = map.features;
    const T s = static_cast<T>(map.input_scale);
    if (map.kind == KernelMapKind::elu1) {
        for (std::size_t d = 0; d < D; ++d) {
            const T v = s * x[d];
            dx[d] += s * gamma[d] * (v > T(0) ? T(1) / (v + T(1)) : T(1));
        }
        return;
    }
    T total = T(0);
    for (std::size_t r = 0; r < F; ++r) total += gamma[r];
    const T lambda = static_cast<T>(map.lambda);
    for (std::size_t d = 0; d < D; ++d) {
        const T* row = map.w.data() + d * F;
        T sum = T(0);
        for (std::size_t r = 0; r < F; ++r) sum += gamma[r] * row[r];
        dx[d] += s * (sum - lambda * s * x[d] * total);
    }
}

// The kernel prompt's part of one head's backward, row i: returns δ_i's prompt share g_iᵀu_i after adding (K2)-(K3)
// into grad (b̂_kv (F, D) then b̂_d (F)) and (K5)-(K6) into dx (∂L/∂ of the map's input, D). `window` = Σ_j p_ij dP_ij.
template <class T>
T prompt_row_backward(T* grad, T* dx, std::vector<T>& gamma, const SoftmaxAttentionCache<T>& cache, std::size_t row, const T* g,
                      const T* x, T window, const SoftmaxPromptHead<T>& head, std::size_t D) {
    const T* u = cache.prompt_out.data() + row * D;
    const T prompt_share = dot_lanes(g, u, D);
    const T delta = window + prompt_share;  // δ_i = g_iᵀO_i
    const T* coef = cache.prompt_coef.data() + row * 2;
    if (head.features == nullptr || (coef[0] == T(0) && coef[1] == T(0))) return prompt_share;
    const std::size_t F = head.features->features;
    const T* phi = cache.prompt_phi.data() + row * cache.prompt_features;
    gamma.resize(F);
    for (std::size_t r = 0; r < F; ++r) {
        if (phi[r] == T(0)) {
            gamma[r] = T(0);
            continue;
        }
        const T a = coef[0] * phi[r], b = coef[1] * delta * phi[r];
        axpy(grad + r * D, a, g, D);  // (K2)
        grad[cache.prompt_features * D + r] -= b;  // (K3)
        gamma[r] = a * dot_lanes(head.b_kv.data() + r * D, g, D) - b * head.b_d[r];  // (K5)
    }
    kernel_features_backward(dx, x, gamma.data(), *head.features);
    return prompt_share;
}

}  // namespace

template <class T>
void softmax_attention_forward(T* out, SoftmaxAttentionCache<T>& cache, const T* qkv, const AttentionShape& shape,
                               const SoftmaxAttentionOptions<T>& options) {
    const profile::Scope scope(profile::Kind::attention);
    check_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, C = shape.width();
    const RopeTable* rope = options.rope;
    cache.resize(shape, rope != nullptr);
    const T scale = static_cast<T>(score_scale(shape, options));
    const SmallGemm sg = options.small_gemm;  // the per-(batch, head) products' kernel (model.small_gemm)
    const std::size_t J = product_keys(shape, options);  // keys [0, J) enter the products (product_keys)
    resize_prompt_storage(cache, shape, options);
#pragma omp parallel
    {
        // per-thread scratch kept between calls (no allocation inside a training step); every element is written
        // before it is read
        thread_local std::vector<T> prompt_out;
        thread_local PromptPart<T> part;
        prompt_out.resize(options.prompt ? TT * D : 0);
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            T* probs = cache.probs.data() + bh * TT * TT;
            // q, k, v of this head read in place: rows 3C apart in qkv (B, T, 3C); the head's output rows C apart in
            // out (B, T, C). The products read and write the same values as through gathered copies, bit for bit.
            const T* q = qkv + b * TT * 3 * C + h * D;
            const T* k = q + C;
            const T* v = q + 2 * C;
            T* o = out + b * TT * C + h * D;
            // the rows the scores use, R_i q_i and R_j k_j: with RoPE rotated into the cache, else q and k themselves
            const T* rq = q;
            const T* rk = k;
            std::size_t r_stride = 3 * C;
            if (rope != nullptr) {
                T* rot_q = cache.rot_q.data() + bh * TT * D;
                T* rot_k = cache.rot_k.data() + bh * TT * D;
                rotate_rows(rot_q, D, q, 3 * C, TT, *rope, false);
                rotate_rows(rot_k, D, k, 3 * C, TT, *rope, false);
                rq = rot_q;
                rk = rot_k;
                r_stride = D;
            }
            gemm<T>(strided_matrix(probs, TT, J, TT), strided_matrix(rq, TT, D, r_stride), strided_matrix(rk, J, D, r_stride),
                    false, true, scale, T(0), sg);
            const SoftmaxPromptHead<T>* prompt = nullptr;
            if (options.prompt != nullptr)
                prompt = &(*options.prompt)[options.prompt->size() == H ? h : bh];
            // Row softmax over the visible keys, max-shifted. Row i sees keys [0, seen) and, with `self`, key i ≥ seen
            // (attention_mask.hpp); the others are +0. The sum adds the visible terms in ascending j as a loop over all
            // j did: the +0 terms it also added change no bit (total + (+0) = total), nor does their product with inverse.
            for (std::size_t i = 0; i < TT; ++i) {
                T* row = probs + i * TT;
                const std::size_t seen = options.mask.visible_prefix(i, TT);
                const bool self = options.mask.self_extra(i, TT) && i >= seen;
                T highest = -std::numeric_limits<T>::infinity();
                for (std::size_t j = 0; j < seen; ++j) highest = std::max(highest, row[j]);
                if (self) highest = std::max(highest, row[i]);
                if (prompt != nullptr) {
                    prompt_part(part, rq + i * r_stride, q + i * 3 * C, *prompt, D, scale);
                    highest = std::max(highest, part.shift);
                }
                T total = T(0);
                for (std::size_t j = 0; j < seen; ++j) {
                    row[j] = std::exp(row[j] - highest);
                    total += row[j];
                }
                const T self_term = self ? std::exp(row[i] - highest) : T(0);
                std::fill(row + seen, row + TT, T(0));
                if (self) {
                    row[i] = self_term;
                    total += self_term;
                }
                if (prompt != nullptr) total += part.mass * std::exp(part.shift - highest);
                const T inverse = total > T(0) ? T(1) / total : T(0);  // no visible key: the output is 0
                for (std::size_t j = 0; j < seen; ++j) row[j] *= inverse;
                if (self) row[i] *= inverse;
                if (prompt != nullptr) {  // the prompt's numerator, on the same scale
                    const T factor = std::exp(part.shift - highest) * inverse;
                    for (std::size_t d = 0; d < D; ++d) prompt_out[i * D + d] = factor * part.num[d];
                    store_prompt_row(cache, bh * TT + i, prompt_out.data() + i * D, part, *prompt, highest, inverse, D);
                }
            }
            // out = P v, written in place (the bits of the product into a buffer copied into out)
            gemm<T>(strided_matrix(o, TT, D, C), strided_matrix<const T>(probs, TT, J, TT), strided_matrix(v, J, D, 3 * C), false,
                    false, T(1), T(0), sg);
            if (prompt != nullptr)
                for (std::size_t t = 0; t < TT; ++t)
                    for (std::size_t d = 0; d < D; ++d) o[t * C + d] += prompt_out[t * D + d];
        }
    }
}

// d_qkv is written in place, per head, where the accumulating form (before issue 23) gathered q, k, v, computed into
// per-head buffers and added those with scatter_head into a zeroed d_qkv: element for element 0 + g there, g here, the
// same bits unless g is −0 (0 + (−0) = +0). The products are written with β = 0 and both kernels start their sums at +0
// (OpenBLAS zero-fills C and adds α·acc; the blocked kernel writes α·acc): such a result is −0 only when a nonzero value
// underflows to −0 (a subnormal-range gradient; never met in the byte comparisons of tests/
// test_softmax_attention_in_place.cpp and the cpu2 exports). Even then the two are equal as numbers, and d_qkv only feeds
// sums started at +0 (linear_backward), which a zero term of either sign leaves unchanged. RoPE's rotated rows are −0
// from +0 inputs whenever +0·cos − (+0)·sin has cos < 0: those rows get the + 0 written out.
template <class T>
void softmax_attention_backward(T* d_qkv, const T* d_out, const T* qkv, const SoftmaxAttentionCache<T>& cache,
                                const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options) {
    const profile::Scope scope(profile::Kind::attention);
    check_options(shape, options);
    const std::size_t B = shape.batch, TT = shape.time, H = shape.heads, D = shape.head_dim, C = shape.width();
    const std::size_t F = cache.prompt_features;
    if (options.prompt != nullptr) {
        for (const auto& head : *options.prompt)
            ICLAB_CHECK(head.cache_length == 0, "softmax attention backward with an exact prompt cache (not implemented: kernel terms only)");
        ICLAB_CHECK(cache.prompt_out.size() == B * H * TT * D && cache.prompt_phi.size() == B * H * TT * F,
                    "softmax attention backward: the cache is not from a forward pass with this prompt");
    }
    // (K2)-(K3) per (b, h): b̂_kv (F, D) then b̂_d (F), summed into the heads' d_b_kv, d_b_d after the parallel region
    std::vector<T> prompt_grads(options.prompt != nullptr ? B * H * F * (D + 1) : 0, T(0));
    const RopeTable* rope = options.rope;
    const std::size_t rotated_size = rope != nullptr ? B * H * TT * D : 0;
    ICLAB_CHECK(cache.probs.size() == B * H * TT * TT && cache.rot_q.size() == rotated_size && cache.rot_k.size() == rotated_size,
                "softmax attention backward: the cache is not from a forward pass of this shape and RoPE setting");
    const T scale = static_cast<T>(score_scale(shape, options));
    const SmallGemm sg = options.small_gemm;
    const std::size_t J = product_keys(shape, options);  // keys [0, J) enter the products (product_keys)
#pragma omp parallel
    {
        thread_local std::vector<T> d_rot_q, d_rot_k, d_probs;  // kept between calls; every element written before read
        thread_local std::vector<T> d_kernel_x, gamma;         // prompt rows: ∂L/∂(the map's input) (T, D), γ (F)
        d_probs.resize(TT * TT);
        if (options.prompt != nullptr) d_kernel_x.assign(TT * D, T(0));
        d_rot_q.resize(rope != nullptr ? TT * D : 0);
        d_rot_k.resize(rope != nullptr ? TT * D : 0);
#pragma omp for schedule(static)
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const std::size_t b = bh / H, h = bh % H;
            const T* probs = cache.probs.data() + bh * TT * TT;
            // q, k, v and their gradients in place (rows 3C apart), d_out's rows C apart
            const auto [q, k, v, d_q, d_k, d_v] = head_in_place(qkv, d_qkv, b, h, shape);
            const T* d_o = d_out + b * TT * C + h * D;
            const T* rq = rope != nullptr ? cache.rot_q.data() + bh * TT * D : q;
            const T* rk = rope != nullptr ? cache.rot_k.data() + bh * TT * D : k;
            const std::size_t r_stride = rope != nullptr ? D : 3 * C;
            // out = P v:  dP = d_out vᵀ;  d v = Pᵀ d_out
            gemm<T>(strided_matrix(d_probs.data(), TT, J, TT), strided_matrix(d_o, TT, D, C), strided_matrix(v, J, D, 3 * C),
                    false, true, T(1), T(0), sg);
            gemm<T>(strided_matrix(d_v, J, D, 3 * C), strided_matrix<const T>(probs, TT, J, TT), strided_matrix(d_o, TT, D, C),
                    true, false, T(1), T(0), sg);
            // dP's columns j ≥ J (read by the softmax step below, times p_ij = +0: set, so that no stale NaN of this
            // thread's buffer reaches inner) and d v's rows j ≥ J: +0
            if (J < TT) {
                for (std::size_t i = 0; i < TT; ++i) std::fill(d_probs.data() + i * TT + J, d_probs.data() + (i + 1) * TT, T(0));
                for (std::size_t j = J; j < TT; ++j) std::fill(d_v + j * 3 * C, d_v + (j * 3 * C) + D, T(0));
            }
            const SoftmaxPromptHead<T>* prompt = nullptr;
            if (options.prompt != nullptr) prompt = &(*options.prompt)[options.prompt->size() == H ? h : bh];
            const bool kernel_rotated = prompt != nullptr && (rope == nullptr || prompt->rotate_query);  // φ of R_i q_i
            // softmax: d s_ij = p_ij (dP_ij − Σ_j' p_ij' dP_ij'); the scale folds into the next products. With a prompt
            // (K4): the inner sum is δ_i = g_iᵀO_i, which adds the prompt's g_iᵀu_i; (K2)-(K3), (K5)-(K6) on the way
            for (std::size_t i = 0; i < TT; ++i) {
                const T* p = probs + i * TT;
                T* dp = d_probs.data() + i * TT;
                T inner = dot_lanes(p, dp, TT);
                if (prompt != nullptr)
                    inner += prompt_row_backward(prompt_grads.data() + bh * F * (D + 1), d_kernel_x.data() + i * D, gamma, cache,
                                                 bh * TT + i, d_o + i * C, kernel_rotated ? rq + i * r_stride : q + i * 3 * C, inner,
                                                 *prompt, D);
                for (std::size_t j = 0; j < TT; ++j) dp[j] = p[j] * (dp[j] - inner);
            }
            // s = scale · rq rkᵀ:  d rq = scale · dS rk;  d rk = scale · dSᵀ rq;  then d q_t = R_tᵀ d rq_t (RoPE), or
            // d q = d rq written in place
            T* out_q = rope != nullptr ? d_rot_q.data() : d_q;
            T* out_k = rope != nullptr ? d_rot_k.data() : d_k;
            const std::size_t out_stride = rope != nullptr ? D : 3 * C;
            gemm<T>(strided_matrix(out_q, TT, D, out_stride), strided_matrix<const T>(d_probs.data(), TT, J, TT),
                    strided_matrix(rk, J, D, r_stride), false, false, scale, T(0), sg);
            gemm<T>(strided_matrix(out_k, J, D, out_stride), strided_matrix<const T>(d_probs.data(), TT, J, TT),
                    strided_matrix(rq, TT, D, r_stride), true, false, scale, T(0), sg);
            for (std::size_t j = J; j < TT; ++j) std::fill(out_k + j * out_stride, out_k + j * out_stride + D, T(0));  // d rk
            if (kernel_rotated)  // (K6) into d(R_i q_i) (or d q_i without RoPE), before the inverse rotation
                for (std::size_t i = 0; i < TT; ++i) axpy(out_q + i * out_stride, T(1), d_kernel_x.data() + i * D, D);
            if (rope != nullptr) {
                rotate_rows(d_q, 3 * C, d_rot_q.data(), D, TT, *rope, true);
                rotate_rows(d_k, 3 * C, d_rot_k.data(), D, TT, *rope, true);
                for (std::size_t t = 0; t < TT; ++t)  // 0 + g, the accumulating form's bits (−0 becomes +0)
                    for (std::size_t d = 0; d < D; ++d) {
                        d_q[t * 3 * C + d] += T(0);
                        d_k[t * 3 * C + d] += T(0);
                    }
            }
            if (prompt != nullptr && !kernel_rotated)  // φ of the unrotated q_i (RopeConvention::unrotated)
                for (std::size_t i = 0; i < TT; ++i) axpy(d_q + i * 3 * C, T(1), d_kernel_x.data() + i * D, D);
            if (prompt != nullptr) std::fill(d_kernel_x.begin(), d_kernel_x.end(), T(0));
        }
    }
    if (options.prompt != nullptr)  // (K2)-(K3) summed over the sequences sharing a head, in the order of b
        for (std::size_t bh = 0; bh < B * H; ++bh) {
            const SoftmaxPromptHead<T>& head = (*options.prompt)[options.prompt->size() == H ? bh % H : bh];
            if (head.features == nullptr) continue;
            const std::size_t Fh = head.features->features;
            const T* grad = prompt_grads.data() + bh * F * (D + 1);
            if (head.d_b_kv != nullptr) axpy(head.d_b_kv, T(1), grad, Fh * D);
            if (head.d_b_d != nullptr) axpy(head.d_b_d, T(1), grad + F * D, Fh);
        }
}

template <class T>
void softmax_attention_step(T* out, T* key_cache, T* value_cache, std::size_t capacity, const T* qkv, std::size_t position,
                            const AttentionShape& shape, const SoftmaxAttentionOptions<T>& options) {
    ICLAB_CHECK(options.mask.plain_causal(), "incremental decoding needs the causal mask");
    ICLAB_CHECK(position < capacity, "position " << position << " is beyond the key cache (" << capacity << " rows)");
    AttentionShape checked = shape;
    checked.time = position + 1;
    checked.batch = 1;
    check_options(checked, options);
    const std::size_t H = shape.heads, D = shape.head_dim, C = shape.width();
    const T scale = static_cast<T>(score_scale(shape, options));
    std::vector<T> rot_q(D), scores(position + 1);
    PromptPart<T> part;
    for (std::size_t h = 0; h < H; ++h) {
        const T* q = qkv + h * D;
        T* keys = key_cache + h * capacity * D;
        T* values = value_cache + h * capacity * D;
        if (options.rope != nullptr) {
            options.rope->rotate(rot_q.data(), q, position, false);
            options.rope->rotate(keys + position * D, qkv + C + h * D, position, false);
        } else {
            std::copy(q, q + D, rot_q.begin());
            std::copy(qkv + C + h * D, qkv + C + (h + 1) * D, keys + position * D);
        }
        std::copy(qkv + 2 * C + h * D, qkv + 2 * C + (h + 1) * D, values + position * D);
        // s_ij = (R_i q_i)ᵀ(R_j k_j)·scale, j ≤ i; p_ij = e^{s_ij − m} / (Σ_j e^{s_ij − m} + prompt mass)
        T highest = -std::numeric_limits<T>::infinity();
        for (std::size_t j = 0; j <= position; ++j) {
            scores[j] = scale * dot_lanes(rot_q.data(), keys + j * D, D);
            highest = std::max(highest, scores[j]);
        }
        const SoftmaxPromptHead<T>* prompt = options.prompt != nullptr ? &(*options.prompt)[h] : nullptr;
        if (prompt != nullptr) {
            prompt_part(part, rot_q.data(), q, *prompt, D, scale);
            highest = std::max(highest, part.shift);
        }
        T total = T(0);
        for (std::size_t j = 0; j <= position; ++j) {
            scores[j] = std::exp(scores[j] - highest);
            total += scores[j];
        }
        if (prompt != nullptr) total += part.mass * std::exp(part.shift - highest);
        const T inverse = T(1) / total;
        T* o = out + h * D;
        std::fill(o, o + D, T(0));
        for (std::size_t j = 0; j <= position; ++j) axpy(o, scores[j] * inverse, values + j * D, D);
        if (prompt != nullptr) axpy(o, std::exp(part.shift - highest) * inverse, part.num.data(), D);
    }
}

template void softmax_attention_step<float>(float*, float*, float*, std::size_t, const float*, std::size_t,
                                            const AttentionShape&, const SoftmaxAttentionOptions<float>&);
template void softmax_attention_step<double>(double*, double*, double*, std::size_t, const double*, std::size_t,
                                             const AttentionShape&, const SoftmaxAttentionOptions<double>&);
template void softmax_attention_forward<float>(float*, SoftmaxAttentionCache<float>&, const float*, const AttentionShape&,
                                               const SoftmaxAttentionOptions<float>&);
template void softmax_attention_forward<double>(double*, SoftmaxAttentionCache<double>&, const double*,
                                                const AttentionShape&, const SoftmaxAttentionOptions<double>&);
template void softmax_attention_backward<float>(float*, const float*, const float*, const SoftmaxAttentionCache<float>&,
                                                const AttentionShape&, const SoftmaxAttentionOptions<float>&);
template void softmax_attention_backward<double>(double*, const double*, const double*,
                                                 const SoftmaxAttentionCache<double>&, const AttentionShape&,
                                                 const SoftmaxAttentionOptions<double>&);

}  // namespace iclab::nn
