// The text form of an HDF5 file's content (tree_text.hpp): parsed by the structure-aware adapter fuzzer, written from
// real files for its seeds.
#include "tests/fuzz/tree_text.hpp"

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::fuzz {

namespace {

std::string unescape(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\' || i + 1 == text.size()) {
            out += text[i];
            continue;
        }
        const char next = text[++i];
        if (next == 'n') out += '\n';
        else if (next == 't') out += '\t';
        else if (next == 'x' && i + 2 < text.size()) {
            out += static_cast<char>(std::strtol(text.substr(i + 1, 2).c_str(), nullptr, 16));
            i += 2;
        } else out += next;
    }
    return out;
}

std::string escape(const std::string& text) {
    std::string out;
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (byte < 0x20 || byte == 0x7f) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[byte >> 4];
            out += hex[byte & 15];
        } else out += c;
    }
    return out;
}

std::vector<std::string> split(const std::string& line, std::size_t parts) {  // the last part keeps its spaces
    std::vector<std::string> out;
    std::size_t begin = 0;
    while (out.size() + 1 < parts && begin <= line.size()) {
        const std::size_t end = line.find(' ', begin);
        if (end == std::string::npos) break;
        out.push_back(line.substr(begin, end - begin));
        begin = end + 1;
    }
    out.push_back(begin <= line.size() ? line.substr(begin) : "");
    return out;
}

std::string parent_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == 0 ? "/" : path.substr(0, slash);
}

bool valid_path(const std::string& path) {
    return path.size() > 1 && path[0] == '/' && path.back() != '/' && path.find("//") == std::string::npos;
}

bool parse_shape(const std::string& text, std::vector<std::size_t>& shape) {
    shape.clear();
    if (text == "-") return true;
    std::size_t total = 1;
    std::stringstream stream(text);
    for (std::string dim; std::getline(stream, dim, ',');) {
        char* end = nullptr;
        errno = 0;
        const unsigned long long n = std::strtoull(dim.c_str(), &end, 10);
        if (dim.empty() || *end != '\0' || errno != 0 || dim[0] == '-') return false;
        shape.push_back(static_cast<std::size_t>(n));
        total = n == 0 ? 0 : (total > kMaxValues / n ? kMaxValues + 1 : total * n);
    }
    return !shape.empty() && shape.size() <= 8 && total <= kMaxValues;
}

}  // namespace

