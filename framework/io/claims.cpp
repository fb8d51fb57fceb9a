// Declared reproduction claims: the t-interval and the decision rules (framework/io/claims.hpp); the /claims tables
// of a results file: claims_file.cpp; pooling over runs: claims_pooling.cpp.
#include "framework/io/claims.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::io {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct KindName {
    ClaimKind kind;
    const char* name;
};
constexpr KindName kKinds[] = {{ClaimKind::printed_number, "matches a printed number"},
                               {ClaimKind::qualitative, "reproduces a qualitative claim"},
                               {ClaimKind::own_check, "own check"}};
struct TestName {
    ClaimRule::Test test;
    const char* name;
};
constexpr TestName kTests[] = {{ClaimRule::Test::interval_above, "interval_above"},
                               {ClaimRule::Test::interval_below, "interval_below"},
                               {ClaimRule::Test::interval_within, "interval_within"},
                               {ClaimRule::Test::count_above, "count_above"},
                               {ClaimRule::Test::count_below, "count_below"},
                               {ClaimRule::Test::count_at_most, "count_at_most"},
                               {ClaimRule::Test::count_within, "count_within"}};

// An arm of a ranked claim as a number: the whole text a finite number ("640", "1e-3"), else false.
bool arm_number(const std::string& text, double& value) {
    if (text.empty()) return false;
    char* end = nullptr;
    value = std::strtod(text.c_str(), &end);
    return end == text.c_str() + text.size() && std::isfinite(value);
}

std::string joined(const std::vector<std::string>& parts, const char* separator) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : separator) + part;
    return out;
}

std::string number(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", x);
    return text;
}

// Continued fraction of the regularized incomplete beta function (Lentz's method).
double beta_fraction(double a, double b, double x) {
    constexpr double tiny = 1e-300;
    double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
    d = 1.0 / (std::abs(d) < tiny ? tiny : d);
    double h = d;
    for (int m = 1; m <= 500; ++m) {
        const double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
        d = 1.0 + aa * d, c = 1.0 + aa / c;
        d = 1.0 / (std::abs(d) < tiny ? tiny : d), c = std::abs(c) < tiny ? tiny : c;
        h *= d * c;
        aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
        d = 1.0 + aa * d, c = 1.0 + aa / c;
        d = 1.0 / (std::abs(d) < tiny ? tiny : d), c = std::abs(c) < tiny ? tiny : c;
        const double step = d * c;
        h *= step;
        if (std::abs(step - 1.0) < 1e-15) break;
    }
    return h;
}

// I_x(a, b), the regularized incomplete beta function.
double incomplete_beta(double a, double b, double x) {
    if (x <= 0.0) return 0.0;
    if (x >= 1.0) return 1.0;
    const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
    if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_fraction(a, b, x) / a;
    return 1.0 - front * beta_fraction(b, a, 1.0 - x) / b;
}

// P(T <= t) for Student's t with df degrees of freedom.
double student_t_cdf(double t, double df) {
    const double tail = 0.5 * incomplete_beta(0.5 * df, 0.5, df / (df + t * t));
    return t >= 0.0 ? 1.0 - tail : tail;
}

}  // namespace

const char* claim_kind_name(ClaimKind kind) {
    for (const auto& k : kKinds)
        if (k.kind == kind) return k.name;
    ICLAB_CHECK(false, "unknown claim kind");
}

ClaimKind claim_kind_from_name(const std::string& name) {
    for (const auto& k : kKinds)
        if (name == k.name) return k.kind;
    ICLAB_INPUT_CHECK(false, "claim kind '" << name << "' is none of: matches a printed number, reproduces a qualitative claim, own check");
}

const char* claim_pooling_name(ClaimPooling pooling) {
    return pooling == ClaimPooling::seed_means ? "seed_means" : "values";
}

const char* combine_name(ClaimPair::Combine combine) {
    switch (combine) {
        case ClaimPair::Combine::difference: return "difference";
        case ClaimPair::Combine::log_ratio: return "log_ratio";
        case ClaimPair::Combine::rank_falls: return "rank_falls";
    }
    ICLAB_CHECK(false, "unknown combine");
}

bool ClaimPair::has_arm(const std::string& value) const {
    if (ranked()) return std::find(arms.begin(), arms.end(), value) != arms.end();
    return value == first || value == second;
}

