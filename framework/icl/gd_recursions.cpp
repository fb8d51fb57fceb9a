#include "framework/icl/gd_recursions.hpp"

#include <algorithm>

#include "framework/core/check.hpp"
#include "framework/core/dense_linalg.hpp"

namespace iclab::icl {

namespace {
double dot(const double* a, const double* b, std::size_t d) {
    double s = 0.0;
    for (std::size_t k = 0; k < d; ++k) s += a[k] * b[k];
    return s;
}
std::vector<double> start_weights(const std::vector<double>& w0, std::size_t d) {
    ICLAB_CHECK(w0.empty() || w0.size() == d, "w0 has " << w0.size() << " values, d = " << d);
    return w0.empty() ? std::vector<double>(d, 0.0) : w0;
}
}  // namespace

std::vector<double> prefix_gd(const double* x, const double* y, std::size_t n, std::size_t d, double eta, std::size_t layers,
                              const std::vector<double>& w0) {
    std::vector<double> history((layers + 1) * d);
    std::vector<double> w = start_weights(w0, d), step(d);
    std::copy(w.begin(), w.end(), history.begin());
    for (std::size_t l = 1; l <= layers; ++l) {
        std::fill(step.begin(), step.end(), 0.0);
        for (std::size_t i = 0; i < n; ++i) {  // Σ_{i≤n} (y_i − w x_i) x_iᵀ
            const double residual = y[i] - dot(w.data(), x + i * d, d);
            for (std::size_t k = 0; k < d; ++k) step[k] += residual * x[i * d + k];
        }
        for (std::size_t k = 0; k < d; ++k) w[k] += eta / static_cast<double>(n) * step[k];  // Eq. 3
        std::copy(w.begin(), w.end(), history.begin() + l * d);
    }
    return history;
}

std::vector<double> causal_gd(const double* x, const double* y, std::size_t n, std::size_t d, double eta, std::size_t layers,
                              const std::vector<double>& w0, bool length_normalized) {
    std::vector<double> history((layers + 1) * n * d);
    const std::vector<double> start = start_weights(w0, d);
    for (std::size_t j = 0; j < n; ++j) std::copy(start.begin(), start.end(), history.begin() + j * d);
    std::vector<double> residual(n);
    for (std::size_t l = 1; l <= layers; ++l) {
        const double* previous = history.data() + (l - 1) * n * d;  // w_i⁽ˡ⁻¹⁾, rows i
        double* current = history.data() + l * n * d;
        for (std::size_t i = 0; i < n; ++i) residual[i] = y[i] - dot(previous + i * d, x + i * d, d);  // y_i − w_i⁽ˡ⁻¹⁾x_i
        for (std::size_t j = 0; j < n; ++j) {
            // Eq. 10: η/n; Eq. 18: η/j with the paper's 1-based j = row + 1
            const double rate = eta / static_cast<double>(length_normalized ? j + 1 : n);
            for (std::size_t k = 0; k < d; ++k) {
                double sum = 0.0;
                for (std::size_t i = 0; i <= j; ++i) sum += residual[i] * x[i * d + k];  // Σ_{i≤j}
                current[j * d + k] = previous[j * d + k] + rate * sum;
            }
        }
    }
    return history;
}

void causal_coefficients_step(std::vector<double>& a, const double* x, const double* y, std::size_t n, std::size_t d, double eta,
                              bool length_normalized) {
    ICLAB_CHECK(a.size() == n, "a has " << a.size() << " values, n = " << n);
    const std::vector<double> previous = a;
    for (std::size_t i = 0; i < n; ++i) {
        double fitted = 0.0;
        for (std::size_t k = 0; k <= i; ++k) fitted += previous[k] * dot(x + k * d, x + i * d, d);  // Σ_{k≤i} a_k x_kᵀx_i
        if (length_normalized)
            a[i] = previous[i] + eta * (y[i] - fitted / static_cast<double>(i + 1));  // Prop 7
        else
            a[i] = previous[i] + eta / static_cast<double>(n) * (y[i] - fitted);  // Eq. 15
    }
}

std::vector<double> causal_system_matrix(const double* x, std::size_t n, std::size_t d, bool length_normalized) {
    std::vector<double> m(n * n, 0.0);
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t i = k; i < n; ++i)
            m[k * n + i] = dot(x + k * d, x + i * d, d) / (length_normalized ? static_cast<double>(i + 1) : 1.0);
    return m;
}

std::vector<double> causal_stationary_coefficients(const double* x, const double* y, std::size_t n, std::size_t d,
                                                   bool length_normalized) {
    std::vector<double> a(n);
    for (std::size_t j = 0; j < n; ++j) {
        double rhs = length_normalized ? static_cast<double>(j + 1) * y[j] : y[j];
        for (std::size_t i = 0; i < j; ++i) rhs -= a[i] * dot(x + i * d, x + j * d, d);
        const double norm2 = dot(x + j * d, x + j * d, d);
        ICLAB_CHECK(norm2 > 0.0, "x_" << j + 1 << " = 0: the stationary point is undefined");
        a[j] = rhs / norm2;
    }
    return a;
}

std::vector<double> causal_stationary_weights(const std::vector<double>& a, const double* x, std::size_t n, std::size_t d,
                                              bool length_normalized) {
    ICLAB_CHECK(a.size() >= n, "a has " << a.size() << " values, n = " << n);
    std::vector<double> w(n * d), running(d, 0.0);
    for (std::size_t j = 0; j < n; ++j) {
        for (std::size_t k = 0; k < d; ++k) running[k] += a[j] * x[j * d + k];
        const double scale = length_normalized ? 1.0 / static_cast<double>(j + 1) : 1.0;
        for (std::size_t k = 0; k < d; ++k) w[j * d + k] = scale * running[k];
    }
    return w;
}

std::vector<double> ice_gram(const double* x, std::size_t n, std::size_t d) {
    std::vector<double> g(d * d, 0.0);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t r = 0; r < d; ++r)
            for (std::size_t c = 0; c < d; ++c) g[r * d + c] += x[i * d + r] * x[i * d + c];
    return g;
}

std::vector<double> prefix_stationary_weights(const double* x, const double* y, std::size_t n, std::size_t d) {
    std::vector<double> rhs(d, 0.0);  // X yᵀ
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t k = 0; k < d; ++k) rhs[k] += y[i] * x[i * d + k];
    return linalg::solve(ice_gram(x, n, d), d, rhs, 1);  // XXᵀ w*ᵀ = X yᵀ (XXᵀ symmetric)
}

}  // namespace iclab::icl
