#include "framework/io/json.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>

#include "framework/core/check.hpp"

namespace iclab::io {

const char* JsonValue::kind_name(Kind kind) {
    switch (kind) {
        case Kind::null: return "null";
        case Kind::boolean: return "a boolean";
        case Kind::number: return "a number";
        case Kind::string: return "a string";
        case Kind::array: return "an array";
        case Kind::object: return "an object";
    }
    return "?";
}

#define ICLAB_JSON_EXPECT(expected_kind, name)                                                               \
    ICLAB_INPUT_CHECK(kind_ == expected_kind,                                                                 \
                      what << ": expected " << kind_name(expected_kind) << ", found " << kind_name(kind_)); \
    (void)0

bool JsonValue::as_bool(const std::string& what) const {
    ICLAB_JSON_EXPECT(Kind::boolean, what);
    return boolean_;
}

double JsonValue::as_double(const std::string& what) const {
    ICLAB_JSON_EXPECT(Kind::number, what);
    return number_;
}

std::int64_t JsonValue::as_int(const std::string& what) const {
    ICLAB_JSON_EXPECT(Kind::number, what);
    ICLAB_INPUT_CHECK(integral_, what << ": expected an integer, found " << number_);
    return integer_;
}

const std::string& JsonValue::as_string(const std::string& what) const {
    ICLAB_JSON_EXPECT(Kind::string, what);
    return string_;
}

const std::vector<JsonValue>& JsonValue::as_array(const std::string& what) const {
    ICLAB_JSON_EXPECT(Kind::array, what);
    return array_;
}

const std::vector<std::pair<std::string, JsonValue>>& JsonValue::as_object(const std::string& what) const {
    ICLAB_JSON_EXPECT(Kind::object, what);
    return object_;
}

const JsonValue* JsonValue::find(const std::string& key) const {
    if (kind_ != Kind::object) return nullptr;
    for (const auto& member : object_)
        if (member.first == key) return &member.second;
    return nullptr;
}

const JsonValue& JsonValue::at(const std::string& key, const std::string& what) const {
    as_object(what);
    const JsonValue* value = find(key);
    ICLAB_INPUT_CHECK(value != nullptr, what << ": missing key \"" << key << "\"");
    return *value;
}

#undef ICLAB_JSON_EXPECT

namespace {

// Appends code point `cp` (valid, not a surrogate) as UTF-8.
void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// Length of the valid UTF-8 sequence starting at text[i] (RFC 3629: shortest form, no surrogates, <= U+10FFFF),
// or 0 when it is not valid.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80) return 1;
    std::size_t length = 0;
    std::uint32_t cp = 0;
    if (lead >= 0xC2 && lead <= 0xDF) length = 2, cp = lead & 0x1F;
    else if (lead >= 0xE0 && lead <= 0xEF) length = 3, cp = lead & 0x0F;
    else if (lead >= 0xF0 && lead <= 0xF4) length = 4, cp = lead & 0x07;
    else return 0;
    if (i + length > text.size()) return 0;
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if ((length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return length;
}

}  // namespace

class JsonParser {
public:
    JsonParser(std::string_view text, const std::string& what, const JsonLimits& limits)
        : text_(text), what_(what), limits_(limits) {}

    JsonValue parse_document() {
        skip_whitespace();
        JsonValue value = parse_value(0);
        skip_whitespace();
        if (pos_ != text_.size()) fail("unexpected text after the JSON value");
        return value;
    }

private:
    [[noreturn]] void fail(const std::string& message) const {
        std::ostringstream os;
        os << what_ << ": invalid JSON at byte " << pos_ << ": " << message;
        throw InputError(os.str());
    }
    bool at_end() const { return pos_ >= text_.size(); }
    char peek() const { return at_end() ? '\0' : text_[pos_]; }
    void skip_whitespace() {
        while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) ++pos_;
    }
    void expect_literal(std::string_view literal) {
        if (text_.substr(pos_, literal.size()) != literal) fail("unexpected character");
        pos_ += literal.size();
    }

    JsonValue parse_value(std::size_t depth) {
        if (depth > limits_.max_depth) fail("nested deeper than " + std::to_string(limits_.max_depth));
        JsonValue value;
        if (at_end()) fail("unexpected end of input");
        const char c = peek();
        if (c == '{') {
            value.kind_ = JsonValue::Kind::object;
            ++pos_;
            skip_whitespace();
            if (peek() == '}') { ++pos_; return value; }
            std::unordered_set<std::string> keys;  // a linear search per key was quadratic: 2.5 s for GPT-2's encoder.json
            for (;;) {
                skip_whitespace();
                if (peek() != '"') fail("expected a string key");
                std::string key = parse_string();
                if (!keys.insert(key).second) fail("duplicate key \"" + key + "\"");
                skip_whitespace();
                if (peek() != ':') fail("expected ':'");
                ++pos_;
                skip_whitespace();
                value.object_.emplace_back(std::move(key), parse_value(depth + 1));
                skip_whitespace();
                if (peek() == ',') { ++pos_; continue; }
                if (peek() == '}') { ++pos_; return value; }
                fail("expected ',' or '}'");
            }
        }
        if (c == '[') {
            value.kind_ = JsonValue::Kind::array;
            ++pos_;
            skip_whitespace();
            if (peek() == ']') { ++pos_; return value; }
            for (;;) {
                skip_whitespace();
                value.array_.push_back(parse_value(depth + 1));
                skip_whitespace();
                if (peek() == ',') { ++pos_; continue; }
                if (peek() == ']') { ++pos_; return value; }
                fail("expected ',' or ']'");
            }
        }
        if (c == '"') {
            value.kind_ = JsonValue::Kind::string;
            value.string_ = parse_string();
            return value;
        }
        if (c == 't') { expect_literal("true"); value.kind_ = JsonValue::Kind::boolean; value.boolean_ = true; return value; }
        if (c == 'f') { expect_literal("false"); value.kind_ = JsonValue::Kind::boolean; return value; }
        if (c == 'n') { expect_literal("null"); return value; }
        if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
        fail(std::string("unexpected character '") + (c >= 0x20 && c < 0x7F ? std::string(1, c) : "?") + "'");
    }

