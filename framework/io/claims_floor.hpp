#pragma once
// The floor of `iclab claims` (issue 45: "rules a coin cannot pass", "each trained claim stands on >= 5 seeds"): the
// fewest values a pooled claim decides on, by the classification claims.hpp already declares.
//
// A deterministic check decides on one value: a claim whose declaration says so (Claim::deterministic: an identity the
// paper states exactly, a closed form, a spec's bar on a constructed model, a negative control; check_claim holds it to
// an own check whose count rule asks every value, unpaired, pooled by values). One wrong value fails it, and a wrong
// computation misses its bar in every value, not in half of them as the fair coin of the page's false-pass rate would.
// Every other claim is about trained models, data draws or timings (a qualitative claim, a printed number, a share,
// an interval, a paired or ranked comparison, per-seed means of a trained model's instances, and an own check on a
// draw: a convergence, a conditioning, a rate): on fewer than kMinValues values its verdict is inconclusive, whatever
// the rule says on them (5 of 5 by a fair coin: 3.1 %; 1 of 1: 50 %). io::pool_claims and run::pool_run_claims judge
// the rule alone; `iclab claims` (experiments/cli/inspect.cpp) applies the floor to what it prints and writes, with
// the declaration's floor (a seed_means claim's pooled result reads "unit seed, pooling values", its declaration does
// not).
// Header-only: the pooling code and its file layout are unchanged.
#include <cstddef>
#include <string>

#include "framework/io/claims.hpp"

namespace iclab::io {

constexpr std::size_t kMinValues = 5;

inline bool deterministic_check(const Claim& claim) { return claim.deterministic; }

// 1 for a deterministic check, else kMinValues.
inline std::size_t min_values(const Claim& claim) { return deterministic_check(claim) ? 1 : kMinValues; }

// With fewer values than `minimum`, a reproduced or not reproduced verdict becomes inconclusive, noted "needs >= 5
// seeds, has 3 (on them the rule says reproduced)" ("values" for a claim over instances), before any note it had; its
// leave-one-out and rounding texts are dropped (a verdict the floor withholds has no robustness to show: dropping a
// seed of too few, or a twin of too few, decides nothing). No value at all: unchanged (not run).
inline void require_min_values(ClaimResult& r, std::size_t minimum) {
    const std::size_t n = r.values.size();
    if (n == 0 || n >= minimum) return;
    r.leave_one_out.clear(), r.rounding.clear();
    std::string text = "needs >= " + std::to_string(minimum) + (r.claim.unit == "seed" ? " seeds" : " values") + ", has " + std::to_string(n);
    if (r.verdict == Verdict::reproduced || r.verdict == Verdict::not_reproduced) {
        text += std::string(" (on them the rule says ") + verdict_name(r.verdict) + ")";
        r.verdict = Verdict::inconclusive;
    }
    r.note = text + (r.note.empty() ? "" : "; " + r.note);
}

}  // namespace iclab::io
