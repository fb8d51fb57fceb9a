#pragma once
// Learned feature maps for ICLAA (spec iclaa.md §4.1): per layer and head a two-sided exponential map
//   log φ(x̃) = [W₀ᵀx̃ + c₁ ; −W₀ᵀx̃ + c₂],  x̃ = D^{-1/4} x,  W₀ (D, F/2)
// (Hedgehog's map without its normalization over features: ICLAA needs the absolute scale of exp(qᵀk/√D)),
// fitted once per model by "mixed-attention distillation": on task sequences the frozen model runs (teacher
// forcing), a split M_s cuts each sequence into a pseudo-prompt and a pseudo-input; the queries after the split
// see the keys after it exactly and the keys before it through φ, with RoPE relative to the split (the converted
// model's convention, spec (A4)); the loss is the relative squared error of the attention outputs against the exact
// causal softmax over all keys:
//   L = Σ_i ‖Ô_i − O_i‖² / Σ_i ‖O_i‖²,  Ô_i = [Σ_{M_s≤j≤i} e^{s_ij} v_j + Σ_{p<M_s} κ_ip v_p] / [Σ e^{s_ij} + Σ κ_ip],
//   κ_ip = φ(x_i)ᵀφ(y_p),  x_i = R_{i−M_s} q_i,  y_p = R_{p−M_s} k_p.
// No test prompt is ever seen. Gradient (hand-written, checked by finite differences in tests/test_iclaa_fit.cpp):
//   γ_ip = g_iᵀ(v_p − Ô_i)/Z_i,  ∂L/∂ℓ_f(x_i) = φ_f(x_i) Σ_p γ_ip φ_f(y_p),  ∂L/∂ℓ_f(y_p) = φ_f(y_p) Σ_i γ_ip φ_f(x_i).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::icl {

// One head of one sequence with its split: pre-RoPE q, k, v (T, D) and what the loss needs that the map does not change.
struct DistillationSample {
    std::size_t time = 0, dim = 0, split = 0;
    std::vector<double> x;       // (T − split, D) queries after the split, rotated by R_{i−split}
    std::vector<double> y;       // (split, D) keys before the split, rotated by R_{p−split}
    std::vector<double> values;  // (split, D) their values
    std::vector<double> exact_shift, exact_mass, exact_num;  // per query: m_i, Σ_{j≥split} e^{s_ij−m_i}, Σ e^{s_ij−m_i} v_j (D)
    std::vector<double> target;  // (T − split, D) O_i, the exact softmax output over every key j ≤ i
};
DistillationSample make_distillation_sample(const double* q, const double* k, const double* v, std::size_t time, std::size_t dim,
                                            std::size_t split, const nn::RopeTable* rope);

// The two-sided map of parameters w0 (D, F/2) and c (F) = [c₁; c₂].
nn::KernelFeatures<double> two_sided_map(const std::vector<double>& w0, const std::vector<double>& c, std::size_t D);

// Σ over samples of ‖Ô_i − O_i‖² (numerator of L) and Σ ‖O_i‖², and the gradients of L = num/den with respect to
// w0 and c added into d_w0, d_c when they are non-null (den taken over the same samples).
struct DistillationLoss {
    double squared_error = 0.0, target_norm = 0.0;
    double loss() const { return squared_error / target_norm; }
};
DistillationLoss distillation_loss(const std::vector<DistillationSample>& samples, const nn::KernelFeatures<double>& map,
                                   double* d_w0, double* d_c);

struct FeatureFitSettings {
    std::size_t features = 16;  // F (even)
    std::size_t steps = 300;
    double lr = 1e-2;           // Adam
    std::size_t batch = 32;     // sequences per step
    std::size_t split_min = 8, split_max = 48;
    // Checked after every step (may be empty): true abandons the fit, which then returns no maps (an interrupted
    // run stops within a step instead of finishing a fit of many minutes; its resume fits it again from the start).
    std::function<bool()> stop;
    // Called after every step with (steps done, steps) when set (a command's progress line; fit_feature_maps_together:
    // settings[0]'s).
    std::function<void(std::size_t, std::size_t)> progress;
};
struct FeatureFitReport {
    std::vector<std::vector<double>> final_loss;  // [l][h]: L of the last step
    std::vector<std::vector<double>> first_loss;  // [l][h]: L of the first step
    double seconds = 0.0;
    bool stopped = false;  // abandoned by FeatureFitSettings::stop (the maps returned are empty)
};
// Draws `batch` sequences of `time` tokens into tokens (batch·time) from rng.
using SequenceSampler = std::function<void(std::vector<std::int32_t>& tokens, std::size_t batch, Rng& rng)>;

