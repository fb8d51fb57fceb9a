// A run-level precondition in the results file (framework/io/precondition.hpp).
#include "framework/io/precondition.hpp"

#include <cmath>
#include <cstdio>

#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::io {

namespace {

constexpr const char* kKey = "precondition_key";
constexpr const char* kMeasure = "precondition_measure";
constexpr const char* kValue = "precondition_value";
constexpr const char* kBar = "precondition_bar";
constexpr const char* kMet = "precondition_met";

std::string number_text(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", x);
    return text;
}

}  // namespace

void write_precondition(ResultsWriter& writer, const Precondition& precondition) {
    ICLAB_CHECK(!precondition.key.empty() && !precondition.measure.empty(), "a precondition names its key and its measure");
    ICLAB_CHECK(std::isfinite(precondition.bar), "precondition " << precondition.key << ": the bar is not finite");
    writer.set_attr(kKey, precondition.key);
    writer.set_attr(kMeasure, precondition.measure);
    writer.set_attr(kValue, precondition.value);
    writer.set_attr(kBar, precondition.bar);
    writer.set_attr(kMet, static_cast<std::int64_t>(precondition.met()));
}

std::optional<Precondition> read_precondition(const ResultsReader& reader) {
    if (!reader.has_attr("/", kKey)) return std::nullopt;
    for (const char* name : {kMeasure, kValue, kBar, kMet})
        ICLAB_INPUT_CHECK(reader.has_attr("/", name), reader.path().string() << ": it records " << kKey << " but no attribute " << name);
    Precondition p;
    p.key = reader.read_attr_string("/", kKey);
    p.measure = reader.read_attr_string("/", kMeasure);
    p.value = reader.read_attr_double("/", kValue);
    p.bar = reader.read_attr_double("/", kBar);
    const std::int64_t met = reader.read_attr_int64("/", kMet);
    ICLAB_INPUT_CHECK(std::isfinite(p.bar), reader.path().string() << ": " << kBar << " is not finite");
    ICLAB_INPUT_CHECK(met == static_cast<std::int64_t>(p.met()),
                      reader.path().string() << ": " << kMet << " = " << met << " disagrees with " << kValue << " = " << number_text(p.value) << " and "
                                    << kBar << " = " << number_text(p.bar));
    return p;
}

std::string precondition_text(const Precondition& precondition) {
    const std::string value = std::isnan(precondition.value) ? "no value" : number_text(precondition.value);
    return precondition.measure + " " + value + (precondition.met() ? " >= " : " < ") + number_text(precondition.bar) + " (" +
           precondition.key + ")";
}

}  // namespace iclab::io
