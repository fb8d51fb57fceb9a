#pragma once
// Reproduction claims as declared data (CONVENTIONS.md "Claims and processes"). An experiment declares each claim
// before it measures — statement, source, kind, decision rule — then hands over one value per unit (a training seed,
// or an instance of an exact identity) and gets a verdict by the declared rule. The results file stores the claim
// table /claims (one row per claim: declaration and evaluation) and /claim_values (one row per claim and unit), so
// that `iclab claims` can pool the units of several runs (seeds of one config) and evaluate the same rule again;
// a claim on the instances of a trained model (prompt pairs) can ask to be pooled by per-seed means (ClaimPooling).
//
// Verdicts, one vocabulary for every kind:
//   reproduced      the declared rule holds on the measured values
//   not reproduced  the rule fails (for interval rules: the interval lies wholly on the wrong side)
//   inconclusive    the rule cannot decide: a 95 % interval straddles the threshold or band edge, fewer values than
//                   the rule needs, or a non-finite value
//   not run         no value at all (e.g. a paired claim whose other arm ran for no seed): nothing was measured
// The interval is the two-sided 95 % Student-t interval of the mean, mean ± t(0.975, n−1)·s/√n (n ≥ 2).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace iclab::io {

class ResultsWriter;
class ResultsReader;

enum class ClaimKind {
    printed_number,  // "matches a printed number": paper_value is what the paper printed, the rule names a band
    qualitative,     // "reproduces a qualitative claim": no paper value, the rule names a direction
    own_check,       // "own check": no paper number (an identity the paper states exactly, a spec's bar)
};
const char* claim_kind_name(ClaimKind kind);
ClaimKind claim_kind_from_name(const std::string& name);  // throws InputError naming the value

enum class Verdict { reproduced, not_reproduced, inconclusive, not_run };
const char* verdict_name(Verdict verdict);

// A count rule's share of the values: needed of every out_of ({2, 3}: ">= 2/3 of the values"), so that a rule
// written for 3 seeds keeps its meaning on 5 (4 of 5, where an absolute "2" would mean "any 2"). {0, 0}: every value.
struct Fraction {
    std::size_t needed = 0, out_of = 0;
    static Fraction all() { return {0, 0}; }
    // The smallest-denominator fraction (out_of <= 100) equal to share within 1e-9 (0.8 -> 4/5); 1 -> all(). Error
    // (iclab::Error) when share is not in (0, 1] or has no such fraction.
    static Fraction of(double share);
};

// The decision rule over the values x_1..x_n of one claim, fixed before the run.
//
// A count rule is decided by the count of values on the claimed side, and a verdict on the other side of the values'
// own mean always carries its reason in the note. When the count says reproduced but the mean lies off the claimed
// side (2 of 3 seeds above 0 with mean -0.17), or says not reproduced while the mean lies on it: the verdict is
// inconclusive when the mean's whole 95 % t-interval lies on the mean's side (the mean is evidence against the
// count), and otherwise the count decides, noted "the count decides; their mean ... is (not) on the claimed side, but
// its 95 % interval [lo, hi] reaches into (out of) it". A rule for every value (exactness over instances) stays not
// reproduced when one value fails, whatever the mean: its note says so.
struct ClaimRule {
    enum class Test {
        interval_above,   // t-interval wholly > threshold: reproduced; wholly <= threshold: not reproduced
        interval_below,   // t-interval wholly < threshold: reproduced; wholly >= threshold: not reproduced
        interval_within,  // t-interval inside [low, high]: reproduced; disjoint: not reproduced
        count_above,      // x_i > threshold for the needed share of the values: reproduced, else not (see above)
        count_below,      // x_i < threshold for the needed share
        count_at_most,    // x_i <= threshold for the needed share (Fraction::all(): every value)
        count_within,     // low <= x_i <= high for the needed share
    };
    Test test = Test::count_at_most;
    double threshold = 0.0, low = 0.0, high = 0.0;
    // Count tests: the values needed on the claimed side are ceil(n · needed / out_of) of n, and at least `needed`
    // (fewer values than that: inconclusive); needed = 0: all n.
    // out_of = 0 with needed > 0 is an absolute count: files written before fractions only (read_claims); no
    // declaration can make one.
    std::size_t needed = 0, out_of = 0;

    static ClaimRule interval_above(double threshold);
    static ClaimRule interval_below(double threshold);
    static ClaimRule interval_within(double low, double high);
    static ClaimRule count_above(double threshold, Fraction share = Fraction::all());
    static ClaimRule count_below(double threshold, Fraction share = Fraction::all());
    static ClaimRule count_at_most(double threshold, Fraction share = Fraction::all());
    static ClaimRule count_within(double low, double high, Fraction share = Fraction::all());

