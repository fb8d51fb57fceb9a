#include "framework/text/byte_map.hpp"

namespace iclab::text {

namespace {

bool maps_to_itself(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

}  // namespace

const std::array<char32_t, 256>& byte_to_unicode() {
    static const std::array<char32_t, 256> table = [] {
        std::array<char32_t, 256> t{};
        char32_t next = 256;
        for (int b = 0; b < 256; ++b) t[b] = maps_to_itself(b) ? char32_t(b) : next++;
        return t;
    }();
    return table;
}

int unicode_to_byte(char32_t code_point) {
    static const std::array<int, 512> inverse = [] {
        std::array<int, 512> t{};
        t.fill(-1);
        for (int b = 0; b < 256; ++b) t[byte_to_unicode()[b]] = b;
        return t;
    }();
    return code_point < inverse.size() ? inverse[code_point] : -1;
}

}  // namespace iclab::text
