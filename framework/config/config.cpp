// Schema declaration, Config accessors, and writing values back as YAML (to_yaml, help_text).
// Reading and validating files lives in load_config.cpp.
#include "framework/config/config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "framework/config/value_text.hpp"
#include "framework/core/check.hpp"

namespace iclab::config {

std::string type_name(ValueType type) {
    switch (type) {
        case ValueType::int_value: return "int";
        case ValueType::float_value: return "float";
        case ValueType::bool_value: return "bool";
        case ValueType::string_value: return "string";
        case ValueType::int_list: return "list of ints";
        case ValueType::float_list: return "list of floats";
        case ValueType::string_list: return "list of strings";
    }
    return "unknown";
}

// ---- values as text -----------------------------------------------------------------------------

namespace detail {

std::string format_float(double value) {
    if (std::isnan(value)) return ".nan";
    if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
    // The fewest significant digits that read back exactly, so 3e-4 prints as 0.0003, not
    // 0.00029999999999999997, and to_yaml round-trips bit for bit.
    char scientific[40];
    int digits = 1;
    for (; digits < 17; ++digits) {
        std::snprintf(scientific, sizeof scientific, "%.*e", digits - 1, value);
        if (std::strtod(scientific, nullptr) == value) break;
    }
    std::snprintf(scientific, sizeof scientific, "%.*e", digits - 1, value);
    const int exponent = std::atoi(std::strchr(scientific, 'e') + 1);
    // Always with a '.': "10" would read back as an int, and PyYAML reads "1e-07" as a string.
    if (exponent < -5 || exponent > 15) {
        std::string text = scientific;  // 1.0e-07, 1.5e+20
        if (text.find('.') == std::string::npos) text.insert(text.find('e'), ".0");
        return text;
    }
    char fixed[40];  // the same digits in fixed notation: 0.0003, 10.0, 123456.789
    std::snprintf(fixed, sizeof fixed, "%.*f", std::max(0, digits - 1 - exponent), value);
    std::string text = fixed;
    if (text.find('.') == std::string::npos) text += ".0";
    return text;
}

namespace {
// A std::visit visitor (member templates are not allowed in a local class).
struct ValueWriter {
    YAML::Emitter& out;
    void operator()(std::int64_t v) { out << static_cast<long long>(v); }
    void operator()(double v) { out << format_float(v); }
    void operator()(bool v) { out << (v ? "true" : "false"); }
    // Always quoted: a string such as "true", "1" or "null" must read back as a string.
    void operator()(const std::string& v) { out << YAML::DoubleQuoted << v; }
    template <typename T>
    void operator()(const std::vector<T>& items) {
        out << YAML::Flow << YAML::BeginSeq;
        for (const T& item : items) (*this)(item);
        out << YAML::EndSeq;
    }
};
}  // namespace

void emit_value(YAML::Emitter& emitter, const Value& value) { std::visit(ValueWriter{emitter}, value); }

std::string format_value(const Value& value) {
    YAML::Emitter emitter;
    emit_value(emitter, value);
    return emitter.c_str();
}

std::string format_allowed(const KeySpec& spec) {
    switch (spec.type) {
        case ValueType::int_value:
        case ValueType::int_list:
            return "[" + std::to_string(spec.int_minimum) + ", " + std::to_string(spec.int_maximum) + "]";
        case ValueType::float_value:
        case ValueType::float_list:
            return "[" + format_float(spec.float_minimum) + ", " + format_float(spec.float_maximum) + "]";
        case ValueType::string_value:
        case ValueType::string_list: {
            if (spec.allowed.empty()) return "";
            std::string text = "{";
            for (std::size_t i = 0; i < spec.allowed.size(); ++i) text += (i ? ", " : "") + spec.allowed[i];
            return text + "}";
        }
        case ValueType::bool_value: return "";
    }
    return "";
}

namespace {
// "" when one scalar item is allowed, else the reason.
std::string item_violation(const KeySpec& spec, std::int64_t value) {
    if (value >= spec.int_minimum && value <= spec.int_maximum) return "";
    return std::to_string(value) + " is out of range " + format_allowed(spec);
}
std::string item_violation(const KeySpec& spec, double value) {
    // Every float key must be finite (train.lr=.inf would train nothing); NaN fails the comparisons anyway.
    if (!std::isfinite(value)) return format_float(value) + " is not a finite number";
    if (value >= spec.float_minimum && value <= spec.float_maximum) return "";
    return format_float(value) + " is out of range " + format_allowed(spec);
}
std::string item_violation(const KeySpec& spec, const std::string& value) {
    if (spec.allowed.empty() || std::find(spec.allowed.begin(), spec.allowed.end(), value) != spec.allowed.end())
        return "";
    return "'" + value + "' is not one of " + format_allowed(spec);
}
std::string item_violation(const KeySpec&, bool) { return ""; }
}  // namespace

std::string allowed_violation(const KeySpec& spec, const Value& value) {
    return std::visit(
        [&spec](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::vector<std::int64_t>> || std::is_same_v<T, std::vector<double>> ||
                          std::is_same_v<T, std::vector<std::string>>) {
                if (v.size() < spec.min_items)
                    return v.empty() ? std::string("the list is empty (it needs at least ") + std::to_string(spec.min_items) +
                                           (spec.min_items == 1 ? " item)" : " items)")
                                     : std::to_string(v.size()) + " items, at least " + std::to_string(spec.min_items) + " needed";
                if (v.size() > spec.max_items)
                    return std::to_string(v.size()) + " items, at most " + std::to_string(spec.max_items) + " allowed";
                for (std::size_t i = 0; i < v.size(); ++i) {
                    std::string reason = item_violation(spec, v[i]);
                    if (!reason.empty()) return "item " + std::to_string(i + 1) + ": " + reason;
                }
                return "";
            } else {
                return item_violation(spec, v);
            }
        },
        value);
}

}  // namespace detail

