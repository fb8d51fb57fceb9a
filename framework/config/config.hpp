#pragma once
// YAML configs checked against a schema declared in C++.
//
// An experiment declares every key it reads (type, default, allowed range or set, one line of help)
// and the cross-key rules; load_config then reads a YAML file (with its `inherit:` chain) and the
// command-line overrides, and rejects a bad config before any work starts. Every error names the
// dotted key path and where the value came from (file:line, "default" or the override), and all
// errors of one load are reported together, one per line, in one iclab::InputError.
//
//   Schema schema;
//   schema.add_int("model.layers", 2, 1, 1024, "number of transformer blocks")
//         .add_string("model.feature_map", "elu1", {"elu1", "identity"}, "kernel feature map")
//         .add_rule([](const Config& cfg) {
//             if (cfg.get_int("model.width") % cfg.get_int("model.heads") != 0)
//                 cfg.fail({"model.width", "model.heads"}, "model.width must be divisible by model.heads");
//         });
//   Config cfg = load_config("configs/quick/x.yaml", {"model.layers=4"}, schema);
//   int64_t layers = cfg.get_int("model.layers");
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

namespace iclab::config {

class Config;

// The order matches the alternatives of Value.
enum class ValueType { int_value, float_value, bool_value, string_value, int_list, float_list, string_list };

using Value = std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>,
                           std::vector<double>, std::vector<std::string>>;

// "int", "float", "bool", "string", "list of ints", "list of floats", "list of strings".
std::string type_name(ValueType type);

// One declared key. Bounds apply to numbers and to every item of a numeric list; `allowed` applies
// to strings and to every item of a string list (empty = any string).
struct KeySpec {
    std::string path;  // dotted, e.g. "model.layers"
    ValueType type = ValueType::int_value;
    Value default_value;
    std::int64_t int_minimum = 0, int_maximum = 0;  // inclusive, int and int-list keys
    double float_minimum = 0, float_maximum = 0;    // inclusive, float and float-list keys
    std::vector<std::string> allowed;
    // List keys: how many items (inclusive). By default a list must not be empty unless its default is empty;
    // Schema::set_items changes it.
    std::size_t min_items = 0, max_items = static_cast<std::size_t>(-1);
    // A string-list key that also takes one plain value as a list of one (`key: 0.9` reads as [0.9]); Schema::scalar_as_list.
    bool scalar_as_list = false;
    std::string help;
};

// The declared keys (in declaration order) and the cross-key rules. Declaring a key twice, a key
// that is also a section ("model" and "model.layers"), or a default outside its own range or set is
// a programming error (iclab::Error).
class Schema {
public:
    using Rule = std::function<void(const Config&)>;

    Schema& add_int(const std::string& path, std::int64_t default_value, std::int64_t minimum,
                    std::int64_t maximum, const std::string& help);
    // YAML ints are accepted for float keys ("lr: 1"). Bounds may be +-infinity; NaN never passes.
    Schema& add_float(const std::string& path, double default_value, double minimum, double maximum,
                      const std::string& help);
    Schema& add_bool(const std::string& path, bool default_value, const std::string& help);
    Schema& add_string(const std::string& path, const std::string& default_value,
                       const std::vector<std::string>& allowed, const std::string& help);
    Schema& add_string_free(const std::string& path, const std::string& default_value, const std::string& help);
    Schema& add_int_list(const std::string& path, const std::vector<std::int64_t>& default_value,
                         std::int64_t minimum, std::int64_t maximum, const std::string& help);
    Schema& add_float_list(const std::string& path, const std::vector<double>& default_value, double minimum,
                           double maximum, const std::string& help);
    Schema& add_string_list(const std::string& path, const std::vector<std::string>& default_value,
                            const std::vector<std::string>& allowed, const std::string& help);
    Schema& add_string_list_free(const std::string& path, const std::vector<std::string>& default_value,
                                 const std::string& help);

    // The number of items a list key may hold, [min_items, max_items] (e.g. 0 when an empty list means "none").
    Schema& set_items(const std::string& path, std::size_t min_items, std::size_t max_items = static_cast<std::size_t>(-1));
    // A string-list key that also accepts a single scalar, read as a list of one item (model.decay: 0.9 or [0.9, 0.99]).
    Schema& scalar_as_list(const std::string& path);

    // Runs after every key has a valid value; reports a violation with Config::fail.
    Schema& add_rule(Rule rule);

