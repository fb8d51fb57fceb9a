#include "framework/core/dense_linalg.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/core/check.hpp"
#include "framework/core/multiply_add.hpp"

namespace iclab::linalg {

namespace {
bool all_finite(const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}
}  // namespace

std::vector<double> symmetric_eigenvalues(const std::vector<double>& a, std::size_t n) {
    ICLAB_CHECK(a.size() == n * n, "symmetric_eigenvalues: " << a.size() << " values for a " << n << "x" << n << " matrix");
    ICLAB_CHECK(all_finite(a), "symmetric_eigenvalues: the matrix has a value that is not finite");
    std::vector<double> m(n * n);  // the symmetric matrix from a's upper triangle, rotated in place
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = r; c < n; ++c) m[r * n + c] = m[c * n + r] = a[r * n + c];
    constexpr double eps = std::numeric_limits<double>::epsilon();
    constexpr int kMaxSweeps = 60;
    bool converged = n < 2;
    for (int sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
        converged = true;
        for (std::size_t p = 0; p + 1 < n; ++p)
            for (std::size_t q = p + 1; q < n; ++q) {
                const double apq = m[p * n + q], app = m[p * n + p], aqq = m[q * n + q];
                if (std::abs(apq) <= eps * std::sqrt(std::abs(app) * std::abs(aqq))) {
                    // negligible against its diagonal (relative perturbation below ε): set to zero, no rotation
                    m[p * n + q] = m[q * n + p] = 0.0;
                    continue;
                }
                converged = false;
                // The rotation (c, s) that zeroes m_pq: t = tan φ the smaller root of t² + 2θt − 1 = 0,
                // θ = (a_qq − a_pp) / (2 a_pq) (for huge θ, t = 1/(2θ) without overflowing θ²).
                const double theta = (aqq - app) / (2.0 * apq);
                const double t = std::abs(theta) > 1e150 ? 1.0 / (2.0 * theta)
                                                         : std::copysign(1.0, theta) / (std::abs(theta) + std::sqrt(multiply_add(theta, theta, 1.0)));
                const double c = 1.0 / std::sqrt(multiply_add(t, t, 1.0)), s = t * c, tau = s / (1.0 + c);
                m[p * n + p] = multiply_add(-t, apq, app);
                m[q * n + q] = multiply_add(t, apq, aqq);
                m[p * n + q] = m[q * n + p] = 0.0;
                for (std::size_t r = 0; r < n; ++r) {
                    if (r == p || r == q) continue;
                    const double g = m[r * n + p], h = m[r * n + q];
                    // g' = g − s (h + τ g),  h' = h + s (g − τ h): the rotation written with τ = s / (1 + c)
                    const double g_new = multiply_add(-s, multiply_add(tau, g, h), g);
                    const double h_new = multiply_add(s, multiply_add(-tau, h, g), h);
                    m[r * n + p] = m[p * n + r] = g_new;
                    m[r * n + q] = m[q * n + r] = h_new;
                }
            }
    }
    ICLAB_CHECK(converged, "symmetric_eigenvalues: Jacobi rotations did not converge in " << kMaxSweeps << " sweeps");
    std::vector<double> eigenvalues(n);
    for (std::size_t i = 0; i < n; ++i) eigenvalues[i] = m[i * n + i];
    std::sort(eigenvalues.begin(), eigenvalues.end());
    return eigenvalues;
}

std::vector<double> solve(const std::vector<double>& a, std::size_t n, const std::vector<double>& b, std::size_t k) {
    ICLAB_CHECK(a.size() == n * n && b.size() == n * k,
                "solve: A has " << a.size() << " values, B " << b.size() << ", expected " << n * n << " and " << n * k);
    if (n == 0 || k == 0) return b;
    std::vector<double> lu = a, x = b;  // (n, n) factored in place; (n, k) eliminated, then solved, in place
    for (std::size_t j = 0; j < n; ++j) {
        std::size_t pivot = j;  // the first row with the largest |lu_ij|, i ≥ j
        for (std::size_t i = j + 1; i < n; ++i)
            if (std::abs(lu[i * n + j]) > std::abs(lu[pivot * n + j])) pivot = i;
        const double u = lu[pivot * n + j];
        ICLAB_CHECK(std::isfinite(u), "solve: a pivot is not finite (column " << j << " of " << n << ")");
        ICLAB_CHECK(u != 0.0, "solve: the matrix is exactly singular (no nonzero pivot in column " << j << " of " << n << ")");
        if (pivot != j) {
            std::swap_ranges(lu.begin() + pivot * n, lu.begin() + (pivot + 1) * n, lu.begin() + j * n);
            std::swap_ranges(x.begin() + pivot * k, x.begin() + (pivot + 1) * k, x.begin() + j * k);
        }
        for (std::size_t i = j + 1; i < n; ++i) {  // row_i −= l_ij row_j, in A and in B
            const double l = lu[i * n + j] / u;
            lu[i * n + j] = l;
            for (std::size_t c = j + 1; c < n; ++c) lu[i * n + c] = multiply_add(-l, lu[j * n + c], lu[i * n + c]);
            for (std::size_t c = 0; c < k; ++c) x[i * k + c] = multiply_add(-l, x[j * k + c], x[i * k + c]);
        }
    }
    for (std::size_t i = n; i-- > 0;)  // U X = L⁻¹ P B, last row first; each sum over q in ascending order
        for (std::size_t c = 0; c < k; ++c) {
            double sum = x[i * k + c];
            for (std::size_t q = i + 1; q < n; ++q) sum = multiply_add(-lu[i * n + q], x[q * k + c], sum);
            x[i * k + c] = sum / lu[i * n + i];
        }
    return x;
}

double condition_number_2(const std::vector<double>& a, std::size_t n) {
    ICLAB_CHECK(a.size() == n * n, "condition_number_2: " << a.size() << " values for a " << n << "x" << n << " matrix");
    std::vector<double> gram(n * n, 0.0);  // aᵀa, each element summed over r in order
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < n; ++c) gram[i * n + c] = multiply_add(a[r * n + i], a[r * n + c], gram[i * n + c]);
    const std::vector<double> eigenvalues = symmetric_eigenvalues(gram, n);
    ICLAB_CHECK(eigenvalues.front() > 0.0, "condition_number_2: singular matrix (smallest eigenvalue of aᵀa " << eigenvalues.front() << ")");
    return std::sqrt(eigenvalues.back() / eigenvalues.front());
}

}  // namespace iclab::linalg