// ---- Schema -------------------------------------------------------------------------------------

namespace {
bool is_valid_path(const std::string& path) {
    if (path.empty() || path.front() == '.' || path.back() == '.' || path.find("..") != std::string::npos) return false;
    return std::all_of(path.begin(), path.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    });
}
}  // namespace

Schema& Schema::add_key(KeySpec spec) {
    const std::string& path = spec.path;
    ICLAB_CHECK(is_valid_path(path), "config schema: invalid key path '" << path << "'");
    // `inherit` at the top of a file names the base file, so no key may live under that name.
    ICLAB_CHECK(path.substr(0, path.find('.')) != "inherit", "config schema: 'inherit' is reserved: " << path);
    ICLAB_CHECK(!index_.count(path), "config schema: key declared twice: " << path);
    ICLAB_CHECK(!section_set_.count(path), "config schema: " << path << " is already a section");
    for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
        ICLAB_CHECK(!index_.count(path.substr(0, dot)),
                    "config schema: " << path << " is under " << path.substr(0, dot) << ", which is a key");
    }
    ICLAB_CHECK(spec.int_minimum <= spec.int_maximum && !(spec.float_minimum > spec.float_maximum) &&
                    !std::isnan(spec.float_minimum) && !std::isnan(spec.float_maximum),
                "config schema: empty range for " << path);
    std::string reason = detail::allowed_violation(spec, spec.default_value);
    ICLAB_CHECK(reason.empty(), "config schema: default of " << path << ": " << reason);

    for (std::size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1)) {
        if (section_set_.insert(path.substr(0, dot)).second) sections_.push_back(path.substr(0, dot));
    }
    index_[path] = keys_.size();
    keys_.push_back(std::move(spec));
    return *this;
}

namespace {
KeySpec make_spec(const std::string& path, ValueType type, Value default_value, const std::string& help) {
    KeySpec spec;
    spec.path = path;
    spec.type = type;
    spec.default_value = std::move(default_value);
    spec.help = help;
    // A list must not be empty unless its default is (then empty means "none"); Schema::set_items changes it.
    std::visit(
        [&spec](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::vector<std::int64_t>> || std::is_same_v<T, std::vector<double>> ||
                          std::is_same_v<T, std::vector<std::string>>)
                spec.min_items = v.empty() ? 0 : 1;
        },
        spec.default_value);
    return spec;
}
}  // namespace

Schema& Schema::add_int(const std::string& path, std::int64_t default_value, std::int64_t minimum,
                        std::int64_t maximum, const std::string& help) {
    KeySpec spec = make_spec(path, ValueType::int_value, default_value, help);
    spec.int_minimum = minimum;
    spec.int_maximum = maximum;
    return add_key(std::move(spec));
}

Schema& Schema::add_float(const std::string& path, double default_value, double minimum, double maximum,
                          const std::string& help) {
    KeySpec spec = make_spec(path, ValueType::float_value, default_value, help);
    spec.float_minimum = minimum;
    spec.float_maximum = maximum;
    return add_key(std::move(spec));
}

Schema& Schema::add_bool(const std::string& path, bool default_value, const std::string& help) {
    return add_key(make_spec(path, ValueType::bool_value, default_value, help));
}

Schema& Schema::add_string(const std::string& path, const std::string& default_value,
                           const std::vector<std::string>& allowed, const std::string& help) {
    ICLAB_CHECK(!allowed.empty(), "config schema: empty allowed set for " << path << " (use add_string_free)");
    KeySpec spec = make_spec(path, ValueType::string_value, default_value, help);
    spec.allowed = allowed;
    return add_key(std::move(spec));
}