    const std::vector<KeySpec>& keys() const { return keys_; }
    // Runs after every rule passed (e.g. the memory estimate, which may assume the other rules' conditions).
    Schema& add_final_rule(Rule rule);

    const std::vector<Rule>& rules() const { return rules_; }
    const std::vector<Rule>& final_rules() const { return final_rules_; }
    // nullptr when the path is not a declared key.
    const KeySpec* find(const std::string& path) const;
    // True for a proper prefix of a declared key: "model" when "model.layers" is declared.
    bool is_section(const std::string& path) const;
    // Every declared section, in order of first appearance.
    const std::vector<std::string>& sections() const { return sections_; }

    // One line per key: path, type, default, range or set, help (for `iclab run --help-config`).
    std::string help_text() const;

private:
    Schema& add_key(KeySpec spec);

    std::vector<KeySpec> keys_;
    std::unordered_map<std::string, std::size_t> index_;
    std::vector<std::string> sections_;  // order of first appearance
    std::unordered_set<std::string> section_set_;
    std::vector<Rule> rules_, final_rules_;
};

// A fully resolved, validated config: every schema key has a value and an origin.
// Asking for an undeclared key or with the wrong type is a programming error (iclab::Error).
class Config {
public:
    std::int64_t get_int(const std::string& path) const;
    double get_float(const std::string& path) const;
    bool get_bool(const std::string& path) const;
    std::string get_string(const std::string& path) const;
    std::vector<std::int64_t> get_int_list(const std::string& path) const;
    std::vector<double> get_float_list(const std::string& path) const;
    std::vector<std::string> get_string_list(const std::string& path) const;

    // Whether the config's schema declares this key.
    bool has(const std::string& path) const { return index_.count(path) > 0; }
    // Whether the key holds its schema default (a resolved config.yaml lists defaults too, so this, not the origin,
    // tells whether a value changes anything).
    bool is_default(const std::string& path) const;
    // The value as one line of YAML flow text: 2, 0.0003, true, "elu1", [1, 2], ["a", "b"].
    std::string value_text(const std::string& path) const;

    // Where the value came from: "configs/quick/x.yaml:12", "default", or
    // "command-line override 'model.layers=4'".
    std::string origin(const std::string& path) const;

    // Throws iclab::InputError "config error: <origin of paths[0]>: <message>", adding the origins
    // of the other keys where they differ. Meant for Schema rules.
    [[noreturn]] void fail(const std::vector<std::string>& paths, const std::string& message) const;

    // Every schema key (defaults included) as nested YAML maps in declaration order; loading this
    // text with the same schema gives the same values.
    std::string to_yaml() const;

    const std::vector<std::string>& overrides() const { return overrides_; }
    const std::string& source_path() const { return source_path_; }

private:
    friend struct ConfigBuilder;

    struct Entry {
        KeySpec spec;
        Value value;
        std::string origin;
    };
    const Entry& entry(const std::string& path, ValueType expected) const;
    const Entry& entry(const std::string& path) const;

    std::vector<Entry> entries_;  // schema declaration order
    std::unordered_map<std::string, std::size_t> index_;
    std::vector<std::string> overrides_;
    std::string source_path_;
};

// Reads `path` (following its `inherit:` chain), applies the `key.path=value` overrides last, fills
// defaults, validates types, ranges, sets and rules. Throws iclab::InputError listing every problem.
Config load_config(const std::string& path, const std::vector<std::string>& overrides, const Schema& schema);

// The text of a config file, with the checks every reader of config files applies first: a regular file (not a
// folder, a device or a pipe), at most kMaxConfigBytes, no NUL or other control characters but tab, CR and LF.
// Throws InputError "config error: FILE: reason".
constexpr std::size_t kMaxConfigBytes = 1 << 20;
constexpr std::size_t kMaxInheritDepth = 32;  // files in one inherit chain
std::string read_config_text(const std::string& path);

// "key=value" with the value double-quoted as YAML, so that any text (paths, names) is read back as that string.
std::string string_override(const std::string& key, const std::string& value);

// A config of another schema made from a resolved one, e.g. a sub-run's config from its parent's: every key
// `schema` declares takes `parent`'s value (and origin) where the parent declares it too, else its default;
// then the overrides apply, and the result is validated as load_config validates. Keys of the parent that
// `schema` does not declare are left out.
Config derive_config(const Config& parent, const Schema& schema, const std::vector<std::string>& overrides);

}  // namespace iclab::config
