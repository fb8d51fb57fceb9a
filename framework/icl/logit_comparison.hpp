#pragma once
// How far a converted model's logits on X lie from the reference M_old on [X'; X] at X's N positions: the measures the
// conversions of a prompt are compared by (ICLCA, ICLAA, prompt baking; experiments prompt_baking, prompt_baking_lm).
#include <cstddef>

namespace iclab::icl {

struct LogitComparison {
    double relative_error = 0.0;  // ‖L − L_ref‖_F / ‖L_ref‖_F over N·V logits (paper 000 §6.4)
    double centered_error = 0.0;  // the same with each position's logits centred (mean over V removed): blind, as KL
                                  // is, to a per-position shift, which changes no probability
    double kl = 0.0;              // mean over the N positions of KL(p_ref ‖ p)
    double top1 = 0.0;            // share of positions whose argmax agrees
};
// logits, reference: (N, V) row-major.
LogitComparison compare_logits(const double* logits, const double* reference, std::size_t N, std::size_t V);

// The first index of the largest of z[0..V) and log Σ_v exp(z_v) (shifted by the maximum).
std::size_t argmax_of(const double* z, std::size_t V);
double log_sum_exp_of(const double* z, std::size_t V);

}  // namespace iclab::icl
