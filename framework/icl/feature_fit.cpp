#include "framework/icl/feature_fit.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/nn/gemm.hpp"
#include "framework/train/optimizer.hpp"

namespace iclab::icl {

using nn::gemm;
using nn::matrix;

namespace {

// out = R_{offset} in for offset >= 0, R_{offset} = R_{−offset}ᵀ otherwise; a copy without RoPE.
void rotate_by(double* out, const double* in, long offset, std::size_t D, const nn::RopeTable* rope) {
    if (rope == nullptr)
        std::copy(in, in + D, out);
    else if (offset >= 0)
        rope->rotate(out, in, static_cast<std::size_t>(offset), false);
    else
        rope->rotate(out, in, static_cast<std::size_t>(-offset), true);
}

}  // namespace

DistillationSample make_distillation_sample(const double* q, const double* k, const double* v, std::size_t time, std::size_t dim,
                                            std::size_t split, const nn::RopeTable* rope) {
    ICLAB_CHECK(split > 0 && split < time, "a split inside the sequence, got " << split << " of " << time);
    const std::size_t D = dim, Nq = time - split;
    const long S = static_cast<long>(split);
    DistillationSample s;
    s.time = time;
    s.dim = D;
    s.split = split;
    s.x.resize(Nq * D);
    s.y.resize(split * D);
    s.values.assign(v, v + split * D);
    std::vector<double> keys(time * D);  // every key rotated relative to the split
    for (std::size_t j = 0; j < time; ++j) rotate_by(keys.data() + j * D, k + j * D, static_cast<long>(j) - S, D, rope);
    std::copy(keys.begin(), keys.begin() + split * D, s.y.begin());
    s.exact_shift.resize(Nq);
    s.exact_mass.resize(Nq);
    s.exact_num.assign(Nq * D, 0.0);
    s.target.assign(Nq * D, 0.0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    std::vector<double> scores(time);
    for (std::size_t n = 0; n < Nq; ++n) {
        const std::size_t i = split + n;
        double* x = s.x.data() + n * D;
        rotate_by(x, q + i * D, static_cast<long>(n), D, rope);
        double top_all = -std::numeric_limits<double>::infinity(), top_input = top_all;
        for (std::size_t j = 0; j <= i; ++j) {
            double dot = 0.0;
            for (std::size_t d = 0; d < D; ++d) dot += x[d] * keys[j * D + d];
            scores[j] = dot * scale;
            top_all = std::max(top_all, scores[j]);
            if (j >= split) top_input = std::max(top_input, scores[j]);
        }
        double total = 0.0;
        for (std::size_t j = 0; j <= i; ++j) {
            const double e = std::exp(scores[j] - top_all);
            total += e;
            for (std::size_t d = 0; d < D; ++d) s.target[n * D + d] += e * v[j * D + d];
            if (j >= split) {
                const double f = std::exp(scores[j] - top_input);
                s.exact_mass[n] += f;
                for (std::size_t d = 0; d < D; ++d) s.exact_num[n * D + d] += f * v[j * D + d];
            }
        }
        for (std::size_t d = 0; d < D; ++d) s.target[n * D + d] /= total;
        s.exact_shift[n] = top_input;
    }
    return s;
}

nn::KernelFeatures<double> two_sided_map(const std::vector<double>& w0, const std::vector<double>& c, std::size_t D) {
    const std::size_t F = c.size(), half = F / 2;
    ICLAB_CHECK(F % 2 == 0 && w0.size() == D * half, "a two-sided map needs w0 (D, F/2) and c (F) with F even");
    nn::KernelFeatures<double> map;
    map.kind = nn::KernelMapKind::exp_linear;
    map.dim = D;
    map.features = F;
    map.lambda = 0.0;
    map.input_scale = std::pow(static_cast<double>(D), -0.25);
    map.c = c;
    map.w.resize(D * F);
    for (std::size_t d = 0; d < D; ++d)
        for (std::size_t r = 0; r < half; ++r) {
            map.w[d * F + r] = w0[d * half + r];
            map.w[d * F + half + r] = -w0[d * half + r];
        }
    return map;
}

namespace {

// Log-features A (rows, F) = s·X W + c with each row (or the whole block) shifted by its max; returns the shifts.
void shifted_features(std::vector<double>& phi, std::vector<double>& shifts, const std::vector<double>& x, std::size_t rows,
                      const nn::KernelFeatures<double>& map, bool per_row) {
    const std::size_t D = map.dim, F = map.features;
    phi.resize(rows * F);
    gemm<double>(matrix(phi.data(), rows, F), matrix<const double>(x.data(), rows, D), matrix<const double>(map.w.data(), D, F),
                 false, false, map.input_scale);
    double global = -std::numeric_limits<double>::infinity();
    shifts.assign(rows, global);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t f = 0; f < F; ++f) {
            phi[r * F + f] += map.c[f];
            shifts[r] = std::max(shifts[r], phi[r * F + f]);
            global = std::max(global, phi[r * F + f]);
        }
    if (!per_row) std::fill(shifts.begin(), shifts.end(), global);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t f = 0; f < F; ++f) phi[r * F + f] = std::exp(phi[r * F + f] - shifts[r]);
}

}  // namespace

