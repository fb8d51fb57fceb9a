#include "framework/icl/iclaa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"

namespace iclab::icl {

void check_iclaa_assumptions(const model::ModelSpec& spec) {
    if (spec.attention != model::ModelSpec::Attention::softmax)
        throw InputError("ICLAA approximates softmax attention; this model has linearized attention, whose prompt "
                         "converts exactly with ICLCA (iclab convert without --method iclaa)");
    if (spec.mask != nn::MaskKind::causal || spec.isolate_queries)
        throw InputError(std::string("ICLAA needs an autoregressive model (paper 000 Assumption 4.2), but the mask is ") +
                         nn::mask_kind_name(spec.mask) + (spec.isolate_queries ? " with isolated queries" : "") +
                         ": the prompt's hidden states would depend on the input");
    if (spec.input != model::ModelSpec::Input::tokens)
        throw InputError("ICLAA converts token prompts; this model reads vectors");
}

PromptKeysValues capture_prompt_keys_values(model::Transformer<double>& model, const std::int32_t* prompts, std::size_t batch,
                                            std::size_t length) {
    const model::ModelSpec& spec = model.spec();
    check_iclaa_assumptions(spec);
    ICLAB_INPUT_CHECK(length > 0 && length <= spec.max_seq_len,
                      "an ICL prompt of " << length << " tokens (the model's max_seq_len is " << spec.max_seq_len << ")");
    const std::size_t H = spec.heads, D = spec.head_dim(), C = spec.width, M = length;
    model.capture_qkv(true);
    model.forward(prompts, batch, length);
    model.capture_qkv(false);
    PromptKeysValues kv;
    kv.batch = batch;
    kv.length = M;
    kv.heads = H;
    kv.dim = D;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    std::vector<double> rq(M * D), rk(M * D), row(M);
    for (std::size_t l = 0; l < spec.layers; ++l) {
        const std::vector<double>& qkv = model.captured_qkv(l);  // (B, M, 3C)
        kv.keys.emplace_back(batch * H * M * D);
        kv.values.emplace_back(batch * H * M * D);
        kv.column_mass.emplace_back(batch * H * M, 0.0);
        for (std::size_t b = 0; b < batch; ++b)
            for (std::size_t h = 0; h < H; ++h) {
                double* keys = kv.keys[l].data() + (b * H + h) * M * D;
                double* values = kv.values[l].data() + (b * H + h) * M * D;
                for (std::size_t p = 0; p < M; ++p) {
                    const double* row_qkv = qkv.data() + (b * M + p) * 3 * C;
                    std::copy(row_qkv + C + h * D, row_qkv + C + (h + 1) * D, keys + p * D);
                    std::copy(row_qkv + 2 * C + h * D, row_qkv + 2 * C + (h + 1) * D, values + p * D);
                    const double* q = row_qkv + h * D;
                    if (model.rope() != nullptr) {
                        model.rope()->rotate(rq.data() + p * D, q, p, false);
                        model.rope()->rotate(rk.data() + p * D, keys + p * D, p, false);
                    } else {
                        std::copy(q, q + D, rq.data() + p * D);
                        std::copy(keys + p * D, keys + (p + 1) * D, rk.data() + p * D);
                    }
                }
                // the prompt's own causal softmax attention, column sums (heavy-hitter keys)
                double* mass = kv.column_mass[l].data() + (b * H + h) * M;
                for (std::size_t i = 0; i < M; ++i) {
                    double top = -std::numeric_limits<double>::infinity();
                    for (std::size_t j = 0; j <= i; ++j) {
                        double s = 0.0;
                        for (std::size_t d = 0; d < D; ++d) s += rq[i * D + d] * rk[j * D + d];
                        row[j] = s * scale;
                        top = std::max(top, row[j]);
                    }
                    double total = 0.0;
                    for (std::size_t j = 0; j <= i; ++j) total += (row[j] = std::exp(row[j] - top));
                    for (std::size_t j = 0; j <= i; ++j) mass[j] += row[j] / total;
                }
            }
    }
    return kv;
}

PromptTerms empty_prompt_terms(std::size_t layers, std::size_t heads_times_batch) {
    return PromptTerms(layers, std::vector<nn::SoftmaxPromptHead<double>>(heads_times_batch));
}

namespace {

// k rotated for the kernel (or the cache): R_{p−M} k (relative to the split), R_p k, or k.
void rotate_prompt_key(double* out, const double* k, std::size_t p, std::size_t M, std::size_t D, const nn::RopeTable* rope,
                       RopeConvention convention) {
    if (rope == nullptr || convention == RopeConvention::unrotated) {
        std::copy(k, k + D, out);
    } else if (convention == RopeConvention::absolute_prompt_positions) {
        rope->rotate(out, k, p, false);
    } else {
        rope->rotate(out, k, M - p, true);  // R_{p−M} = R_{M−p}ᵀ
    }
}

}  // namespace

void add_kernel_terms(PromptTerms& terms, std::size_t slot, const PromptKeysValues& kv, std::size_t b, const LayerHeadMaps& maps,
                      const nn::RopeTable* rope, RopeConvention convention, std::size_t skip_recent) {
    const std::size_t H = kv.heads, D = kv.dim, M = kv.length, summed = M - std::min(skip_recent, M);
    ICLAB_CHECK(maps.size() == terms.size() && kv.keys.size() == terms.size(), "maps, terms and keys disagree on the layers");
    std::vector<double> y(D), phi, log_scale(M);
    std::vector<std::vector<double>> features(M);
    for (std::size_t l = 0; l < terms.size(); ++l)
        for (std::size_t h = 0; h < H; ++h) {
            const nn::KernelFeatures<double>& map = maps[l][h];
            const std::size_t F = map.features;
            ICLAB_CHECK(map.dim == D, "feature map for D = " << map.dim << ", heads have D = " << D);
            nn::SoftmaxPromptHead<double>& head = terms[l].at(slot * H + h);
            head.features = &map;
            head.rotate_query = convention != RopeConvention::unrotated;
            // φ(k̃'_p) = e^{A_p} φ̂_p; the sums under the common shift G = max_p A_p (spec §1.4)
            double G = -std::numeric_limits<double>::infinity();
            for (std::size_t p = 0; p < summed; ++p) {
                rotate_prompt_key(y.data(), kv.key(l, b, h, p), p, M, D, rope, convention);
                features[p].resize(F);
                log_scale[p] = nn::kernel_features(features[p].data(), y.data(), map);
                G = max_or_nan(G, log_scale[p]);  // a NaN key makes the head NaN, never "no prompt" (issue 45)
            }
            head.b_d.assign(F, 0.0);
            head.b_kv.assign(F * D, 0.0);
            for (std::size_t p = 0; p < summed; ++p) {
                const double weight = std::exp(log_scale[p] - G);
                const double* v = kv.value(l, b, h, p);
                for (std::size_t r = 0; r < F; ++r) {
                    const double f = weight * features[p][r];
                    head.b_d[r] += f;
                    for (std::size_t d = 0; d < D; ++d) head.b_kv[r * D + d] += f * v[d];
                }
            }
            double top_d = head.b_d.empty() ? 0.0 : head.b_d.front();
            for (double x : head.b_d) top_d = max_or_nan(top_d, x);
            double top_kv = 0.0;
            for (double x : head.b_kv) top_kv = max_or_nan(top_kv, std::abs(x));
            const auto normalize = [&](std::vector<double>& x, double top, double& log) {
                if (std::isnan(top)) {  // NaN terms stay NaN: the adapter's error is then NaN, its claims not reproduced
                    log = std::numeric_limits<double>::quiet_NaN();
                    std::fill(x.begin(), x.end(), std::numeric_limits<double>::quiet_NaN());
                    return;
                }
                if (!(top > 0.0)) {
                    log = -std::numeric_limits<double>::infinity();
                    std::fill(x.begin(), x.end(), 0.0);
                    return;
                }
                for (double& e : x) e /= top;
                log = G + std::log(top);
            };
            normalize(head.b_d, top_d, head.log_b_d);
            normalize(head.b_kv, top_kv, head.log_b_kv);
        }
}

void add_cache_terms(PromptTerms& terms, std::size_t slot, const PromptKeysValues& kv, std::size_t b, CacheSelection selection,
                     std::size_t keep, const nn::RopeTable* rope) {
    const std::size_t H = kv.heads, D = kv.dim, M = kv.length;
    std::vector<std::size_t> order(M);
    for (std::size_t l = 0; l < terms.size(); ++l)
        for (std::size_t h = 0; h < H; ++h) {
            std::iota(order.begin(), order.end(), std::size_t{0});
            std::size_t K = selection == CacheSelection::all ? M : std::min(keep, M);
            if (selection == CacheSelection::recent) {
                std::rotate(order.begin(), order.begin() + (M - K), order.end());  // the last K first
            } else if (selection == CacheSelection::heavy) {
                const double* mass = kv.column_mass[l].data() + (b * H + h) * M;
                std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return mass[x] > mass[y]; });
            }
            nn::SoftmaxPromptHead<double>& head = terms[l].at(slot * H + h);
            head.cache_length = K;
            head.cache_keys.resize(K * D);
            head.cache_values.resize(K * D);
            for (std::size_t n = 0; n < K; ++n) {
                const std::size_t p = order[n];
                rotate_prompt_key(head.cache_keys.data() + n * D, kv.key(l, b, h, p), p, M, D, rope,
                                  RopeConvention::rotate_then_map);
                const double* v = kv.value(l, b, h, p);
                std::copy(v, v + D, head.cache_values.data() + n * D);
            }
        }
}

std::vector<double> logits_with_terms(model::Transformer<double>& model, const PromptTerms& terms, const std::int32_t* inputs,
                                      std::size_t batch, std::size_t length) {
    struct Reset {
        model::Transformer<double>& m;
        ~Reset() { m.set_softmax_prompt(nullptr); }
    } reset{model};
    model.set_softmax_prompt(&terms);
    model.forward(inputs, batch, length);
    return std::vector<double>(model.logits(), model.logits() + batch * length * model.spec().vocab);
}

}  // namespace iclab::icl
