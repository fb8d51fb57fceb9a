#include "framework/nn/layers.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/profile.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/vector_math.hpp"

namespace iclab::nn {

namespace {
// Σ_{c<n} term(c) in double, in kLanes interleaved partial sums added in a fixed order at the end (as
// kernels::dot_lanes): a plain sequential sum cannot be vectorized without reordering it, which the
// compiler may not do; this order is fixed by n alone, never by threads.
template <class Term>
inline double sum_lanes(std::size_t n, Term term) {
    constexpr std::size_t kLanes = 8;
    double lane[kLanes] = {};
    std::size_t c = 0;
    for (; c + kLanes <= n; c += kLanes)
        for (std::size_t k = 0; k < kLanes; ++k) lane[k] += term(c + k);
    double sum = 0.0;
    for (; c < n; ++c) sum += term(c);
    for (std::size_t k = 0; k < kLanes; ++k) sum += lane[k];
    return sum;
}

// One row of LayerNorm: y = (x - mean) * rstd * gamma + beta, mean and rstd in double (two passes, no
// E[x^2] - E[x]^2 cancellation). Shared by layernorm_forward and residual_layernorm_forward.
template <class T>
inline void layernorm_row(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, std::size_t channels, double eps) {
    const double m = sum_lanes(channels, [x](std::size_t c) { return static_cast<double>(x[c]); }) / channels;
    const double var = sum_lanes(channels, [x, m](std::size_t c) {
        const double centered = x[c] - m;
        return centered * centered;
    });
    const double s = 1.0 / std::sqrt(var / channels + eps);
    for (std::size_t c = 0; c < channels; ++c) y[c] = static_cast<T>((x[c] - m) * s) * gamma[c] + beta[c];
    *mean = static_cast<T>(m);
    *rstd = static_cast<T>(s);
}

// Rows taken G at a time (independent chains that overlap: the loss's row maximum and sum, one row alone waits on each
// step), the rows left over one at a time: item i < row_items<G>(rows) is body(count, first row), count a
// std::integral_constant (G or 1). Each row gets the bits it gets alone.
template <std::size_t G>
inline std::size_t row_items(std::size_t rows) {
    return rows / G + rows % G;
}
template <std::size_t G, class Body>
inline void row_item(std::size_t item, std::size_t rows, Body body) {
    const std::size_t groups = rows / G;
    if (item < groups)
        body(std::integral_constant<std::size_t, G>{}, item * G);
    else
        body(std::integral_constant<std::size_t, 1>{}, groups * G + (item - groups));
}
constexpr std::size_t kLossRows = 4;  // cross-entropy

// Sums over rows per column (bias and LayerNorm parameter gradients): threads share the columns in fixed chunks and
// every column is summed over its rows in ascending order, the order of the plain serial loop, so the result is the
// same bit for bit whatever the number of threads. Below kColumnParallelMin elements one thread does it all.
constexpr std::size_t kColumnChunk = 16;
constexpr std::size_t kColumnParallelMin = 16384;
template <class Body>
inline void for_column_chunks(std::size_t rows, std::size_t columns, Body body) {
    const std::size_t chunks = (columns + kColumnChunk - 1) / kColumnChunk;
#pragma omp parallel for schedule(static) if (rows * columns >= kColumnParallelMin)
    for (std::size_t chunk = 0; chunk < chunks; ++chunk)
        body(chunk * kColumnChunk, std::min(columns, (chunk + 1) * kColumnChunk));
}

// sums (cols) += Σ_n rows_data[n·stride + c] for c < cols (at most kColumnChunk), each column in row order n = 0, 1, ...:
// the additions of `sums[c] += x` run row by row, in registers instead of through memory (the same bits).
template <class T>
inline void sum_rows_into(T* sums, const T* data, std::size_t rows, std::size_t cols, std::size_t stride) {
    T acc[kColumnChunk];
    for (std::size_t c = 0; c < cols; ++c) acc[c] = sums[c];
    if (cols == kColumnChunk) {
        for (std::size_t n = 0; n < rows; ++n)
            for (std::size_t c = 0; c < kColumnChunk; ++c) acc[c] += data[n * stride + c];
    } else {
        for (std::size_t n = 0; n < rows; ++n)
            for (std::size_t c = 0; c < cols; ++c) acc[c] += data[n * stride + c];
    }
    for (std::size_t c = 0; c < cols; ++c) sums[c] = acc[c];
}
}  // namespace

template <class T>
void layernorm_forward(T* out, T* mean, T* rstd, const T* in, const T* gamma, const T* beta, std::size_t rows,
                       std::size_t channels, double eps) {
    const profile::Scope scope(profile::Kind::norm);
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < rows; ++n)
        layernorm_row(out + n * channels, mean + n, rstd + n, in + n * channels, gamma, beta, channels, eps);
}

