#include "framework/core/measure.hpp"

#include <sys/resource.h>

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

double median_of(std::vector<double> values) {
    if (values.empty()) return kNaN;
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

Spread spread_of(const std::vector<double>& values) {
    Spread s;
    if (values.empty() || std::any_of(values.begin(), values.end(), [](double v) { return std::isnan(v); })) return s;
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

double peak_rss_gib() {  // getrusage: kilobytes on Linux
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) * 1024.0 / kGiB;
}

bool reset_peak_rss() {
    std::ofstream clear_refs("/proc/self/clear_refs");
    if (!clear_refs) return false;
    clear_refs << "5";
    clear_refs.flush();
    return clear_refs.good();
}

double available_memory_gib() {
    std::ifstream meminfo("/proc/meminfo");
    std::string line, key;
    double value = 0;
    while (std::getline(meminfo, line)) {
        std::istringstream fields(line);
        if (fields >> key >> value && key == "MemAvailable:") return value * 1024.0 / kGiB;
    }
    return kNaN;
}

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
