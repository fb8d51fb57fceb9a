// load_config: read a YAML file and its `inherit:` chain, apply command-line overrides, validate
// everything against the schema, and report every problem at once with key path and file:line.
//
// Each file is flattened to leaves "dotted.path -> YAML node + origin"; a later source (the
// including file, then each override) replaces a leaf, which is the deep merge. Validation then
// runs over the merged leaves, so each error names the source that actually set the value.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "framework/config/config.hpp"
#include "framework/config/value_text.hpp"
#include "framework/core/check.hpp"

namespace iclab::config {
namespace {

namespace fs = std::filesystem;

struct Leaf {
    std::string path;
    YAML::Node node;
    std::string origin;  // "file.yaml:12" or "command-line override 'k=v'"
};

// Leaves in order of first appearance; setting a path again replaces its value and origin.
class LeafMap {
public:
    void set(Leaf leaf) {
        auto [found, inserted] = index_.emplace(leaf.path, leaves_.size());
        if (inserted) leaves_.push_back(std::move(leaf));
        else leaves_[found->second] = std::move(leaf);
    }
    const std::vector<Leaf>& leaves() const { return leaves_; }

private:
    std::vector<Leaf> leaves_;
    std::unordered_map<std::string, std::size_t> index_;
};

// Where keys come from: a file (origin = file:line of the key) or one override (origin = its text).
struct Source {
    std::string file;
    std::string override_text;

    std::string origin(const YAML::Mark& mark) const {
        if (!override_text.empty()) return "command-line override '" + override_text + "'";
        if (mark.is_null()) return file;
        return file + ":" + std::to_string(mark.line + 1);  // YAML::Mark lines are 0-based
    }
};

std::string error_line(const std::string& where, const std::string& path, const std::string& message) {
    return "config error: " + where + ": " + (path.empty() ? "" : path + ": ") + message;
}

[[noreturn]] void throw_error(const std::string& where, const std::string& message) {
    throw InputError(error_line(where, "", message));
}

struct Loader {
    const Schema& schema;
    LeafMap leaves;
    std::vector<std::string> errors;

