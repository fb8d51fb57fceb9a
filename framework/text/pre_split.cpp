#include "framework/text/pre_split.hpp"

#include "framework/text/unicode_classes.hpp"
#include "framework/text/utf8.hpp"

namespace iclab::text {

namespace {

// The text as code points with their byte offsets and classes (offset[n] = text.size()).
struct CodePoints {
    std::vector<char32_t> value;
    std::vector<CharClass> kind;
    std::vector<std::size_t> offset;
};

CodePoints code_points_of(std::string_view text) {
    CodePoints c;
    c.value.reserve(text.size());
    c.kind.reserve(text.size());
    c.offset.reserve(text.size() + 1);
    for (std::size_t position = 0; position < text.size();) {
        c.offset.push_back(position);
        const char32_t cp = utf8_next(text, position);
        c.value.push_back(cp);
        c.kind.push_back(char_class(cp));
    }
    c.offset.push_back(text.size());
    return c;
}

// The length (in code points) of the contraction 's|'t|'re|'ve|'m|'ll|'d at i, or 0.
std::size_t contraction_at(const CodePoints& c, std::size_t i) {
    const std::size_t n = c.value.size();
    if (c.value[i] != U'\'' || i + 1 >= n) return 0;
    const char32_t a = c.value[i + 1];
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if (i + 2 >= n) return 0;
    const char32_t b = c.value[i + 2];
    if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    return 0;
}

bool in_class(CharClass kind, CharClass wanted) { return kind == wanted; }

// " ?X+" for X = letter, number, or other (not space, letter, number): the length at i, or 0.
std::size_t optional_space_run_at(const CodePoints& c, std::size_t i, CharClass wanted) {
    const std::size_t n = c.value.size();
    std::size_t j = i;
    if (c.value[j] == U' ' && j + 1 < n && in_class(c.kind[j + 1], wanted)) ++j;  // " ?" takes the space only if X+ follows
    if (!in_class(c.kind[j], wanted)) return 0;
    while (j < n && in_class(c.kind[j], wanted)) ++j;
    return j - i;
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> gpt2_pre_split(std::string_view text) {
    const CodePoints c = code_points_of(text);
    const std::size_t n = c.value.size();
    std::vector<std::pair<std::size_t, std::size_t>> pieces;
    pieces.reserve(n / 4 + 1);
    for (std::size_t i = 0; i < n;) {
        std::size_t length = contraction_at(c, i);
        if (length == 0) length = optional_space_run_at(c, i, CharClass::letter);
        if (length == 0) length = optional_space_run_at(c, i, CharClass::number);
        if (length == 0) length = optional_space_run_at(c, i, CharClass::other);
        if (length == 0) {
            // Here c.kind[i] is space (every other code point matched above). \s+(?!\S): the greedy run backs off by
            // one when a non-space follows, leaving that space to start the next piece; a run of one followed by a
            // non-space fails it, and \s+ takes the run of one.
            std::size_t j = i;
            while (j < n && c.kind[j] == CharClass::space) ++j;
            length = j - i;
            if (j < n && length >= 2) length -= 1;
        }
        pieces.emplace_back(c.offset[i], c.offset[i + length] - c.offset[i]);
        i += length;
    }
    return pieces;
}

}  // namespace iclab::text
