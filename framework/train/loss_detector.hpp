#pragma once
// A spike / plateau detector on a recorded per-step training-loss history: the code that decides whether a
// declared fallback (paper 003 spec Part B §4: "fall back to lr 3e-4 if the loss spikes") is triggered, so that the
// choice is a rule fixed in the config before the runs, not a look at the curves afterwards (issue 21).
//
// Smoothed loss: s_t = mean of loss[t-w+1 .. t] (w = window, defined for t >= w-1; t is the 0-based step index,
// the reported step is t + 1, the 1-based count of steps done, as /steps's "step" column).
// - spike:   the first t >= warmup (the first step after the lr warmup) with s_t > spike_factor · min_{w-1 <= u < t} s_u.
// - plateau: the first t with t - P >= warmup (P = plateau_steps) whose window [t-P, t] improved by less than
//            plateau_improvement, (s_{t-P} - s_t) / s_{t-P} < plateau_improvement, AND the loss later left the
//            plateau: min_{u > t} s_u < plateau_escape · s_t. The second condition keeps a converged run (flat at
//            its floor until the end, as the cosine schedule ends) from triggering: only a run that sat on a
//            plateau and descended well below it afterwards was stuck there, not finished.
// - none:    never triggers.
#include <cstddef>
#include <string>
#include <vector>

namespace iclab::train {

enum class LossRuleKind { none, spike, plateau, spike_or_plateau };

struct LossRule {
    LossRuleKind kind = LossRuleKind::none;
    std::size_t window = 50;          // w: steps in the moving mean
    double spike_factor = 3.0;        // spike: s_t > factor · running minimum
    std::size_t plateau_steps = 500;  // P
    double plateau_improvement = 0.1; // relative improvement over P steps below this ...
    double plateau_escape = 0.5;      // ... and later s_u < escape · s_t
};

struct LossDetection {
    bool triggered = false;
    std::string kind;            // "spike", "plateau" or "" (not triggered)
    std::size_t step = 0;        // 1-based step at which the rule fired (0: not triggered)
    std::string reason;          // one line with the numbers, or why it did not fire
    double smoothed_loss = 0.0;  // s_t at the firing step
    double reference_loss = 0.0; // spike: the running minimum; plateau: s_{t-P}
    double ratio = 0.0;          // spike: s_t / minimum; plateau: s_t / s_{t-P}
};

// "none", "spike", "plateau", "spike_or_plateau" <-> LossRuleKind (InputError for another name).
LossRuleKind loss_rule_kind(const std::string& name);
std::string loss_rule_name(LossRuleKind kind);

// Applies the rule to losses[0 .. n-1] (loss of step t + 1 at index t) with `warmup` warmup steps. With
// spike_or_plateau the earlier firing step wins (a spike on a tie). Throws InputError on a non-finite loss or
// window == 0.
LossDetection detect_loss_event(const std::vector<double>& losses, std::size_t warmup, const LossRule& rule);

}  // namespace iclab::train
