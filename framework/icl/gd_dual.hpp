#pragma once
// The "in-context learning = gradient descent" duals of papers 002 and 004, anchored on von Oswald et al. 2023
// (specs/gd_duals.md). Each check_* draws one random instance from `rng`, computes the ATTENTION side with iclab's
// attention layers (nn::linear_attention_forward, nn::softmax_attention_forward) and the GD side with the
// reference models of gd_reference.hpp (Linear + loss module + SGD), both from the same φ values (rule 3), and
// returns err(attention, GD) with its negative controls (rule 2).
//   err(a, b) = max_i |a_i − b_i| / max(1, max_i |a_i|)   (spec §0.2; a = attention side, whole output vectors)
#include <cstddef>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/nn/feature_map.hpp"

namespace iclab::icl {

template <class T>
double dual_error(const T* attention, const T* gd, std::size_t n);

// ---- paper 002, Theorem 1: a prompt equals one GD step (spec §1) -----------------------------------------------
struct Thm1Setting {
    nn::FeatureMap feature_map = nn::FeatureMap::elu1;
    std::size_t width = 8;           // C
    std::size_t features = 0;        // R (performer only; elementwise maps have R = C)
    std::size_t prompt = 4, input = 4;  // m, n
    double eta_over_m = 1.0;
};
struct Thm1Result {
    double err = 0, err_no_half = 0, err_no_w0 = 0;  // controls −1 where they cannot fail: prompt_effect < 1e-3;
    // err_no_w0 also at η/m < 1 or W_0 x_i ≈ 0
    double prompt_effect = 0;  // err(S_0, W_0 φ(W_Q p)): how much the prompt moves the outputs
    double conditioning = 0;   // κ: size of the term that cancels in W_0 x_i − y_i over max(1, max|S_0|); rounding ≈ eps·κ
    double err_iclca = -1;  // η = m only: ‖(W_1 − W_0) − the attention state of X'‖ (ICLCA's b_KV); −1 otherwise
};
template <class T>
Thm1Result check_002_thm1(const Thm1Setting& s, Rng& rng);

// ---- paper 002, Algorithm 1 / Theorem 2: deep model equals greedy layer-wise GD (spec §2) ---------------------
struct Alg1Setting {
    std::string pattern = "AF";  // one letter per layer: A = LSA, F = FFN (width 4C, GELU)
    nn::FeatureMap feature_map = nn::FeatureMap::elu1;
    std::size_t features = 0;    // R (performer only)
    bool pre_ln = false;
    std::size_t width = 16, heads = 1, prompt = 2, input = 4;  // C, H, m, n
};
struct Alg1Result {
    double err_final = 0, err_max_layer = 0, err_causal_control = 0;
    double conditioning = 0;  // max over LSA layers of Theorem 1's κ (Thm1Result) relative to max(1, max|h|)
    double frac_layers_loss_decreased = 0;  // over LSA layers: L_l(W_1) < L_l(W_0) (diagnostic, spec §2)
    std::vector<double> err_layer, loss_before, loss_after;  // per layer (losses NaN for FFN layers)
};
template <class T>
Alg1Result check_002_alg1(const Alg1Setting& s, Rng& rng);

// ---- paper 004, Theorem 1 and §4 variants (spec §3, §7) ----------------------------------------------------------
// kernel: a finite-R feature map, or `softmax` for the exact softmax attention in kernel form (R = ∞, spec §3.4).
struct Thm1004Setting {
    nn::FeatureMap feature_map = nn::FeatureMap::performer;
    bool softmax = false;      // exact softmax attention against KernelLinearModel (feature_map unused)
    std::size_t features = 120;  // R (performer)
    std::size_t demos = 15;      // N; T = N + 1 tokens of width C = 12 (d_x = 11, d_y = 1)
    std::size_t epochs = 1;      // N_CL
    double eta_loss = 1.0;
    // Variant (spec §7): none | reg (Eq. 14, one full-batch step, requires N_CL = 1) | aug | neg
    std::string variant = "none";
    double alpha = 0.0;                       // reg
    // reg: how the GD side applies Eq. 13's regularizer (spec §8, A16). full_batch: one full-batch step (N_CL = 1,
    // the exact dual of Eq. 14); per_sample: batch-1 SGD for N_CL epochs with ℓ_i + (α/(2ηN))‖W‖² per sample;
    // per_step: the full (α/(2η))‖W‖² every batch-1 step. The batch-1 splits are not exact (Fig. 10's deviation).
    std::string reg_split = "full_batch";
    bool aug_g1 = false, aug_g2 = false, aug_g2plus = false;  // aug: values g1, keys g2 or g2⁺
    std::size_t negatives = 0;                // neg: k
    double beta = 0.0;                        // neg: β
    bool renorm = true;                       // neg: + β/(T − k) to the non-negatives (§5.5)
};
struct Thm1004Result {
    double err = 0;              // attention vs batch-1 SGD after N·N_CL steps (reg: the full-batch step)
    double err_epochs = 0;       // max over epoch boundaries of the linear-trajectory identity (§3.3.2)
    double err_eta = 0;          // max difference between runs at η_loss ∈ {1e-2, 1, 1e2} (§3.3.3)
    double err_full_batch = 0;   // one full-batch step with η_gd = η_loss (§3.3.4)
    double err_ctrl_w0 = -1;     // W_0 := 0 (−1 when a_{N+1}|v_{N+1}| < 1e-3, skipped per §3.5)
    double err_ctrl_d = 0;       // D over keys 1..N only
    double err_ctrl_base = 0;    // variants: the base-model dual against the modified attention (§7); reg: −1 when
                                 // α a_{N+1} |v_{N+1}| < 1e-3 (it cannot fail)
    double eq15_vs_gd = 0;       // reg: Eq. 15 as printed against the dual (typo A8)
    double eq15_minus_eq14_residual = 0;  // reg: (Eq. 15 − Eq. 14) − (−α(1 − a_{N+1}) v_{N+1})
    // reg with a batch-1 split (spec §8): err is then the deviation of y_CL(S) from Eq. 14, not an identity;
    // err_closed_form: the SGD loop against W^{(S)} = ρ^S W_0 + (1/(N_CL D)) Σ_s ρ^{S−s} y_{i(s)} φ(x_{i(s)})ᵀ at φ(q);
    // err_full_batch: one full-batch step (N_CL = 1) against Eq. 14; y_tf_eq15: Eq. 15's y-slot, ĥ − α v_{N+1}.
    double err_closed_form = -1, y_tf_eq15 = 0;
    double y_true = 0, y_tf = 0, y_cl = 0;
};
template <class T>
Thm1004Result check_004_thm1(const Thm1004Setting& s, Rng& rng);

// The same dual on given weights and tokens (a trained layer, spec §5): h (T, C = 12) with h_{N+1} = [x_{N+1}; 0];
// w_qkv (C, 3C) = [W_Q | W_K | W_V] row convention without the temperature, applied as q = s W_Q h, k = s W_K h;
// random (C, R) performer directions; g1, g2, g2b (C, C) for the augmented variant only. y_true is left 0. With
// trajectory_y, the batch-1 run records the y-slot of W^{(s)} φ(q) for s = 0..N·N_CL (Fig. 3 left).
template <class T>
struct Dual004Weights {
    std::vector<T> w_qkv, random, g1, g2, g2b;
    double scale = 1.0;  // s
};
template <class T>
Thm1004Result dual_004(const std::vector<T>& h, const Dual004Weights<T>& weights, const Thm1004Setting& s,
                       std::vector<double>* trajectory_y);

// ---- von Oswald et al. 2023, Proposition 1: constructed LSA equals K GD steps (spec §10) ----------------------
struct VoSetting {
    std::size_t dx = 10, dy = 1, demos = 10, layers = 1;  // d_x, d_y, N, K
    bool w0_zero = true;
    double eta = 0.5;
    bool shared = true;  // unshared: η_l ~ U(0.1, 0.8) per layer
};
struct VoResult {
    double err_query = 0, err_context = 0, err = 0;
    // Query among keys and values (C2); −1 when W_0 = 0 or the query's extra value (η_1/N)·2|W_0 x_q| < 1e-2
    // (the control needs W_0 ≠ 0 and cannot fail by more than that).
    double err_ctrl = -1;
};
template <class T>
VoResult check_vo_construct(const VoSetting& s, Rng& rng);

}  // namespace iclab::icl