double ClaimPair::combined(double first_value, double second_value) const {
    ICLAB_CHECK(!ranked(), "a ranked claim combines all its arms at once, not two");
    if (combine == Combine::log_ratio) return std::log(second_value / first_value);  // NaN/inf for non-positive values
    return second_value - first_value;
}

const char* verdict_name(Verdict verdict) {
    switch (verdict) {
        case Verdict::reproduced: return "reproduced";
        case Verdict::not_reproduced: return "not reproduced";
        case Verdict::inconclusive: return "inconclusive";
        case Verdict::not_run: return "not run";
    }
    ICLAB_CHECK(false, "unknown verdict");
}

const char* rule_test_name(ClaimRule::Test test) {
    for (const auto& t : kTests)
        if (t.test == test) return t.name;
    ICLAB_CHECK(false, "unknown rule test");
}

ClaimRule::Test rule_test_from_name(const std::string& name) {
    for (const auto& t : kTests)
        if (name == t.name) return t.test;
    ICLAB_INPUT_CHECK(false, "claim rule test '" << name << "' is unknown");
}

Fraction Fraction::of(double share) {
    ICLAB_CHECK(share > 0.0 && share <= 1.0, "a share of the values must be in (0, 1], got " << share);
    if (share == 1.0) return all();
    for (std::size_t out_of = 2; out_of <= 100; ++out_of) {
        const double needed = std::round(share * static_cast<double>(out_of));
        if (std::abs(needed - share * static_cast<double>(out_of)) < 1e-9 * static_cast<double>(out_of))
            return {static_cast<std::size_t>(needed), out_of};
    }
    ICLAB_CHECK(false, "the share " << share << " is no fraction with a denominator <= 100");
}

namespace {
ClaimRule count_rule(ClaimRule::Test test, double threshold, double low, double high, Fraction share) {
    ICLAB_CHECK(share.needed == 0 ? share.out_of == 0 : share.out_of >= share.needed,
                "a count rule's share is needed of out_of values (needed <= out_of, or {0, 0} for every value), got "
                    << share.needed << " of " << share.out_of);
    if (share.needed == share.out_of) share = Fraction::all();  // 3 of 3 is every value
    return {test, threshold, low, high, share.needed, share.out_of};
}
}  // namespace

ClaimRule ClaimRule::interval_above(double threshold) { return {Test::interval_above, threshold, kNaN, kNaN, 0, 0}; }
ClaimRule ClaimRule::interval_below(double threshold) { return {Test::interval_below, threshold, kNaN, kNaN, 0, 0}; }
ClaimRule ClaimRule::interval_within(double low, double high) { return {Test::interval_within, kNaN, low, high, 0, 0}; }
ClaimRule ClaimRule::count_above(double threshold, Fraction share) { return count_rule(Test::count_above, threshold, kNaN, kNaN, share); }
ClaimRule ClaimRule::count_below(double threshold, Fraction share) { return count_rule(Test::count_below, threshold, kNaN, kNaN, share); }
ClaimRule ClaimRule::count_at_most(double threshold, Fraction share) {
    return count_rule(Test::count_at_most, threshold, kNaN, kNaN, share);
}
ClaimRule ClaimRule::count_within(double low, double high, Fraction share) {
    return count_rule(Test::count_within, kNaN, low, high, share);
}

bool ClaimRule::counts() const {
    return test != Test::interval_above && test != Test::interval_below && test != Test::interval_within;
}

std::size_t ClaimRule::needed_of(std::size_t n) const {
    if (needed == 0) return n;
    // ceil(n · needed / out_of) in integers, and never fewer than `needed` itself: "2/3 of the seeds" is not
    // decided by one seed (it needs 2 of 1: inconclusive) and means 2 of 2, 2 of 3, 4 of 5, 7 of 10.
    // out_of = 0: an absolute count (files before shares).
    return out_of == 0 ? needed : std::max(needed, (n * needed + out_of - 1) / out_of);
}