Tree parse_tree(const std::uint8_t* data, std::size_t size) {
    Tree tree;
    tree.objects["/"] = TreeObject{};
    std::vector<std::string> lines;
    std::string current;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == '\n') lines.push_back(current), current.clear();
        else current += static_cast<char>(data[i]);
    }
    lines.push_back(current);
    for (std::size_t n = 0; n < lines.size(); ++n) {
        const std::string& line = lines[n];
        if (line.size() < 3 || line[1] != ' ') continue;
        if (line[0] == 'G') {
            const std::string path = line.substr(2);
            if (valid_path(path) && tree.objects.count(parent_of(path)) && tree.objects.at(parent_of(path)).group && !tree.objects.count(path))
                tree.objects[path] = TreeObject{};
        } else if (line[0] == 'A') {
            const auto parts = split(line.substr(2), 4);
            if (parts.size() != 4 || !tree.objects.count(parts[0]) || parts[1].empty() || parts[2].size() != 1) continue;
            auto& attributes = tree.objects[parts[0]].attributes;
            char* end = nullptr;
            if (parts[2] == "s") attributes[parts[1]] = unescape(parts[3]);
            else if (parts[2] == "i") {
                errno = 0;
                const long long v = std::strtoll(parts[3].c_str(), &end, 10);
                if (*end == '\0' && errno == 0) attributes[parts[1]] = static_cast<std::int64_t>(v);
            } else if (parts[2] == "d") {
                const double v = std::strtod(parts[3].c_str(), &end);
                if (*end == '\0') attributes[parts[1]] = v;
            }
        } else if (line[0] == 'D') {
            const auto parts = split(line.substr(2), 4);
            if (parts.size() < 3 || !valid_path(parts[0]) || tree.objects.count(parts[0]) || !tree.objects.count(parent_of(parts[0])) ||
                !tree.objects.at(parent_of(parts[0])).group || parts[1].size() != 1)
                continue;
            TreeObject object;
            object.group = false;
            TreeDataset& d = object.data;
            d.type = parts[1][0];
            if (d.type == 's') {
                char* end = nullptr;
                const unsigned long long count = std::strtoull(parts[2].c_str(), &end, 10);
                if (*end != '\0' || parts[2].empty() || count > kMaxValues) continue;
                d.shape = {static_cast<std::size_t>(count)};
                for (std::size_t k = 0; k < count && n + 1 < lines.size(); ++k) d.strings.push_back(unescape(lines[++n]));
            } else if (d.type == 'f' || d.type == 'd' || d.type == 'i' || d.type == 'I') {
                if (!parse_shape(parts[2], d.shape)) continue;
                std::stringstream values(parts.size() == 4 ? parts[3] : "");
                for (std::string v; values >> v && d.stored() < kMaxValues;) {
                    char* end = nullptr;
                    if (d.type == 'f' || d.type == 'd') {
                        const double x = std::strtod(v.c_str(), &end);
                        if (*end == '\0') d.reals.push_back(d.type == 'f' ? static_cast<double>(static_cast<float>(x)) : x);
                    } else {
                        errno = 0;
                        const long long x = std::strtoll(v.c_str(), &end, 10);
                        const bool fits = d.type == 'I' || (x >= INT32_MIN && x <= INT32_MAX);
                        if (*end == '\0' && errno == 0 && fits) d.ints.push_back(x);
                    }
                }
            } else continue;
            tree.objects[parts[0]] = object;
        }
    }
    return tree;
}

std::string dump_tree(const io::ResultsReader& reader) {
    std::ostringstream out;
    out.precision(17);
    const auto attributes = [&](const std::string& path) {
        for (const auto& [name, value] : reader.attributes(path)) {
            out << "A " << path << " " << name << " ";
            if (const auto* s = std::get_if<std::string>(&value)) out << "s " << escape(*s) << "\n";
            else if (const auto* i = std::get_if<std::int64_t>(&value)) out << "i " << *i << "\n";
            else out << "d " << std::get<double>(value) << "\n";
        }
    };
    const auto join = [](const std::string& group, const std::string& name) { return group == "/" ? "/" + name : group + "/" + name; };
    const auto shape_text = [](const std::vector<std::size_t>& shape) {
        std::string s;
        for (const std::size_t n : shape) s += (s.empty() ? "" : ",") + std::to_string(n);
        return s.empty() ? std::string("-") : s;
    };
    std::vector<std::string> groups{"/"};
    while (!groups.empty()) {
        const std::string group = groups.back();
        groups.pop_back();
        attributes(group);
        for (const std::string& name : reader.list(group)) {
            const std::string path = join(group, name);
            try {
                (void)reader.list(path);
                out << "G " << path << "\n";
                groups.push_back(path);
                continue;
            } catch (const InputError&) {
            }
            if (reader.holds_floats(path)) {
                const auto t = reader.read_tensor_double(path);
                out << "D " << path << " d " << shape_text(t.shape);
                for (const double v : t.values) out << " " << v;
                out << "\n";
            } else {
                try {
                    const auto t = reader.read_int32(path);
                    out << "D " << path << " i " << shape_text(t.shape);
                    for (const std::int32_t v : t.values) out << " " << v;
                    out << "\n";
                    continue;
                } catch (const InputError&) {
                }
                try {
                    const auto strings = reader.read_column_string(path);
                    out << "D " << path << " s " << strings.size() << "\n";
                    for (const std::string& s : strings) out << escape(s) << "\n";
                    continue;
                } catch (const InputError&) {
                }
                const auto values = reader.read_column_int64(path);
                out << "D " << path << " I " << values.size();
                for (const std::int64_t v : values) out << " " << v;
                out << "\n";
            }
        }
    }
    return out.str();
}

}  // namespace iclab::fuzz
