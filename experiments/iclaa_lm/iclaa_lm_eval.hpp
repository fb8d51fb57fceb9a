#pragma once
// Experiment `iclaa_lm`, internal: paper 000 §6.4 on a GPT-2-shaped softmax language model. The methods compared
// (rows), held-out (prompt, continuation) windows, the scores of every row on every window, and greedy generations
// (Tables 3-5). Every row turns a prompt X' into per-layer, per-head terms of the softmax attention
// (framework/icl/iclaa.hpp) and is scored against M_old on [X'; X] at X's positions, all in float64.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/core/progress.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/text/heldout_windows.hpp"

namespace iclab::experiments::iclaa_lm_detail {

enum class Method { no_prompt, no_prompt_shifted, exact_cache, recent, heavy, prf, orf, learned, hybrid };
const char* method_name(Method method);

struct Row {
    Method method = Method::no_prompt;
    std::string label;         // e.g. "prf F=256", "recent k=8", "no prompt"
    std::size_t size = 0;      // F features or k kept tokens
    std::size_t seed = 0;      // feature seed index (prf, orf), 0 otherwise
    std::size_t keep = 0;      // hybrid: the k most recent tokens kept exactly, the kernel (maps) for the older ones
    const icl::LayerHeadMaps* maps = nullptr;  // kernel and hybrid rows
    double bytes = 0.0;        // fp32 bytes per layer-head of what stands for the prompt (icl::cache_bytes, kernel_bytes)
    // Learned absolute positions: X starts at position M (where it sat behind the prompt) instead of 0. Every row but
    // `no prompt` (M_old without the prompt: X alone at 0..N-1) when iclaa_lm.input_positions = after_prompt.
    bool shifted = false;
};

// Fills terms[l][slot·H + h] for prompt b of kv (nothing for the no-prompt rows).
void add_row_terms(icl::PromptTerms& terms, std::size_t slot, const Row& row, const icl::PromptKeysValues& kv, std::size_t b,
                   const nn::RopeTable* rope);

// A held-out window (framework/text/heldout_windows.hpp) and `count` of them from /heldout; InputError naming `name`.
using Window = text::HeldoutWindow;
std::vector<Window> heldout_windows(const std::vector<std::int32_t>& heldout, std::int32_t end_of_text, std::size_t M, std::size_t N,
                                    std::size_t count, const std::string& name);

// Per row, per window: ‖L − L_ref‖_F / ‖L_ref‖_F over X's N positions and V logits (paper 000 §6.4 "relative error of
// the logits"), the mean KL(p_ref ‖ p) over positions, and the share of positions whose argmax agrees.
struct Scores {
    std::vector<std::vector<double>> relative_error, kl, top1;  // [row][window]
};
// progress (optional): reports the windows scored as it goes.
Scores score_rows(model::Transformer<double>& net, const std::vector<Row>& rows, const std::vector<Window>& windows,
                  std::size_t batch_size, Progress* progress = nullptr);

// Greedy continuations (Tables 3-5): for each example window, X_in = the first `input_tokens` of its continuation,
// `new_tokens` generated from M_old on [X'; X_in] ("with prompt"), from every row on X_in (its adapter terms; "no
// prompt" is M_old without the prompt), stopping early at end_of_text.
struct Generation {
    std::size_t example = 0;
    std::string model;  // "with prompt" or a row's label
    std::vector<std::int32_t> input, tokens;
};
std::vector<Generation> generate_examples(model::Transformer<double>& net, const std::vector<const Row*>& rows,
                                          const std::vector<Window>& windows, std::size_t examples, std::size_t input_tokens,
                                          std::size_t new_tokens, std::int32_t end_of_text);

}  // namespace iclab::experiments::iclaa_lm_detail