std::string ClaimRule::text() const {
    const std::string of = needed == 0  ? " for every value"
                           : out_of == 0 ? " in >= " + std::to_string(needed) + " values"
                                         : " in >= " + std::to_string(needed) + "/" + std::to_string(out_of) + " of the values, at least " +
                                               std::to_string(needed);
    switch (test) {
        case Test::interval_above: return "95 % t-interval of the mean > " + number(threshold);
        case Test::interval_below: return "95 % t-interval of the mean < " + number(threshold);
        case Test::interval_within: return "95 % t-interval of the mean inside [" + number(low) + ", " + number(high) + "]";
        case Test::count_above: return "x > " + number(threshold) + of;
        case Test::count_below: return "x < " + number(threshold) + of;
        case Test::count_at_most: return "x <= " + number(threshold) + of;
        case Test::count_within:
            if (std::isinf(high)) return "x >= " + number(low) + of;
            if (std::isinf(low)) return "x <= " + number(high) + of;
            return number(low) + " <= x <= " + number(high) + of;
    }
    ICLAB_CHECK(false, "unknown rule test");
}

std::string ClaimRule::text(std::size_t n) const {
    if (!counts() || needed == 0 || out_of == 0 || n < needed) return text();  // fewer values: the note says so
    return text() + " (here " + std::to_string(needed_of(n)) + " of " + std::to_string(n) + ")";
}

bool ClaimRule::on_claimed_side(double x) const {
    switch (test) {
        case Test::interval_above:
        case Test::count_above: return x > threshold;
        case Test::interval_below:
        case Test::count_below: return x < threshold;
        case Test::count_at_most: return x <= threshold;
        case Test::interval_within:
        case Test::count_within: return x >= low && x <= high;
    }
    return false;
}

void check_claim(const Claim& c) {
    ICLAB_CHECK(!c.id.empty() && c.id.find('\n') == std::string::npos, "a claim needs a one-line id");
    ICLAB_CHECK(!c.statement.empty() && !c.source.empty() && !c.metric.empty() && !c.paper.empty(),
                "claim " << c.id << " needs paper, source, statement and metric");
    ICLAB_CHECK(c.unit == "seed" || c.unit == "instance", "claim " << c.id << ": unit is seed or instance, not " << c.unit);
    if (c.kind == ClaimKind::printed_number)
        ICLAB_CHECK(std::isfinite(c.paper_value), "claim " << c.id << " matches a printed number but declares none");
    else
        ICLAB_CHECK(std::isnan(c.paper_value), "claim " << c.id << " (" << claim_kind_name(c.kind) << ") must not carry a paper value");
    if (c.pair.ranked()) {
        ICLAB_CHECK(c.pair.paired() && c.pair.first.empty() && c.pair.second.empty() && c.pair.arms.size() >= 3,
                    "claim " << c.id << ": a ranked claim needs a key and >= 3 arms (not first/second), got " << c.pair.arms.size());
        std::set<double> seen;
        for (const std::string& a : c.pair.arms) {
            double v = 0.0;
            ICLAB_CHECK(arm_number(a, v) && seen.insert(v).second, "claim " << c.id << ": arm '" << a << "' of " << c.pair.key
                                                                             << " is not a number distinct from the others");
        }
        ICLAB_CHECK(c.pair.arm.empty() || c.pair.has_arm(c.pair.arm),
                    "claim " << c.id << ": this run's arm '" << c.pair.arm << "' is none of " << c.pair.key << " = " << joined(c.pair.arms, ", "));
    } else if (c.pair.paired())
        ICLAB_CHECK(c.pair.arms.empty() && !c.pair.first.empty() && !c.pair.second.empty() && c.pair.first != c.pair.second &&
                        (c.pair.arm.empty() || c.pair.arm == c.pair.first || c.pair.arm == c.pair.second),
                    "claim " << c.id << ": pair on " << c.pair.key << " needs two different arms and this run's arm among them, got '"
                             << c.pair.first << "', '" << c.pair.second << "', arm '" << c.pair.arm << "'");
    else
        ICLAB_CHECK(c.pair.arm.empty() && c.pair.first.empty() && c.pair.second.empty(), "claim " << c.id << ": arms without a pair key");
    if (c.pooling == ClaimPooling::seed_means)
        ICLAB_CHECK(c.unit == "instance" && !c.pair.paired(), "claim " << c.id << ": seed_means pooling is for unpaired claims on instances");
    ICLAB_CHECK(c.rule.out_of == 0 ? (c.rule.counts() || c.rule.needed == 0) : c.rule.counts() && c.rule.needed > 0 && c.rule.needed < c.rule.out_of,
                "claim " << c.id << ": a share of " << c.rule.needed << " of " << c.rule.out_of << " values");
    if (c.deterministic)
        ICLAB_CHECK(c.kind == ClaimKind::own_check && c.rule.counts() && c.rule.needed == 0 && !c.pair.paired() &&
                        c.pooling == ClaimPooling::values,
                    "claim " << c.id << ": a deterministic claim (one value decides) is an own check whose count rule asks every "
                             "value, unpaired, pooled by values");
    if (c.rule.test == ClaimRule::Test::interval_within || c.rule.test == ClaimRule::Test::count_within)
        ICLAB_CHECK(!std::isnan(c.rule.low) && !std::isnan(c.rule.high) && c.rule.low <= c.rule.high, "claim " << c.id << ": band [" << c.rule.low << ", " << c.rule.high << "] is empty");
    else
        ICLAB_CHECK(std::isfinite(c.rule.threshold), "claim " << c.id << ": rule threshold must be finite");
}

