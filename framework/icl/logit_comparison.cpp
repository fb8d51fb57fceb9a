// Logits against a reference (see logit_comparison.hpp). Moved here from experiments/prompt_baking (score_logits) so
// that prompt_baking_lm measures with the same code; the order of every sum is unchanged (bits equal).
#include "framework/icl/logit_comparison.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "framework/core/measure.hpp"

namespace iclab::icl {

std::size_t argmax_of(const double* z, std::size_t V) { return static_cast<std::size_t>(std::max_element(z, z + V) - z); }

double log_sum_exp_of(const double* z, std::size_t V) {
    const double top = *std::max_element(z, z + V);
    double sum = 0.0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(z[v] - top);
    return top + std::log(sum);
}

LogitComparison compare_logits(const double* logits, const double* reference, std::size_t N, std::size_t V) {
    LogitComparison s;
    s.relative_error = relative_error(logits, reference, N * V);
    std::vector<double> centered(N * V), centered_reference(N * V);
    for (std::size_t t = 0; t < N; ++t) {
        double mean = 0.0, mean_reference = 0.0;
        for (std::size_t v = 0; v < V; ++v) mean += logits[t * V + v], mean_reference += reference[t * V + v];
        mean /= static_cast<double>(V);
        mean_reference /= static_cast<double>(V);
        for (std::size_t v = 0; v < V; ++v) {
            centered[t * V + v] = logits[t * V + v] - mean;
            centered_reference[t * V + v] = reference[t * V + v] - mean_reference;
        }
    }
    s.centered_error = relative_error(centered.data(), centered_reference.data(), N * V);
    std::size_t agree = 0;
    for (std::size_t t = 0; t < N; ++t) {
        const double *z = logits + t * V, *r = reference + t * V;
        const double lz = log_sum_exp_of(z, V), lr = log_sum_exp_of(r, V);
        double kl = 0.0;
        for (std::size_t v = 0; v < V; ++v) {
            const double log_p = r[v] - lr;
            kl += std::exp(log_p) * (log_p - (z[v] - lz));
        }
        s.kl += kl / static_cast<double>(N);
        agree += argmax_of(z, V) == argmax_of(r, V);
    }
    s.top1 = static_cast<double>(agree) / static_cast<double>(N);
    return s;
}

}  // namespace iclab::icl
