#pragma once
// Shared between transformer.cpp (forward) and transformer_backward.cpp: the offset of an optional tensor.
#include <cstddef>
#include <string>

#include "framework/model/parameters.hpp"

namespace iclab::model::detail {

constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
// The offset of `name` in the flat buffer, or kAbsent when the model has no such tensor.
inline std::size_t offset_or_absent(const ParameterLayout& layout, const std::string& name) {
    for (const auto& entry : layout.entries())
        if (entry.name == name) return entry.offset;
    return kAbsent;
}

}  // namespace iclab::model::detail
