#pragma once
// NaN or infinite logits are never printed, sampled from or stored (issue 41): predict, generate and convert refuse
// them (exit 2) naming where the forward first became non-finite (model::Transformer::first_non_finite of a traced
// forward) and what to try. A float32 forward overflows past 3.4e38 (an activation, a product, an exp); float64 reaches
// 1.8e308, so --dtype float64 is the remedy, unless the float64 forward overflows too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "framework/model/transformer.hpp"

namespace iclab::cli {

// True when every value of data (count) is finite.
template <class T>
bool all_finite(const T* data, std::size_t count);

// Throws InputError "<who>: the float32 forward of <what> is not finite: it first became NaN or infinite in <site>
// (token <id>); <remedy>". `site` comes from the model's last traced forward over `tokens` (count); `remedy` is what
// the command offers (e.g. "run it with --dtype float64"), used when T is float.
template <class T>
[[noreturn]] void refuse_non_finite(const model::Transformer<T>& model, const std::int32_t* tokens, std::size_t count,
                                    const std::string& who, const std::string& what, const std::string& remedy);

// Runs a traced forward of `tokens` (count, batch 1) on `model` and refuses as above. For a decoder (generate), whose
// own steps are not traced: the full forward finds the site again (when rounding lets it; else the position is named).
template <class T>
[[noreturn]] void locate_and_refuse_non_finite(model::Transformer<T>& model, const std::int32_t* tokens, std::size_t count,
                                               std::size_t position, const std::string& who, const std::string& what,
                                               const std::string& remedy);

}  // namespace iclab::cli
