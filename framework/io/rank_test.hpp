#pragma once
// Kendall's rank correlation and its exact one-sided test under independence, for declared claims over ordered arms
// (framework/io/claims.hpp ClaimPair::Combine::rank_falls; paper 003 Figure 6's "errors fall with the training pool",
// Tables 4-6's "errors grow as k shrinks"). The Python twin scripts/python/rank_test.py (no ties) is the independent
// cross-check: both are tested on the same hand-counted cases.
//
//   S   = sum over pairs i < j with x_i != x_j of sign(x_j - x_i) * sign(y_j - y_i)   (concordant - discordant; a tie
//         in y counts 0)
//   tau = S / (pairs with x_i != x_j)                                                  (tau-a without ties)
//   p   = P(S' <= S) when every one of the n! orders of the y values against x is equally likely (independence):
//         without ties, the discordant count has the Mahonian distribution M(n, k) / n! (Kendall 1938); with ties,
//         the n! orders are enumerated.
#include <cstddef>
#include <vector>

namespace iclab::io {

struct KendallTest {
    double tau = 0.0;     // -1: y strictly falls as x grows; NaN below 2 distinct x
    double p = 1.0;       // exact one-sided p-value of "y falls with x": P(S' <= S) under independence
    long long score = 0;  // S, the integer statistic
    std::size_t pairs = 0;  // pairs with distinct x (tau's denominator)
};

// tau only (any n; the equation above). NaN when any value is NaN, or when no pair has distinct x.
double kendall_tau(const std::vector<double>& x, const std::vector<double>& y);

// tau and the exact one-sided p of "y falls as x grows". Throws InputError (naming the sizes) for unequal lengths,
// fewer than 2 values, a non-finite value, more than 18 values without ties or more than 9 with ties (the exact
// computation's range).
KendallTest kendall_falls(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace iclab::io
