#pragma once
// Which keys each query position of an attention layer sees (paper 003 §3 and Fig. 5).
//   causal : position i sees keys j ≤ i                         (causalLM)
//   prefix : positions of the prefix [0, P) see each other; later positions see j ≤ i   (prefixLM)
//   full   : every position sees every key
// isolate_queries (paper 003 E.1, multiple queries per sequence): the positions i ≥ P are queries that see
// the context [0, P) (and themselves when query_self) and are seen by no other position.
// Every mask here has the form  visible(i) = [0, visible_prefix(i)) ∪ ({i} if self_extra(i)),  with
// visible_prefix non-decreasing in i: running sums over keys serve every mask (attention kernels rely on it).
#include <algorithm>
#include <cstddef>
#include <string>

#include "framework/core/check.hpp"

namespace iclab::nn {

enum class MaskKind { causal, prefix, full };

inline MaskKind mask_kind_from_name(const std::string& name) {
    if (name == "causal") return MaskKind::causal;
    if (name == "prefix") return MaskKind::prefix;
    if (name == "full") return MaskKind::full;
    throw Error("unknown attention mask '" + name + "' (known: causal, prefix, full)");
}

inline const char* mask_kind_name(MaskKind kind) {
    return kind == MaskKind::causal ? "causal" : kind == MaskKind::prefix ? "prefix" : "full";
}

struct AttentionMask {
    MaskKind kind = MaskKind::causal;
    std::size_t prefix_length = 0;  // P: the in-context part; set per batch by the task
    bool isolate_queries = false;
    bool query_self = true;         // with isolate_queries: a query also sees its own key

    // Keys [0, visible_prefix(i)) are visible to position i of a sequence of `time` positions.
    std::size_t visible_prefix(std::size_t i, std::size_t time) const {
        const std::size_t P = std::min(prefix_length, time);
        std::size_t count = time;
        if (kind == MaskKind::causal) count = i + 1;
        if (kind == MaskKind::prefix) count = std::max(i + 1, P);
        if (isolate_queries) count = i < P ? std::min(count, P) : P;
        return count;
    }
    // Position i additionally sees its own key (it lies outside [0, visible_prefix(i))).
    bool self_extra(std::size_t i, std::size_t time) const {
        return isolate_queries && query_self && i >= std::min(prefix_length, time);
    }
    bool visible(std::size_t i, std::size_t j, std::size_t time) const {
        return j < visible_prefix(i, time) || (j == i && self_extra(i, time));
    }
    bool plain_causal() const { return kind == MaskKind::causal && !isolate_queries; }
};

}  // namespace iclab::nn
