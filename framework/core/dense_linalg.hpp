#pragma once
// Small dense linear algebra in fp64 on LAPACK (OpenBLAS ships it: find_package(BLAS) links libopenblas, which
// exports dsyev_ and dgesv_). Row-major inputs, copied internally; every LAPACK info code is checked and a
// failure throws iclab::Error naming the routine. For stationary points and convergence rates (paper 003 §4):
// sizes up to a few hundred, never in a hot loop.
#include <cstddef>
#include <vector>

namespace iclab::linalg {

// Eigenvalues (ascending) of the symmetric n×n matrix a (row-major; only symmetry is assumed, both triangles
// are read by the copy). LAPACK dsyev, JOBZ = 'N'.
std::vector<double> symmetric_eigenvalues(const std::vector<double>& a, std::size_t n);

// X (n, k) solving A X = B for the general n×n A (row-major) and B (n, k) row-major. LAPACK dgesv (LU with
// partial pivoting). Error when A is exactly singular (info > 0).
std::vector<double> solve(const std::vector<double>& a, std::size_t n, const std::vector<double>& b, std::size_t k);

// The 2-norm condition number σ_max / σ_min of the n×n matrix a, from the eigenvalues of aᵀa (adequate for the
// moderate condition numbers measured here: aᵀa squares it, so accurate while κ² ≪ 1/ε).
double condition_number_2(const std::vector<double>& a, std::size_t n);

}  // namespace iclab::linalg
