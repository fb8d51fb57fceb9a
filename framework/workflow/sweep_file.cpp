// Sweep specifications: the override grammar of `iclab run -m` (key=a,b / key=i:j) and sweep files. Parsing only
// (no config is resolved here), so the fuzzer (tests/fuzz/fuzz_sweep_file.cpp) links this file alone.
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/core/check.hpp"
#include "framework/core/process.hpp"
#include "framework/workflow/sweep.hpp"

namespace iclab::run {

namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& text) {
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string::npos) return "";
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

// Splits at commas outside [], {} and quotes.
std::vector<std::string> split_top_level(const std::string& text) {
    std::vector<std::string> parts;
    std::string current;
    int depth = 0;
    char quote = 0;
    for (char c : text) {
        if (quote) {
            if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
        } else if (c == '[' || c == '{') {
            ++depth;
        } else if (c == ']' || c == '}') {
            --depth;
        } else if (c == ',' && depth == 0) {
            parts.push_back(trim(current));
            current.clear();
            continue;
        }
        current += c;
    }
    parts.push_back(trim(current));
    return parts;
}

// "i:j" -> i, i+1, ..., j-1; false when the text is not a range of integers.
bool parse_range(const std::string& text, std::vector<std::string>& values, const std::string& where) {
    static const std::regex range(R"(^\s*(-?[0-9]+)\s*:\s*(-?[0-9]+)\s*$)");
    std::smatch match;
    if (!std::regex_match(text, match, range)) return false;
    const auto integer = [&](const std::string& digits) {
        errno = 0;
        const long long value = std::strtoll(digits.c_str(), nullptr, 10);
        ICLAB_INPUT_CHECK(errno != ERANGE, where << ": " << digits << " is out of range in " << text);
        return value;
    };
    const long long from = integer(match[1].str()), to = integer(match[2].str());
    ICLAB_INPUT_CHECK(to > from, where << ": the range " << text << " is empty (i:j means i, i+1, ..., j-1)");
    const double count = static_cast<double>(to) - static_cast<double>(from);  // no overflow of to - from
    ICLAB_INPUT_CHECK(count <= static_cast<double>(kMaxSweepJobs),
                      where << ": the range " << text << " has " << count << " values; a sweep has at most " << kMaxSweepJobs << " jobs");
    for (long long v = from; v < to; ++v) values.push_back(std::to_string(v));
    return true;
}

// A YAML node as one line of flow YAML (scalars as written).
std::string flow_text(const YAML::Node& node) {
    if (node.IsScalar()) return node.Scalar();
    YAML::Emitter emitter;
    emitter << YAML::Flow << node;
    return emitter.c_str();
}

std::string mark_of(const std::string& file, const YAML::Node& node) {
    return node.Mark().is_null() ? file : file + ":" + std::to_string(node.Mark().line + 1);
}


}  // namespace

void check_sweep_name(const std::string& name, const std::string& where) {
    ICLAB_INPUT_CHECK(!name.empty() && name.size() <= kMaxNameLength,
                      where << ": a name must have 1 to " << kMaxNameLength << " characters, got " << name.size());
    for (const char c : name)
        ICLAB_INPUT_CHECK(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '+' || c == ',',
                          where << ": the name '" << (has_control_characters(name) ? std::string("(control characters)") : name)
                                << "' must be one folder name: letters, digits and . - _ + , only");
    ICLAB_INPUT_CHECK(name.front() != '.', where << ": the name '" << name << "' must not start with '.'");
}

bool parse_sweep_override(const std::string& text, SweepAxis& axis) {
    const auto equals = text.find('=');
    if (equals == std::string::npos || equals == 0) return false;
    axis.key = text.substr(0, equals);
    axis.values.clear();
    const std::string value = text.substr(equals + 1);
    const std::vector<std::string> parts = split_top_level(value);
    if (parts.size() > 1) {
        for (const auto& part : parts)
            ICLAB_INPUT_CHECK(!part.empty(), "sweep override '" << text << "': an empty value between commas");
        axis.values = parts;
        return true;
    }
    return parse_range(value, axis.values, "sweep override '" + text + "'");
}

SweepSpec sweep_from_command_line(const std::string& config, const std::vector<std::string>& overrides) {
    SweepSpec spec;
    spec.configs = {config};
    spec.source = "command line";
    for (const auto& text : overrides) {
        SweepAxis axis;
        if (parse_sweep_override(text, axis)) spec.grid.push_back(axis);
        else spec.overrides.push_back(text);
    }
    return spec;
}