    void flatten_map(const YAML::Node& map, const std::string& prefix, const Source& source);
    void read_file(const std::string& file, const std::string& inherited_at, std::vector<std::string> chain);
    void apply_override(const std::string& text);
};

// Adds the leaves of `map` under `prefix`. Descends only into sections the schema declares, so an
// unknown section is one error rather than one per key inside it.
void Loader::flatten_map(const YAML::Node& map, const std::string& prefix, const Source& source) {
    std::unordered_map<std::string, std::string> seen;  // key name -> origin, to catch duplicates
    for (const auto& item : map) {
        const YAML::Node& key = item.first;
        const YAML::Node& value = item.second;
        const std::string where = source.origin(key.Mark());
        if (!key.IsScalar()) {
            errors.push_back(error_line(where, prefix, "a key must be a plain name, not a list or map"));
            continue;
        }
        const std::string& name = key.Scalar();
        const std::string path = prefix.empty() ? name : prefix + "." + name;
        if (name.empty() || name.find('.') != std::string::npos) {
            errors.push_back(error_line(where, path, "a key name may not be empty or contain '.'; nest maps instead"));
            continue;
        }
        // yaml-cpp keeps both copies of a repeated key; YAML forbids it and it is always a mistake.
        auto [first, inserted] = seen.emplace(name, where);
        if (!inserted) {
            errors.push_back(error_line(where, path, "duplicate key (first set at " + first->second + ")"));
            continue;
        }
        if (prefix.empty() && name == "inherit") continue;  // read by read_file (overrides never have an empty prefix)
        if (schema.is_section(path) && value.IsMap()) {
            flatten_map(value, path, source);
        } else if (schema.is_section(path) && value.IsNull()) {
            // "model:" with every key commented out: an empty section, nothing to set.
        } else {
            leaves.set(Leaf{path, value, where});
        }
    }
}

// The same file however it is named ("a/../x.yaml", "./x.yaml"), to detect inherit cycles.
std::string file_identity(const std::string& file) {
    std::error_code error;
    fs::path canonical = fs::weakly_canonical(file, error);
    if (error) canonical = fs::absolute(file, error).lexically_normal();
    return canonical.string();
}

// Text: no control characters but tab, CR, LF, and valid UTF-8 (yaml-cpp 0.7 loops forever on some invalid
// UTF-8: found by tests/fuzz/fuzz_config.cpp). `where(line)` names the place for the message.
template <class Where>
void check_text(const std::string& content, Where where) {
    const auto refuse = [&](std::size_t at, const std::string& what) {
        const std::size_t line = 1 + static_cast<std::size_t>(std::count(content.begin(), content.begin() + static_cast<long>(at), '\n'));
        throw InputError("config error: " + where(line) + ": " + what + " (not text)");
    };
    for (std::size_t i = 0; i < content.size();) {
        const unsigned char c = static_cast<unsigned char>(content[i]);
        if (c < 0x80) {
            if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') refuse(i, "control character " + std::to_string(c));
            if (c == 0x7f) refuse(i, "control character 127");
            ++i;
            continue;
        }
        // The length of the UTF-8 sequence by its lead byte; continuation bytes are 10xxxxxx; no overlong forms,
        // no surrogates, nothing past U+10FFFF.
        const std::size_t length = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (length == 0 || i + length > content.size()) refuse(i, "invalid UTF-8");
        std::uint32_t code = c & (length == 2 ? 0x1f : length == 3 ? 0x0f : 0x07);
        for (std::size_t k = 1; k < length; ++k) {
            const unsigned char next = static_cast<unsigned char>(content[i + k]);
            if ((next & 0xc0) != 0x80) refuse(i, "invalid UTF-8");
            code = (code << 6) | (next & 0x3f);
        }
        if ((length == 3 && (code < 0x800 || (code >= 0xd800 && code <= 0xdfff))) || (length == 4 && (code < 0x10000 || code > 0x10ffff)))
            refuse(i, "invalid UTF-8");
        i += length;
    }
}

}  // namespace

std::string read_config_text(const std::string& path) {
    const auto fail = [&](const std::string& why) { throw InputError("config error: " + path + ": " + why); };
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error && error != std::errc::no_such_file_or_directory) fail("cannot open file: " + error.message());  // e.g. a symlink loop
    if (!fs::exists(status)) fail("cannot open file: no such file");
    if (fs::is_directory(status)) fail("cannot open file: it is a directory");
    if (!fs::is_regular_file(status)) fail("cannot open file: not a regular file");
    const std::uintmax_t size = fs::file_size(path, error);
    if (error) fail("cannot read file: " + error.message());
    if (size > kMaxConfigBytes)
        fail("file of " + std::to_string(size) + " bytes: a config is at most " + std::to_string(kMaxConfigBytes) + " bytes");
    std::ifstream stream(path, std::ios::binary);
    if (!stream) fail("cannot open file");
    std::ostringstream text;
    text << stream.rdbuf();
    const std::string content = text.str();
    check_text(content, [&](std::size_t line) { return path + ":" + std::to_string(line); });
    return content;
}

namespace {

// Reads `file` after the file it inherits from, so its own keys win. `chain` lists the files that
// (transitively) inherit this one, outermost first, to report cycles.
void Loader::read_file(const std::string& file, const std::string& inherited_at, std::vector<std::string> chain) {
    const std::string via = inherited_at.empty() ? "" : " (inherited at " + inherited_at + ")";
    if (chain.size() >= kMaxInheritDepth)
        throw_error(inherited_at, "inherit chain deeper than " + std::to_string(kMaxInheritDepth) + " files (from " + chain.front() + ")");
    std::string text;
    try {
        text = read_config_text(file);
    } catch (const InputError& error) {
        throw InputError(error.what() + via);
    }

    // One document per file. yaml-cpp 0.7's LoadAll loops forever on some inputs (" ," — found by the config fuzzer),
    // so the file is loaded with Load and a second document is found by its marker: a line "---" or "..." after
    // the first document's content (or a second "---").
    {
        bool content = false, started = false;
        std::size_t line_number = 0;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            ++line_number;
            if (!line.empty() && line.back() == '\r') line.pop_back();
            const bool marker = (line.rfind("---", 0) == 0 || line.rfind("...", 0) == 0) &&
                                (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
            if (marker) {
                if (content || started || line[0] == '.')
                    throw_error(file + ":" + std::to_string(line_number), "more than one YAML document in the file");
                started = true;
                continue;
            }
            const std::size_t first = line.find_first_not_of(" \t");
            if (first != std::string::npos && line[first] != '#') content = true;
        }
    }
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
        const std::string where = e.mark.is_null() ? file : file + ":" + std::to_string(e.mark.line + 1);
        throw_error(where, "YAML syntax error: " + e.msg);
    } catch (const YAML::Exception& e) {
        throw_error(file, std::string("cannot read YAML: ") + e.what());
    }
    const Source source{file, ""};
    if (root.IsNull()) return;  // an empty file sets nothing
    if (!root.IsMap()) throw_error(source.origin(root.Mark()), "expected a map of keys at the top level");

