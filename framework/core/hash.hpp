#pragma once
// FNV-1a 64: the one content hash of iclab (config fingerprints in checkpoints, model and adapter fingerprints).
// Not cryptographic: it detects edits and mix-ups, not tampering.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace iclab {

class Fnv1a64 {
public:
    void mix(const void* data, std::size_t bytes) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (std::size_t i = 0; i < bytes; ++i) hash_ = (hash_ ^ p[i]) * 1099511628211ull;
    }
    // The bytes of the text (no length prefix).
    void mix_text(const std::string& text) { mix(text.data(), text.size()); }
    // Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
    void mix_string(const std::string& text) {
        mix_count(text.size());
        mix_text(text);
    }
    void mix_count(std::size_t count) {
        const std::uint64_t value = count;
        mix(&value, sizeof value);
    }
    std::uint64_t value() const { return hash_; }
    // 16 lower-case hex digits.
    std::string hex() const {
        char text[17];
        std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash_));
        return text;
    }

private:
    std::uint64_t hash_ = 0xcbf29ce484222325ull;  // offset basis
};

// FNV-1a 64 of a text, as 16 hex digits.
inline std::string fnv1a64_hex(const std::string& text) {
    Fnv1a64 hash;
    hash.mix_text(text);
    return hash.hex();
}

}  // namespace iclab