    bool counts() const;                        // a count test
    std::size_t needed_of(std::size_t n) const;  // count tests: the values needed of n
    // "95 % t-interval of the mean > 0.446", "x < 0 in >= 2/3 of the values, at least 2"; with n (the values
    // evaluated) a share also shows its count: "x < 0 in >= 2/3 of the values, at least 2 (here 4 of 5)".
    std::string text() const;
    std::string text(std::size_t n) const;
    bool on_claimed_side(double x) const;
};
const char* rule_test_name(ClaimRule::Test test);
ClaimRule::Test rule_test_from_name(const std::string& name);

// A paired claim compares two runs of one unit (paper 003 Part B: the prefixLM and causalLM runs of one seed share
// initialization, pool and test set). The run of each arm declares the claim with its own raw value and `arm` set;
// `iclab claims` groups runs whose configs differ only in seed, output and the experiment's arm keys, pairs the arms
// by unit and evaluates the rule on x_i = second_i - first_i (difference) or ln(second_i / first_i) (log_ratio).
// A ranked claim (rank_falls) combines more than two arms: `arms` lists the key's values (numbers, e.g. the training
// pool sizes of paper 003 Figure 6), each run declares its value with `arm` one of them, and x_i is the exact one-sided
// p-value of Kendall's tau between the arm values and the runs' values of unit i (framework/io/rank_test.hpp: small
// when the value falls as the arm grows); a unit needs every arm.
struct ClaimPair {
    enum class Combine { difference, log_ratio, rank_falls };
    std::string key;            // the config key whose value names the arm ("model.mask"); empty: not paired
    std::string first, second;  // difference, log_ratio: its two values ("prefix", "causal"); rank_falls: empty
    std::vector<std::string> arms;  // rank_falls: its values, >= 3 distinct numbers ("640", "1920", ...); else empty
    Combine combine = Combine::difference;
    std::string arm;            // this run's arm (first or second, or one of arms); empty once the arms are combined
    bool paired() const { return !key.empty(); }
    bool ranked() const { return combine == Combine::rank_falls; }
    double combined(double first_value, double second_value) const;  // difference and log_ratio only
    bool has_arm(const std::string& value) const;
};
const char* combine_name(ClaimPair::Combine combine);

// How `iclab claims` pools the values of one claim over several runs (the training seeds of one setting).
enum class ClaimPooling {
    values,      // every run's values together (seeds, or the instances of every run), the rule on all of them
    seed_means,  // unit "instance" only: one value per run, the mean of its instances, with the run's training seed as
                 // its unit; the rule (interval, on_claimed_side) applies to these per-seed means. For claims on
                 // instances of a trained model (prompt pairs), whose instances of one model are not independent
                 // draws of the training
};
const char* claim_pooling_name(ClaimPooling pooling);

struct Claim {
    std::string id;         // unique within a run, stable across runs and seeds: "002-T1 float32"
    std::string paper;      // "000", "002", "003", "004", "von Oswald 2023"
    std::string source;     // "Table 1", "Figure 6", "Theorem 1", "spec gd_duals §1"
    ClaimKind kind = ClaimKind::own_check;
    std::string statement;  // what is claimed, in words
    std::string metric;     // what one value x_i is
    std::string unit = "seed";  // what one value belongs to: "seed" or "instance"
    double paper_value = std::numeric_limits<double>::quiet_NaN();  // printed_number only
    ClaimRule rule;
    std::string readme;  // the README section that explains the claim: "experiments/gd_duals/README.md#anchor"
    ClaimPair pair;      // paired claims only
    ClaimPooling pooling = ClaimPooling::values;
    // Declared by the experiment (issue 45), never inferred from the rule: true for an identity or closed form that
    // holds on every value (an exactness bar, a negative control), where one value decides and a wrong computation
    // misses the bar in every value; false for anything that depends on a training run or a data draw (convergence,
    // conditioning, a trained model's accuracy), which keeps the floor of 5 seeds (framework/io/claims_floor.hpp).
    // check_claim: a deterministic claim is an own check with a count rule over every value, unpaired, pooled by values.
    bool deterministic = false;
    // Empty: the rule and its bars were declared before the runs. Otherwise "chosen after the first runs (YYYY-MM-DD):
    // <reason>": a rule or bar changed after seeing results, shown on the page and counted there.
    std::string provenance;
};

