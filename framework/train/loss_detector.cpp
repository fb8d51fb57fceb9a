// Spike / plateau detector (framework/train/loss_detector.hpp).
#include "framework/train/loss_detector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "framework/core/check.hpp"

namespace iclab::train {

namespace {

std::string format(const char* pattern, double a, double b, double c, double d) {
    char text[256];
    std::snprintf(text, sizeof text, pattern, a, b, c, d);
    return text;
}

// Smoothed losses s_t for t = w-1 .. n-1, stored at index t (NaN before w-1).
std::vector<double> moving_mean(const std::vector<double>& losses, std::size_t w) {
    std::vector<double> s(losses.size(), std::numeric_limits<double>::quiet_NaN());
    double sum = 0.0;  // Kahan-free running sum is enough: w <= a few thousand terms of similar size
    for (std::size_t t = 0; t < losses.size(); ++t) {
        sum += losses[t];
        if (t >= w) sum -= losses[t - w];
        if (t + 1 >= w) s[t] = sum / static_cast<double>(w);
    }
    return s;
}

LossDetection detect_spike(const std::vector<double>& s, std::size_t warmup, const LossRule& rule) {
    LossDetection out;
    double minimum = std::numeric_limits<double>::infinity();
    for (std::size_t t = rule.window - 1; t < s.size(); ++t) {
        if (t >= warmup && t >= rule.window && s[t] > rule.spike_factor * minimum) {
            out.triggered = true, out.kind = "spike", out.step = t + 1;
            out.smoothed_loss = s[t], out.reference_loss = minimum, out.ratio = s[t] / minimum;
            out.reason = "spike: " + std::to_string(rule.window) + "-step mean loss " + format("%.4g", s[t], 0, 0, 0) +
                         " at step " + std::to_string(t + 1) + format(" > %.4g x its running minimum %.4g (ratio %.3g)",
                                                                      rule.spike_factor, minimum, out.ratio, 0);
            return out;
        }
        minimum = std::min(minimum, s[t]);
    }
    out.reason = "no spike: the " + std::to_string(rule.window) + "-step mean loss never exceeded " +
                 format("%.4g", rule.spike_factor, 0, 0, 0) + " x its running minimum after the warmup";
    return out;
}

LossDetection detect_plateau(const std::vector<double>& s, std::size_t warmup, const LossRule& rule) {
    LossDetection out;
    const std::size_t P = rule.plateau_steps, n = s.size();
    // later_min[t] = min_{u > t} s_u
    std::vector<double> later_min(n + 1, std::numeric_limits<double>::infinity());
    for (std::size_t t = n; t-- > 0;) later_min[t] = std::min(later_min[t + 1], t + 1 < n ? s[t + 1] : later_min[t + 1]);
    const std::size_t first = std::max(warmup + P, rule.window - 1 + P);
    std::size_t flat_windows = 0;  // windows that improved too little but were never left: a converged run
    for (std::size_t t = first; t < n; ++t) {
        const double improvement = (s[t - P] - s[t]) / s[t - P];
        if (!(improvement < rule.plateau_improvement)) continue;
        if (later_min[t] < rule.plateau_escape * s[t]) {
            out.triggered = true, out.kind = "plateau", out.step = t + 1;
            out.smoothed_loss = s[t], out.reference_loss = s[t - P], out.ratio = s[t] / s[t - P];
            out.reason = "plateau: " + std::to_string(rule.window) + "-step mean loss " + format("%.4g -> %.4g", s[t - P], s[t], 0, 0) +
                         " over steps " + std::to_string(t + 1 - P) + "-" + std::to_string(t + 1) +
                         format(" (improvement %.3g < %.3g), later down to %.4g < %.3g x the plateau", improvement,
                                rule.plateau_improvement, later_min[t], rule.plateau_escape);
            return out;
        }
        ++flat_windows;
    }
    out.reason = flat_windows > 0 ? "no plateau: the loss flattened (" + std::to_string(flat_windows) +
                                        " windows) but never fell below " + format("%.3g", rule.plateau_escape, 0, 0, 0) +
                                        " x the flat level afterwards (converged)"
                                  : "no plateau: every " + std::to_string(P) + "-step window after the warmup improved by >= " +
                                        format("%.3g", rule.plateau_improvement, 0, 0, 0);
    return out;
}

}  // namespace

LossRuleKind loss_rule_kind(const std::string& name) {
    if (name == "none") return LossRuleKind::none;
    if (name == "spike") return LossRuleKind::spike;
    if (name == "plateau") return LossRuleKind::plateau;
    if (name == "spike_or_plateau") return LossRuleKind::spike_or_plateau;
    throw InputError("unknown loss rule '" + name + "' (none, spike, plateau, spike_or_plateau)");
}

std::string loss_rule_name(LossRuleKind kind) {
    switch (kind) {
        case LossRuleKind::none: return "none";
        case LossRuleKind::spike: return "spike";
        case LossRuleKind::plateau: return "plateau";
        case LossRuleKind::spike_or_plateau: return "spike_or_plateau";
    }
    return "none";
}

LossDetection detect_loss_event(const std::vector<double>& losses, std::size_t warmup, const LossRule& rule) {
    ICLAB_INPUT_CHECK(rule.window > 0, "loss detector: window must be >= 1");
    for (std::size_t t = 0; t < losses.size(); ++t)
        ICLAB_INPUT_CHECK(std::isfinite(losses[t]), "loss detector: the loss of step " << t + 1 << " is " << losses[t]);
    if (rule.kind == LossRuleKind::none) {
        LossDetection out;
        out.reason = "rule none: no detector";
        return out;
    }
    const std::vector<double> s = moving_mean(losses, rule.window);
    const bool spike = rule.kind == LossRuleKind::spike || rule.kind == LossRuleKind::spike_or_plateau;
    const bool plateau = rule.kind == LossRuleKind::plateau || rule.kind == LossRuleKind::spike_or_plateau;
    LossDetection a, b;
    if (spike) a = detect_spike(s, warmup, rule);
    if (plateau) b = detect_plateau(s, warmup, rule);
    if (spike && plateau) {
        if (a.triggered && (!b.triggered || a.step <= b.step)) return a;
        if (b.triggered) return b;
        a.reason += "; " + b.reason;
        return a;
    }
    return spike ? a : b;
}

}  // namespace iclab::train
