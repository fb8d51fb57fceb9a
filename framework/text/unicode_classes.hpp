#pragma once
// The code point classes of GPT-2's pre-split pattern (docs/text.md): \p{L}, \p{N} and \s as the reference
// encoder's regex engine (node's, JavaScript Unicode mode) defines them. The table is generated from node by
// scripts/text/gen_unicode_tables.js into unicode_tables.cpp; a test checks it against the installed node.
#include <cstddef>
#include <cstdint>

namespace iclab::text {

enum class CharClass : std::uint8_t { other, letter, number, space };

// The class of one code point; values above 0x10FFFF are other.
CharClass char_class(char32_t code_point);

// The Unicode version of the node that generated the table, e.g. "17.0".
const char* unicode_tables_version();

namespace detail {
struct CodePointRange {
    char32_t first, last;
    CharClass char_class;
};
extern const CodePointRange kCodePointRanges[];  // sorted, disjoint, only letter/number/space
extern const std::size_t kCodePointRangeCount;
extern const char* const kUnicodeTablesVersion;
}  // namespace detail

}  // namespace iclab::text