Schema& Schema::add_string_free(const std::string& path, const std::string& default_value, const std::string& help) {
    return add_key(make_spec(path, ValueType::string_value, default_value, help));
}

Schema& Schema::add_int_list(const std::string& path, const std::vector<std::int64_t>& default_value,
                             std::int64_t minimum, std::int64_t maximum, const std::string& help) {
    KeySpec spec = make_spec(path, ValueType::int_list, default_value, help);
    spec.int_minimum = minimum;
    spec.int_maximum = maximum;
    return add_key(std::move(spec));
}

Schema& Schema::add_float_list(const std::string& path, const std::vector<double>& default_value, double minimum,
                               double maximum, const std::string& help) {
    KeySpec spec = make_spec(path, ValueType::float_list, default_value, help);
    spec.float_minimum = minimum;
    spec.float_maximum = maximum;
    return add_key(std::move(spec));
}

Schema& Schema::add_string_list(const std::string& path, const std::vector<std::string>& default_value,
                                const std::vector<std::string>& allowed, const std::string& help) {
    ICLAB_CHECK(!allowed.empty(), "config schema: empty allowed set for " << path << " (use add_string_list_free)");
    KeySpec spec = make_spec(path, ValueType::string_list, default_value, help);
    spec.allowed = allowed;
    return add_key(std::move(spec));
}

Schema& Schema::add_string_list_free(const std::string& path, const std::vector<std::string>& default_value,
                                     const std::string& help) {
    return add_key(make_spec(path, ValueType::string_list, default_value, help));
}

Schema& Schema::scalar_as_list(const std::string& path) {
    auto found = index_.find(path);
    ICLAB_CHECK(found != index_.end(), "config schema: scalar_as_list of an undeclared key: " << path);
    KeySpec& spec = keys_[found->second];
    ICLAB_CHECK(spec.type == ValueType::string_list, "config schema: scalar_as_list of " << path << ", not a list of strings");
    spec.scalar_as_list = true;
    return *this;
}

Schema& Schema::set_items(const std::string& path, std::size_t min_items, std::size_t max_items) {
    auto found = index_.find(path);
    ICLAB_CHECK(found != index_.end(), "config schema: set_items of an undeclared key: " << path);
    KeySpec& spec = keys_[found->second];
    ICLAB_CHECK(spec.type == ValueType::int_list || spec.type == ValueType::float_list || spec.type == ValueType::string_list,
                "config schema: set_items of " << path << ", which is not a list");
    ICLAB_CHECK(min_items <= max_items, "config schema: empty item range for " << path);
    spec.min_items = min_items;
    spec.max_items = max_items;
    const std::string reason = detail::allowed_violation(spec, spec.default_value);
    ICLAB_CHECK(reason.empty(), "config schema: default of " << path << ": " << reason);
    return *this;
}

Schema& Schema::add_final_rule(Rule rule) {
    ICLAB_CHECK(static_cast<bool>(rule), "config schema: empty rule");
    final_rules_.push_back(std::move(rule));
    return *this;
}

Schema& Schema::add_rule(Rule rule) {
    ICLAB_CHECK(static_cast<bool>(rule), "config schema: empty rule");
    rules_.push_back(std::move(rule));
    return *this;
}

const KeySpec* Schema::find(const std::string& path) const {
    auto found = index_.find(path);
    return found == index_.end() ? nullptr : &keys_[found->second];
}

bool Schema::is_section(const std::string& path) const { return section_set_.count(path) > 0; }

std::string Schema::help_text() const {
    // Aligned columns: key, type, default, allowed range or set, help.
    std::vector<std::vector<std::string>> rows;
    for (const KeySpec& spec : keys_) {
        std::string allowed = detail::format_allowed(spec);
        const bool list = spec.type == ValueType::int_list || spec.type == ValueType::float_list || spec.type == ValueType::string_list;
        if (list && (spec.min_items > 0 || spec.max_items != static_cast<std::size_t>(-1))) {
            std::string items = std::to_string(spec.min_items) +
                                (spec.max_items == static_cast<std::size_t>(-1) ? "+" : "-" + std::to_string(spec.max_items)) + " items";
            allowed = allowed.empty() ? items : allowed + " " + items;
        }
        rows.push_back({spec.path, type_name(spec.type), detail::format_value(spec.default_value),
                        allowed.empty() ? "-" : allowed, spec.help});
    }
    std::vector<std::size_t> widths = {3, 4, 7, 7};  // the header words: key, type, default, allowed
    for (const auto& row : rows)
        for (std::size_t column = 0; column < widths.size(); ++column)
            widths[column] = std::max(widths[column], row[column].size());

    std::ostringstream out;
    auto write_row = [&](const std::vector<std::string>& row) {
        std::string line;
        for (std::size_t column = 0; column < widths.size(); ++column)
            line += row[column] + std::string(widths[column] - row[column].size() + 2, ' ');
        out << line << row[4] << "\n";
    };
    write_row({"key", "type", "default", "allowed", "help"});
    for (const auto& row : rows) write_row(row);
    return out.str();
}