template <class T>
void residual_layernorm_forward(T* out, T* mean, T* rstd, T* sum, const T* residual, const T* gamma, const T* beta,
                                std::size_t rows, std::size_t channels, double eps) {
    const profile::Scope scope(profile::Kind::norm);
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < rows; ++n) {
        T* x = sum + n * channels;
        const T* r = residual + n * channels;
        for (std::size_t c = 0; c < channels; ++c) x[c] += r[c];  // the residual add, while the row is in cache
        layernorm_row(out + n * channels, mean + n, rstd + n, x, gamma, beta, channels, eps);
    }
}

template <class T>
void layernorm_backward(T* d_in, T* d_gamma, T* d_beta, const T* d_out, const T* in, const T* gamma, const T* mean,
                        const T* rstd, std::size_t rows, std::size_t channels, bool accumulate) {
    const profile::Scope scope(profile::Kind::norm);
    const std::size_t chunks = (channels + kColumnChunk - 1) / kColumnChunk;
    // One parallel region, two loops: d_in by rows, then the parameter gradients by fixed column chunks.
#pragma omp parallel
    {
        // d_in: per row, independent. With xhat = (x - mean) * rstd and g = d_out * gamma:
        // d_x = rstd * (g - mean(g) - xhat * mean(g * xhat)).
#pragma omp for schedule(static) nowait
        for (std::size_t n = 0; n < rows; ++n) {
            const T* x = in + n * channels;
            const T* dy = d_out + n * channels;
            const double row_mean = mean[n], row_rstd = rstd[n];
            const double mean_g =
                sum_lanes(channels, [dy, gamma](std::size_t c) { return static_cast<double>(dy[c]) * gamma[c]; }) / channels;
            const double mean_g_xhat = sum_lanes(channels, [=](std::size_t c) {
                                           return static_cast<double>(dy[c]) * gamma[c] * ((x[c] - row_mean) * row_rstd);
                                       }) /
                                       channels;
            T* dx = d_in + n * channels;
            // accumulate = false: written as 0 + value, the bits of accumulating into a zeroed buffer
            const T start = T(0);
            for (std::size_t c = 0; c < channels; ++c) {
                const double xhat = (x[c] - row_mean) * row_rstd;
                const double g = static_cast<double>(dy[c]) * gamma[c];
                dx[c] = (accumulate ? dx[c] : start) + static_cast<T>(row_rstd * (g - mean_g - xhat * mean_g_xhat));
            }
        }
        // Parameter gradients sum over rows in row order per channel (the serial loop's order: the result does not
        // depend on the thread count); the threads share fixed chunks of channels, each summed in registers (no stores
        // per row into d_gamma / d_beta, whose chunk edges may share a cache line between the threads). Independent of
        // d_in (nowait above).
#pragma omp for schedule(static)
        for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
            const std::size_t first = chunk * kColumnChunk, count = std::min(channels, first + kColumnChunk) - first;
            T acc_gamma[kColumnChunk], acc_beta[kColumnChunk];
            for (std::size_t c = 0; c < count; ++c) {
                acc_gamma[c] = d_gamma[first + c];
                acc_beta[c] = d_beta[first + c];
            }
            // a full chunk with a constant bound (the accumulators stay in registers; with `count` the compiler kept
            // them on the stack), the same operations in the same order
            const auto rows_into = [&](auto width) {
                for (std::size_t n = 0; n < rows; ++n) {
                    const T* x = in + n * channels + first;
                    const T* dy = d_out + n * channels + first;
                    const T row_mean = mean[n], row_rstd = rstd[n];
                    for (std::size_t c = 0; c < static_cast<std::size_t>(width); ++c) {
                        acc_gamma[c] += (x[c] - row_mean) * row_rstd * dy[c];
                        acc_beta[c] += dy[c];
                    }
                }
            };
            if (count == kColumnChunk)
                rows_into(std::integral_constant<std::size_t, kColumnChunk>{});
            else
                rows_into(count);
            for (std::size_t c = 0; c < count; ++c) {
                d_gamma[first + c] = acc_gamma[c];
                d_beta[first + c] = acc_beta[c];
            }
        }
    }
}

