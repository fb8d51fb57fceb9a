#pragma once
// Elementwise and row-wise layers as llm.c-style forward/backward pairs.
// Shapes: N rows (= B*T tokens), C channels, V vocabulary, I/O input/output widths.
// Every backward ACCUMULATES (+=) into its gradient outputs; callers zero gradients first (except where a flag says the
// input gradient is written: linear_backward, layernorm_backward).
#include <cstddef>
#include <cstdint>

#include "framework/nn/small_gemm.hpp"

namespace iclab::nn {

// ---- LayerNorm (Ba et al. 2016), eps inside the square root -----------------------------------
// out (N, C), mean (N), rstd (N) <- in (N, C), gamma (C), beta (C)
template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* in, const T* gamma, const T* beta, std::size_t rows,
                       std::size_t channels, double eps = 1e-5);
// Fused (issue 23): sum (N, C) += residual (N, C) in place, then out, mean, rstd = LayerNorm(sum): the pre-LN block's
// residual add and the next LayerNorm in one pass over the rows; bit-identical to the two separate passes.
template <class T>
void residual_layernorm_forward(T* out, T* mean, T* rstd, T* sum, const T* residual, const T* gamma, const T* beta,
                                std::size_t rows, std::size_t channels, double eps = 1e-5);
// d_in (N, C) +=, d_gamma (C) +=, d_beta (C) += <- d_out (N, C), in, gamma, mean, rstd. accumulate = false: d_in is
// written (as 0 + value: the bits of accumulating into a zeroed buffer), not accumulated. d_in may not alias d_out or in
// (the parameter gradients read them while other rows of d_in are written)
template <class T>
void layernorm_backward(T* d_in, T* d_gamma, T* d_beta, const T* d_out, const T* in, const T* gamma, const T* mean,
                        const T* rstd, std::size_t rows, std::size_t channels, bool accumulate = true);

// ---- Linear layer, row-vector convention y = x W + b --------------------------------------------
// out (N, O) <- in (N, I), weight (I, O), bias (O) or nullptr, [+ residual (N, O)]: y = x W + b + r, added in that
// order in the product's parallel region, each block of rows while it is in cache (bit-identical to the bias add and a
// residual add as separate passes after the product). kernel: the products' GEMM kernel (model.large_gemm, gemm.hpp).
template <class T>
void linear_forward(T* out, const T* in, const T* weight, const T* bias, std::size_t rows, std::size_t in_dim,
                    std::size_t out_dim, const T* residual = nullptr, SmallGemm kernel = SmallGemm::blocked);
// d_in (N, I) +=, d_weight (I, O) +=, d_bias (O) += (d_in / d_bias may be nullptr). accumulate_d_in = false: d_in is
// written, not accumulated (the same bits as accumulating into a zeroed buffer: the product with β = 0 adds to +0).
// gelu_pre (N, I), with a written d_in: the layer's input was gelu(gelu_pre) (the MLP's second layer), and d_in is
// returned as the gradient w.r.t. gelu_pre, d_in ⊙ gelu'(gelu_pre), applied to each block of rows in the product's
// parallel region (bit-identical to gelu_backward of the written d_in into a zeroed buffer, up to the sign of zeros).
template <class T>
void linear_backward(T* d_in, T* d_weight, T* d_bias, const T* d_out, const T* in, const T* weight, std::size_t rows,
                     std::size_t in_dim, std::size_t out_dim, bool accumulate_d_in = true,
                     SmallGemm kernel = SmallGemm::blocked, const T* gelu_pre = nullptr);

// ---- GELU, tanh approximation (Hendrycks & Gimpel; GPT-2): 0.5 x (1 + tanh u), u = sqrt(2/π)(x + 0.044715 x³),
// computed as x σ(2u) (the same function); float uses a vectorizable exp (vector_math.hpp, tests/test_gelu.cpp)
template <class T>
void gelu_forward(T* out, const T* in, std::size_t count);
template <class T>
void gelu_backward(T* d_in, const T* d_out, const T* in, std::size_t count);
// The MLP's first layer (issue 23): pre (N, O) = in W + b, out (N, O) = gelu(pre), the bias add and GELU run on each
// block of rows in the product's parallel region while it is in cache (bit-identical to linear_forward with the bias
// followed by gelu_forward). Its backward is linear_backward's gelu_pre for d pre and the next linear_backward's d_bias
// for d b (each column summed over the rows in row order).
template <class T>
void linear_gelu_forward(T* out, T* pre, const T* in, const T* weight, const T* bias, std::size_t rows, std::size_t in_dim,
                         std::size_t out_dim, SmallGemm kernel = SmallGemm::blocked);

// ---- Token embedding ----------------------------------------------------------------------------
// out (N, C) <- tokens (N), table (V, C)
template <class T>
void embedding_forward(T* out, const std::int32_t* tokens, const T* table, std::size_t rows, std::size_t channels,
                       std::size_t vocab);
template <class T>
void embedding_backward(T* d_table, const T* d_out, const std::int32_t* tokens, std::size_t rows,
                        std::size_t channels);

// ---- Softmax cross-entropy with per-position weights --------------------------------------------
// probs (N, V), losses (N) = -log p(target) <- logits (N, V), targets (N)
template <class T>
void cross_entropy_forward(T* probs, T* losses, const T* logits, const std::int32_t* targets, std::size_t rows,
                           std::size_t vocab);
// d_logits (N, V) = weight_n * (probs - onehot(target)) : the gradient of sum_n weight_n * loss_n. Overwrites every
// element (no zeroed buffer needed: at GPT-2's V = 50257 the zero fill alone was a pass over N·V floats).
template <class T>
void cross_entropy_backward(T* d_logits, const T* probs, const std::int32_t* targets, const T* weights,
                            std::size_t rows, std::size_t vocab);

// ---- Squared error with per-position weights ------------------------------------------------------
// losses (N) = Σ_c (out_nc − target_nc)²  <- out (N, O), target (N, O). Returns Σ_n weight_n · loss_n.
template <class T>
double squared_error_forward(T* losses, const T* out, const T* target, const T* weights, std::size_t rows,
                             std::size_t width);
// d_out (N, O) += 2 weight_n (out − target)
template <class T>
void squared_error_backward(T* d_out, const T* out, const T* target, const T* weights, std::size_t rows,
                            std::size_t width);

}  // namespace iclab::nn
