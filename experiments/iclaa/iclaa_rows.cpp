#include "experiments/iclaa/iclaa_rows.hpp"

#include <algorithm>
#include <cmath>

#include "framework/core/measure.hpp"

namespace iclab::experiments::iclaa_detail {

const char* method_name(Method method) {
    switch (method) {
        case Method::before: return "no prompt";
        case Method::exact_cache: return "exact cache";
        case Method::recent: return "recent";
        case Method::heavy: return "heavy";
        case Method::prf: return "prf";
        case Method::orf: return "orf";
        case Method::elu1: return "elu1";
        case Method::learned: return "learned";
        case Method::hybrid: return "hybrid";
    }
    return "?";
}

void add_row_terms(icl::PromptTerms& terms, std::size_t slot, const Row& row, const icl::PromptKeysValues& kv, std::size_t b,
                   const nn::RopeTable* rope) {
    switch (row.method) {
        case Method::before: return;
        case Method::exact_cache: icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::all, 0, rope); return;
        case Method::recent: icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::recent, row.size, rope); return;
        case Method::heavy: icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::heavy, row.size, rope); return;
        case Method::prf:
        case Method::orf:
        case Method::elu1:
        case Method::learned: icl::add_kernel_terms(terms, slot, kv, b, *row.maps, rope, row.convention); return;
        case Method::hybrid:
            icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::recent, row.keep, rope);
            icl::add_kernel_terms(terms, slot, kv, b, *row.maps, rope, row.convention, row.keep);
            return;
    }
}

namespace {

std::size_t argmax(const double* z, std::size_t V) {
    return static_cast<std::size_t>(std::max_element(z, z + V) - z);
}

// log Σ_v e^{z_v}
double log_sum_exp(const double* z, std::size_t V) {
    const double top = *std::max_element(z, z + V);
    double sum = 0.0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(z[v] - top);
    return top + std::log(sum);
}

}  // namespace

PairScore score_pair(const tasks::PromptPair& pair, const double* logits, const double* reference, std::size_t N, std::size_t V) {
    PairScore s;
    s.relative_error = relative_error(logits, reference, N * V);
    for (std::size_t t = 0; t < N; ++t) {
        const double* z = logits + t * V;
        const double* r = reference + t * V;
        const double lz = log_sum_exp(z, V), lr = log_sum_exp(r, V);
        double kl = 0.0;
        for (std::size_t v = 0; v < V; ++v) {
            const double log_p = r[v] - lr;
            kl += std::exp(log_p) * (log_p - (z[v] - lz));
        }
        s.kl += kl / static_cast<double>(N);
        const std::size_t best = argmax(z, V);
        s.top1 += best == argmax(r, V);
        const bool correct = static_cast<std::int32_t>(best) == pair.targets[t];
        if (pair.kinds[t] == tasks::PositionKind::first_trigger) {
            ++s.scored;
            s.correct += correct;
        } else if (pair.kinds[t] == tasks::PositionKind::icl) {
            ++s.repeats;
            s.repeat_correct += correct;
        }
    }
    return s;
}

}  // namespace iclab::experiments::iclaa_detail