namespace {
constexpr double kGeluScale = 0.7978845608028654;  // sqrt(2 / pi)

// GELU's gate 0.5·(1 + tanh u) = σ(2u) = 1 / (1 + e^{-2u}), u = sqrt(2/π)(x + 0.044715 x³): the same
// function with one exponential and no cancellation in 1 + tanh for negative u. e^{-2u} is capped at
// e^80 so that the gate stays a normal float (denormals are slow); there GELU(x) < 1e-34·|x|.
template <class T>
inline T gelu_exp_minus_2u(T x) {
    const T u = T(kGeluScale) * (x + T(0.044715) * x * x * x);
    return exp_elementwise(std::min(T(-2) * u, T(80)));
}
template <class T>
inline T gelu_value(T x) {
    return x / (T(1) + gelu_exp_minus_2u(x));
}
// d/dx [x σ(2u)] = σ(2u) + 2x σ(2u)(1 - σ(2u)) du/dx, with 1 - σ(2u) = e^{-2u} σ(2u)
// (= 0.5(1 + tanh u) + 0.5 x sech²(u) du/dx, as sech²u = 4σ(2u)(1 - σ(2u)))
template <class T>
inline T gelu_derivative(T x) {
    const T e = gelu_exp_minus_2u(x);
    const T gate = T(1) / (T(1) + e);
    const T du_dx = T(kGeluScale) * (T(1) + T(3 * 0.044715) * x * x);
    return gate + T(2) * x * gate * (e * gate) * du_dx;
}

// The MLP's first layer after its product, rows [first, first + count) of (N, cols): pre += bias in place (pre enters
// as x W_fc and leaves as the pre-activation backward needs), out = gelu(pre).
template <class T>
inline void bias_gelu_rows(T* out, T* pre, const T* bias, std::size_t first, std::size_t count, std::size_t cols) {
    for (std::size_t n = first; n < first + count; ++n) {
        T* z = pre + n * cols;
        T* y = out + n * cols;
        for (std::size_t f = 0; f < cols; ++f) {
            z[f] += bias[f];  // linear_forward's bias add
            y[f] = gelu_value(z[f]);
        }
    }
}
// Its backward on rows [first, first + count): d (the gradient w.r.t. gelu(pre)) becomes d ⊙ gelu'(pre) in place.
template <class T>
inline void gelu_gate_rows(T* d, const T* pre, std::size_t first, std::size_t count, std::size_t cols) {
    for (std::size_t i = first * cols; i < (first + count) * cols; ++i) d[i] = d[i] * gelu_derivative(pre[i]);
}
}  // namespace

