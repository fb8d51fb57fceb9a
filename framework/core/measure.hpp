#pragma once
// Measurement helpers every experiment shares: relative errors, summary statistics, wall time and memory.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/rng.hpp"

namespace iclab {

// ‖a − reference‖_F / ‖reference‖_F over n entries, accumulated in double. Error (iclab::Error) when the
// result is not finite (non-finite outputs or a zero reference): a silent NaN would pass any "<" check.
template <class T>
double relative_error(const T* a, const double* reference, std::size_t n) {
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(a[i]) - reference[i];
        diff += d * d;
        norm += reference[i] * reference[i];
    }
    const double error = std::sqrt(diff / norm);
    ICLAB_CHECK(std::isfinite(error), "non-finite outputs or a zero reference (relative error " << error << ")");
    return error;
}
template <class T>
double relative_error(const T* a, const std::vector<double>& reference) {
    return relative_error(a, reference.data(), reference.size());
}

// Reductions over measured errors and losses keep a NaN: a NaN anywhere makes the result NaN, so a check on it
// ("error <= bar") fails or its claim is inconclusive (io::evaluate_claim), never passes. std::max(a, b) is
// (a < b) ? b : a and so returns a when b is NaN: a running maximum that starts at 0 scores an all-NaN output 0,
// and std::max_element drops a NaN unless it comes first. For finite values these return exactly what std::max,
// std::min and a left-to-right sum return (the same comparisons and the same order of additions), so no finite
// result changes by a bit. Use them for every reduction whose result feeds a check, a claim or a table.
inline double max_or_nan(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
    return a < b ? b : a;  // std::max's order: the first argument on a tie (0.0 vs -0.0)
}
inline double min_or_nan(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
    return b < a ? b : a;  // std::min's order
}
// The indicator of "a is not below b": 1 when a >= b, 0 when a < b, NaN when either is NaN. Its mean over the
// instances of one trained model is the share of instances where a fails to beat b (claims "a < b on every
// instance", pooled one value per trained model: that share must be 0 on every seed).
inline double not_below(double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
    return a < b ? 0.0 : 1.0;
}
// NaN for an empty list, and when any value is NaN.
double sum_of(const std::vector<double>& values);  // left to right; 0 for an empty list
double mean_of(const std::vector<double>& values);
double max_of(const std::vector<double>& values);
double min_of(const std::vector<double>& values);
// The middle value (the mean of the two middle values for an even count); NaN for an empty list and when any value
// is NaN (std::sort on a NaN is undefined behaviour: the middle of such a "sorted" list can come out finite).
double median_of(std::vector<double> values);
// The q-quantile (0 <= q <= 1) with linear interpolation between the sorted values at positions floor(q (n − 1)) and
// the next; NaN for an empty list and when any value is NaN (as median_of). For q = 0.5 and an even count it is
// a + 0.5 (b − a), not median_of's 0.5 (a + b): the two can differ in the last bit.
double quantile_of(std::vector<double> values, double q);
// Counts over measured values keep a NaN too (issue 45, second audit): a NaN is neither above nor below a bar, so a
// count that skips it reads a NaN curve as 0 increases ("MSE(l) > MSE(l − 1)"), 0 unstable sequences ("rho > 1") or
// "never below the bar", and a claim "= 0" or "> 100" passes. Each is NaN when any value it reads is NaN; for finite
// values it is the count (exact in a double) or index of the loop it replaces, so no finite result changes by a bit.
double count_above(const std::vector<double>& values, double bar);  // how many values > bar
double count_increases(const std::vector<double>& values);         // how many i >= 1 with values[i] > values[i − 1]
// The first j in [first, last] with values[j] < bar, last + 1 when there is none; NaN when any of values[first..last]
// is NaN (a NaN curve never "reaches below" the bar, and has no crossing after it either).
double first_index_below(const std::vector<double>& values, std::size_t first, std::size_t last, double bar);
// The first i with values[i] >= bar (a curve reaching a level: bias_training's steps to p % ICL accuracy); NaN when a
// NaN comes before it (a NaN evaluation is no evidence of being below, so a later crossing is not the first) or when no
// value reaches the bar. A NaN after the crossing does not undo it.
double first_index_reaching(const std::vector<double>& values, double bar);
// The index of the largest of z[0..n), the first of equal ones (as std::max_element); n, no index, when any value
// is NaN or n = 0, so that a prediction from NaN logits is no prediction (std::max_element and a running
// `z[v] > z[best]` both drop a NaN and return a finite index: an all-NaN row predicts token 0).
std::size_t argmax_of(const double* z, std::size_t n);

// Mean, sample standard deviation (n − 1), min and max; all NaN when any value is NaN (std also when n = 1).
struct Spread {
    double mean = std::numeric_limits<double>::quiet_NaN(), std = std::numeric_limits<double>::quiet_NaN();
    double min = std::numeric_limits<double>::quiet_NaN(), max = std::numeric_limits<double>::quiet_NaN();
};
Spread spread_of(const std::vector<double>& values);

// Percentile bootstrap confidence interval of the mean: `resamples` resamples with replacement drawn from rng, the
// (1 − level)/2 and (1 + level)/2 quantiles of their means. {NaN, NaN} for an empty list, a NaN value or a NaN mean (+inf with -inf;
// the same draws from rng either way).
struct Interval {
    double low = std::numeric_limits<double>::quiet_NaN(), high = std::numeric_limits<double>::quiet_NaN();
};
Interval bootstrap_mean_interval(const std::vector<double>& values, double level, std::size_t resamples, Rng& rng);

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Peak resident set size of this process in GiB: VmHWM of /proc/self/status (getrusage's ru_maxrss where /proc is
// missing: Linux carries ru_maxrss across execve, so it can report the parent's peak).
double peak_rss_gib();
// Resets the peak (VmHWM) to the current size (Linux >= 4.0: "5" to /proc/self/clear_refs), so each
// measurement gets its own peak. False where unsupported: peaks are then running maxima of the process.
bool reset_peak_rss();
// The memory this process may still allocate, in GiB, and what sets it: the least of MemAvailable (/proc/meminfo),
// the memory cgroup's limit less its usage, the address-space and data-segment limits (ulimit -v, -d) less what the
// process already maps, and ICLAB_MEMORY_GIB when set (a budget of its own: tests, shared machines). Issue 41: a
// process under `ulimit -v 4194304` on a machine with 22 GiB free was checked against the 22 GiB and died of
// std::bad_alloc. gib is NaN when nothing is known. InputError when ICLAB_MEMORY_GIB is not a positive number.
struct AvailableMemory {
    double gib = std::numeric_limits<double>::quiet_NaN();
    const char* source = "unknown";  // "MemAvailable", "the memory cgroup's limit", "ulimit -v", "ulimit -d", "ICLAB_MEMORY_GIB"
};
AvailableMemory available_memory();
double available_memory_gib();
// "3.2 GiB available (ulimit -v)", "21.9 GiB available": the figure and, when it is not the machine's MemAvailable,
// what limits it; for messages that refuse work.
std::string describe_available_memory();
// Resident set size of this process now, in GiB (VmRSS); NaN when unknown.
double current_rss_gib();

}  // namespace iclab
