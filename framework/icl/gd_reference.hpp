#pragma once
// The gradient-descent side of the "ICL = GD" duals (specs/gd_duals.md §0.6, rule 1): reference models trained
// by iclab's generic machinery — a Linear layer (nn::linear_forward/backward), a loss module (nn/losses.hpp), and
// an SGD step (train::Optimizer). Nothing here knows the attention's closed form.
//   FeatureLinearModel : f(x) = W φ(x) over precomputed features φ(x) (R); W (C × R) stored row-convention as
//                        weight (R, C), so ŷ = φ(x)ᵀ weight (paper 002 Thm 1; paper 004 Eq. 9-11; von Oswald Eq. 1)
//   KernelLinearModel  : the same model for R = ∞ in dual coordinates, W = Σ_c c_c K(z_c, ·) with
//                        K(z, x) = exp(zᵀx), the exact softmax kernel (spec §3.4)
#include <cstddef>
#include <vector>

#include "framework/model/parameters.hpp"
#include "framework/train/optimizer.hpp"

namespace iclab::icl {

// Which loss module a GD step differentiates.
struct ReferenceLoss {
    enum class Kind {
        mse_half_mean,    // (1/N) Σ ½‖ŷ_i − y_i‖²                       paper 002 Thm 1 (B1), von Oswald Eq. 1
        mse_mean,         // (1/N) Σ ‖ŷ_i − y_i‖² (nn::squared_error)    the "no ½" negative control of 002-T1
        contrastive_dot,  // −scale Σ y_iᵀ ŷ_i                           paper 004 Eq. 9, scale = 1/(η D)
    };
    Kind kind = Kind::mse_half_mean;
    double scale = 1.0;  // contrastive_dot only
    double l2 = 0.0;     // + (l2/2) ‖W‖²_F (nn::frobenius_l2), paper 004 Eq. 13 with l2 = α/η; 0: none
};

template <class T>
class FeatureLinearModel {
public:
    FeatureLinearModel(std::size_t features, std::size_t width);  // R, C; W = 0
    FeatureLinearModel(const FeatureLinearModel&) = delete;       // the optimizer refers to layout_
    FeatureLinearModel& operator=(const FeatureLinearModel&) = delete;

    std::size_t features() const { return features_; }
    std::size_t width() const { return width_; }
    std::vector<T>& weight() { return weight_; }  // (R, C) = Wᵀ
    const std::vector<T>& weight() const { return weight_; }

    // out (rows, C) = φ (rows, R) · weight   (the Linear forward)
    void predict(T* out, const T* phi, std::size_t rows) const;
    // The loss of the training set (phi (rows, R), targets (rows, C)) at the current W.
    double loss(const T* phi, const T* targets, std::size_t rows, const ReferenceLoss& loss) const;
    // One GD step of learning rate lr on the whole set: loss forward, loss backward, Linear backward into the
    // gradient, SGD step. Returns the loss before the step.
    double step(const T* phi, const T* targets, std::size_t rows, const ReferenceLoss& loss, double lr);

private:
    std::size_t features_, width_;
    model::ParameterLayout layout_;
    std::vector<T> weight_, gradient_;
    train::Optimizer<T> sgd_;
    mutable std::vector<T> out_, d_out_, losses_, sample_weights_;
};

// f(x) = Σ_c coefficient_c exp(z_cᵀ x), coefficients (C), centres z_c (D_k). A GD step on a sample (x_i, y_i)
// with d_out = ∂ℓ/∂ŷ_i (from the loss module's backward) moves W along −lr · d_out ⊗ K(x_i, ·): it appends the
// centre x_i with coefficient −lr · d_out (the functional gradient; the exact R = ∞ limit of FeatureLinearModel).
template <class T>
class KernelLinearModel {
public:
    KernelLinearModel(std::size_t input_width, std::size_t width) : input_width_(input_width), width_(width) {}
    void add_centre(const T* centre, const T* coefficient);
    void predict(T* out, const T* x) const;  // out (C) at one input x (D_k)
    // Batch-1 GD step on (x (D_k), y (C)); only contrastive_dot (linear in ŷ) is supported.
    void step(const T* x, const T* y, const ReferenceLoss& loss, double lr);

private:
    std::size_t input_width_, width_;
    std::vector<T> centres_, coefficients_;  // (n, D_k), (n, C)
};

}  // namespace iclab::icl
