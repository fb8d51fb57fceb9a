#pragma once
// Shared between transformer.cpp (forward) and transformer_backward.cpp: the offset of an optional tensor.
#include <cstddef>
#include <string>

#include "framework/model/parameters.hpp"

namespace iclab::model {
struct ModelSpec;
}

namespace iclab::model::detail {

// model.decay (transformer_decay.cpp): linear attention with the causal mask, fixed γ_h ∈ (0, 1] for each of H heads.
void validate_decay(const ModelSpec& spec);
// θ_h of a learned decay at γ_h = 1 − 2^{−5−h} (RetNet's per-head decays), θ = log(γ / (1 − γ)) = log(2^{5+h} − 1).
template <class T>
void init_decay_logits(T* theta, std::size_t heads);

constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
// The offset of `name` in the flat buffer, or kAbsent when the model has no such tensor.
inline std::size_t offset_or_absent(const ParameterLayout& layout, const std::string& name) {
    for (const auto& entry : layout.entries())
        if (entry.name == name) return entry.offset;
    return kAbsent;
}

}  // namespace iclab::model::detail
