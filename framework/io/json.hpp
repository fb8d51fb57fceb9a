#pragma once
// A strict JSON reader (RFC 8259) for the files iclab reads from other tools: safetensors headers, Hugging Face
// config.json, GPT-2's encoder.json / vocab.json. Untrusted input: every error is an iclab::InputError (exit 2)
// naming `what` (the file or field) and the byte offset; nesting depth is bounded; duplicate object keys,
// trailing commas, comments, NaN/Infinity literals, lone surrogates and invalid UTF-8 in strings are refused.
// Objects keep their keys in file order.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace iclab::io {

class JsonValue {
public:
    enum class Kind { null, boolean, number, string, array, object };

    Kind kind() const { return kind_; }
    bool is_null() const { return kind_ == Kind::null; }
    bool is_number() const { return kind_ == Kind::number; }
    bool is_string() const { return kind_ == Kind::string; }
    bool is_array() const { return kind_ == Kind::array; }
    bool is_object() const { return kind_ == Kind::object; }
    bool is_bool() const { return kind_ == Kind::boolean; }

    // Typed access; a wrong kind is an InputError naming `what`.
    bool as_bool(const std::string& what) const;
    double as_double(const std::string& what) const;
    // The number as an exact integer: refuses fractions, exponents that leave the integers and |n| > 2^53
    // unless written as plain digits within int64 (integers are parsed from their text, not through double).
    std::int64_t as_int(const std::string& what) const;
    const std::string& as_string(const std::string& what) const;
    const std::vector<JsonValue>& as_array(const std::string& what) const;
    const std::vector<std::pair<std::string, JsonValue>>& as_object(const std::string& what) const;

    // Objects: the member named `key`, or null when absent.
    const JsonValue* find(const std::string& key) const;
    // Objects: the member named `key`; absent is an InputError naming `what`.key.
    const JsonValue& at(const std::string& key, const std::string& what) const;

    static const char* kind_name(Kind kind);

private:
    friend class JsonParser;
    Kind kind_ = Kind::null;
    bool boolean_ = false;
    double number_ = 0.0;
    bool integral_ = false;      // written as an integer (no fraction, no exponent) that fits in int64
    std::int64_t integer_ = 0;   // its exact value
    std::string string_;
    std::vector<JsonValue> array_;
    std::vector<std::pair<std::string, JsonValue>> object_;
};

struct JsonLimits {
    std::size_t max_depth = 64;
};

// Parses the whole text (leading/trailing whitespace allowed, nothing else after the value).
JsonValue parse_json(std::string_view text, const std::string& what, const JsonLimits& limits = {});

// Reads and parses a regular file of at most `max_bytes`; errors name the path.
JsonValue read_json_file(const std::string& path, std::size_t max_bytes);

// A JSON string literal (with quotes) for `text`, which must be valid UTF-8; control characters escaped.
std::string json_quote(std::string_view text);

}  // namespace iclab::io
