#pragma once
// A run-level precondition (issue 46): a bar on one measure of the trained model that a run must meet for its claims
// to count, e.g. "the model learned the task: ICL accuracy >= 0.9 at the end of training". The experiment declares the
// bar in its config (a key, before the runs), measures the value after training, and records both in the results
// file's root attributes:
//   precondition_key      the config key that declares the bar ("iclaa.precondition.min_icl_accuracy")
//   precondition_measure  what the value is, in words ("ICL accuracy of the model with the prompt on 200 validation pairs")
//   precondition_value    the measured value (NaN: nothing to measure)
//   precondition_bar      the declared bar (0: no precondition, met whatever the value)
//   precondition_met      1 when value >= bar (or bar <= 0), else 0
// `iclab claims` (framework/workflow/claims_pool.hpp) leaves a run whose precondition is not met out of its setting's
// claims and lists it with precondition_text. A run without these attributes has no precondition.
#include <limits>
#include <optional>
#include <string>

namespace iclab::io {

class ResultsWriter;
class ResultsReader;

struct Precondition {
    std::string key, measure;
    double value = std::numeric_limits<double>::quiet_NaN();
    double bar = 0.0;
    // A bar of 0 (or below) declares nothing: met. Otherwise met when the value reaches the bar (NaN never does).
    bool met() const { return bar <= 0.0 || value >= bar; }
};

void write_precondition(ResultsWriter& writer, const Precondition& precondition);
// The recorded precondition, checked (every attribute present, met agreeing with value and bar): InputError naming the
// attribute otherwise. Empty when the file records none.
std::optional<Precondition> read_precondition(const ResultsReader& reader);
// "ICL accuracy of ... 0.412 < 0.9 (iclaa.precondition.min_icl_accuracy)"; ">=" when met.
std::string precondition_text(const Precondition& precondition);

}  // namespace iclab::io