DistillationLoss distillation_loss(const std::vector<DistillationSample>& samples, const nn::KernelFeatures<double>& map,
                                   double* d_w0, double* d_c) {
    ICLAB_CHECK(map.kind == nn::KernelMapKind::exp_linear && map.lambda == 0.0, "distillation fits two-sided exponential maps");
    const std::size_t D = map.dim, F = map.features, half = F / 2;
    const bool gradient = d_w0 != nullptr && d_c != nullptr;
    DistillationLoss result;
    std::vector<double> phi_x, phi_y, alpha, beta, kernel, kernel_v, out, g, gv, gamma, d_ax, d_ay, d_w(gradient ? D * F : 0, 0.0),
        d_cf(gradient ? F : 0, 0.0);
    for (const DistillationSample& s : samples) {
        const std::size_t Nq = s.time - s.split, Mp = s.split;
        shifted_features(phi_x, alpha, s.x, Nq, map, true);
        shifted_features(phi_y, beta, s.y, Mp, map, false);
        kernel.resize(Nq * Mp);
        gemm<double>(matrix(kernel.data(), Nq, Mp), matrix<const double>(phi_x.data(), Nq, F), matrix<const double>(phi_y.data(), Mp, F),
                     false, true);
        kernel_v.resize(Nq * D);
        gemm<double>(matrix(kernel_v.data(), Nq, D), matrix<const double>(kernel.data(), Nq, Mp),
                     matrix<const double>(s.values.data(), Mp, D), false, false);
        out.resize(Nq * D);
        g.resize(Nq * D);
        std::vector<double> kernel_scale(Nq), z(Nq);
        for (std::size_t i = 0; i < Nq; ++i) {
            const double log_kernel = alpha[i] + beta[0];
            const double top = std::max(s.exact_shift[i], log_kernel);
            const double e1 = std::exp(s.exact_shift[i] - top), e2 = std::exp(log_kernel - top);
            double kernel_mass = 0.0;
            for (std::size_t p = 0; p < Mp; ++p) kernel_mass += kernel[i * Mp + p];
            z[i] = s.exact_mass[i] * e1 + e2 * kernel_mass;
            kernel_scale[i] = e2 / z[i];
            for (std::size_t d = 0; d < D; ++d) {
                out[i * D + d] = (s.exact_num[i * D + d] * e1 + e2 * kernel_v[i * D + d]) / z[i];
                const double diff = out[i * D + d] - s.target[i * D + d];
                result.squared_error += diff * diff;
                result.target_norm += s.target[i * D + d] * s.target[i * D + d];
                g[i * D + d] = 2.0 * diff;  // ∂(Σ‖Ô − O‖²)/∂Ô; divided by Σ‖O‖² at the end
            }
        }
        if (!gradient) continue;
        // γ_ip = (e2/Z_i) gᵢᵀ(v_p − Ô_i) in the shifted units of κ̂
        gv.resize(Nq * Mp);
        gemm<double>(matrix(gv.data(), Nq, Mp), matrix<const double>(g.data(), Nq, D), matrix<const double>(s.values.data(), Mp, D),
                     false, true);
        gamma.resize(Nq * Mp);
        for (std::size_t i = 0; i < Nq; ++i) {
            double g_out = 0.0;
            for (std::size_t d = 0; d < D; ++d) g_out += g[i * D + d] * out[i * D + d];
            for (std::size_t p = 0; p < Mp; ++p) gamma[i * Mp + p] = kernel_scale[i] * (gv[i * Mp + p] - g_out);
        }
        d_ax.resize(Nq * F);
        d_ay.resize(Mp * F);
        gemm<double>(matrix(d_ax.data(), Nq, F), matrix<const double>(gamma.data(), Nq, Mp), matrix<const double>(phi_y.data(), Mp, F),
                     false, false);
        gemm<double>(matrix(d_ay.data(), Mp, F), matrix<const double>(gamma.data(), Nq, Mp), matrix<const double>(phi_x.data(), Nq, F),
                     true, false);
        for (std::size_t n = 0; n < Nq * F; ++n) d_ax[n] *= phi_x[n];
        for (std::size_t n = 0; n < Mp * F; ++n) d_ay[n] *= phi_y[n];
        // ℓ = s·W ᵀx + c:  dW += s (Xᵀ dA_x + Yᵀ dA_y),  dc += column sums
        gemm<double>(matrix(d_w.data(), D, F), matrix<const double>(s.x.data(), Nq, D), matrix<const double>(d_ax.data(), Nq, F), true,
                     false, map.input_scale, 1.0);
        gemm<double>(matrix(d_w.data(), D, F), matrix<const double>(s.y.data(), Mp, D), matrix<const double>(d_ay.data(), Mp, F), true,
                     false, map.input_scale, 1.0);
        for (std::size_t i = 0; i < Nq; ++i)
            for (std::size_t f = 0; f < F; ++f) d_cf[f] += d_ax[i * F + f];
        for (std::size_t p = 0; p < Mp; ++p)
            for (std::size_t f = 0; f < F; ++f) d_cf[f] += d_ay[p * F + f];
    }
    if (gradient) {  // w = [W₀ | −W₀]
        const double inv = 1.0 / result.target_norm;
        for (std::size_t d = 0; d < D; ++d)
            for (std::size_t r = 0; r < half; ++r) d_w0[d * half + r] += inv * (d_w[d * F + r] - d_w[d * F + half + r]);
        for (std::size_t f = 0; f < F; ++f) d_c[f] += inv * d_cf[f];
    }
    return result;
}

