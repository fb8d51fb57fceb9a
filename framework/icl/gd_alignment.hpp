#pragma once
// von Oswald et al. 2023 §3 / Fig. 2 (spec §11.2): a trained single-layer LSA against one GD step from W_0 = 0 on
// the same context, with the GD side computed by FeatureLinearModel (identity features, mse_half_mean, SGD).
// The one-step prediction from W_0 = 0 is linear in the learning rate: ŷ_GD(η) = η a_q, a_q = ((1/N) Σ_i y_i x_iᵀ) x_q.
// So the η minimizing the eval loss ½ mean (ŷ_GD − y_q)² is closed-form: η* = Σ y_q a_q / Σ a_q².
#include <cstddef>
#include <vector>

namespace iclab::icl {

struct AlignmentMetrics {
    std::size_t tasks = 0;
    double eta_star = 0.0;       // closed form over the eval tasks
    double loss_tf = 0.0;        // ½ mean (ŷ_TF − y_q)²
    double loss_gd = 0.0;        // ½ mean (ŷ_GD(η*) − y_q)²
    double rel_loss_gap = 0.0;   // |loss_TF − loss_GD| / loss_GD
    double preds_diff = 0.0;     // mean |ŷ_TF − ŷ_GD|
    double model_cos = 0.0;      // mean cos(∂ŷ_TF/∂x_q, ∂ŷ_GD/∂x_q), ∂ŷ_GD/∂x_q = W_1 (von Oswald's `analyse`)
    double model_diff = 0.0;     // mean ‖∂ŷ_TF/∂x_q − ∂ŷ_GD/∂x_q‖₂
};

// x (B, N + 1, d_x) and y (B, N + 1) of B tasks (context first, the query last; d_y = 1); the trained model's
// predictions y_tf (B) and sensitivities s_tf (B, d_x).
AlignmentMetrics gd_alignment(const std::vector<double>& x, const std::vector<double>& y, std::size_t tasks,
                              std::size_t examples, std::size_t x_dim, const std::vector<double>& y_tf,
                              const std::vector<double>& s_tf);

}  // namespace iclab::icl