template <class T>
void linear_forward(T* out, const T* in, const T* weight, const T* bias, std::size_t rows, std::size_t in_dim,
                    std::size_t out_dim, const T* residual, SmallGemm kernel) {
    const profile::Scope scope(profile::Kind::elementwise);
    if (bias == nullptr && residual == nullptr) {
        gemm<T>(matrix(out, rows, out_dim), matrix(in, rows, in_dim), matrix(weight, in_dim, out_dim), false, false, T(1), T(0),
                kernel);
        return;
    }
    // y = x W, then y += b, then y += residual, element by element in that order (the order of the separate passes
    // this replaces), on each block of rows as soon as the product has written it
    GemmExtras<T> extras;
    extras.epilogue = [=](std::size_t first, std::size_t count) {
        for (std::size_t n = first; n < first + count; ++n) {
            T* y = out + n * out_dim;
            if (bias != nullptr)
                for (std::size_t o = 0; o < out_dim; ++o) y[o] += bias[o];
            if (residual != nullptr) {
                const T* r = residual + n * out_dim;
                for (std::size_t o = 0; o < out_dim; ++o) y[o] += r[o];
            }
        }
    };
    gemm<T>(matrix(out, rows, out_dim), matrix(in, rows, in_dim), matrix(weight, in_dim, out_dim), false, false, T(1), T(0),
            extras, kernel);
}

template <class T>
void linear_backward(T* d_in, T* d_weight, T* d_bias, const T* d_out, const T* in, const T* weight, std::size_t rows,
                     std::size_t in_dim, std::size_t out_dim, bool accumulate_d_in, SmallGemm kernel, const T* gelu_pre) {
    const profile::Scope scope(profile::Kind::elementwise);
    ICLAB_CHECK(gelu_pre == nullptr || (d_in != nullptr && !accumulate_d_in), "linear_backward: gelu_pre needs a written d_in");
    // d_bias (O) += Σ_n d_out (N, O) by fixed column chunks, each column summed over the rows in row order (the serial
    // loop's order): run as side work of the first product's parallel region (a region of its own cost more than it
    // saved on a loaded machine)
    GemmExtras<T> extras;
    if (d_bias != nullptr) {
        extras.side_parts = (out_dim + kColumnChunk - 1) / kColumnChunk;
        extras.side = [=](std::size_t part) {
            const std::size_t first = part * kColumnChunk, last = std::min(out_dim, first + kColumnChunk);
            sum_rows_into(d_bias + first, d_out + first, rows, last - first, out_dim);
        };
    }
    // in = gelu(gelu_pre): each block of rows of d_in, once written, becomes d gelu_pre = d_in ⊙ gelu'(gelu_pre) in cache
    if (gelu_pre != nullptr) {
        extras.epilogue = [=](std::size_t first, std::size_t count) { gelu_gate_rows(d_in, gelu_pre, first, count, in_dim); };
        extras.epilogue_kind = profile::Kind::activation;
    }
    // d_in (N, I) (+)= d_out (N, O) · W^T ;  d_W (I, O) += in^T (I, N) · d_out (N, O)
    if (d_in != nullptr)
        gemm<T>(matrix(d_in, rows, in_dim), matrix(d_out, rows, out_dim), matrix(weight, in_dim, out_dim), false, true,
                T(1), accumulate_d_in ? T(1) : T(0), extras, kernel);
    gemm<T>(matrix(d_weight, in_dim, out_dim), matrix(in, rows, in_dim), matrix(d_out, rows, out_dim), true, false,
            T(1), T(1), d_in != nullptr ? GemmExtras<T>{} : extras, kernel);
}


template <class T>
void gelu_forward(T* out, const T* in, std::size_t count) {
    const profile::Scope scope(profile::Kind::activation);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < count; ++i) out[i] = gelu_value(in[i]);
}

template <class T>
void gelu_backward(T* d_in, const T* d_out, const T* in, std::size_t count) {
    const profile::Scope scope(profile::Kind::activation);
#pragma omp parallel for schedule(static)
    for (std::size_t i = 0; i < count; ++i) d_in[i] += d_out[i] * gelu_derivative(in[i]);
}

