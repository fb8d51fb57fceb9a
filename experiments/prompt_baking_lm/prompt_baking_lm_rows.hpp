#pragma once
// Experiment `prompt_baking_lm`, internal: the methods compared on a KJV language model (rows), one row's scores on
// one held-out (X', X) window, the claims declared before the runs (prompt_baking_lm_claims.cpp) and the tables
// (prompt_baking_lm_report.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/io/claims.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::experiments::prompt_baking_lm_detail {

// before: M_old on X alone; reference: M_old on [X'; X] (its next-token accuracy and perplexity on X; errors 0 by
// definition); iclca: ICLCA's exact biases (linear); cache: the exact prompt KV cache (softmax, the check); kernel:
// ICLAA with one feature map; hybrid: recent-k cache + the learned map; bake_biases, bake_lora: prompt baking.
enum class Kind { before, reference, iclca, cache, kernel, hybrid, bake_biases, bake_lora };
const char* kind_name(Kind kind);

struct Row {
    Kind kind = Kind::before;
    std::string label;             // "prf F=32", "bake lora r=5", ...
    double bytes = 0.0;            // fp32 bytes of what stands for the prompt, whole model
    const icl::LayerHeadMaps* maps = nullptr;  // kernel, hybrid
    std::size_t keep = 0;          // hybrid: recent tokens kept exactly
    double map_seconds = 0.0;      // kernel: building (learned: fitting) the map, once per model
};

// One row on one window, against M_old on [X'; X] at X's N positions.
struct WindowScore {
    double relative_error = 0.0, centered_error = 0.0, kl = 0.0, top1 = 0.0;  // icl::compare_logits
    double generated_agreement = 0.0;  // share of the G greedy tokens after X equal to the reference's after [X'; X]
    double nll_sum = 0.0;              // Σ over X's positions t < N−1 of −log p(X_{t+1} | ·): perplexity on X
    std::int64_t predicted = 0, correct = 0;  // those positions, and how many have argmax = X_{t+1}
    double convert_seconds = 0.0, convert_heap_mib = 0.0, convert_peak_rss_mib = 0.0;
    double bake_initial_kl = 0.0, bake_final_kl = 0.0;  // baking rows: the objective on its continuations
};

// The claims of this config's model kind (linear: ICLCA vs baking; softmax: ICLAA vs baking), declared before
// anything is measured, and their values per window from the rows' scores.
struct ClaimSetting {
    bool linear = true;
    std::size_t head_dim = 0;   // D: the equal-bytes kernel rows have F = D
    std::size_t lora_rank = 0;  // the LoRA row's rank (its label)
};
std::vector<io::Claim> declare_claims(const config::Config& cfg, const ClaimSetting& setting);
std::vector<io::ClaimResult> evaluate_claims(const config::Config& cfg, const ClaimSetting& setting, const std::vector<io::Claim>& claims,
                                             const std::vector<Row>& rows, const std::vector<std::vector<WindowScore>>& scores);

// /tables/methods (per row: means over the windows), /tables/windows (one row per method and window), the claims and
// the table on stdout.
void write_results(const config::Config& cfg, const std::vector<Row>& rows, const std::vector<std::vector<WindowScore>>& scores,
                   const std::vector<std::size_t>& window_starts, const std::vector<io::ClaimResult>& claims, run::RunFolder& run,
                   bool quiet);

// Labels the claims refer to.
std::string kernel_label(const std::string& map, std::size_t features);  // "prf F=32"
std::string lora_label(std::size_t rank);                               // "bake lora r=5"
const char* const kBeforeLabel = "no prompt (before)";
const char* const kReferenceLabel = "with prompt (reference)";
const char* const kIclcaLabel = "iclca (exact)";
const char* const kCacheLabel = "exact cache (check)";
const char* const kBakeBiasesLabel = "bake biases";

}  // namespace iclab::experiments::prompt_baking_lm_detail
