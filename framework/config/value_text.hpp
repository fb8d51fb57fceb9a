#pragma once
// Internal to framework/config: how values are written (to_yaml, help_text, error messages) and
// checked against a key's range or set (schema defaults and loaded values use the same check).
#include <string>

#include <yaml-cpp/yaml.h>

#include "framework/config/config.hpp"

namespace iclab::config::detail {

// Shortest text that reads back as the same double, always recognisable as a float by YAML
// readers, yaml-cpp and PyYAML alike ("0.0003", "10.0", "1.0e-07", ".inf").
std::string format_float(double value);

// Writes the value as YAML: numbers and bools plain, strings double-quoted, lists in flow style.
void emit_value(YAML::Emitter& emitter, const Value& value);

// The value as one line of YAML flow text: 2, 0.0003, true, "elu1", [1, 2], ["a", "b"].
std::string format_value(const Value& value);

// "[1, 1024]", "{elu1, identity}", or "" when the key has no range or set.
std::string format_allowed(const KeySpec& spec);

// "" when the value (of the key's type) is in range / in the set, else the reason, e.g.
// "2000 is out of range [1, 1024]" or "item 2: 'relu' is not one of {elu1, identity}".
std::string allowed_violation(const KeySpec& spec, const Value& value);

}  // namespace iclab::config::detail
