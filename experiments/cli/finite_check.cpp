#include "experiments/cli/finite_check.hpp"

#include <cmath>
#include <type_traits>

#include "framework/core/check.hpp"

namespace iclab::cli {

template <class T>
bool all_finite(const T* data, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
        if (!std::isfinite(data[i])) return false;
    return true;
}

namespace {

template <class T>
std::string advice(const std::string& remedy) {
    if constexpr (std::is_same_v<T, float>)
        return "float32 overflows past 3.4e38; " + remedy;
    else
        return "float64 overflowed too (past 1.8e308): the model's parameters are too large for this input";
}

std::string token_at(const std::int32_t* tokens, std::size_t count, std::size_t position) {
    return position < count ? " (token id " + std::to_string(tokens[position]) + ")" : "";
}

}  // namespace

template <class T>
void refuse_non_finite(const model::Transformer<T>& model, const std::int32_t* tokens, std::size_t count, const std::string& who,
                       const std::string& what, const std::string& remedy) {
    const auto& site = model.first_non_finite();
    const char* dtype = std::is_same_v<T, float> ? "float32" : "float64";
    throw InputError(who + ": the " + dtype + " forward of " + what + " is not finite: it first became NaN or infinite in " +
                     (site.found() ? site.describe() + token_at(tokens, count, site.time) : std::string("the logits")) + "; " +
                     advice<T>(remedy) + "; nothing was printed or written");
}

template <class T>
void locate_and_refuse_non_finite(model::Transformer<T>& model, const std::int32_t* tokens, std::size_t count, std::size_t position,
                                  const std::string& who, const std::string& what, const std::string& remedy) {
    model.trace_non_finite(true);
    model.forward(tokens, 1, count);
    model.trace_non_finite(false);
    if (model.first_non_finite().found()) refuse_non_finite(model, tokens, count, who, what, remedy);
    const char* dtype = std::is_same_v<T, float> ? "float32" : "float64";
    throw InputError(who + ": the " + dtype + " logits of " + what + " are not finite at position " + std::to_string(position) +
                     token_at(tokens, count, position) + "; " + advice<T>(remedy) + "; nothing was printed or written");
}

template bool all_finite(const float*, std::size_t);
template bool all_finite(const double*, std::size_t);
template void refuse_non_finite(const model::Transformer<float>&, const std::int32_t*, std::size_t, const std::string&,
                                const std::string&, const std::string&);
template void refuse_non_finite(const model::Transformer<double>&, const std::int32_t*, std::size_t, const std::string&,
                                const std::string&, const std::string&);
template void locate_and_refuse_non_finite(model::Transformer<float>&, const std::int32_t*, std::size_t, std::size_t,
                                           const std::string&, const std::string&, const std::string&);
template void locate_and_refuse_non_finite(model::Transformer<double>&, const std::int32_t*, std::size_t, std::size_t,
                                           const std::string&, const std::string&, const std::string&);

}  // namespace iclab::cli
