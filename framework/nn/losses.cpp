#include "framework/nn/losses.hpp"

namespace iclab::nn {

template <class T>
double mse_half_mean_forward(const T* out, const T* target, std::size_t rows, std::size_t width) {
    double sum = 0.0;
    for (std::size_t i = 0; i < rows * width; ++i) {
        const double e = static_cast<double>(out[i]) - static_cast<double>(target[i]);
        sum += e * e;
    }
    return 0.5 * sum / static_cast<double>(rows);
}

template <class T>
void mse_half_mean_backward(T* d_out, const T* out, const T* target, std::size_t rows, std::size_t width) {
    const T inv_rows = T(1) / static_cast<T>(rows);
    for (std::size_t i = 0; i < rows * width; ++i) d_out[i] += inv_rows * (out[i] - target[i]);  // ∂/∂ŷ of ½‖ŷ − y‖²/N
}

template <class T>
double contrastive_dot_forward(const T* out, const T* target, std::size_t rows, std::size_t width, double scale) {
    double sum = 0.0;
    for (std::size_t i = 0; i < rows * width; ++i) sum += static_cast<double>(target[i]) * static_cast<double>(out[i]);
    return -scale * sum;
}

template <class T>
void contrastive_dot_backward(T* d_out, const T* target, std::size_t rows, std::size_t width, double scale) {
    const T s = static_cast<T>(scale);
    for (std::size_t i = 0; i < rows * width; ++i) d_out[i] -= s * target[i];  // ∂/∂ŷ of −scale yᵀŷ
}

template <class T>
double frobenius_l2_forward(const T* weight, std::size_t count, double coefficient) {
    double sum = 0.0;
    for (std::size_t i = 0; i < count; ++i) sum += static_cast<double>(weight[i]) * static_cast<double>(weight[i]);
    return 0.5 * coefficient * sum;
}

template <class T>
void frobenius_l2_backward(T* d_weight, const T* weight, std::size_t count, double coefficient) {
    const T c = static_cast<T>(coefficient);
    for (std::size_t i = 0; i < count; ++i) d_weight[i] += c * weight[i];
}

#define ICLAB_INSTANTIATE_LOSSES(T)                                                                   \
    template double mse_half_mean_forward<T>(const T*, const T*, std::size_t, std::size_t);          \
    template void mse_half_mean_backward<T>(T*, const T*, const T*, std::size_t, std::size_t);       \
    template double contrastive_dot_forward<T>(const T*, const T*, std::size_t, std::size_t, double); \
    template void contrastive_dot_backward<T>(T*, const T*, std::size_t, std::size_t, double);       \
    template double frobenius_l2_forward<T>(const T*, std::size_t, double);                          \
    template void frobenius_l2_backward<T>(T*, const T*, std::size_t, double);

ICLAB_INSTANTIATE_LOSSES(float)
ICLAB_INSTANTIATE_LOSSES(double)

}  // namespace iclab::nn