namespace {

// One fit's state in fit_feature_maps_together: parameters per layer-head [w0 (D, F/2) | c (F)], Adam (no weight
// decay) on each, drawn from its own rng as fit_feature_maps always drew them.
struct FitState {
    std::size_t F = 0, half = 0;
    model::ParameterLayout layout;
    std::vector<std::vector<double>> params, grads;
    std::vector<train::Optimizer<double>> optimizers;
    std::vector<std::size_t> splits;
    double own_seconds = 0.0;
};

}  // namespace

std::vector<LayerHeadMaps> fit_feature_maps_together(model::Transformer<double>& model, const SequenceSource& source, std::size_t time,
                                                     const std::vector<FeatureFitSettings>& settings, const std::vector<Rng*>& rngs,
                                                     std::vector<FeatureFitReport>* reports) {
    const auto start = std::chrono::steady_clock::now();
    const model::ModelSpec& spec = model.spec();
    check_iclaa_assumptions(spec);
    const std::size_t L = spec.layers, H = spec.heads, D = spec.head_dim(), C = spec.width, fits = settings.size();
    ICLAB_CHECK(fits >= 1 && rngs.size() == fits, "fit_feature_maps_together: " << fits << " fits and " << rngs.size() << " streams");
    const std::size_t steps = settings[0].steps, batch = settings[0].batch;
    std::vector<FitState> state(fits);
    for (std::size_t n = 0; n < fits; ++n) {
        const FeatureFitSettings& set = settings[n];
        ICLAB_CHECK(set.steps == steps && set.batch == batch, "fits run together share their steps and batch");
        const std::size_t F = set.features;
        ICLAB_INPUT_CHECK(F >= 2 && F % 2 == 0, "learned feature maps need an even number of features, got " << F);
        ICLAB_INPUT_CHECK(set.split_min >= 1 && set.split_min <= set.split_max && set.split_max < time,
                          "distillation splits " << set.split_min << ".." << set.split_max << " must lie inside sequences of " << time);
        FitState& f = state[n];
        f.F = F, f.half = F / 2;
        f.layout.add("w0", {D, f.half}, true, false, "(D, F/2)");
        f.layout.add("c", {F}, true, false, "(F)");
        f.params.assign(L * H, std::vector<double>(f.layout.total()));
        f.grads.resize(L * H);
        train::OptimizerSpec adam;
        adam.kind = train::OptimizerKind::adam;
        for (std::size_t lh = 0; lh < L * H; ++lh) {
            for (std::size_t i = 0; i < D * f.half; ++i) f.params[lh][i] = rngs[n]->normal(0.0, std::pow(static_cast<double>(D), -0.25));
            std::fill(f.params[lh].begin() + D * f.half, f.params[lh].end(), -0.5 * std::log(static_cast<double>(F)));
            f.optimizers.emplace_back(adam, f.layout);
        }
    }
    const auto map_of = [&](const FitState& f, const std::vector<double>& p) {
        return two_sided_map(std::vector<double>(p.begin(), p.begin() + D * f.half), std::vector<double>(p.begin() + D * f.half, p.end()), D);
    };
    if (reports != nullptr) {
        reports->assign(fits, FeatureFitReport{});
        for (auto& r : *reports) r.first_loss.assign(L, std::vector<double>(H, 0.0)), r.final_loss.assign(L, std::vector<double>(H, 0.0));
    }
    // A fit's seconds: its own samples, losses and steps, and its share of the sequences and the frozen model's forward.
    const auto finish_reports = [&](bool stopped) {
        if (reports == nullptr) return;
        double own = 0.0;
        for (const FitState& f : state) own += f.own_seconds;
        const double shared = std::max(0.0, seconds_since(start) - own) / static_cast<double>(fits);
        for (std::size_t n = 0; n < fits; ++n) (*reports)[n].seconds = state[n].own_seconds + shared, (*reports)[n].stopped = stopped;
    };
    std::vector<std::int32_t> tokens;
    std::vector<double> q(batch * time * D), k(batch * time * D), v(batch * time * D);  // one head of every sequence
    for (std::size_t step = 0; step < steps; ++step) {
        source(tokens, batch);
        for (std::size_t n = 0; n < fits; ++n) {  // each fit's splits from its own stream, after the sequences (fit_feature_maps' order)
            state[n].splits.resize(batch);
            for (auto& s : state[n].splits) s = settings[n].split_min + rngs[n]->uniform_int(settings[n].split_max - settings[n].split_min + 1);
        }
        model.capture_qkv(true);
        model.forward(tokens.data(), batch, time);  // once for every fit
        model.capture_qkv(false);
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t h = 0; h < H; ++h) {
                const std::vector<double>& qkv = model.captured_qkv(l);
                for (std::size_t b = 0; b < batch; ++b)
                    for (std::size_t t = 0; t < time; ++t) {
                        const double* row = qkv.data() + (b * time + t) * 3 * C;
                        const std::size_t at = (b * time + t) * D;
                        std::copy(row + h * D, row + (h + 1) * D, q.data() + at);
                        std::copy(row + C + h * D, row + C + (h + 1) * D, k.data() + at);
                        std::copy(row + 2 * C + h * D, row + 2 * C + (h + 1) * D, v.data() + at);
                    }
                const std::size_t lh = l * H + h;
                for (std::size_t n = 0; n < fits; ++n) {
                    const auto own_start = std::chrono::steady_clock::now();
                    FitState& f = state[n];
                    std::vector<DistillationSample> samples;
                    for (std::size_t b = 0; b < batch; ++b) {
                        const std::size_t at = b * time * D;
                        samples.push_back(make_distillation_sample(q.data() + at, k.data() + at, v.data() + at, time, D, f.splits[b], model.rope()));
                    }
                    f.grads[lh].assign(f.layout.total(), 0.0);
                    const DistillationLoss loss = distillation_loss(samples, map_of(f, f.params[lh]), f.grads[lh].data(), f.grads[lh].data() + D * f.half);
                    ICLAB_CHECK(std::isfinite(loss.loss()), "feature-map fit (F = " << f.F << ") diverged in layer " << l << " head " << h);
                    f.optimizers[lh].step(f.params[lh], f.grads[lh], settings[n].lr);
                    if (reports != nullptr) {
                        if (step == 0) (*reports)[n].first_loss[l][h] = loss.loss();
                        (*reports)[n].final_loss[l][h] = loss.loss();
                    }
                    f.own_seconds += seconds_since(own_start);
                }
            }
        if (settings[0].progress) settings[0].progress(step + 1, steps);
        if (settings[0].stop && step + 1 < steps && settings[0].stop()) {
            finish_reports(true);
            return {};
        }
    }
    std::vector<LayerHeadMaps> out(fits, LayerHeadMaps(L));
    for (std::size_t n = 0; n < fits; ++n)
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t h = 0; h < H; ++h) out[n][l].push_back(map_of(state[n], state[n].params[l * H + h]));
    finish_reports(false);
    return out;
}

