#pragma once
// Paper 004's single Performer attention layer (§5.1) with its three modifications (§4.1-4.3), for training
// (Fig. 5; specs/gd_duals.md §4, §9). One sequence h (T, C) of tokens h_j = [x_j; y_j], the query h_T = [x_T; 0]
// last; only the query's output is computed (the loss reads its y-slot). Row convention, s = C^{-1/4} (spec §0.3):
//   q = h_T W_Q,  k_j = h_j W_K,  v_j = h_j W_V                 (w_qkv (C, 3C) = [W_Q | W_K | W_V], no bias)
//   Eq. 16:  k̃_j = g2(k_j) or g2⁺(k_j),  ṽ_j = g1(v_j),  g(z) = GELU(z G),  g2⁺(z) = GELU(GELU(z G_2b) G_2);
//            queries are not augmented
//   a_j = φ(k̃_j)ᵀφ(q) / D,  D = Σ_{j≤T} φ(k̃_j)ᵀφ(q)        (Eq. 2; D over all T keys, the query's own too, A7)
//            φ = Performer PRF of nn::feature_map_forward with input scale s (the transformer's own map)
//   Eq. 17:  ã_j = a_j − β/k for the k keys j < T with the smallest a_j (ties: smaller index), + β/(T − k) on
//            every other key, the query's included, with renorm (§5.5; A17). The choice S is constant in the
//            gradient (spec §9).
//   ĥ = Σ_j ã_j ṽ_j, then the regularized forms (A8):
//            Eq. 14:  ĥ − α a_T ṽ_T   (the query's own term scaled by 1 − α, the exact dual of Eq. 13)
//            Eq. 15:  ĥ − α ṽ_T       (as printed and as the paper trains it)
// With α = 0, no augmentation and β = 0 this is the query output of the transformer's kernel attention
// (nn::linear_attention_forward, normalizer eps 0, no residual, no W_o); tests/test_gd004_fig5.cpp checks both
// that and each variant against icl::dual_004's attention side.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/nn/feature_map.hpp"

namespace iclab::nn {

enum class RegForm { eq14, eq15 };
RegForm reg_form_from_name(const std::string& name);  // "eq14" | "eq15"

struct Attention004Variant {
    RegForm reg_form = RegForm::eq15;
    double alpha = 0.0;                             // §4.1 (α = 0: off)
    bool g1 = false, g2 = false, g2plus = false;    // §4.2 (g2 and g2plus exclusive)
    std::size_t negatives = 0;                      // §4.3 k (0: off)
    double beta = 0.0;                              // §4.3 β
    bool renorm = true;                             // §5.5 uniform renormalization
};

struct Attention004Shape {
    std::size_t time = 16, width = 12, features = 1200;  // T, C, R
    double scale() const;                                // s = C^{-1/4}
};

// Flat parameter (and gradient) buffer: [w_qkv (C, 3C) | g1 (C, C) | g2 (C, C) | g2b (C, C)]. Every G is stored
// whichever variant runs (an unused G keeps a zero gradient), so one init draw serves all variants of a seed.
struct Attention004Layout {
    std::size_t w_qkv = 0, g1 = 0, g2 = 0, g2b = 0, size = 0;  // offsets, total
};
Attention004Layout attention_004_layout(const Attention004Shape& shape);

// What backward needs from forward.
template <class T>
struct Attention004Cache {
    std::vector<T> raw;                      // (T, 3C) h w_qkv
    std::vector<T> k, v;                     // (T, C) h W_K, h W_V
    std::vector<T> pre_g2b, mid;             // (T, C) k G_2b, GELU(k G_2b)             (g2⁺)
    std::vector<T> pre_g2, keys;             // (T, C) (k or mid) G_2; the keys φ reads
    std::vector<T> pre_g1, values;           // (T, C) v G_1; ṽ
    std::vector<T> query;                    // (C)
    std::vector<T> phi_k, phi_q;             // (T, R), (R)
    std::vector<T> attention, coefficient;   // (T) a_j; the weight of ṽ_j in ĥ (ã_j, and 1 − α at T for eq14)
    std::vector<std::uint8_t> negative;      // (T) 1 for j ∈ S
    T denominator = T(0);                    // D
    std::vector<T> scratch, d_raw, d_phi_k, d_phi_q, d_keys, d_a, d_b;  // backward's work buffers
};

// out (C) = ĥ at the query; h (T, C); params in attention_004_layout; random (C, R) the fixed ω.
template <class T>
void attention_004_forward(T* out, Attention004Cache<T>& cache, const T* h, const T* params, const T* random,
                           const Attention004Shape& shape, const Attention004Variant& variant);

// d_params (layout) += ∂(d_outᵀ ĥ)/∂params; d_out (C).
template <class T>
void attention_004_backward(T* d_params, const T* d_out, const T* h, const T* params, const T* random,
                            Attention004Cache<T>& cache, const Attention004Shape& shape, const Attention004Variant& variant);

}  // namespace iclab::nn
