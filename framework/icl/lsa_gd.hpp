#pragma once
// The constructed multi-layer linear self-attention (LSA) of paper 003 (Ding et al., "CausalLM is not optimal
// for in-context learning"; shared/papers/003_*.txt), §3 Eq. 1, 2, 4, 5 and App. E.1, run on iclab's own
// linear attention (nn::linear_attention_forward: identity features, no normalizer, isolated queries, prefix
// or causal mask) with constructed weights. Cross-checked against von Oswald et al.'s create_weights: the
// query reads out as −δ and never attends to itself or to other queries.
//
// Token (Eq. 4): z_j = (x_j; δ_j) ∈ R^{d+1}, δ_j⁽⁰⁾ = y_j for the n ICEs, 0 for the m queries.
// Weights (Eq. 5, E.1), in iclab's row convention qkv = z · W with W (C, 3C) = [W_Q | W_K | W_V], C = d + 1:
//   q = k = (x; 0),   v = (0; w0·x − δ),   W_P = c_j · I   (c_j = η/n: Eq. 1 prefix, Eq. 2/8-10 causal;
//                                                            c_j = η/j on ICE row j: Eq. 18, causalLM2)
// One layer (residual, tied weights, no softmax/LayerNorm/MLP), with A(j) the ICEs row j sees:
//   δ_j ← δ_j + c_j Σ_{i∈A(j)} (w0·x_i − δ_i) (x_iᵀ x_j)
// Readout (Prop 1, 2, 6): ICE ỹ_j = y_j − δ_j + w0·x_j, query ŷ_q = w0·x_q − δ_q.
//
// causalLM2's row-dependent c_j = η/j is not a constant output scale of the attention layer: the layer runs
// with scale 1 and W_P is applied per row afterwards (one multiply per row). Queries use c = η/n (paper 003
// spec §2 A0: "normalise by the number of attended keys"; the paper leaves query rows unspecified).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"

namespace iclab::icl {

enum class LsaMask { prefix, causal, causal2 };
LsaMask lsa_mask_from_name(const std::string& name);
const char* lsa_mask_name(LsaMask mask);

// B sequences of n ICEs followed by m queries, T = n + m positions each (paper 003 §5.1, App. E.1).
struct RegressionSequences {
    std::size_t batch = 0, examples = 0, queries = 0, dim = 0;  // B, n, m, d
    std::vector<double> x;  // (B, T, d)
    std::vector<double> y;  // (B, T): y = w·x at every position (queries too: the MSE target)
    std::vector<double> w;  // (B, d): each sequence's task
    std::size_t time() const { return examples + queries; }
};

// x ~ U(−1, 1)^d + mu·1, w ~ N(0, I_d) per sequence, y = w·x without noise, all from `rng` in the order
// (sequence: w, then x of every position).
RegressionSequences draw_regression_sequences(Rng& rng, std::size_t batch, std::size_t examples, std::size_t queries,
                                              std::size_t dim, double mu = 0.0);

// The constructed W (C, 3C) = [W_Q | W_K | W_V] of Eq. 5 for w0 (d values; empty means w0 = 0).
template <class T>
std::vector<T> lsa_qkv_weights(const std::vector<double>& w0, std::size_t dim);

// Runs `layers` layers of the constructed LSA on `data` with step η. After layer l (1-based), calls
// on_layer(l, delta) with delta (B, T) the last token coordinate δ⁽ˡ⁾ (in T precision).
template <class T>
void lsa_forward(const RegressionSequences& data, LsaMask mask, double eta, std::size_t layers, const std::vector<double>& w0,
                 const std::function<void(std::size_t, const std::vector<T>&)>& on_layer);

// The readout of Prop 1/2/6: (B, T) predictions from δ (B, T): ICE y − δ + w0·x, query w0·x − δ.
template <class T>
std::vector<double> lsa_readout(const RegressionSequences& data, const std::vector<T>& delta, const std::vector<double>& w0);

// Mean squared error of predictions (B, T) against data.y over the ICE positions (ice = true) or the queries.
double lsa_mse(const RegressionSequences& data, const std::vector<double>& prediction, bool ice);

}  // namespace iclab::icl
