#pragma once
// Small dense linear algebra in fp64, written out here rather than called from LAPACK: OpenBLAS's LAPACK gives other
// last bits under each of its CPU kernels (docs/performance.md, the bit check across OpenBLAS cores), these loops the
// same bits on every CPU with FMA (each multiply-add one std::fma, as the blocked GEMM kernel; written out, never left
// to the compiler's contraction). Row-major inputs, copied internally. For stationary points, probes and convergence
// rates (paper 003 §4): sizes up to a few hundred, never in a hot loop. tests/test_dense_linalg.cpp checks both
// against closed forms and against LAPACK's dgesv / dsyev.
#include <cstddef>
#include <vector>

namespace iclab::linalg {

// Eigenvalues (ascending) of the symmetric n×n matrix a (row-major; its upper triangle is read, the matrix is taken
// as symmetric). Cyclic Jacobi rotations, row by row (p < q in order), until every off-diagonal element is below
// ε·sqrt(|a_pp a_qq|) (Demmel & Veselić's stopping rule: the eigenvalues of a positive definite matrix to high relative
// accuracy). Error when a is not finite or 60 sweeps do not converge.
std::vector<double> symmetric_eigenvalues(const std::vector<double>& a, std::size_t n);

// X (n, k) solving A X = B for the general n×n A (row-major) and B (n, k) row-major: LU factorization with partial
// pivoting (the first row holding the column's largest |a_ij|, as LAPACK's dgetrf), forward elimination of B with it,
// back substitution. Error when a pivot is exactly zero (A singular) or not finite.
std::vector<double> solve(const std::vector<double>& a, std::size_t n, const std::vector<double>& b, std::size_t k);

// The 2-norm condition number σ_max / σ_min of the n×n matrix a, from the eigenvalues of aᵀa (adequate for the
// moderate condition numbers measured here: aᵀa squares it, so accurate while κ² ≪ 1/ε).
double condition_number_2(const std::vector<double>& a, std::size_t n);

}  // namespace iclab::linalg
