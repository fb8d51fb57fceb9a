#pragma once
// GPT-2's byte <-> unicode map (bytes_to_unicode in OpenAI's encoder.py): every byte becomes a printable code point,
// so that a BPE token is a string of visible characters. Bytes 33-126, 161-172 and 174-255 map to themselves; the
// other 68 bytes (0-32, 127-160, 173) map to 256, 257, ... in increasing byte order.
#include <array>
#include <cstdint>

namespace iclab::text {

// byte -> code point (256 distinct values).
const std::array<char32_t, 256>& byte_to_unicode();

// code point -> byte, or -1 for a code point that no byte maps to.
int unicode_to_byte(char32_t code_point);

}  // namespace iclab::text
