#pragma once
// UTF-8 as the reference encoder sees it. Its input is a JavaScript string; bytes become one through the WHATWG
// "UTF-8 decode" (TextDecoder, not fatal), which replaces each maximal invalid subsequence by U+FFFD. iclab does the
// same to its byte input before the pre-split, so invalid UTF-8 encodes exactly as the reference encodes the
// decoded string (docs/text.md). A leading byte order mark is kept (TextDecoder with ignoreBOM: true).
#include <cstddef>
#include <string>
#include <string_view>

namespace iclab::text {

// `bytes` with every invalid sequence replaced by U+FFFD (EF BF BD), by the WHATWG UTF-8 decoder's rules
// (https://encoding.spec.whatwg.org/#utf-8-decoder): overlong forms, surrogates (ED A0..BF), code points above
// 0x10FFFF, stray continuation bytes and truncated sequences. `replacements` (if given) receives their count.
// Valid UTF-8 comes back unchanged.
std::string utf8_replace_invalid(std::string_view bytes, std::size_t* replacements = nullptr);

// Decodes the code point at `text[position]` of valid UTF-8 and advances `position` past it.
inline char32_t utf8_next(std::string_view text, std::size_t& position) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    const unsigned char lead = byte(position);
    if (lead < 0x80) {
        position += 1;
        return lead;
    }
    if (lead < 0xE0) {
        const char32_t c = (char32_t(lead & 0x1F) << 6) | (byte(position + 1) & 0x3F);
        position += 2;
        return c;
    }
    if (lead < 0xF0) {
        const char32_t c = (char32_t(lead & 0x0F) << 12) | (char32_t(byte(position + 1) & 0x3F) << 6) | (byte(position + 2) & 0x3F);
        position += 3;
        return c;
    }
    const char32_t c = (char32_t(lead & 0x07) << 18) | (char32_t(byte(position + 1) & 0x3F) << 12) |
                       (char32_t(byte(position + 2) & 0x3F) << 6) | (byte(position + 3) & 0x3F);
    position += 4;
    return c;
}

// Appends the UTF-8 form of a code point (<= 0x10FFFF).
void utf8_append(std::string& out, char32_t code_point);

}  // namespace iclab::text