template <class T>
void linear_gelu_forward(T* out, T* pre, const T* in, const T* weight, const T* bias, std::size_t rows, std::size_t in_dim,
                         std::size_t out_dim, SmallGemm kernel) {
    const profile::Scope scope(profile::Kind::elementwise);
    GemmExtras<T> extras;
    extras.epilogue = [=](std::size_t first, std::size_t count) { bias_gelu_rows(out, pre, bias, first, count, out_dim); };
    extras.epilogue_kind = profile::Kind::activation;
    gemm<T>(matrix(pre, rows, out_dim), matrix(in, rows, in_dim), matrix(weight, in_dim, out_dim), false, false, T(1), T(0),
            extras, kernel);
}

template <class T>
void embedding_forward(T* out, const std::int32_t* tokens, const T* table, std::size_t rows, std::size_t channels,
                       std::size_t vocab) {
    const profile::Scope scope(profile::Kind::input);
    for (std::size_t n = 0; n < rows; ++n)  // checked first: no exception may leave the parallel loop below
        ICLAB_CHECK(tokens[n] >= 0 && static_cast<std::size_t>(tokens[n]) < vocab,
                    "token id " << tokens[n] << " outside the vocabulary of " << vocab);
    // a copy per row: the threads share the rows of a large batch
#pragma omp parallel for schedule(static) if (rows * channels >= kColumnParallelMin * 4)
    for (std::size_t n = 0; n < rows; ++n) {
        const T* row = table + static_cast<std::size_t>(tokens[n]) * channels;
        T* y = out + n * channels;
        for (std::size_t c = 0; c < channels; ++c) y[c] = row[c];
    }
}

template <class T>
void embedding_backward(T* d_table, const T* d_out, const std::int32_t* tokens, std::size_t rows,
                        std::size_t channels) {
    const profile::Scope scope(profile::Kind::input);
    for (std::size_t n = 0; n < rows; ++n) {
        T* row = d_table + static_cast<std::size_t>(tokens[n]) * channels;
        const T* dy = d_out + n * channels;
        for (std::size_t c = 0; c < channels; ++c) row[c] += dy[c];
    }
}

template <class T>
void cross_entropy_forward(T* probs, T* losses, const T* logits, const std::int32_t* targets, std::size_t rows,
                           std::size_t vocab) {
    const profile::Scope scope(profile::Kind::loss);
    // R rows from row n: per row the max, the exponentials, their sum in double in order v = 0, 1, ..., the scaling and
    // the loss; the R rows' max and sum chains interleaved (the bits of one row at a time)
    const auto rows_from = [&](auto count, std::size_t n) {
        constexpr std::size_t R = decltype(count)::value;
        const T* z = logits + n * vocab;
        T* p = probs + n * vocab;
        T max_logit[R];
        double total[R];
        for (std::size_t r = 0; r < R; ++r) max_logit[r] = z[r * vocab];
        for (std::size_t v = 1; v < vocab; ++v)
            for (std::size_t r = 0; r < R; ++r) max_logit[r] = std::max(max_logit[r], z[r * vocab + v]);
        for (std::size_t r = 0; r < R; ++r)  // vectorized
            for (std::size_t v = 0; v < vocab; ++v) p[r * vocab + v] = exp_elementwise(z[r * vocab + v] - max_logit[r]);
        for (std::size_t r = 0; r < R; ++r) total[r] = 0.0;
        for (std::size_t v = 0; v < vocab; ++v)
            for (std::size_t r = 0; r < R; ++r) total[r] += p[r * vocab + v];
        for (std::size_t r = 0; r < R; ++r) {
            const T inv = static_cast<T>(1.0 / total[r]);
            for (std::size_t v = 0; v < vocab; ++v) p[r * vocab + v] *= inv;
            // -log softmax computed from the log-sum-exp, not from log(p): exact for tiny probabilities.
            losses[n + r] = static_cast<T>(std::log(total[r]) - (z[r * vocab + targets[n + r]] - max_logit[r]));
        }
    };
#pragma omp parallel for schedule(static)
    for (std::size_t item = 0; item < row_items<kLossRows>(rows); ++item) row_item<kLossRows>(item, rows, rows_from);
}

