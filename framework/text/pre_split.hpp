#pragma once
// GPT-2's pre-split: the text is cut into pieces by the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// before BPE merges run inside each piece. This is a hand-written scanner with the semantics of the reference's
// regex engine (JavaScript, flags "gu": leftmost match, alternatives in order, greedy with backtracking), over code
// points classed by unicode_classes.hpp. The " ?" is U+0020 only; the contractions are lower case only.
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

namespace iclab::text {

// The pieces of valid UTF-8 text (utf8_replace_invalid first) as (byte offset, byte length), in order; they tile
// the text exactly.
std::vector<std::pair<std::size_t, std::size_t>> gpt2_pre_split(std::string_view text);

}  // namespace iclab::text