    chain.push_back(file);
    for (const auto& item : root) {
        if (!item.first.IsScalar() || item.first.Scalar() != "inherit") continue;
        const std::string where = source.origin(item.first.Mark());
        const YAML::Node& base_node = item.second;
        if (!base_node.IsScalar() || base_node.Scalar().empty())
            throw_error(where, "inherit: expected the file name of the base config");
        // Relative to the including file's directory, so a chain works from any working directory.
        const std::string base = (fs::path(file).parent_path() / base_node.Scalar()).lexically_normal().string();
        const std::string base_identity = file_identity(base);
        for (std::size_t i = 0; i < chain.size(); ++i) {
            if (file_identity(chain[i]) != base_identity) continue;
            std::string cycle;
            for (std::size_t j = i; j < chain.size(); ++j) cycle += chain[j] + " -> ";
            throw_error(where, "inherit cycle: " + cycle + base);
        }
        read_file(base, where, chain);
        break;  // a second `inherit` is reported as a duplicate key by flatten_map
    }
    flatten_map(root, "", source);
}

// "key.path=value": the value is parsed as YAML, so 4 is an int, 3e-4 a float and [a,b] a list.
void Loader::apply_override(const std::string& text) {
    check_text(text, [&](std::size_t) { return std::string("command-line override"); });
    const Source source{"", text};
    const std::string where = source.origin(YAML::Mark());
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0) {
        errors.push_back(error_line(where, "", "expected key.path=value"));
        return;
    }
    const std::string path = text.substr(0, equals);
    YAML::Node value;
    try {
        value = YAML::Load(text.substr(equals + 1));
    } catch (const YAML::Exception& e) {
        errors.push_back(error_line(where, path, "the value is not valid YAML: " + e.msg));
        return;
    }
    if (schema.is_section(path) && value.IsMap()) flatten_map(value, path, source);
    else leaves.set(Leaf{path, value, where});
}

// ---- checking values ------------------------------------------------------------------------

// Optimal string alignment distance: edits, with a swap of two neighbours counting as one edit
// ("modle" -> "model" is 1), the most common typo.
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t substitution = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + substitution});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[a.size()][b.size()];
}

// The closest declared key or section, or "" when nothing is close enough to be a typo: up to
// 1 edit for a short last name, 2 from 4 letters, 3 from 8 letters.
std::string closest_known(const std::string& path, const Schema& schema) {
    const std::size_t last_dot = path.rfind('.');
    const std::size_t last_length = path.size() - (last_dot == std::string::npos ? 0 : last_dot + 1);
    const std::size_t limit = std::min<std::size_t>(3, 1 + last_length / 4);
    std::string best;
    std::size_t best_distance = limit + 1;
    auto consider = [&](const std::string& candidate) {
        const std::size_t distance = edit_distance(path, candidate);
        if (distance < best_distance) {
            best = candidate;
            best_distance = distance;
        }
    };
    for (const KeySpec& spec : schema.keys()) consider(spec.path);
    for (const std::string& section : schema.sections()) consider(section);
    if (!best.empty()) return best;
    // A key given without its section ("warmup_steps=5" for train.warmup_steps): the one declared key
    // whose last name is the same.
    const std::string last = path.substr(last_dot == std::string::npos ? 0 : last_dot + 1);
    for (const KeySpec& spec : schema.keys()) {
        const std::size_t dot = spec.path.rfind('.');
        if (spec.path.substr(dot == std::string::npos ? 0 : dot + 1) != last) continue;
        if (!best.empty()) return "";  // ambiguous: say nothing rather than guess
        best = spec.path;
    }
    return best;
}