// Throws Error when a declaration breaks the rules above: printed_number without a finite paper_value, another kind
// with one, an empty id / statement / source / metric, an interval_within with low > high.
void check_claim(const Claim& claim);

struct Interval {
    double mean = 0.0, low = 0.0, high = 0.0;  // low = high = NaN below two values
};
// Two-sided 95 % Student-t interval of the mean of `values` (all finite).
Interval t_interval95(const std::vector<double>& values);
// The p-quantile of Student's t with df > 0 degrees of freedom (0 < p < 1), by bisection on the CDF
// (regularized incomplete beta); accurate to ~1e-10.
double student_t_quantile(double p, double df);

struct ClaimResult {
    Claim claim;
    std::vector<std::int64_t> units;  // seed or instance index of each value
    std::vector<double> values;
    Interval interval;
    std::size_t on_side = 0;  // values on the claimed side of the threshold (count tests and interval_above/below)
    Verdict verdict = Verdict::inconclusive;
    std::string note;  // why inconclusive, when it is
    // What a score on held-out (validation) data picked for this claim in this run, e.g. "F=32 picked on 200
    // validation pairs ..."; pooled: per seed. Empty when nothing was picked. A result, not part of the declaration.
    std::string selection;
    // Set by pool_claims only (never written to /claims): leave_one_out_text of the pooled result. The claims table
    // (framework/workflow/claims_pool.hpp) shows it as the column `leave_one_out`.
    std::string leave_one_out;
    // Set by run::pool_run_claims only: the verdict of the setting's rounding twin (the same runs with
    // train.perturb_init_ulps != 0), column `rounding` of the claims table (framework/workflow/claims_pool.hpp).
    std::string rounding;
    // Set by run::pool_run_claims only: the runs of the setting left out because their run-level precondition was not
    // met (framework/io/precondition.hpp), "seed 2: <precondition_text>; seed 4: ...", column `excluded` of the claims table.
    std::string excluded;
};

// Evaluates the declared rule on the values (one per unit); check_claim first. No value at all: not run. One arm of a paired claim (pair.arm
// set) is inconclusive with a note: its values are raw, the rule applies to the paired values.
ClaimResult evaluate_claim(const Claim& claim, std::vector<std::int64_t> units, std::vector<double> values);

// /claims and /claim_values (see the top of this file). Throws on a duplicate claim id.
void write_claims(ResultsWriter& writer, const std::vector<ClaimResult>& claims);
// Reads them back, checked (kinds, tests, lengths, ids): InputError naming the file and field. Empty when the file
// holds no /claims.
std::vector<ClaimResult> read_claims(const ResultsReader& reader);
// Pools the values of claims with the same id (e.g. one run per seed) and evaluates each rule again. The
// declarations of one id must agree and a unit must not repeat (two runs of seed 0): InputError naming both.
// run_seeds (one per run, or empty): the training seed of each run, the unit of a seed_means claim's value (empty:
// the run's index); a seed_means claim refuses a seed twice. Its pooled result has unit "seed", the per-seed means as
// values and the runs' selections joined as "seed 0: ...; seed 1: ...".
// Paired claims: the arms' values are paired by unit (a unit repeats once per arm); a unit with one arm only is left
// out and named in the note; the result has pair.arm empty and the paired values. Ranked claims (rank_falls): one
// value per unit that has every arm (the p-value of Kendall's test; the note lists each unit's tau), a unit missing
// an arm is left out and named with the arms it misses.
std::vector<ClaimResult> pool_claims(const std::vector<std::pair<std::string, std::vector<ClaimResult>>>& runs,
                                     const std::vector<std::int64_t>& run_seeds = {});

// Leave-one-seed-out (issue 45, "Robustness shown"): for a result over seeds (claim.unit "seed": pooled seeds, paired
// or ranked per-seed values, seed_means' per-seed means) with n >= 3 values, the rule's n - 1 form evaluated n times,
// each time without one seed's value: the same rule, a share's count on n - 1 values without the share's own minimum
// (">= 5/6, at least 5" asks 4 of 4), and no floor (claims_floor.hpp), so that "fragile" means the data flips it. "holds" when no drop changes the verdict; otherwise "fragile: without seed k →
// <verdict>" for each seed k whose drop changes it, joined by "; " in unit order ("fragile: without seed 2 → not
// reproduced; without seed 4 → inconclusive"). Empty for a claim over instances or with fewer than 3 values. pool_claims
// sets ClaimResult::leave_one_out to it.
std::string leave_one_out_text(const ClaimResult& result);

}  // namespace iclab::io
