#include "framework/icl/gd_alignment.hpp"

#include <cmath>

#include "framework/core/check.hpp"
#include "framework/icl/gd_reference.hpp"

namespace iclab::icl {

AlignmentMetrics gd_alignment(const std::vector<double>& x, const std::vector<double>& y, std::size_t tasks,
                              std::size_t examples, std::size_t x_dim, const std::vector<double>& y_tf,
                              const std::vector<double>& s_tf) {
    const std::size_t N = examples, d = x_dim, rows = N + 1;
    ICLAB_CHECK(x.size() == tasks * rows * d && y.size() == tasks * rows && y_tf.size() == tasks && s_tf.size() == tasks * d,
                "gd_alignment: inconsistent sizes");
    // GD side per task: W_0 = 0, one step of lr 1 on (1/N) Σ ½‖W x_i − y_i‖² gives W_1(1) = (1/N) Σ y_i x_iᵀ; a_q = W_1(1) x_q.
    std::vector<double> a(tasks), w1(tasks * d);
    const ReferenceLoss loss;  // mse_half_mean
    for (std::size_t b = 0; b < tasks; ++b) {
        FeatureLinearModel<double> model(d, 1);
        model.step(x.data() + b * rows * d, y.data() + b * rows, N, loss, 1.0);
        model.predict(&a[b], x.data() + (b * rows + N) * d, 1);
        for (std::size_t k = 0; k < d; ++k) w1[b * d + k] = model.weight()[k];
    }
    AlignmentMetrics m;
    m.tasks = tasks;
    double num = 0.0, den = 0.0;
    for (std::size_t b = 0; b < tasks; ++b) {
        num += y[b * rows + N] * a[b];
        den += a[b] * a[b];
    }
    m.eta_star = num / den;
    for (std::size_t b = 0; b < tasks; ++b) {
        const double y_q = y[b * rows + N], y_gd = m.eta_star * a[b];
        m.loss_tf += 0.5 * (y_tf[b] - y_q) * (y_tf[b] - y_q);
        m.loss_gd += 0.5 * (y_gd - y_q) * (y_gd - y_q);
        m.preds_diff += std::abs(y_tf[b] - y_gd);
        double dot = 0.0, n_tf = 0.0, n_gd = 0.0, diff = 0.0;
        for (std::size_t k = 0; k < d; ++k) {
            const double s = s_tf[b * d + k], g = m.eta_star * w1[b * d + k];
            dot += s * g;
            n_tf += s * s;
            n_gd += g * g;
            diff += (s - g) * (s - g);
        }
        m.model_cos += dot / std::sqrt(n_tf * n_gd);
        m.model_diff += std::sqrt(diff);
    }
    const double n = static_cast<double>(tasks);
    m.loss_tf /= n;
    m.loss_gd /= n;
    m.preds_diff /= n;
    m.model_cos /= n;
    m.model_diff /= n;
    m.rel_loss_gap = std::abs(m.loss_tf - m.loss_gd) / m.loss_gd;
    return m;
}

}  // namespace iclab::icl
