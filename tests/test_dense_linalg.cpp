// framework/core/dense_linalg: the written-out LU solve and Jacobi eigenvalues against closed forms, against LAPACK's
// dgesv / dsyev (OpenBLAS's, declared here as an independent reference: iclab itself no longer calls them), and their
// errors on singular or non-finite input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/dense_linalg.hpp"
#include "framework/core/rng.hpp"

namespace iclab_test_dense_linalg {  // this file's names (unity build: CMakeLists.txt)

extern "C" {
void dsyev_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
            const int* lwork, int* info);
void dgesv_(const int* n, const int* nrhs, double* a, const int* lda, int* ipiv, double* b, const int* ldb, int* info);
}

using namespace iclab;

namespace {
std::vector<double> random_matrix(std::size_t rows, std::size_t cols, Rng& rng) {
    std::vector<double> m(rows * cols);
    for (auto& x : m) x = rng.normal();
    return m;
}

// LAPACK's answers (column-major: a symmetric matrix is its own transpose; B and X transposed in and out)
std::vector<double> lapack_eigenvalues(std::vector<double> a, std::size_t n) {
    const int size = static_cast<int>(n);
    int info = 0, lwork = -1;
    double query = 0.0;
    std::vector<double> w(n);
    dsyev_("N", "U", &size, a.data(), &size, w.data(), &query, &lwork, &info);
    lwork = static_cast<int>(query);
    std::vector<double> work(static_cast<std::size_t>(lwork));
    dsyev_("N", "U", &size, a.data(), &size, w.data(), work.data(), &lwork, &info);
    REQUIRE(info == 0);
    return w;
}
std::vector<double> lapack_solve(const std::vector<double>& a, std::size_t n, const std::vector<double>& b, std::size_t k) {
    std::vector<double> lu(n * n), x(n * k);
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < n; ++c) lu[c * n + r] = a[r * n + c];
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < k; ++c) x[c * n + r] = b[r * k + c];
    const int size = static_cast<int>(n), rhs = static_cast<int>(k);
    std::vector<int> pivots(n);
    int info = 0;
    dgesv_(&size, &rhs, lu.data(), &size, pivots.data(), x.data(), &size, &info);
    REQUIRE(info == 0);
    std::vector<double> result(n * k);
    for (std::size_t r = 0; r < n; ++r)
        for (std::size_t c = 0; c < k; ++c) result[r * k + c] = x[c * n + r];
    return result;
}
double max_abs(const std::vector<double>& v) {
    double m = 0.0;
    for (double x : v) m = std::max(m, std::abs(x));
    return m;
}
}  // namespace

TEST_CASE("dense linalg: Jacobi eigenvalues equal the closed form of a tridiagonal Toeplitz matrix and LAPACK's dsyev",
          "[linalg]") {
    // [[2, 1, 0], [1, 2, 0], [0, 0, 5]]: 1, 3, 5
    const auto small = linalg::symmetric_eigenvalues({2, 1, 0, 1, 2, 0, 0, 0, 5}, 3);
    REQUIRE(small.size() == 3);
    CHECK(small[0] == Approx(1.0).margin(1e-15));
    CHECK(small[1] == Approx(3.0).margin(1e-15));
    CHECK(small[2] == Approx(5.0).margin(1e-15));
    // tridiag(-1, 2, -1) of size n: λ_k = 2 − 2 cos(kπ / (n + 1)), k = 1..n (ascending)
    for (const std::size_t n : {std::size_t(1), std::size_t(2), std::size_t(17), std::size_t(64)}) {
        std::vector<double> t(n * n, 0.0);
        for (std::size_t i = 0; i < n; ++i) {
            t[i * n + i] = 2.0;
            if (i + 1 < n) t[i * n + i + 1] = t[(i + 1) * n + i] = -1.0;
        }
        const auto eigenvalues = linalg::symmetric_eigenvalues(t, n);
        for (std::size_t k = 1; k <= n; ++k)
            CHECK(std::abs(eigenvalues[k - 1] - (2.0 - 2.0 * std::cos(static_cast<double>(k) * M_PI / static_cast<double>(n + 1)))) <= 1e-14);
    }
    // random symmetric (indefinite) and a Gram matrix with a wide spread (positive definite) against dsyev
    Rng rng(5);
    for (const std::size_t n : {std::size_t(5), std::size_t(30), std::size_t(100)}) {
        auto a = random_matrix(n, n, rng);
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t c = 0; c < r; ++c) a[r * n + c] = a[c * n + r];
        const auto ours = linalg::symmetric_eigenvalues(a, n), theirs = lapack_eigenvalues(a, n);
        for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(ours[i] - theirs[i]) <= 1e-13 * max_abs(theirs));
    }
    {
        const std::size_t n = 12, rows = 40;
        auto x = random_matrix(rows, n, rng);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < n; ++c) x[r * n + c] *= std::pow(10.0, -static_cast<double>(c) / 3.0);  // κ(XᵀX) ~ 1e8
        std::vector<double> gram(n * n, 0.0);
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t c = 0; c < n; ++c) gram[i * n + c] += x[r * n + i] * x[r * n + c];
        const auto ours = linalg::symmetric_eigenvalues(gram, n), theirs = lapack_eigenvalues(gram, n);
        for (std::size_t i = 0; i < n; ++i) CHECK(std::abs(ours[i] - theirs[i]) <= 1e-13 * theirs.back());
        CHECK(ours.front() > 0.0);
    }
}

