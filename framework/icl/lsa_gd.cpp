#include "framework/icl/lsa_gd.hpp"

#include "framework/core/check.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/nn/linear_attention.hpp"

namespace iclab::icl {

LsaMask lsa_mask_from_name(const std::string& name) {
    if (name == "prefix") return LsaMask::prefix;
    if (name == "causal") return LsaMask::causal;
    if (name == "causal2") return LsaMask::causal2;
    throw Error("unknown LSA mask '" + name + "' (known: prefix, causal, causal2)");
}

const char* lsa_mask_name(LsaMask mask) {
    return mask == LsaMask::prefix ? "prefix" : mask == LsaMask::causal ? "causal" : "causal2";
}

RegressionSequences draw_regression_sequences(Rng& rng, std::size_t batch, std::size_t examples, std::size_t queries,
                                              std::size_t dim, double mu) {
    RegressionSequences s;
    s.batch = batch;
    s.examples = examples;
    s.queries = queries;
    s.dim = dim;
    const std::size_t T = s.time();
    s.x.resize(batch * T * dim);
    s.y.resize(batch * T);
    s.w.resize(batch * dim);
    for (std::size_t b = 0; b < batch; ++b) {
        double* w = s.w.data() + b * dim;
        for (std::size_t k = 0; k < dim; ++k) w[k] = rng.normal();  // w ~ N(0, I_d)
        for (std::size_t t = 0; t < T; ++t) {
            double* x = s.x.data() + (b * T + t) * dim;
            double y = 0.0;
            for (std::size_t k = 0; k < dim; ++k) {
                x[k] = rng.uniform(-1.0, 1.0) + mu;  // x ~ U(−1, 1)^d + μ·1 (§5.1; μ-shift of Figure 2 right)
                y += w[k] * x[k];
            }
            s.y[b * T + t] = y;  // y = w·x, no noise
        }
    }
    return s;
}

template <class T>
std::vector<T> lsa_qkv_weights(const std::vector<double>& w0, std::size_t dim) {
    ICLAB_CHECK(w0.empty() || w0.size() == dim, "w0 has " << w0.size() << " values, d = " << dim);
    const std::size_t C = dim + 1;
    std::vector<T> w(C * 3 * C, T(0));  // (C, 3C): row r is token coordinate r, columns [q | k | v]
    for (std::size_t r = 0; r < dim; ++r) {
        w[r * 3 * C + r] = T(1);        // W_Q = [[I_d, 0], [0, 0]]
        w[r * 3 * C + C + r] = T(1);    // W_K = W_Q
        if (!w0.empty()) w[r * 3 * C + 2 * C + dim] = static_cast<T>(w0[r]);  // W_V last row (w0ᵀ, ·) ...
    }
    w[dim * 3 * C + 2 * C + dim] = T(-1);  // ... (·, −1): v = (0; w0·x − δ)
    return w;
}

template <class T>
void lsa_forward(const RegressionSequences& data, LsaMask mask, double eta, std::size_t layers, const std::vector<double>& w0,
                 const std::function<void(std::size_t, const std::vector<T>&)>& on_layer) {
    const std::size_t B = data.batch, n = data.examples, TT = data.time(), d = data.dim, C = d + 1;
    ICLAB_CHECK(n >= 1 && data.x.size() == B * TT * d && data.y.size() == B * TT, "malformed regression sequences");
    const std::vector<T> w_qkv = lsa_qkv_weights<T>(w0, d);  // (C, 3C)
    std::vector<T> z(B * TT * C), qkv(B * TT * 3 * C), out(B * TT * C), delta(B * TT);  // (B, T, C), (B, T, 3C), (B, T, C), (B, T)
    for (std::size_t bt = 0; bt < B * TT; ++bt) {  // Eq. 4: z = (x; y) for ICEs, (x; 0) for queries
        for (std::size_t k = 0; k < d; ++k) z[bt * C + k] = static_cast<T>(data.x[bt * d + k]);
        z[bt * C + d] = (bt % TT) < n ? static_cast<T>(data.y[bt]) : T(0);
    }
    // c_j, the W_P scale of row j: η/n everywhere (Eq. 1, Eq. 2 with footnote ‡), η/j on ICE row j for causalLM2 (Eq. 18).
    std::vector<T> coefficient(TT, static_cast<T>(eta / static_cast<double>(n)));
    if (mask == LsaMask::causal2)
        for (std::size_t j = 0; j < n; ++j) coefficient[j] = static_cast<T>(eta / static_cast<double>(j + 1));
    nn::AttentionShape shape;
    shape.batch = B;
    shape.time = TT;
    shape.heads = 1;
    shape.head_dim = C;
    nn::LinearAttentionOptions options;
    options.feature_map = nn::FeatureMap::identity;  // LSA: no softmax, no feature map
    options.normalize = false;                       // no normalizer: out = Σ (q·k) v
    options.unnormalized_scale = 1.0;                // W_P applied per row below
    options.mask.kind = mask == LsaMask::prefix ? nn::MaskKind::prefix : nn::MaskKind::causal;
    options.mask.prefix_length = n;
    options.mask.isolate_queries = true;  // queries see the n ICEs only, never themselves or each other (Fig. 5, E.1)
    options.mask.query_self = false;
    nn::LinearAttentionCache<T> cache;
    const std::vector<T> b_kv(C * C, T(0)), b_d(C, T(0));  // the LSA has no attention biases
    for (std::size_t l = 1; l <= layers; ++l) {
        nn::gemm<T>(nn::matrix(qkv.data(), B * TT, 3 * C), nn::matrix<const T>(z.data(), B * TT, C),
                    nn::matrix<const T>(w_qkv.data(), C, 3 * C), false, false);
        nn::linear_attention_forward<T>(out.data(), cache, qkv.data(), b_kv.data(), b_d.data(), nullptr, shape, options);
        for (std::size_t bt = 0; bt < B * TT; ++bt) {  // residual: z_j ← z_j + W_P out_j, W_P = c_j I (Eq. 1/2)
            const T c = coefficient[bt % TT];
            for (std::size_t k = 0; k < C; ++k) z[bt * C + k] += c * out[bt * C + k];
            delta[bt] = z[bt * C + d];
        }
        on_layer(l, delta);
    }
}

template <class T>
std::vector<double> lsa_readout(const RegressionSequences& data, const std::vector<T>& delta, const std::vector<double>& w0) {
    const std::size_t TT = data.time(), d = data.dim;
    ICLAB_CHECK(delta.size() == data.batch * TT, "delta has " << delta.size() << " values, expected " << data.batch * TT);
    std::vector<double> prediction(delta.size());
    for (std::size_t bt = 0; bt < delta.size(); ++bt) {
        double w0x = 0.0;
        for (std::size_t k = 0; k < d && !w0.empty(); ++k) w0x += w0[k] * data.x[bt * d + k];
        const bool ice = bt % TT < data.examples;
        // Prop 6: ICE ỹ = y − δ + w0·x; query ŷ = w0·x − δ (Prop 1, 2 with w0 = 0)
        prediction[bt] = (ice ? data.y[bt] : 0.0) - static_cast<double>(delta[bt]) + w0x;
    }
    return prediction;
}

double lsa_mse(const RegressionSequences& data, const std::vector<double>& prediction, bool ice) {
    const std::size_t TT = data.time();
    double sum = 0.0;
    std::size_t count = 0;
    for (std::size_t bt = 0; bt < prediction.size(); ++bt)
        if ((bt % TT < data.examples) == ice) {
            const double e = prediction[bt] - data.y[bt];
            sum += e * e;
            ++count;
        }
    return count ? sum / static_cast<double>(count) : 0.0;
}

template std::vector<float> lsa_qkv_weights<float>(const std::vector<double>&, std::size_t);
template std::vector<double> lsa_qkv_weights<double>(const std::vector<double>&, std::size_t);
template void lsa_forward<float>(const RegressionSequences&, LsaMask, double, std::size_t, const std::vector<double>&,
                                 const std::function<void(std::size_t, const std::vector<float>&)>&);
template void lsa_forward<double>(const RegressionSequences&, LsaMask, double, std::size_t, const std::vector<double>&,
                                  const std::function<void(std::size_t, const std::vector<double>&)>&);
template std::vector<double> lsa_readout<float>(const RegressionSequences&, const std::vector<float>&, const std::vector<double>&);
template std::vector<double> lsa_readout<double>(const RegressionSequences&, const std::vector<double>&, const std::vector<double>&);

}  // namespace iclab::icl