// How a wrong value reads in a message: 'abc', string '4' (quoted in YAML), null, a list, a map.
std::string describe(const YAML::Node& node) {
    if (node.IsNull()) return "null";
    if (node.IsSequence()) return "a list";
    if (node.IsMap()) return "a map";
    if (node.Tag() == "?") return "'" + node.Scalar() + "'";
    return "string '" + node.Scalar() + "'";
}

// A plain (unquoted) scalar: "4" in quotes is a string in YAML, not an int.
bool is_plain_scalar(const YAML::Node& node) { return node.IsScalar() && node.Tag() == "?"; }

// Decimal only: yaml-cpp would read "010" as octal 8, which no researcher means.
bool parse_item(const YAML::Node& node, std::int64_t& out) {
    if (!is_plain_scalar(node)) return false;
    std::string text = node.Scalar();
    if (!text.empty() && text[0] == '+') text.erase(0, 1);
    if (text.empty() || text[0] == '+') return false;
    const auto [end, status] = std::from_chars(text.data(), text.data() + text.size(), out);
    return status == std::errc() && end == text.data() + text.size();
}
// YAML float syntax as yaml-cpp reads it: 3e-4, 2.5, 1 (an int is a valid float), .inf, .nan.
bool parse_item(const YAML::Node& node, double& out) {
    return is_plain_scalar(node) && YAML::convert<double>::decode(node, out);
}
// YAML 1.1 booleans as yaml-cpp reads them: true/false, yes/no, on/off, y/n (case variants).
bool parse_item(const YAML::Node& node, bool& out) {
    return is_plain_scalar(node) && YAML::convert<bool>::decode(node, out);
}
// Any scalar is text, so `name: 2024` is the string "2024"; null is not a string.
bool parse_item(const YAML::Node& node, std::string& out) {
    if (!node.IsScalar()) return false;
    out = node.Scalar();
    return true;
}

// Reads one value of type T (a scalar type or a std::vector of one); "" on success, else the reason.
template <typename T>
std::string parse_value(const YAML::Node& node, const std::string& expected, Value& out) {
    T value{};
    if (!parse_item(node, value)) return "expected " + expected + ", got " + describe(node);
    out = value;
    return "";
}
template <typename T>
std::string parse_list(const YAML::Node& node, const std::string& expected, Value& out) {
    if (!node.IsSequence()) return "expected " + expected + ", got " + describe(node);
    std::vector<T> items(node.size());
    for (std::size_t i = 0; i < node.size(); ++i) {
        if (!parse_item(node[i], items[i]))
            return "item " + std::to_string(i + 1) + ": expected " + expected + ", got " + describe(node[i]);
    }
    out = std::move(items);
    return "";
}

std::string parse_for_key(const KeySpec& spec, const YAML::Node& node, Value& out) {
    const std::string expected = type_name(spec.type);
    switch (spec.type) {
        case ValueType::int_value: return parse_value<std::int64_t>(node, expected, out);
        case ValueType::float_value: return parse_value<double>(node, expected, out);
        case ValueType::bool_value: return parse_value<bool>(node, expected, out);
        case ValueType::string_value: return parse_value<std::string>(node, expected, out);
        case ValueType::int_list: return parse_list<std::int64_t>(node, expected, out);
        case ValueType::float_list: return parse_list<double>(node, expected, out);
        case ValueType::string_list:
            if (spec.scalar_as_list && node.IsScalar()) {  // one value as a list of one (Schema::scalar_as_list)
                out = std::vector<std::string>{node.Scalar()};
                return "";
            }
            return parse_list<std::string>(node, expected, out);
    }
    return "unknown type";
}

}  // namespace

