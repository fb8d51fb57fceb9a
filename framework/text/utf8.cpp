#include "framework/text/utf8.hpp"

#include "framework/core/check.hpp"

namespace iclab::text {

void utf8_append(std::string& out, char32_t c) {
    ICLAB_CHECK(c <= 0x10FFFF, "code point " << static_cast<unsigned long>(c) << " is beyond Unicode");
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

// The WHATWG UTF-8 decoder, step by step; a finished code point is copied as its original bytes.
std::string utf8_replace_invalid(std::string_view bytes, std::size_t* replacements) {
    static constexpr char kReplacement[] = "\xEF\xBF\xBD";
    std::string out;
    out.reserve(bytes.size());
    std::size_t replaced = 0;
    std::size_t needed = 0, seen = 0, start = 0;  // start: the byte where the pending sequence began
    unsigned char lower = 0x80, upper = 0xBF;
    for (std::size_t i = 0; i < bytes.size();) {
        const unsigned char b = static_cast<unsigned char>(bytes[i]);
        if (needed == 0) {
            if (b <= 0x7F) {
                out += static_cast<char>(b);
            } else if (b >= 0xC2 && b <= 0xDF) {
                needed = 1;
                start = i;
            } else if (b >= 0xE0 && b <= 0xEF) {
                if (b == 0xE0) lower = 0xA0;
                if (b == 0xED) upper = 0x9F;
                needed = 2;
                start = i;
            } else if (b >= 0xF0 && b <= 0xF4) {
                if (b == 0xF0) lower = 0x90;
                if (b == 0xF4) upper = 0x8F;
                needed = 3;
                start = i;
            } else {
                out += kReplacement;
                ++replaced;
            }
            ++i;
            continue;
        }
        if (b < lower || b > upper) {
            // The pending sequence is invalid: one U+FFFD, and this byte is read again as a fresh start.
            needed = seen = 0;
            lower = 0x80;
            upper = 0xBF;
            out += kReplacement;
            ++replaced;
            continue;
        }
        lower = 0x80;
        upper = 0xBF;
        ++seen;
        ++i;
        if (seen == needed) {
            out.append(bytes.substr(start, needed + 1));
            needed = seen = 0;
        }
    }
    if (needed != 0) {  // a truncated sequence at the end
        out += kReplacement;
        ++replaced;
    }
    if (replacements) *replacements = replaced;
    return out;
}

}  // namespace iclab::text
