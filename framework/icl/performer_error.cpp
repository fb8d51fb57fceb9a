// Paper 004 §3.1 / Fig. 3 (centre, right): exact softmax attention against its Performer approximation
// (specs/gd_duals.md §6). See performer_error.hpp.
#include "framework/icl/performer_error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "framework/core/check.hpp"

namespace iclab::icl {

namespace {

// Rows of h (T, C) times the block of w_qkv (C, 3C) starting at column `first`, scaled: out (T, C).
std::vector<double> projection(const std::vector<double>& h, std::size_t T, std::size_t C, const std::vector<double>& w_qkv,
                               std::size_t first, double scale) {
    std::vector<double> out(T * C, 0.0);
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t d = 0; d < C; ++d) {
            const double x = h[t * C + d];
            for (std::size_t c = 0; c < C; ++c) out[t * C + c] += x * w_qkv[d * 3 * C + first + c];
        }
    for (double& x : out) x *= scale;
    return out;
}

void check_sizes(const std::vector<double>& h, std::size_t T, std::size_t C, const std::vector<double>& w_qkv) {
    ICLAB_CHECK(T > 0 && C > 0 && h.size() == T * C && w_qkv.size() == C * 3 * C,
                "attention matrices: tokens (T, C) and w_qkv (C, 3C) expected");
}

// O = W_V H A: column t of O is Σ_j v_j A[j, t].
void fill_outputs(AttentionMatrices& m, const std::vector<double>& h, const std::vector<double>& w_qkv) {
    const std::size_t T = m.tokens, C = m.width;
    const auto v = projection(h, T, C, w_qkv, 2 * C, 1.0);
    m.out.assign(C * T, 0.0);
    for (std::size_t j = 0; j < T; ++j)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < C; ++c) m.out[c * T + t] += v[j * C + c] * m.attn[j * T + t];
}

}  // namespace

AttentionMatrices exact_softmax_attention(const std::vector<double>& h, std::size_t T, std::size_t C,
                                          const std::vector<double>& w_qkv) {
    check_sizes(h, T, C, w_qkv);
    const double s = std::pow(static_cast<double>(C), -0.25);  // §0.3: s² = 1/√C, Eq. (1)'s temperature
    const auto q = projection(h, T, C, w_qkv, 0, s), k = projection(h, T, C, w_qkv, C, s);
    AttentionMatrices m;
    m.tokens = T;
    m.width = C;
    m.attn.assign(T * T, 0.0);
    for (std::size_t t = 0; t < T; ++t) {  // column softmax over the keys j (A1)
        double highest = -std::numeric_limits<double>::infinity();
        for (std::size_t j = 0; j < T; ++j) {
            double dot = 0.0;
            for (std::size_t c = 0; c < C; ++c) dot += k[j * C + c] * q[t * C + c];
            m.attn[j * T + t] = dot;
            highest = std::max(highest, dot);
        }
        double sum = 0.0;
        for (std::size_t j = 0; j < T; ++j) sum += (m.attn[j * T + t] = std::exp(m.attn[j * T + t] - highest));
        for (std::size_t j = 0; j < T; ++j) m.attn[j * T + t] /= sum;
    }
    fill_outputs(m, h, w_qkv);
    return m;
}

AttentionMatrices performer_attention(const std::vector<double>& h, std::size_t T, std::size_t C,
                                      const std::vector<double>& w_qkv, const nn::KernelFeatures<double>& map) {
    check_sizes(h, T, C, w_qkv);
    ICLAB_CHECK(map.dim == C, "performer_attention: the feature map's input width must be C");
    // Unscaled projections: kernel_features applies map.input_scale. It returns φ·e^{−A}; a query's shift cancels
    // in its column normalization, the keys' shifts are brought to one common shift (the largest).
    const auto q = projection(h, T, C, w_qkv, 0, 1.0), k = projection(h, T, C, w_qkv, C, 1.0);
    const std::size_t R = map.features;
    std::vector<double> phi_k(T * R), phi_q(T * R), shift(T);
    for (std::size_t j = 0; j < T; ++j) shift[j] = nn::kernel_features(phi_k.data() + j * R, k.data() + j * C, map);
    for (std::size_t t = 0; t < T; ++t) nn::kernel_features(phi_q.data() + t * R, q.data() + t * C, map);
    const double top = *std::max_element(shift.begin(), shift.end());
    for (std::size_t j = 0; j < T; ++j) {
        const double factor = std::exp(shift[j] - top);
        for (std::size_t r = 0; r < R; ++r) phi_k[j * R + r] *= factor;
    }
    AttentionMatrices m;
    m.tokens = T;
    m.width = C;
    m.attn.assign(T * T, 0.0);
    for (std::size_t t = 0; t < T; ++t) {
        double sum = 0.0;
        for (std::size_t j = 0; j < T; ++j) {
            double dot = 0.0;
            for (std::size_t r = 0; r < R; ++r) dot += phi_k[j * R + r] * phi_q[t * R + r];
            m.attn[j * T + t] = dot;
            sum += dot;
        }
        ICLAB_CHECK(sum > 0.0, "performer_attention: a query's features vanish (norms too large for the log-domain shift)");
        for (std::size_t j = 0; j < T; ++j) m.attn[j * T + t] /= sum;
    }
    fill_outputs(m, h, w_qkv);
    return m;
}

ApproximationError approximation_error(const AttentionMatrices& exact, const AttentionMatrices& approx) {
    ICLAB_CHECK(exact.attn.size() == approx.attn.size() && exact.out.size() == approx.out.size() && !exact.attn.empty(),
                "approximation_error: matrices of different sizes");
    ApproximationError e;
    for (std::size_t i = 0; i < exact.attn.size(); ++i) {
        const double d = approx.attn[i] - exact.attn[i];
        e.mse_attn += d * d;
        e.mae_attn += std::abs(d);
    }
    for (std::size_t i = 0; i < exact.out.size(); ++i) {
        const double d = approx.out[i] - exact.out[i];
        e.mse_out += d * d;
        e.mae_out += std::abs(d);
    }
    const double na = static_cast<double>(exact.attn.size()), no = static_cast<double>(exact.out.size());
    e.mse_attn /= na;
    e.mae_attn /= na;
    e.mse_out /= no;
    e.mae_out /= no;
    return e;
}

double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
    ICLAB_CHECK(x.size() == y.size() && x.size() >= 2, "loglog_slope: at least two points");
    double mx = 0, my = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        ICLAB_CHECK(x[i] > 0 && y[i] > 0, "loglog_slope: positive values only");
        mx += std::log(x[i]);
        my += std::log(y[i]);
    }
    mx /= static_cast<double>(x.size());
    my /= static_cast<double>(x.size());
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        sxy += (std::log(x[i]) - mx) * (std::log(y[i]) - my);
        sxx += (std::log(x[i]) - mx) * (std::log(x[i]) - mx);
    }
    return sxy / sxx;
}

}  // namespace iclab::icl