namespace {
// A command-line override whose value is sweep syntax (key=a,b or key=i:j) given to a single run.
bool looks_like_sweep(const Leaf& leaf) {
    if (leaf.origin.rfind("command-line override", 0) != 0 || !is_plain_scalar(leaf.node)) return false;
    const std::string& text = leaf.node.Scalar();
    if (text.find(',') != std::string::npos) return true;
    const std::size_t colon = text.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
    const auto digits = [](const std::string& part) {
        std::size_t start = !part.empty() && part[0] == '-' ? 1 : 0;
        return part.size() > start && std::all_of(part.begin() + static_cast<long>(start), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    return digits(text.substr(0, colon)) && digits(text.substr(colon + 1));
}
}  // namespace

// Resolves the loader's leaves into a Config of `schema` (types, ranges, sets, then rules); InputError listing
// every problem.
struct ConfigBuilder {
    static Config build(Loader& loader, const std::string& path, const std::vector<std::string>& overrides);
};

Config load_config(const std::string& path, const std::vector<std::string>& overrides, const Schema& schema) {
    Loader loader{schema, {}, {}};
    loader.read_file(path, "", {});
    for (const std::string& text : overrides) loader.apply_override(text);
    return ConfigBuilder::build(loader, path, overrides);
}

Config derive_config(const Config& parent, const Schema& schema, const std::vector<std::string>& overrides) {
    Loader loader{schema, {}, {}};
    for (const KeySpec& spec : schema.keys())
        if (parent.has(spec.path))
            loader.leaves.set(Leaf{spec.path, YAML::Load(parent.value_text(spec.path)), parent.origin(spec.path)});
    for (const std::string& text : overrides) loader.apply_override(text);
    return ConfigBuilder::build(loader, parent.source_path(), overrides);
}

Config ConfigBuilder::build(Loader& loader, const std::string& path, const std::vector<std::string>& overrides) {
    const Schema& schema = loader.schema;
    struct Resolved {
        Value value;
        std::string origin;
    };
    std::unordered_map<std::string, Resolved> resolved;
    for (const Leaf& leaf : loader.leaves.leaves()) {
        const KeySpec* spec = schema.find(leaf.path);
        if (!spec && schema.is_section(leaf.path)) {
            loader.errors.push_back(error_line(leaf.origin, leaf.path,
                                               "is a section: expected a map of keys, got " + describe(leaf.node)));
            continue;
        }
        if (!spec) {
            const std::string closest = closest_known(leaf.path, schema);
            loader.errors.push_back(error_line(leaf.origin, leaf.path,
                                               std::string(leaf.node.IsMap() ? "unknown section" : "unknown key") +
                                                   (closest.empty() ? "" : " (did you mean '" + closest + "'?)")));
            continue;
        }
        Value value;
        std::string problem = parse_for_key(*spec, leaf.node, value);
        if (problem.empty()) problem = detail::allowed_violation(*spec, value);
        if (!problem.empty()) {
            if (looks_like_sweep(leaf)) problem += " (a, b, ... and i:j are sweeps over values: run them with iclab run -m)";
            loader.errors.push_back(error_line(leaf.origin, leaf.path, problem));
            continue;
        }
        resolved[leaf.path] = Resolved{std::move(value), leaf.origin};
    }

    Config config;
    config.source_path_ = path;
    config.overrides_ = overrides;
    for (const KeySpec& spec : schema.keys()) {
        auto found = resolved.find(spec.path);
        config.index_[spec.path] = config.entries_.size();
        if (found == resolved.end()) config.entries_.push_back(Config::Entry{spec, spec.default_value, "default"});
        else config.entries_.push_back(Config::Entry{spec, std::move(found->second.value), found->second.origin});
    }

    // Rules read values, so they run only once every value is valid; each failing rule adds its line.
    // Final rules (the run's size) only once every rule passed.
    for (const auto* rules : {&schema.rules(), &schema.final_rules()}) {
        if (!loader.errors.empty()) break;
        for (const Schema::Rule& rule : *rules) {
            try {
                rule(config);
            } catch (const InputError& e) {
                const std::string message = e.what();
                const bool formatted = message.rfind("config error: ", 0) == 0;
                loader.errors.push_back(formatted ? message : error_line(path, "", message));
            }
        }
    }
    if (!loader.errors.empty()) {
        std::string message;
        for (const std::string& line : loader.errors) message += (message.empty() ? "" : "\n") + line;
        throw InputError(message);
    }
    return config;
}

}  // namespace iclab::config