template <class T>
void cross_entropy_backward(T* d_logits, const T* probs, const std::int32_t* targets, const T* weights,
                            std::size_t rows, std::size_t vocab) {
    const profile::Scope scope(profile::Kind::loss);
#pragma omp parallel for schedule(static)
    for (std::size_t n = 0; n < rows; ++n) {
        const T w = weights[n];
        T* dz = d_logits + n * vocab;
        if (w == T(0)) {
            std::fill(dz, dz + vocab, T(0));
            continue;
        }
        const T* p = probs + n * vocab;
        for (std::size_t v = 0; v < vocab; ++v) dz[v] = w * p[v];
        dz[targets[n]] -= w;
    }
}

template <class T>
double squared_error_forward(T* losses, const T* out, const T* target, const T* weights, std::size_t rows,
                             std::size_t width) {
    const profile::Scope scope(profile::Kind::loss);
    double total = 0.0;
    for (std::size_t n = 0; n < rows; ++n) {
        double sum = 0.0;
        for (std::size_t c = 0; c < width; ++c) {
            const double e = static_cast<double>(out[n * width + c]) - static_cast<double>(target[n * width + c]);
            sum += e * e;
        }
        losses[n] = static_cast<T>(sum);
        total += static_cast<double>(weights[n]) * sum;
    }
    return total;
}

template <class T>
void squared_error_backward(T* d_out, const T* out, const T* target, const T* weights, std::size_t rows,
                            std::size_t width) {
    const profile::Scope scope(profile::Kind::loss);
    for (std::size_t n = 0; n < rows; ++n) {
        if (weights[n] == T(0)) continue;
        for (std::size_t c = 0; c < width; ++c)
            d_out[n * width + c] += T(2) * weights[n] * (out[n * width + c] - target[n * width + c]);
    }
}

#define ICLAB_INSTANTIATE_LAYERS(T)                                                                                  \
    template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, std::size_t, std::size_t, double); \
    template void residual_layernorm_forward<T>(T*, T*, T*, T*, const T*, const T*, const T*, std::size_t, std::size_t, \
                                                double);                                                             \
    template void linear_gelu_forward<T>(T*, T*, const T*, const T*, const T*, std::size_t, std::size_t, std::size_t,  \
                                         SmallGemm);                                                                 \
    template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, std::size_t,  \
                                        std::size_t, bool);                                                         \
    template void linear_forward<T>(T*, const T*, const T*, const T*, std::size_t, std::size_t, std::size_t, const T*, \
                                    SmallGemm);                                                                     \
    template void linear_backward<T>(T*, T*, T*, const T*, const T*, const T*, std::size_t, std::size_t,            \
                                     std::size_t, bool, SmallGemm, const T*);                                       \
    template void gelu_forward<T>(T*, const T*, std::size_t);                                                       \
    template void gelu_backward<T>(T*, const T*, const T*, std::size_t);                                            \
    template void embedding_forward<T>(T*, const std::int32_t*, const T*, std::size_t, std::size_t, std::size_t);  \
    template void embedding_backward<T>(T*, const T*, const std::int32_t*, std::size_t, std::size_t);               \
    template void cross_entropy_forward<T>(T*, T*, const T*, const std::int32_t*, std::size_t, std::size_t);        \
    template void cross_entropy_backward<T>(T*, const T*, const std::int32_t*, const T*, std::size_t, std::size_t);   \
    template double squared_error_forward<T>(T*, const T*, const T*, const T*, std::size_t, std::size_t);             \
    template void squared_error_backward<T>(T*, const T*, const T*, const T*, std::size_t, std::size_t);

ICLAB_INSTANTIATE_LAYERS(float)
ICLAB_INSTANTIATE_LAYERS(double)

}  // namespace iclab::nn
