#pragma once
// A pinned perturbation of rounding (issue 45, "Robustness shown"; config key train.perturb_init_ulps): after
// initialization every trained parameter moves by `ulps` units in the last place of its working precision (fp32 or
// fp64), up or down as its own draw says. The trained run then differs from the unperturbed one by rounding-level
// noise only, and, being a pure function of the seed, still has the same bits on every CPU. A claim whose verdict
// changes under it is a property of rounding, not of the model (claims table column `rounding`,
// framework/workflow/claims_pool.hpp).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/rng.hpp"
#include "framework/model/parameters.hpp"

namespace iclab::train {

// The sub-stream of the run's seed that draws the directions: Rng(seed).derive(kPerturbStream). derive() reads the
// root's state without drawing, so no existing stream (init, data, eval, ...) changes; the number is one no
// experiment uses ("ulps" in ASCII).
inline constexpr std::uint64_t kPerturbStream = 0x756C7073ULL;

// Moves values[begin, end) by `ulps` steps of std::nextafter each, towards +inf or -inf by one draw of `directions`
// per value (its lowest bit), in index order. A value that would leave the finite range stays finite at the largest.
template <class T>
void perturb_values_by_ulps(T* values, std::size_t count, std::int64_t ulps, Rng& directions) {
    ICLAB_CHECK(ulps >= 0, "perturb_values_by_ulps: ulps " << ulps << " is negative");
    if (ulps == 0) return;
    for (std::size_t i = 0; i < count; ++i) {
        const T towards = (directions.next_u64() & 1U) ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
        T& x = values[i];
        for (std::int64_t k = 0; k < ulps; ++k) x = std::nextafter(x, towards);
    }
}

// Every trainable tensor of `layout` (ParameterInfo::trainable; frozen ones, e.g. untrained b_KV, b_D, keep their
// bits), in layout order, with the directions drawn from Rng(seed).derive(kPerturbStream). ulps = 0: nothing moves
// and nothing is drawn.
template <class T>
void perturb_parameters_by_ulps(std::vector<T>& params, const model::ParameterLayout& layout, std::int64_t ulps, std::uint64_t seed) {
    if (ulps == 0) return;
    ICLAB_CHECK(params.size() == layout.total(), "perturb_parameters_by_ulps: " << params.size() << " values for a layout of " << layout.total());
    Rng directions = Rng(seed).derive(kPerturbStream);
    for (const model::ParameterInfo& p : layout.entries())
        if (p.trainable) perturb_values_by_ulps(params.data() + p.offset, p.size, ulps, directions);
}

}  // namespace iclab::train