LayerHeadMaps fit_feature_maps(model::Transformer<double>& model, const SequenceSampler& sample, std::size_t time,
                               const FeatureFitSettings& settings, Rng& rng, FeatureFitReport* report) {
    // one fit: its sequences and its splits from the one stream, sequences first in each step
    const SequenceSource source = [&](std::vector<std::int32_t>& tokens, std::size_t batch) { sample(tokens, batch, rng); };
    std::vector<FeatureFitReport> reports;
    std::vector<LayerHeadMaps> maps = fit_feature_maps_together(model, source, time, {settings}, {&rng}, report != nullptr ? &reports : nullptr);
    if (report != nullptr) *report = reports[0];
    return maps.empty() ? LayerHeadMaps{} : std::move(maps[0]);
}

LayerHeadMaps build_feature_maps(model::Transformer<double>& model, const FeatureMapChoice& choice, const SequenceSampler& sample,
                                 std::size_t time, Rng& rng, FeatureFitReport* report) {
    const model::ModelSpec& spec = model.spec();
    const std::size_t L = spec.layers, H = spec.heads, D = spec.head_dim(), F = choice.features;
    LayerHeadMaps maps(L);
    if (choice.map == "prf" || choice.map == "orf") {
        for (auto& layer : maps)  // one draw per layer, shared by its heads
            layer.assign(H, nn::random_kernel_features<double>(D, F, choice.map == "orf", std::pow(static_cast<double>(D), -0.25), rng));
        return maps;
    }
    if (choice.map == "elu1") {
        nn::KernelFeatures<double> map;
        map.kind = nn::KernelMapKind::elu1;
        map.dim = map.features = D;
        map.input_scale = 1.0;  // elu+1 of the raw (rotated) q and k, as linear attention uses it
        for (auto& layer : maps) layer.assign(H, map);
        return maps;
    }
    ICLAB_INPUT_CHECK(choice.map == "learned", "unknown feature map '" << choice.map << "' (known: prf, orf, elu1, learned)");
    FeatureFitSettings settings = choice.fit;
    settings.features = F;
    return fit_feature_maps(model, sample, time, settings, rng, report);
}

FitSampleWork distillation_sample_work(double T, double D, double F, std::int64_t split_min, std::int64_t split_max) {
    FitSampleWork work;
    for (std::int64_t split = split_min; split <= split_max; ++split) {
        const double s = static_cast<double>(split), queries = T - s, pairs_seen = (T * (T + 1) - s * (s + 1)) / 2;
        work.products += 4.0 * T * D * F + queries * s * (6.0 * F + 4.0 * D);
        work.loops += pairs_seen * (4.0 * D + 2.0 * kEstimateExpFlops) + queries * (queries + 1) * D + T * F * kEstimateExpFlops;
    }
    const double splits = static_cast<double>(split_max - split_min + 1);
    work.products /= splits;
    work.loops /= splits;
    return work;
}

SequenceSampler induction_sequence_sampler(const tasks::InductionHeadSpec& task) {
    return [task](std::vector<std::int32_t>& tokens, std::size_t batch, Rng& rng) {
        tasks::TokenBatch data;
        tasks::sample_induction_batch(data, static_cast<int>(batch), task, rng);
        tokens.assign(data.inputs.data(), data.inputs.data() + batch * static_cast<std::size_t>(task.seq_len));
    };
}

}  // namespace iclab::icl
