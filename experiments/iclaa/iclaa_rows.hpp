#pragma once
// Experiment `iclaa`, internal: the methods compared (rows of /tables/iclaa) and the per-pair scores of one row.
// Every row turns one prompt X' into per-layer, per-head terms of the softmax attention (framework/icl/iclaa.hpp)
// and is scored against M_old on [X'; X] at X's positions (spec iclaa.md §2.3-2.4).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/icl/iclaa.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::experiments::iclaa_detail {

enum class Method { before, exact_cache, recent, heavy, prf, orf, elu1, learned, hybrid };
const char* method_name(Method method);

struct Row {
    Method method = Method::before;
    std::string label;            // e.g. "prf F=256", "recent k=8", "prf F=1024 (unrotated)"
    std::size_t size = 0;         // F features or k kept tokens
    std::size_t seed = 0;         // feature seed index (prf, orf), 0 otherwise
    icl::RopeConvention convention = icl::RopeConvention::rotate_then_map;
    const icl::LayerHeadMaps* maps = nullptr;  // kernel rows
    double bytes = 0.0;           // fp32 bytes per layer-head of what stands for the prompt
    double map_bytes = 0.0;       // fp32 bytes per layer-head of the map itself (learned: W₀ and c)
    std::size_t keep = 0;         // hybrid: the k most recent tokens kept exactly, the kernel (maps, F = size) for the rest
};

// Fills terms[l][slot·H + h] for prompt b of kv (nothing for `before`).
void add_row_terms(icl::PromptTerms& terms, std::size_t slot, const Row& row, const icl::PromptKeysValues& kv, std::size_t b,
                   const nn::RopeTable* rope);

// One row on one pair: logits (N, V) against the reference logits of M_old on [X'; X].
struct PairScore {
    double relative_error = 0.0;  // ‖L − L_ref‖_F / ‖L_ref‖_F (paper 000 §6.4 "relative error of the logits")
    double kl = 0.0;              // mean over positions of KL(p_ref ‖ p)
    std::int64_t top1 = 0;        // positions where argmax agrees with the reference
    std::int64_t scored = 0, correct = 0;  // first occurrences of a trigger in X (answer only in X')
    std::int64_t repeats = 0, repeat_correct = 0;
};
PairScore score_pair(const tasks::PromptPair& pair, const double* logits, const double* reference, std::size_t N, std::size_t V);

// Per row, the scores of every pair (in pair order) and the conversion time.
struct RowScores {
    std::vector<PairScore> pairs;
    double conversion_seconds = 0.0;
};

}  // namespace iclab::experiments::iclaa_detail
