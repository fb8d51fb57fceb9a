#include "framework/icl/gd_reference.hpp"

#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/nn/layers.hpp"
#include "framework/nn/losses.hpp"

namespace iclab::icl {

namespace {
model::ParameterLayout reference_layout(std::size_t features, std::size_t width) {
    model::ParameterLayout layout;
    layout.add("reference.weight", {features, width}, true, false, "(R, C): W transposed, y = phi(x)^T weight");
    return layout;
}
train::OptimizerSpec plain_sgd() {
    train::OptimizerSpec spec;
    spec.kind = train::OptimizerKind::sgd;  // no momentum, no weight decay: W ← W − lr ∇L
    return spec;
}
}  // namespace

template <class T>
FeatureLinearModel<T>::FeatureLinearModel(std::size_t features, std::size_t width)
    : features_(features),
      width_(width),
      layout_(reference_layout(features, width)),
      weight_(features * width, T(0)),
      gradient_(features * width, T(0)),
      sgd_(plain_sgd(), layout_) {}

template <class T>
void FeatureLinearModel<T>::predict(T* out, const T* phi, std::size_t rows) const {
    nn::linear_forward(out, phi, weight_.data(), static_cast<const T*>(nullptr), rows, features_, width_);
}

template <class T>
double FeatureLinearModel<T>::loss(const T* phi, const T* targets, std::size_t rows, const ReferenceLoss& loss) const {
    out_.resize(rows * width_);
    predict(out_.data(), phi, rows);
    double value = 0.0;
    switch (loss.kind) {
        case ReferenceLoss::Kind::mse_half_mean: value = nn::mse_half_mean_forward(out_.data(), targets, rows, width_); break;
        case ReferenceLoss::Kind::mse_mean:
            losses_.resize(rows);
            sample_weights_.assign(rows, T(1) / static_cast<T>(rows));
            value = nn::squared_error_forward(losses_.data(), out_.data(), targets, sample_weights_.data(), rows, width_);
            break;
        case ReferenceLoss::Kind::contrastive_dot:
            value = nn::contrastive_dot_forward(out_.data(), targets, rows, width_, loss.scale);
            break;
    }
    if (loss.l2 != 0.0) value += nn::frobenius_l2_forward(weight_.data(), weight_.size(), loss.l2);
    return value;
}

template <class T>
double FeatureLinearModel<T>::step(const T* phi, const T* targets, std::size_t rows, const ReferenceLoss& loss_spec, double lr) {
    const double before = loss(phi, targets, rows, loss_spec);  // leaves ŷ in out_
    d_out_.assign(rows * width_, T(0));
    switch (loss_spec.kind) {
        case ReferenceLoss::Kind::mse_half_mean: nn::mse_half_mean_backward(d_out_.data(), out_.data(), targets, rows, width_); break;
        case ReferenceLoss::Kind::mse_mean:
            nn::squared_error_backward(d_out_.data(), out_.data(), targets, sample_weights_.data(), rows, width_);
            break;
        case ReferenceLoss::Kind::contrastive_dot:
            nn::contrastive_dot_backward(d_out_.data(), targets, rows, width_, loss_spec.scale);
            break;
    }
    std::fill(gradient_.begin(), gradient_.end(), T(0));
    nn::linear_backward(static_cast<T*>(nullptr), gradient_.data(), static_cast<T*>(nullptr), d_out_.data(), phi,
                        weight_.data(), rows, features_, width_);
    if (loss_spec.l2 != 0.0) nn::frobenius_l2_backward(gradient_.data(), weight_.data(), weight_.size(), loss_spec.l2);
    sgd_.step(weight_, gradient_, lr);
    return before;
}

template <class T>
void KernelLinearModel<T>::add_centre(const T* centre, const T* coefficient) {
    centres_.insert(centres_.end(), centre, centre + input_width_);
    coefficients_.insert(coefficients_.end(), coefficient, coefficient + width_);
}

template <class T>
void KernelLinearModel<T>::predict(T* out, const T* x) const {
    std::fill(out, out + width_, T(0));
    for (std::size_t c = 0; c < coefficients_.size() / width_; ++c) {
        T dot = T(0);
        for (std::size_t d = 0; d < input_width_; ++d) dot += centres_[c * input_width_ + d] * x[d];
        const T kernel = std::exp(dot);  // K(z_c, x) = exp(z_cᵀ x)
        for (std::size_t o = 0; o < width_; ++o) out[o] += coefficients_[c * width_ + o] * kernel;
    }
}

template <class T>
void KernelLinearModel<T>::step(const T* x, const T* y, const ReferenceLoss& loss, double lr) {
    ICLAB_CHECK(loss.kind == ReferenceLoss::Kind::contrastive_dot && loss.l2 == 0.0,
                "the kernel reference model takes contrastive_dot steps only (its gradient does not need ŷ)");
    std::vector<T> d_out(width_, T(0));
    nn::contrastive_dot_backward(d_out.data(), y, 1, width_, loss.scale);  // ∂ℓ_i/∂ŷ_i
    for (auto& value : d_out) value = static_cast<T>(-lr) * value;          // coefficient of K(x_i, ·) in −lr ∇_W ℓ_i
    add_centre(x, d_out.data());
}

template class FeatureLinearModel<float>;
template class FeatureLinearModel<double>;
template class KernelLinearModel<float>;
template class KernelLinearModel<double>;

}  // namespace iclab::icl