TEST_CASE("dense linalg: the LU solve recovers known solutions, pivots, and agrees with LAPACK's dgesv", "[linalg]") {
    const auto x = linalg::solve({1, 2, 3, 4}, 2, {5, 6}, 1);  // [[1, 2], [3, 4]] x = (5, 6): x = (−4, 4.5)
    CHECK(x[0] == Approx(-4.0).margin(1e-14));
    CHECK(x[1] == Approx(4.5).margin(1e-14));
    const auto swapped = linalg::solve({0, 1, 1, 0}, 2, {2, 3}, 1);  // a zero on the diagonal needs the row exchange
    CHECK(swapped[0] == 3.0);
    CHECK(swapped[1] == 2.0);
    Rng rng(9);
    for (const std::size_t n : {std::size_t(1), std::size_t(7), std::size_t(60), std::size_t(150)}) {
        const std::size_t k = 3;
        const auto a = random_matrix(n, n, rng), x_true = random_matrix(n, k, rng);
        std::vector<double> b(n * k, 0.0);
        for (std::size_t r = 0; r < n; ++r)
            for (std::size_t q = 0; q < n; ++q)
                for (std::size_t c = 0; c < k; ++c) b[r * k + c] += a[r * n + q] * x_true[q * k + c];
        const auto ours = linalg::solve(a, n, b, k), theirs = lapack_solve(a, n, b, k);
        // backward error: ‖A x̂ − b‖∞ within a small multiple of n ε ‖A‖ ‖x̂‖ (partial pivoting on a random matrix)
        double residual = 0.0, a_norm = 0.0;
        for (std::size_t r = 0; r < n; ++r) {
            double row = 0.0;
            for (std::size_t q = 0; q < n; ++q) row += std::abs(a[r * n + q]);
            a_norm = std::max(a_norm, row);
            for (std::size_t c = 0; c < k; ++c) {
                double ax = 0.0;
                for (std::size_t q = 0; q < n; ++q) ax += a[r * n + q] * ours[q * k + c];
                residual = std::max(residual, std::abs(ax - b[r * k + c]));
            }
        }
        CHECK(residual <= 10.0 * static_cast<double>(n) * 2.2e-16 * a_norm * max_abs(ours));
        std::vector<double> difference(n * k);
        for (std::size_t i = 0; i < n * k; ++i) difference[i] = ours[i] - theirs[i];
        CHECK(max_abs(difference) <= 1e-10 * max_abs(theirs));
    }
}

TEST_CASE("dense linalg: singular and non-finite input is refused with a message naming the cause", "[linalg]") {
    CHECK_THROWS_WITH(linalg::solve({1, 2, 2, 4}, 2, {1, 1}, 1), Catch::Contains("singular") && Catch::Contains("column 1"));
    CHECK_THROWS_WITH(linalg::solve({1, NAN, 2, 4}, 2, {1, 1}, 1), Catch::Contains("not finite"));
    CHECK_THROWS_WITH(linalg::symmetric_eigenvalues({1, INFINITY, INFINITY, 1}, 2), Catch::Contains("not finite"));
    CHECK_THROWS_WITH(linalg::condition_number_2({1, 1, 1, 1}, 2), Catch::Contains("singular"));
    CHECK(linalg::condition_number_2({2, 0, 0, 0.5}, 2) == Approx(4.0).margin(1e-14));
    CHECK(linalg::solve({}, 0, {}, 0).empty());
}

}  // namespace iclab_test_dense_linalg
