// ICLAA's RoPE conventions by name (iclaa.hpp): kept apart from iclaa.cpp so that the adapter reader (and its fuzz
// target, tests/fuzz/fuzz_adapter_reader.cpp) links without the model.
#include "framework/core/check.hpp"
#include "framework/icl/iclaa.hpp"

namespace iclab::icl {

RopeConvention parse_rope_convention(const std::string& name) {
    if (name == "rotate_then_map") return RopeConvention::rotate_then_map;
    if (name == "absolute_prompt_positions") return RopeConvention::absolute_prompt_positions;
    if (name == "unrotated") return RopeConvention::unrotated;
    throw InputError("unknown RoPE convention '" + name + "' (known: rotate_then_map, absolute_prompt_positions, unrotated)");
}

const char* rope_convention_name(RopeConvention convention) {
    switch (convention) {
        case RopeConvention::rotate_then_map: return "rotate_then_map";
        case RopeConvention::absolute_prompt_positions: return "absolute_prompt_positions";
        case RopeConvention::unrotated: return "unrotated";
    }
    return "?";
}

}  // namespace iclab::icl