double student_t_quantile(double p, double df) {
    ICLAB_CHECK(p > 0.0 && p < 1.0 && df > 0.0, "student_t_quantile(p " << p << ", df " << df << ")");
    if (p < 0.5) return -student_t_quantile(1.0 - p, df);
    double lo = 0.0, hi = 1.0;
    while (student_t_cdf(hi, df) < p) hi *= 2.0;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, hi); ++i) {
        const double mid = 0.5 * (lo + hi);
        (student_t_cdf(mid, df) < p ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

Interval t_interval95(const std::vector<double>& values) {
    Interval out{kNaN, kNaN, kNaN};
    const std::size_t n = values.size();
    if (n == 0) return out;
    double sum = 0.0;
    for (double v : values) sum += v;
    out.mean = sum / static_cast<double>(n);
    if (n < 2) return out;
    double squares = 0.0;
    for (double v : values) squares += (v - out.mean) * (v - out.mean);
    const double sd = std::sqrt(squares / static_cast<double>(n - 1));
    const double half = student_t_quantile(0.975, static_cast<double>(n - 1)) * sd / std::sqrt(static_cast<double>(n));
    out.low = out.mean - half, out.high = out.mean + half;
    return out;
}

namespace {

// The whole interval [low, high] on the claimed side of the rule (on_side) or wholly off it; false below two values
// (no interval). The claimed side is a half-line or an interval, so both ends on it put the whole interval on it; the
// off side of a band [low, high] is two half-lines, and the interval must lie in one of them.
bool interval_on_side(const ClaimRule& rule, const Interval& interval, bool on_side) {
    if (std::isnan(interval.low) || std::isnan(interval.high)) return false;
    if (on_side) return rule.on_claimed_side(interval.low) && rule.on_claimed_side(interval.high);
    if (rule.test == ClaimRule::Test::count_within) return interval.high < rule.low || interval.low > rule.high;
    return !rule.on_claimed_side(interval.low) && !rule.on_claimed_side(interval.high);
}

}  // namespace

ClaimResult evaluate_claim(const Claim& claim, std::vector<std::int64_t> units, std::vector<double> values) {
    check_claim(claim);
    ICLAB_CHECK(units.size() == values.size(), "claim " << claim.id << ": " << units.size() << " units for " << values.size() << " values");
    ClaimResult r;
    r.claim = claim;
    r.units = std::move(units);
    r.values = std::move(values);
    const std::size_t n = r.values.size();
    for (double v : r.values)
        if (!std::isfinite(v)) {
            r.interval = {kNaN, kNaN, kNaN};
            r.note = "a non-finite value";
            return r;  // inconclusive
        }
    r.interval = t_interval95(r.values);
    if (n == 0) {  // nothing measured (a paired claim whose other arm never ran): not evidence of any kind
        r.verdict = Verdict::not_run;
        r.note = "no value";
        return r;
    }
    if (claim.pair.paired() && !claim.pair.arm.empty()) {
        if (claim.pair.ranked())
            r.note = "one arm (" + claim.pair.key + " = " + claim.pair.arm + ") of a ranked claim: `iclab claims` ranks it with the runs of " +
                     joined(claim.pair.arms, ", ") + " of the same seed";
        else
            r.note = "one arm (" + claim.pair.arm + ") of a paired claim: `iclab claims` pairs it with the " +
                     (claim.pair.arm == claim.pair.first ? claim.pair.second : claim.pair.first) + " run of the same seed";
        return r;  // inconclusive
    }
    for (double v : r.values) r.on_side += claim.rule.on_claimed_side(v) ? 1 : 0;
    const ClaimRule& rule = claim.rule;
    using Test = ClaimRule::Test;
    if (rule.test == Test::interval_above || rule.test == Test::interval_below || rule.test == Test::interval_within) {
        if (n < 2) {
            r.note = "one value: no interval";
            return r;
        }
        const double lo = r.interval.low, hi = r.interval.high;
        bool yes = false, no = false;
        if (rule.test == Test::interval_above) yes = lo > rule.threshold, no = hi <= rule.threshold;
        if (rule.test == Test::interval_below) yes = hi < rule.threshold, no = lo >= rule.threshold;
        if (rule.test == Test::interval_within) yes = lo >= rule.low && hi <= rule.high, no = hi < rule.low || lo > rule.high;
        r.verdict = yes ? Verdict::reproduced : no ? Verdict::not_reproduced : Verdict::inconclusive;
        if (r.verdict == Verdict::inconclusive) r.note = "the interval straddles the rule's edge";
        return r;
    }
    const std::size_t needed = rule.needed_of(n);
    if (n < needed) {  // fewer values than the share's own count (1 value for "2/3 of the values")
        r.note = std::to_string(n) + " values, the rule needs " + std::to_string(needed);
        return r;
    }
    // The count decides, and must agree with the mean of the same values (claims.hpp, ClaimRule). Every claimed side is
    // convex (a half-line or an interval), so the mean of values all on it lies on it, and the mean of values all off a
    // half-line lies off it (the off side of an interval is not convex): there the count decides the mean's side,
    // because the rounded mean of n values at the rule's edge can fall on the other side (0.1 + 0.1 + 0.1 =
    // 0.30000000000000004, and its third is above 0.1).
    const bool counted = r.on_side >= needed;
    const bool off_side_convex = rule.test != Test::count_within || std::isinf(rule.low) || std::isinf(rule.high);
    const bool mean_on_side = r.on_side == n                      ? true
                              : r.on_side == 0 && off_side_convex ? false
                                                                  : rule.on_claimed_side(r.interval.mean);
    const std::string counted_text = std::to_string(r.on_side) + " of " + std::to_string(n) + " values on the claimed side (" +
                                     std::to_string(needed) + " needed)";
    if (counted == mean_on_side) {
        r.verdict = counted ? Verdict::reproduced : Verdict::not_reproduced;
        return r;
    }
    // They disagree. A rule for every value fails on one failing value, whatever the mean. Otherwise the mean overrides
    // the count (inconclusive) only when its whole 95 % t-interval is on the mean's side; an interval that reaches the
    // other side is no evidence against the count, which decides, and the note says why the verdict is on the other
    // side of its mean (issue 45: the same pattern, 1 of 5 with the mean's interval straddling, read inconclusive in
    // one claim and not reproduced in another).
    const std::string interval_text = "[" + number(r.interval.low) + ", " + number(r.interval.high) + "]";
    if (!counted && needed == n) {
        r.verdict = Verdict::not_reproduced;
        r.note = counted_text + ": the rule needs every value; their mean " + number(r.interval.mean) + " is on the claimed side";
        return r;
    }
    if (interval_on_side(rule, r.interval, mean_on_side)) {
        r.note = counted_text + ", but their mean " + number(r.interval.mean) + (counted ? " is not" : " is") + ", with its whole 95 % interval " +
                 interval_text + ": the count and the mean disagree";
        return r;  // inconclusive
    }
    r.verdict = counted ? Verdict::reproduced : Verdict::not_reproduced;
    r.note = counted_text + ": the count decides; their mean " + number(r.interval.mean) + (counted ? " is not" : " is") +
             " on the claimed side, but its 95 % interval " + interval_text + " reaches " + (counted ? "into" : "out of") + " it";
    return r;
}

}  // namespace iclab::io
