#include "framework/text/heldout_windows.hpp"

#include <algorithm>

#include "framework/core/check.hpp"

namespace iclab::text {

std::vector<HeldoutWindow> heldout_windows(const std::vector<std::int32_t>& heldout, std::int32_t end_of_text, std::size_t M,
                                           std::size_t N, std::size_t count, const std::string& name, const std::string& count_key,
                                           const std::string& length_keys) {
    const std::size_t length = M + N;
    ICLAB_INPUT_CHECK(heldout.size() >= length * count,
                      name << " holds " << heldout.size() << " tokens, fewer than " << count << " windows of " << length_keys << " = "
                           << length << " tokens");
    const std::size_t stride = heldout.size() / count;
    std::vector<HeldoutWindow> windows;
    std::size_t floor = 0;  // windows never overlap
    for (std::size_t w = 0; w < count; ++w) {
        std::size_t start = std::max(w * stride, floor);
        for (;;) {
            ICLAB_INPUT_CHECK(start + length <= heldout.size(),
                              name << ": no room for window " << w + 1 << " of " << count << " (" << length
                                   << " tokens without an end-of-text inside); ask for fewer " << count_key << " or shorter windows");
            const auto first = heldout.begin() + static_cast<std::ptrdiff_t>(start);
            const auto eot = std::find(first, first + static_cast<std::ptrdiff_t>(length), end_of_text);
            if (eot == first + static_cast<std::ptrdiff_t>(length)) break;
            start = static_cast<std::size_t>(eot - heldout.begin()) + 1;
        }
        HeldoutWindow window;
        window.start = start;
        window.prompt.assign(heldout.begin() + static_cast<std::ptrdiff_t>(start), heldout.begin() + static_cast<std::ptrdiff_t>(start + M));
        window.continuation.assign(heldout.begin() + static_cast<std::ptrdiff_t>(start + M),
                                   heldout.begin() + static_cast<std::ptrdiff_t>(start + length));
        windows.push_back(std::move(window));
        floor = start + length;
    }
    return windows;
}

}  // namespace iclab::text