    JsonValue parse_number() {
        const std::size_t start = pos_;
        bool integral = true;
        if (peek() == '-') ++pos_;
        if (peek() == '0') ++pos_;
        else if (peek() >= '1' && peek() <= '9') while (peek() >= '0' && peek() <= '9') ++pos_;
        else fail("expected a digit");
        if (peek() == '.') {
            integral = false;
            ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        if (peek() == 'e' || peek() == 'E') {
            integral = false;
            ++pos_;
            if (peek() == '+' || peek() == '-') ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
            while (peek() >= '0' && peek() <= '9') ++pos_;
        }
        const std::string literal(text_.substr(start, pos_ - start));
        JsonValue value;
        value.kind_ = JsonValue::Kind::number;
        errno = 0;
        value.number_ = std::strtod(literal.c_str(), nullptr);
        if (!std::isfinite(value.number_)) fail("number out of range: " + literal);
        if (integral) {
            errno = 0;
            const long long parsed = std::strtoll(literal.c_str(), nullptr, 10);
            if (errno != ERANGE) {
                value.integral_ = true;
                value.integer_ = parsed;
            }
        }
        return value;
    }

    unsigned parse_hex4() {
        if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
        unsigned code = 0;
        for (int k = 0; k < 4; ++k) {
            const char h = text_[pos_++];
            code <<= 4;
            if (h >= '0' && h <= '9') code |= static_cast<unsigned>(h - '0');
            else if (h >= 'a' && h <= 'f') code |= static_cast<unsigned>(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') code |= static_cast<unsigned>(h - 'A' + 10);
            else fail("bad hex digit in \\u escape");
        }
        return code;
    }

    std::string parse_string() {
        ++pos_;  // opening quote
        std::string out;
        for (;;) {
            if (at_end()) fail("unterminated string");
            const unsigned char c = static_cast<unsigned char>(text_[pos_]);
            if (c == '"') { ++pos_; return out; }
            if (c < 0x20) fail("control character in a string");
            if (c == '\\') {
                ++pos_;
                if (at_end()) fail("unterminated escape");
                const char e = text_[pos_++];
                switch (e) {
                    case '"': out += '"'; break;
                    case '\\': out += '\\'; break;
                    case '/': out += '/'; break;
                    case 'b': out += '\b'; break;
                    case 'f': out += '\f'; break;
                    case 'n': out += '\n'; break;
                    case 'r': out += '\r'; break;
                    case 't': out += '\t'; break;
                    case 'u': {
                        std::uint32_t cp = parse_hex4();
                        if (cp >= 0xDC00 && cp <= 0xDFFF) fail("lone low surrogate in \\u escape");
                        if (cp >= 0xD800 && cp <= 0xDBFF) {
                            if (text_.substr(pos_, 2) != "\\u") fail("high surrogate without its low half");
                            pos_ += 2;
                            const std::uint32_t low = parse_hex4();
                            if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate without its low half");
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        }
                        append_utf8(out, cp);
                        break;
                    }
                    default: fail("unknown escape");
                }
                continue;
            }
            const std::size_t length = utf8_sequence_length(text_, pos_);
            if (length == 0) fail("invalid UTF-8 in a string");
            out.append(text_.substr(pos_, length));
            pos_ += length;
        }
    }

    std::string_view text_;
    const std::string& what_;
    JsonLimits limits_;
    std::size_t pos_ = 0;
};

JsonValue parse_json(std::string_view text, const std::string& what, const JsonLimits& limits) {
    return JsonParser(text, what, limits).parse_document();
}

JsonValue read_json_file(const std::string& path, std::size_t max_bytes) {
    struct stat info {};
    ICLAB_INPUT_CHECK(::stat(path.c_str(), &info) == 0, path << ": cannot read (" << std::strerror(errno) << ")");
    ICLAB_INPUT_CHECK(S_ISREG(info.st_mode), path << ": not a regular file");
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(info.st_size) <= max_bytes,
                      path << ": " << info.st_size << " bytes, more than the limit of " << max_bytes);
    std::ifstream file(path, std::ios::binary);
    ICLAB_INPUT_CHECK(file.good(), path << ": cannot read");
    std::string text(static_cast<std::size_t>(info.st_size), '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(file.gcount()) == text.size(), path << ": short read");
    return parse_json(text, path);
}

std::string json_quote(std::string_view text) {
    std::string out = "\"";
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); ++i; continue; }
        if (c < 0x20) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\u%04x", c);
            out += escape;
            ++i;
            continue;
        }
        const std::size_t length = utf8_sequence_length(text, i);
        ICLAB_INPUT_CHECK(length != 0, "json_quote: invalid UTF-8 at byte " << i);
        out.append(text.substr(i, length));
        i += length;
    }
    return out + "\"";
}

}  // namespace iclab::io
