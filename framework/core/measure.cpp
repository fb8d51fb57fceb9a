#include "framework/core/measure.hpp"

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace iclab {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

double sum_of(const std::vector<double>& values) {
    double sum = 0.0;
    for (double v : values) sum += v;  // a NaN stays NaN (and +inf + -inf is NaN)
    return sum;
}

double mean_of(const std::vector<double>& values) {
    if (values.empty()) return kNaN;
    return sum_of(values) / static_cast<double>(values.size());
}

double max_of(const std::vector<double>& values) {
    if (values.empty()) return kNaN;
    double out = values.front();
    for (double v : values) out = max_or_nan(out, v);
    return out;
}

double min_of(const std::vector<double>& values) {
    if (values.empty()) return kNaN;
    double out = values.front();
    for (double v : values) out = min_or_nan(out, v);
    return out;
}

namespace {
bool any_nan(const std::vector<double>& values) {
    return std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); });
}
}  // namespace

double count_above(const std::vector<double>& values, double bar) {
    if (any_nan(values)) return kNaN;
    double count = 0.0;
    for (double v : values) count += v > bar ? 1.0 : 0.0;
    return count;
}

double count_increases(const std::vector<double>& values) {
    if (any_nan(values)) return kNaN;
    double count = 0.0;
    for (std::size_t i = 1; i < values.size(); ++i) count += values[i] > values[i - 1] ? 1.0 : 0.0;
    return count;
}

double first_index_below(const std::vector<double>& values, std::size_t first, std::size_t last, double bar) {
    ICLAB_CHECK(first <= last && last < values.size(), "first_index_below: [" << first << ", " << last << "] is not inside " << values.size() << " values");
    for (std::size_t j = first; j <= last; ++j)
        if (std::isnan(values[j])) return kNaN;
    for (std::size_t j = first; j <= last; ++j)
        if (values[j] < bar) return static_cast<double>(j);
    return static_cast<double>(last) + 1.0;
}

double first_index_reaching(const std::vector<double>& values, double bar) {
    for (std::size_t j = 0; j < values.size(); ++j) {
        if (std::isnan(values[j])) return kNaN;
        if (values[j] >= bar) return static_cast<double>(j);
    }
    return kNaN;
}

