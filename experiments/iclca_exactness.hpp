#pragma once
// Experiment `iclca_exactness`: paper 000 §6.1, Table 1 (issue 4 item 4). For each configured model size, a
// random-weight linear-RoPE transformer (elu+1 kernel attention, MLP, LayerNorm, random nonzero b_KV, b_D) in
// inference mode, and P random pairs (ICL prompt X' of M tokens, input X of N tokens):
//   relative error = ‖logits(M_new, X) − logits(M_old, [X'; X])‖ / ‖logits(M_old, [X'; X])‖ over X's positions,
// M_new = M_old with icl::iclca_convert's biases (Algorithm 1). Mean and max over the pairs, in fp32 and fp64
// (one model in memory at a time), wall time and peak resident memory per size and dtype.
// Theorem 4.1 (linear attention, no mask, no RoPE) twice:
//   /tables/theorem41        Eq. 10-11 literally: one non-causal linear attention layer Q(KᵀV + b) at the size's
//                            width and heads, b' = b + W_Kᵀ X'ᵀ X' W_V computed from the weights, not by ICLCA;
//   /tables/theorem41_model  the whole model with Eq. 9's attention (identity features, no normalizer, no RoPE)
//                            and the causal mask ICLCA needs (Assumption 4.2), converted by iclca_convert.
#include "experiments/common.hpp"

namespace iclab::experiments {

config::Schema iclca_exactness_schema();
RunOutcome run_iclca_exactness(const config::Config& cfg, const RunOptions& options);

}  // namespace iclab::experiments