// Arithmetic of the fit, for run estimates (experiments iclaa, prompt_baking: one equation in one place). Per
// sequence of T tokens in one layer-head with F features, the mean over the splits s = split_min..split_max (uniform;
// q = T − s queries after the split): products, the GEMMs of distillation_loss with its gradient (nn::gemm: what
// ICLAB_COUNT_WORK counts): the features of x and y and dW (4 T D F), per query-key pair κ̂, κ̂V, gVᵀ, dA_x, dA_y
// (6 F + 4 D); loops: make_distillation_sample's exact causal softmax over every key (4 D and two exps a query-key
// pair, the weighted values) and the T F exps of the features. An exp counts kEstimateExpFlops. Not counted here: the
// frozen model's forward of each sequence (the caller's transformer_forward_flops).
constexpr double kEstimateExpFlops = 20.0;
struct FitSampleWork {
    double products = 0.0, loops = 0.0;
};
FitSampleWork distillation_sample_work(double T, double D, double F, std::int64_t split_min, std::int64_t split_max);
// One token's feature of a kernel map in one layer-head (loops): the rotated q or k against a column of w (D multiply-
// adds, counted 4 D with the rotation) and its exp.
inline double kernel_feature_work(double D) { return 4.0 * D + kEstimateExpFlops; }

// Fits every layer's and head's map independently (layers see the frozen model's own q, k, v). Empty maps when
// settings.stop abandoned the fit. In each step: `batch` sequences from sample(…, rng), then the splits from rng.
LayerHeadMaps fit_feature_maps(model::Transformer<double>& model, const SequenceSampler& sample, std::size_t time,
                               const FeatureFitSettings& settings, Rng& rng, FeatureFitReport* report);

// Draws `batch` sequences into tokens from the caller's own stream (fits that share their sequences).
using SequenceSource = std::function<void(std::vector<std::int32_t>& tokens, std::size_t batch)>;
// Several fits on the same sequences in lockstep (the learned maps of several F, issue 44): each step draws one batch
// from `source` and runs the frozen model once for all the fits; fit n draws its initial parameters and then, each
// step, its splits from *rngs[n]. Each fit's maps are therefore bit for bit those fit_feature_maps returns for it alone
// with a sampler that gives the same sequences (the fits share no arithmetic; tests/test_iclaa_fit.cpp). The fits share
// settings[0]'s steps, batch and stop (checked); features, lr and splits are each fit's own. A report's seconds are its
// fit's own work plus an equal share of the sequences and forwards. Empty when stop abandoned them.
std::vector<LayerHeadMaps> fit_feature_maps_together(model::Transformer<double>& model, const SequenceSource& source, std::size_t time,
                                                     const std::vector<FeatureFitSettings>& settings, const std::vector<Rng*>& rngs,
                                                     std::vector<FeatureFitReport>* reports);

}  // namespace iclab::icl

namespace iclab::icl {

// The feature maps of every layer and head for one choice (spec §1.3 step 2, §4.1), drawn or fitted from rng:
//   prf / orf  one random draw per layer (D, F), shared by its heads, input scale D^{-1/4}
//   elu1       elu(x) + 1 of the raw rotated q, k (F = D)
//   learned    fit_feature_maps with `settings` on sequences from `sample` (of `time` tokens)
struct FeatureMapChoice {
    std::string map = "prf";  // prf | orf | elu1 | learned
    std::size_t features = 256;
    FeatureFitSettings fit;   // learned only (fit.features is set to `features`)
};
LayerHeadMaps build_feature_maps(model::Transformer<double>& model, const FeatureMapChoice& choice, const SequenceSampler& sample,
                                 std::size_t time, Rng& rng, FeatureFitReport* report);

// Sequences of the induction-head task (for fitting learned maps on the task the model was trained on).
SequenceSampler induction_sequence_sampler(const tasks::InductionHeadSpec& task);

}  // namespace iclab::icl