SweepFile load_sweep_file(const std::string& path) {
    std::error_code no_throw;  // a name too long or a loop is "not a readable file", never a filesystem_error
    ICLAB_INPUT_CHECK(fs::is_regular_file(path, no_throw), "sweep file " << path << " is not a readable file");
    YAML::Node root;
    try {
        root = YAML::Load(config::read_config_text(path));  // the config files' rules: size cap, UTF-8 text
    } catch (const YAML::Exception& e) {
        throw InputError("sweep file " + path + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1)) +
                         ": YAML error: " + e.msg);
    }
    ICLAB_INPUT_CHECK(root.IsMap(), "sweep file " << path << ": expected a map of keys (name, config, grid, ...)");
    SweepFile file;
    SweepSpec& spec = file.spec;
    spec.source = path;
    const fs::path folder = fs::path(path).parent_path();
    const auto scalar = [&](const YAML::Node& node, const std::string& what) {
        ICLAB_INPUT_CHECK(node.IsScalar(), "sweep file " << mark_of(path, node) << ": " << what << ": expected a single value");
        return node.Scalar();
    };
    const auto config_path = [&](const YAML::Node& node) {
        ICLAB_INPUT_CHECK(node.IsScalar(), mark_of(path, node) << ": a config is a file name");
        const fs::path p = node.Scalar();
        // Relative to the working directory when it exists there (as on the command line), else to the sweep file.
        std::error_code error;
        ICLAB_INPUT_CHECK(node.Scalar().size() <= 4096, mark_of(path, node) << ": a config file name longer than 4096 characters");
        return (p.is_absolute() || fs::exists(p, error) ? p : folder / p).lexically_normal().string();
    };
    const auto axes = [&](const YAML::Node& node, const std::string& block, std::vector<SweepAxis>& out) {
        ICLAB_INPUT_CHECK(node.IsMap(), mark_of(path, node) << ": " << block << ": expected a map key: [values]");
        for (const auto& item : node) {
            SweepAxis axis;
            axis.key = scalar(item.first, block + ": a key");
            const std::string where = mark_of(path, item.first) + ": " + block + "." + axis.key;
            if (item.second.IsSequence()) {
                for (const auto& v : item.second) axis.values.push_back(flow_text(v));
            } else {
                ICLAB_INPUT_CHECK(item.second.IsScalar() && parse_range(item.second.Scalar(), axis.values, where),
                                  where << ": expected a list of values or a range i:j");
            }
            ICLAB_INPUT_CHECK(!axis.values.empty(), where << ": no values");
            out.push_back(axis);
        }
    };
    std::map<std::string, std::string> seen_keys;  // key -> where
    for (const auto& item : root) {
        const std::string key = scalar(item.first, "a key");
        const YAML::Node& value = item.second;
        const std::string where = mark_of(path, item.first);
        const auto [previous, inserted] = seen_keys.emplace(key, where);
        ICLAB_INPUT_CHECK(inserted, "sweep file " << where << ": '" << key << "' is given twice (also at " << previous->second << ")");
        if (key == "name") {
            spec.name = scalar(value, "name");
            check_sweep_name(spec.name, "sweep file " + where);
        }
        else if (key == "config") spec.configs.push_back(config_path(value));
        else if (key == "configs") {
            ICLAB_INPUT_CHECK(value.IsSequence(), where << ": configs: expected a list of config files");
            for (const auto& c : value) spec.configs.push_back(config_path(c));
        } else if (key == "overrides") {
            ICLAB_INPUT_CHECK(value.IsSequence(), where << ": overrides: expected a list of key=value");
            for (const auto& o : value) spec.overrides.push_back(scalar(o, "overrides: an item (key=value)"));
        } else if (key == "grid") axes(value, "grid", spec.grid);
        else if (key == "zip") axes(value, "zip", spec.zip);
        else if (key == "jobs" || key == "threads") {
            int n = 0;
            ICLAB_INPUT_CHECK(YAML::convert<int>::decode(value, n) && n >= 1 && n <= 1024,
                              where << ": " << key << ": expected an integer from 1 to 1024");
            (key == "jobs" ? file.jobs : file.threads) = n;
        } else {
            throw InputError("sweep file " + where + ": unknown key '" + key +
                             "' (known: name, config, configs, overrides, grid, zip, jobs, threads)");
        }
    }
    ICLAB_INPUT_CHECK(!spec.configs.empty(), "sweep file " << path << ": missing config (or configs)");
    for (const auto& axis : spec.zip)
        ICLAB_INPUT_CHECK(axis.values.size() == spec.zip.front().values.size(),
                          "sweep file " << path << ": zip." << axis.key << " has " << axis.values.size() << " values, zip."
                                        << spec.zip.front().key << " " << spec.zip.front().values.size()
                                        << ": zipped keys vary together and need as many values");
    if (spec.name.empty()) spec.name = fs::path(path).stem().string();
    return file;
}


}  // namespace iclab::run
