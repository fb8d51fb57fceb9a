"""Kendall's rank correlation and its exact one-sided test (no ties), for paper 003 Figure 6's "errors fall with the
training pool" (spec shared/specs/paper003.md §5 item 6), declared as a rank test over every pool size, not the end
points: per mask and seed, tau(pool size, test error) with the exact one-sided p-value P(tau <= observed) under
independence <= ALPHA (n = 5 pools: tau <= -0.8, i.e. at most one pair out of order); the claim holds in >= 2 of 3
seeds.

tau = (concordant - discordant) / C(n, 2); under independence every order of the errors is equally likely, so the
number of discordant pairs (inversions) has the Mahonian distribution M(n, k) / n! (Kendall 1938).

The declared claim computes the same test in C++ (framework/io/rank_test.hpp, the ranked claims "003-F6 ...: test
error falls with the pool"); this module is its independent cross-check: both are tested on the same hand-counted
cases (tests/test_rank_test.cpp, ctest python_rank_test).
"""
import math

ALPHA = 0.05


def kendall_tau(xs, ys):
    """Kendall's tau-a of two equal-length sequences; ValueError on ties (pool sizes and errors are distinct)."""
    n = len(xs)
    if n != len(ys) or n < 2:
        raise ValueError("kendall_tau needs two sequences of one length >= 2")
    concordant = discordant = 0
    for i in range(n):
        for j in range(i + 1, n):
            s = (xs[i] - xs[j]) * (ys[i] - ys[j])
            if s == 0:
                raise ValueError("kendall_tau: tied values")
            concordant += s > 0
            discordant += s < 0
    return (concordant - discordant) / (n * (n - 1) / 2)


def inversion_counts(n):
    """M(n, k), k = 0..C(n,2): the permutations of n items with k inversions."""
    counts = [1]
    for m in range(2, n + 1):  # insert item m: adds 0..m-1 inversions
        out = [0] * (len(counts) + m - 1)
        for k, c in enumerate(counts):
            for extra in range(m):
                out[k + extra] += c
        counts = out
    return counts


def p_decreasing(tau, n):
    """Exact one-sided p-value P(T <= tau) under independence, n values without ties."""
    pairs = n * (n - 1) // 2
    discordant = round((1 - tau) * pairs / 2)  # tau = 1 - 4 D / (n (n - 1))
    counts = inversion_counts(n)
    return sum(counts[discordant:]) / math.factorial(n)


def falls(pools, errors, alpha=ALPHA):
    """(tau, p, holds): the errors fall with the pool size by the declared one-sided rank test."""
    tau = kendall_tau(pools, errors)
    p = p_decreasing(tau, len(pools))
    return tau, p, p <= alpha
