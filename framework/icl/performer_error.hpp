#pragma once
// Paper 004 Fig. 3 (centre / right), Figs. 4, 6, 7, 9 (specs/gd_duals.md §6): how well the Performer attention of
// §3.1 approximates the exact softmax attention of Eq. (1) as the feature count R (the paper's d_r) grows.
//   A_exact = column softmax of (W_K H)ᵀ W_Q H / √C             (Eq. 1; column t = query t, full mask)
//   A_R     = φ(K)ᵀφ(Q) with every column divided by its sum    (Eq. 6 with the column normalization of A1)
//   O       = W_V H A (C × T)
// with the temperature folded into keys and queries, k = C^{-1/4} W_K h, q = C^{-1/4} W_Q h (§0.3), and φ the
// PRF or ORF map of nn::random_kernel_features: φ_r(x) = R^{-1/2} exp(ω_rᵀx − ‖x‖²/2) (A3), E[φ(k)ᵀφ(q)] = exp(kᵀq).
#include <cstddef>
#include <vector>

#include "framework/nn/kernel_features.hpp"

namespace iclab::icl {

// attn (T, T) row j = key j, column t = query t; out (C, T) row-major.
struct AttentionMatrices {
    std::size_t tokens = 0, width = 0;
    std::vector<double> attn, out;
};

// h (T, C) tokens, w_qkv (C, 3C) = [W_Q | W_K | W_V] in row convention (q_t = h_t · W_Q), without temperature.
AttentionMatrices exact_softmax_attention(const std::vector<double>& h, std::size_t tokens, std::size_t width,
                                          const std::vector<double>& w_qkv);
// The same layer with softmax replaced by the random-feature kernel `map` (map.input_scale is the temperature s).
AttentionMatrices performer_attention(const std::vector<double>& h, std::size_t tokens, std::size_t width,
                                      const std::vector<double>& w_qkv, const nn::KernelFeatures<double>& map);

// Spec §6 metrics: MSE_A = mean_ij (A_R − A_exact)², MAE_A = mean |·|, and the same for O.
struct ApproximationError {
    double mse_attn = 0, mae_attn = 0, mse_out = 0, mae_out = 0;
};
ApproximationError approximation_error(const AttentionMatrices& exact, const AttentionMatrices& approx);

// Least-squares slope of log y against log x (the calibration bar of §6: PRF MSE_A ∝ R^{-1}).
double loglog_slope(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace iclab::icl