// ---- Config -------------------------------------------------------------------------------------

const Config::Entry& Config::entry(const std::string& path) const {
    auto found = index_.find(path);
    ICLAB_CHECK(found != index_.end(), "config: key not declared in the schema: " << path);
    return entries_[found->second];
}

const Config::Entry& Config::entry(const std::string& path, ValueType expected) const {
    const Entry& found = entry(path);
    ICLAB_CHECK(found.spec.type == expected, "config: " << path << " is declared as " << type_name(found.spec.type)
                                                        << ", read as " << type_name(expected));
    return found;
}

std::int64_t Config::get_int(const std::string& path) const {
    return std::get<std::int64_t>(entry(path, ValueType::int_value).value);
}
double Config::get_float(const std::string& path) const {
    return std::get<double>(entry(path, ValueType::float_value).value);
}
bool Config::get_bool(const std::string& path) const { return std::get<bool>(entry(path, ValueType::bool_value).value); }
std::string Config::get_string(const std::string& path) const {
    return std::get<std::string>(entry(path, ValueType::string_value).value);
}
std::vector<std::int64_t> Config::get_int_list(const std::string& path) const {
    return std::get<std::vector<std::int64_t>>(entry(path, ValueType::int_list).value);
}
std::vector<double> Config::get_float_list(const std::string& path) const {
    return std::get<std::vector<double>>(entry(path, ValueType::float_list).value);
}
std::vector<std::string> Config::get_string_list(const std::string& path) const {
    return std::get<std::vector<std::string>>(entry(path, ValueType::string_list).value);
}

std::string Config::origin(const std::string& path) const { return entry(path).origin; }

bool Config::is_default(const std::string& path) const {
    const Entry& e = entry(path);
    return e.value == e.spec.default_value;
}

void Config::fail(const std::vector<std::string>& paths, const std::string& message) const {
    ICLAB_CHECK(!paths.empty(), "config: fail() needs at least one key");
    const std::string& first_origin = entry(paths.front()).origin;
    std::string others;
    for (std::size_t i = 1; i < paths.size(); ++i) {
        const std::string& other_origin = entry(paths[i]).origin;
        if (other_origin != first_origin) others += (others.empty() ? "" : ", ") + paths[i] + " from " + other_origin;
    }
    throw InputError("config error: " + first_origin + ": " + message + (others.empty() ? "" : " [" + others + "]"));
}

namespace {
// The keys as a tree of sections, children in order of first declaration.
struct YamlTreeNode {
    std::string name;
    const Value* value = nullptr;  // set on leaves
    std::vector<YamlTreeNode> children;
};

void emit_tree(YAML::Emitter& emitter, const YamlTreeNode& node) {
    emitter << YAML::BeginMap;
    for (const YamlTreeNode& child : node.children) {
        emitter << YAML::Key << child.name << YAML::Value;
        if (child.value) detail::emit_value(emitter, *child.value);
        else emit_tree(emitter, child);
    }
    emitter << YAML::EndMap;
}
}  // namespace

std::string string_override(const std::string& key, const std::string& value) {
    YAML::Emitter emitter;
    emitter << YAML::DoubleQuoted << value;
    return key + "=" + emitter.c_str();
}

std::string Config::value_text(const std::string& path) const { return detail::format_value(entry(path).value); }

std::string Config::to_yaml() const {
    YamlTreeNode root;
    for (const Entry& e : entries_) {
        YamlTreeNode* node = &root;
        std::size_t start = 0;
        while (true) {
            std::size_t dot = e.spec.path.find('.', start);
            std::string name = e.spec.path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            auto child = std::find_if(node->children.begin(), node->children.end(),
                                      [&name](const YamlTreeNode& c) { return c.name == name; });
            if (child == node->children.end()) {
                node->children.push_back(YamlTreeNode{name, nullptr, {}});
                child = node->children.end() - 1;
            }
            node = &*child;
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
        node->value = &e.value;
    }
    YAML::Emitter emitter;
    emit_tree(emitter, root);
    return std::string(emitter.c_str()) + "\n";
}

}  // namespace iclab::config