double median_of(std::vector<double> values) {
    if (values.empty() || any_nan(values)) return kNaN;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double quantile_of(std::vector<double> values, double q) {
    ICLAB_CHECK(q >= 0.0 && q <= 1.0, "quantile_of: q = " << q << " is not in [0, 1]");
    if (values.empty() || any_nan(values)) return kNaN;
    std::sort(values.begin(), values.end());
    const double position = q * static_cast<double>(values.size() - 1);
    const std::size_t lo = static_cast<std::size_t>(position);
    const std::size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (position - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

std::size_t argmax_of(const double* z, std::size_t n) {
    std::size_t best = 0;
    for (std::size_t v = 0; v < n; ++v) {
        if (std::isnan(z[v])) return n;
        if (z[best] < z[v]) best = v;  // std::max_element's comparison: the first of equals stays
    }
    return best;  // n = 0: 0, which is n
}

Spread spread_of(const std::vector<double>& values) {
    Spread s;
    if (values.empty() || any_nan(values)) return s;
    s.mean = mean_of(values);
    if (values.size() > 1) {
        double squares = 0.0;
        for (double v : values) squares += (v - s.mean) * (v - s.mean);
        s.std = std::sqrt(squares / static_cast<double>(values.size() - 1));
    }
    s.min = *std::min_element(values.begin(), values.end());
    s.max = *std::max_element(values.begin(), values.end());
    return s;
}

bool reset_peak_rss() {
    std::ofstream clear_refs("/proc/self/clear_refs");
    if (!clear_refs) return false;
    clear_refs << "5";
    clear_refs.flush();
    return clear_refs.good();
}

namespace {

// The number after `key` in a "Key: value kB" file (/proc/meminfo, /proc/self/status), in bytes; NaN when absent.
double proc_field_bytes(const char* file, const std::string& key) {
    std::ifstream in(file);
    std::string line, name;
    double value = 0;
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        if (fields >> name >> value && name == key) return value * 1024.0;
    }
    return kNaN;
}

// The first number in a file (cgroup limits); NaN when the file is missing or holds "max".
double file_number(const std::string& path) {
    std::ifstream in(path);
    double value = 0;
    return in >> value ? value : kNaN;
}

// "key value" lines (a cgroup's memory.stat); 0 when absent.
double stat_value(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string name;
    double value = 0;
    while (in >> name >> value)
        if (name == key) return value;
    return 0.0;
}

// The memory cgroup's headroom in bytes: its limit less its usage, inactive page cache counted as free (the kernel
// reclaims it before it refuses memory); NaN without a limit. cgroup v2 (memory.max, "max": none) or v1
// (memory.limit_in_bytes, ~2^63: none), in the folder /proc/self/cgroup names, else at the mount's root (a
// container sees its own cgroup there).
double cgroup_headroom_bytes() {
    std::string v2 = "/", v1 = "/";
    {
        std::ifstream in("/proc/self/cgroup");
        std::string line;
        while (std::getline(in, line)) {
            if (line.rfind("0::", 0) == 0) v2 = line.substr(3);
            const auto at = line.find(":memory:");
            if (at != std::string::npos) v1 = line.substr(at + 8);
        }
    }
    const auto headroom = [](const std::string& folder, const char* limit_file, const char* usage_file, const char* inactive_key) {
        const double limit = file_number(folder + limit_file);
        if (!std::isfinite(limit) || limit >= 1e18) return kNaN;
        const double usage = file_number(folder + usage_file);
        if (!std::isfinite(usage)) return kNaN;
        return std::max(0.0, limit - usage + stat_value(folder + "/memory.stat", inactive_key));
    };
    for (const std::string& folder : {"/sys/fs/cgroup" + v2, std::string("/sys/fs/cgroup")}) {
        const double bytes = headroom(folder, "/memory.max", "/memory.current", "inactive_file");
        if (std::isfinite(bytes)) return bytes;
    }
    for (const std::string& folder : {"/sys/fs/cgroup/memory" + v1, std::string("/sys/fs/cgroup/memory")}) {
        const double bytes = headroom(folder, "/memory.limit_in_bytes", "/memory.usage_in_bytes", "total_inactive_file");
        if (std::isfinite(bytes)) return bytes;
    }
    return kNaN;
}

// A resource limit less what this process already holds of it (/proc/self/status `field`), in bytes; NaN without one.
double rlimit_headroom_bytes(int resource, const char* field) {
    rlimit limit{};
    if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kNaN;
    const double used = proc_field_bytes("/proc/self/status", field);
    return std::max(0.0, static_cast<double>(limit.rlim_cur) - (std::isfinite(used) ? used : 0.0));
}

}  // namespace

// VmHWM, the high-water mark of this program's own memory (reset_peak_rss resets it). Not getrusage's ru_maxrss: Linux
// carries that across execve, so a program started by a larger one (Python: ~45 MiB) reports the parent's peak while
// its own is smaller, and clear_refs does not lower it (issue 44). ru_maxrss where /proc is missing.
double peak_rss_gib() {
    const double hwm = proc_field_bytes("/proc/self/status", "VmHWM:");
    if (!std::isnan(hwm)) return hwm / kGiB;
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);  // kilobytes on Linux
    return static_cast<double>(usage.ru_maxrss) * 1024.0 / kGiB;
}

AvailableMemory available_memory() {
    AvailableMemory result;
    const auto consider = [&](double bytes, const char* source) {
        if (std::isfinite(bytes) && !(bytes / kGiB >= result.gib)) result = {bytes / kGiB, source};
    };
    consider(proc_field_bytes("/proc/meminfo", "MemAvailable:"), "MemAvailable");
    consider(cgroup_headroom_bytes(), "the memory cgroup's limit");
    consider(rlimit_headroom_bytes(RLIMIT_AS, "VmSize:"), "ulimit -v");
    consider(rlimit_headroom_bytes(RLIMIT_DATA, "VmData:"), "ulimit -d");
    if (const char* budget = std::getenv("ICLAB_MEMORY_GIB")) {
        char* end = nullptr;
        const double gib = std::strtod(budget, &end);
        ICLAB_INPUT_CHECK(end != budget && *end == '\0' && std::isfinite(gib) && gib > 0.0,
                          "ICLAB_MEMORY_GIB must be a positive number of GiB, got '" << budget << "'");
        consider(gib * kGiB, "ICLAB_MEMORY_GIB");
    }
    return result;
}

double available_memory_gib() { return available_memory().gib; }

std::string describe_available_memory() {
    const AvailableMemory memory = available_memory();
    char text[160];
    if (std::string(memory.source) == "MemAvailable" || !std::isfinite(memory.gib))
        std::snprintf(text, sizeof text, "%.3g GiB available", memory.gib);
    else
        std::snprintf(text, sizeof text, "%.3g GiB available (%s)", memory.gib, memory.source);
    return text;
}

double current_rss_gib() { return proc_field_bytes("/proc/self/status", "VmRSS:") / kGiB; }

Interval bootstrap_mean_interval(const std::vector<double>& values, double level, std::size_t resamples, Rng& rng) {
    Interval interval;
    const std::size_t n = values.size();
    if (n == 0 || resamples == 0) return interval;
    std::vector<double> means(resamples);
    for (auto& mean : means) {
        double sum = 0.0;
        for (std::size_t i = 0; i < n; ++i) sum += values[rng.uniform_int(n)];
        mean = sum / static_cast<double>(n);
    }
    if (any_nan(values) || any_nan(means)) return interval;  // a NaN value (or +inf with -inf): no interval, no sort over a NaN
    std::sort(means.begin(), means.end());
    const auto at = [&](double q) {
        const double position = q * static_cast<double>(resamples - 1);
        const std::size_t below = static_cast<std::size_t>(std::floor(position));
        const std::size_t above = std::min(below + 1, resamples - 1);
        return means[below] + (position - static_cast<double>(below)) * (means[above] - means[below]);
    };
    interval.low = at((1.0 - level) / 2.0);
    interval.high = at((1.0 + level) / 2.0);
    return interval;
}

}  // namespace iclab
