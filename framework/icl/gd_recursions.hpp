#pragma once
// The weight-space gradient-descent recursions and stationary points of paper 003 (Ding et al., "CausalLM is
// not optimal for in-context learning"), written independently of the LSA (lsa_gd.hpp) so that each checks the
// other: Props 1/2/6 say the constructed LSA's outputs are these recursions' predictions.
//
// One sequence: x (rows ≥ n, d) row-major with the n ICEs in rows 0..n−1, y (≥ n). Paper indices are 1-based
// (j = 1..n); code rows are 0-based, so the paper's j is row j − 1 here. Weight vectors are rows (d values).
#include <cstddef>
#include <vector>

namespace iclab::icl {

// Eq. 3 (prefixLM): w⁽ˡ⁾ = w⁽ˡ⁻¹⁾ + (η/n) Σ_{i≤n} (y_i − w⁽ˡ⁻¹⁾x_i) x_iᵀ, w⁽⁰⁾ = w0 (empty: 0).
// Returns (layers + 1, d): w⁽⁰⁾ .. w⁽ᴸ⁾.
std::vector<double> prefix_gd(const double* x, const double* y, std::size_t n, std::size_t d, double eta, std::size_t layers,
                              const std::vector<double>& w0);

// Eq. 10 (causalLM): w_j⁽ˡ⁾ = w_j⁽ˡ⁻¹⁾ + (η/n) Σ_{i≤j} (y_i − w_i⁽ˡ⁻¹⁾x_i) x_iᵀ;
// Eq. 18 (causalLM2, length_normalized): the same with η/j. w_j⁽⁰⁾ = w0 for every j.
// Returns (layers + 1, n, d): w_1..w_n after each layer.
std::vector<double> causal_gd(const double* x, const double* y, std::size_t n, std::size_t d, double eta, std::size_t layers,
                              const std::vector<double>& w0, bool length_normalized);

// One step of the coefficient recursion (w_j = Σ_{i≤j} a_i x_iᵀ, or (1/j) Σ for causalLM2):
//   Eq. 15 (Prop 4):  a_i ← a_i + (η/n) (y_i − Σ_{k≤i} a_k x_kᵀx_i)
//   Prop 7:           a_i ← a_i + η (y_i − (1/i) Σ_{k≤i} a_k x_kᵀx_i)
// All a_i update from the previous layer's a (Jacobi-style, as in the layer). a has n values.
void causal_coefficients_step(std::vector<double>& a, const double* x, const double* y, std::size_t n, std::size_t d, double eta,
                              bool length_normalized);

// Prop 4: T (n, n) with T_ki = x_kᵀx_i for k ≤ i, 0 below the diagonal (upper triangular).
// Prop 7 (length_normalized): S_ki = x_kᵀx_i / i (column i scaled by 1/i).
std::vector<double> causal_system_matrix(const double* x, std::size_t n, std::size_t d, bool length_normalized);

// The stationary a* of y = a*T (Prop 4) or y = a*S (Prop 7) by forward substitution:
//   a*_j = (y_j − Σ_{i<j} a*_i x_iᵀx_j) / |x_j|²       (Prop 4)
//   a*_j = (j·y_j − Σ_{i<j} a*_i x_iᵀx_j) / |x_j|²     (Prop 7)
std::vector<double> causal_stationary_coefficients(const double* x, const double* y, std::size_t n, std::size_t d,
                                                   bool length_normalized);

// w*_j = Σ_{i≤j} a*_i x_iᵀ (Prop 4), or (1/j) Σ_{i≤j} a*_i x_iᵀ (Prop 7), for j = 1..n: (n, d).
std::vector<double> causal_stationary_weights(const std::vector<double>& a, const double* x, std::size_t n, std::size_t d,
                                              bool length_normalized);

// Prop 3: the prefix stationary point w* solving y Xᵀ = w* XXᵀ (least squares on the n ICEs), by
// linalg::solve (LU with partial pivoting) on XXᵀ.
std::vector<double> prefix_stationary_weights(const double* x, const double* y, std::size_t n, std::size_t d);

// XXᵀ (d, d) = Σ_{i≤n} x_i x_iᵀ of the n ICEs (the paper's X is d×n).
std::vector<double> ice_gram(const double* x, std::size_t n, std::size_t d);

}  // namespace iclab::icl
