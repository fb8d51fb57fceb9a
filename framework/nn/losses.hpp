#pragma once
// Loss modules of the reference models in the "ICL = gradient descent" duals (specs/gd_duals.md §0.6), as
// llm.c-style forward/backward pairs. Rows are samples: out (N, O) are the model's predictions ŷ_i,
// target (N, O) the training targets y_i. Every backward ACCUMULATES (+=) into its gradient output.
//   mse_half_mean     L = (1/N) Σ_i ½‖ŷ_i − y_i‖²          paper 002 Thm 1 (the ½ is required, spec B1);
//                                                           von Oswald et al. 2023 Eq. 1 with N = number of pairs
//   contrastive_dot   L = −scale Σ_i y_iᵀ ŷ_i              paper 004 Eq. 9 with scale = 1/(η D)
//   frobenius_l2      L = (coefficient/2) ‖W‖²_F           paper 004 Eq. 13's regularizer, coefficient = α/η
#include <cstddef>

namespace iclab::nn {

// Returns L; d_out (N, O) += (1/N)(ŷ − y) in the backward.
template <class T>
double mse_half_mean_forward(const T* out, const T* target, std::size_t rows, std::size_t width);
template <class T>
void mse_half_mean_backward(T* d_out, const T* out, const T* target, std::size_t rows, std::size_t width);

// Returns L; d_out (N, O) += −scale · y (the loss is linear in ŷ, so out is not needed).
template <class T>
double contrastive_dot_forward(const T* out, const T* target, std::size_t rows, std::size_t width, double scale);
template <class T>
void contrastive_dot_backward(T* d_out, const T* target, std::size_t rows, std::size_t width, double scale);

// Returns L over the `count` entries of weight; d_weight += coefficient · W.
template <class T>
double frobenius_l2_forward(const T* weight, std::size_t count, double coefficient);
template <class T>
void frobenius_l2_backward(T* d_weight, const T* weight, std::size_t count, double coefficient);

}  // namespace iclab::nn
