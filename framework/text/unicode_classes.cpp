#include "framework/text/unicode_classes.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace iclab::text {

namespace {

// The basic multilingual plane as a flat table (64 KiB), built once from the ranges; the other planes by binary search.
const std::vector<CharClass>& bmp_table() {
    static const std::vector<CharClass> table = [] {
        std::vector<CharClass> t(0x10000, CharClass::other);
        for (std::size_t i = 0; i < detail::kCodePointRangeCount; ++i) {
            const auto& r = detail::kCodePointRanges[i];
            for (char32_t c = r.first; c <= r.last && c < 0x10000; ++c) t[c] = r.char_class;
        }
        return t;
    }();
    return table;
}

}  // namespace

CharClass char_class(char32_t code_point) {
    if (code_point < 0x10000) return bmp_table()[code_point];
    const auto* begin = detail::kCodePointRanges;
    const auto* end = begin + detail::kCodePointRangeCount;
    // The first range whose last code point is >= code_point.
    const auto* it = std::lower_bound(begin, end, code_point,
                                      [](const detail::CodePointRange& r, char32_t c) { return r.last < c; });
    if (it != end && it->first <= code_point) return it->char_class;
    return CharClass::other;
}

const char* unicode_tables_version() { return detail::kUnicodeTablesVersion; }

}  // namespace iclab::text
