#pragma once
// Central finite differences in double precision (CONVENTIONS.md "Numerics tests").
// Error measure |a - n| / max(|a| + |n|, tiny): relative for gradients above tiny, absolute below it,
// where the finite difference itself carries ~eps*L/h = 1e-10 of rounding (L ~ 10, h = 1e-5). At most max_checked
// entries per tensor are probed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"

namespace iclab::testing {

struct GradientCheckResult {
    double max_error = 0.0;
    std::size_t checked = 0;
};

// loss(): recomputes the scalar loss from the current contents of `values`.
// analytic: d loss / d values, computed beforehand.
inline GradientCheckResult check_gradient(const std::string& what, std::vector<double>& values,
                                          const std::vector<double>& analytic, const std::function<double()>& loss,
                                          std::size_t max_checked = 40, double step = 1e-5, double tolerance = 1e-5,
                                          double tiny = 1e-4, std::uint64_t seed = 7) {
    REQUIRE(values.size() == analytic.size());
    GradientCheckResult result;
    Rng rng(seed);
    std::vector<std::size_t> indices(values.size());
    for (std::size_t i = 0; i < indices.size(); ++i) indices[i] = i;
    if (indices.size() > max_checked) {  // a seeded random subset
        for (std::size_t i = 0; i < max_checked; ++i) std::swap(indices[i], indices[i + rng.uniform_int(indices.size() - i)]);
        indices.resize(max_checked);
    }
    for (std::size_t index : indices) {
        const double saved = values[index];
        values[index] = saved + step;
        const double plus = loss();
        values[index] = saved - step;
        const double minus = loss();
        values[index] = saved;
        const double numeric = (plus - minus) / (2.0 * step);
        const double error = std::abs(analytic[index] - numeric) / std::max(std::abs(analytic[index]) + std::abs(numeric), tiny);
        if (error > tolerance) {
            INFO(what << "[" << index << "]: analytic " << analytic[index] << " numeric " << numeric << " error " << error);
            CHECK(error <= tolerance);
        }
        result.max_error = std::max(result.max_error, error);
        ++result.checked;
    }
    INFO(what << ": checked " << result.checked << ", max relative error " << result.max_error);
    CHECK(result.checked > 0);
    CHECK(result.max_error <= tolerance);
    return result;
}

inline std::vector<double> random_vector(std::size_t n, Rng& rng, double scale = 1.0) {
    std::vector<double> v(n);
    for (auto& x : v) x = rng.normal(0.0, scale);
    return v;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

}  // namespace iclab::testing
