#pragma once
// Contiguous (prompt X', continuation X) windows of a token file's held-out split, the instances on which a prompt's
// conversions are scored (experiments iclaa_lm, prompt_baking_lm). Moved here from experiments/iclaa_lm.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace iclab::text {

// A held-out window: the prompt X' (M tokens) and its continuation X (N tokens), contiguous in /heldout.
struct HeldoutWindow {
    std::size_t start = 0;  // offset of X' in /heldout
    std::vector<std::int32_t> prompt, continuation;
};

// `count` windows of M + N tokens at evenly spaced offsets of `heldout`, each moved forward past any end-of-text
// token inside it (no window spans two documents) and never overlapping the one before. InputError naming `name` (the
// split) and the keys that set them (count_key: how many; length_keys: their length) when the split cannot hold them.
std::vector<HeldoutWindow> heldout_windows(const std::vector<std::int32_t>& heldout, std::int32_t end_of_text, std::size_t M,
                                           std::size_t N, std::size_t count, const std::string& name, const std::string& count_key,
                                           const std::string& length_keys);

}  // namespace iclab::text
