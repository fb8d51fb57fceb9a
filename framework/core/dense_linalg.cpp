#include "framework/core/dense_linalg.hpp"

#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"

// LAPACK's Fortran entry points (column-major, arguments by pointer), from libopenblas.
extern "C" {
void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
            const int* lwork, int* info);
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b, const int* ldb, int* info);
}

namespace iclab::linalg {

std::vector<double> symmetric_eigenvalues(const std::vector<double>& a, std::size_t n) {
    ICLAB_CHECK(a.size() == n * n, "symmetric_eigenvalues: " << a.size() << " values for a " << n << "x" << n << " matrix");
    if (n == 0) return {};
    std::vector<double> column_major(n * n), eigenvalues(n);
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < n; ++c) column_major[c * n + r] = a[r * n + c];
    const int size = static_cast<int>(n);
    int info = 0, lwork = -1;
    double query = 0.0;
    dsyev_("N", "U", &size, column_major.data(), &size, eigenvalues.data(), &query, &lwork, &info);  // workspace query
    ICLAB_CHECK(info == 0, "LAPACK dsyev workspace query failed (info " << info << ")");
    lwork = std::max(1, static_cast<int>(query));
    std::vector<double> work(static_cast<std::size_t>(lwork));
    dsyev_("N", "U", &size, column_major.data(), &size, eigenvalues.data(), work.data(), &lwork, &info);
    ICLAB_CHECK(info == 0, "LAPACK dsyev failed (info " << info << (info > 0 ? ": no convergence" : ": illegal argument") << ")");
    return eigenvalues;
}

std::vector<double> solve(const std::vector<double>& a, std::size_t n, const std::vector<double>& b, std::size_t k) {
    ICLAB_CHECK(a.size() == n * n && b.size() == n * k,
                "solve: A has " << a.size() << " values, B " << b.size() << ", expected " << n * n << " and " << n * k);
    if (n == 0 || k == 0) return b;
    std::vector<double> lu(n * n), x(n * k);
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < n; ++c) lu[c * n + r] = a[r * n + c];
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < k; ++c) x[c * n + r] = b[r * k + c];
    const int size = static_cast<int>(n), rhs = static_cast<int>(k);
    std::vector<int> pivots(n);
    int info = 0;
    dgesv_(&size, &rhs, lu.data(), &size, pivots.data(), x.data(), &size, &info);
    ICLAB_CHECK(info == 0, "LAPACK dgesv failed (info " << info
                                                       << (info > 0 ? ": the matrix is exactly singular" : ": illegal argument") << ")");
    std::vector<double> result(n * k);
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < k; ++c) result[r * k + c] = x[c * n + r];
    return result;
}

double condition_number_2(const std::vector<double>& a, std::size_t n) {
    ICLAB_CHECK(a.size() == n * n, "condition_number_2: " << a.size() << " values for a " << n << "x" << n << " matrix");
    std::vector<double> gram(n * n, 0.0);  // aᵀa
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t c = 0; c < n; ++c) gram[i * n + c] += a[r * n + i] * a[r * n + c];
    const std::vector<double> eigenvalues = symmetric_eigenvalues(gram, n);
    ICLAB_CHECK(eigenvalues.front() > 0.0, "condition_number_2: singular matrix (smallest eigenvalue of aᵀa " << eigenvalues.front() << ")");
    return std::sqrt(eigenvalues.back() / eigenvalues.front());
}

}  // namespace iclab::linalg
