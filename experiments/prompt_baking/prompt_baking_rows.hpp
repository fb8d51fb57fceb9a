#pragma once
// Experiment `prompt_baking`, internal: the methods compared (rows), one row's scores on one (X', X) pair, and the
// claims declared before the runs (prompt_baking_claims.cpp).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/core/rng.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/icl/prompt_baking.hpp"
#include "framework/io/claims.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::experiments::prompt_baking_detail {

// before: the model on X alone; iclca: ICLCA's exact biases (linear); cache: the exact prompt KV cache (softmax, the
// check); kernel: ICLAA with one feature map; hybrid: recent-k cache + learned map; bake_biases, bake_lora: baking;
// bake_kernel: baking into ICLAA's kernel biases of one map (softmax), from its closed form or from 0.
enum class Kind { before, iclca, cache, kernel, hybrid, bake_biases, bake_lora, bake_kernel };

struct Row {
    Kind kind = Kind::before;
    std::string label;             // "prf F=32", "bake lora r=5", ...
    double bytes = 0.0;            // fp32 bytes of what stands for the prompt, whole model
    const icl::LayerHeadMaps* maps = nullptr;  // kernel, hybrid, bake_kernel
    std::size_t keep = 0;          // hybrid: recent tokens kept exactly
    double map_seconds = 0.0;      // kernel: building (learned: fitting) the map, once per model
    bool zero_start = false;       // bake_kernel: from b̂_kv = b̂_d = 0 (else from the map's closed form)
};

// One row on one pair, against M_old on [X'; X].
struct PairScore {
    double relative_error = 0.0;  // ‖L − L_ref‖_F / ‖L_ref‖_F over X's N positions
    double centered_error = 0.0;  // the same with each position's logits centred (mean over V removed): blind, as KL
                                  // is, to a per-position shift, which changes no probability
    double kl = 0.0;              // mean over positions of KL(p_ref ‖ p)
    double top1 = 0.0;            // share of positions whose argmax agrees
    double generated_agreement = 0.0;  // share of the G greedy tokens after X equal to the reference's after [X'; X]
    std::int64_t scored = 0, correct = 0;  // X's first trigger occurrences (answer only in X'), argmax = target
    double convert_seconds = 0.0;       // conversion of this prompt: wall time,
    double convert_heap_mib = 0.0;      // heap its objects hold while alive (working set),
    double convert_peak_rss_mib = 0.0;  // rise of the process's peak RSS (0 when freed memory is reused)
    double bake_initial_kl = 0.0, bake_final_kl = 0.0;       // baking rows: the objective on its continuations
};
PairScore score_logits(const tasks::PromptPair& pair, const double* logits, const double* reference, std::size_t N, std::size_t V);

// Bytes the heap holds in use (glibc mallinfo2: arena + mmapped blocks), in MiB: a conversion's working set is the
// rise of this number while its objects are alive.
double heap_in_use_mib();

// A baked delta in float64 for the evaluation model.
struct Baked {
    icl::AttentionBiases<double> biases;
    icl::LoraDelta<double> lora;
    icl::PromptTerms terms;  // kernel: the baked biases (features pointing at the row's maps)
    double initial_kl = 0.0, final_kl = 0.0;
    double heap_mib = 0.0;  // working set of the baking, measured before its objects are freed
};
// Bakes the pair's prompt in the config's precision (prompt_baking.precision): into `target`, or with `kernel` (a
// bake_kernel row) into the kernel biases of its map from `start` (the prompt's closed-form terms of that map).
Baked bake_row(const config::Config& cfg, const model::Transformer<double>& net, const tasks::PromptPair& pair, icl::BakeTarget target,
               Rng continuation_rng, Rng lora_rng, const Row* kernel = nullptr, const icl::PromptTerms* start = nullptr);

// The claims of this config's model kind (linear: ICLCA vs baking; softmax: ICLAA vs baking), declared before
// anything is measured; values per pair from the rows' scores (per row label).
std::vector<io::Claim> declare_claims(const config::Config& cfg, bool linear, std::size_t head_dim);
std::vector<io::ClaimResult> evaluate_claims(const std::vector<io::Claim>& claims, const std::vector<Row>& rows,
                                             const std::vector<std::vector<PairScore>>& scores, std::int64_t seed);

// /tables/methods (per row: means over the pairs), /tables/pairs (one row per method and pair), the claims, and the
// table on stdout.
void write_results(const config::Config& cfg, const std::vector<Row>& rows, const std::vector<std::vector<PairScore>>& scores,
                   const std::vector<io::ClaimResult>& claims, run::RunFolder& run, bool quiet);

// Labels the claims refer to.
std::string prf_equal_label(std::size_t head_dim);
std::string learned_equal_label(std::size_t head_dim);
const char* const kBakeBiasesLabel = "bake biases";
const char* const kIclcaLabel = "iclca (exact)";
const char* const kBeforeLabel = "no prompt (before)";
std::string lora_label(std::size_t rank);
// "bake kernel prf F=32" (from the closed form), "bake kernel prf F=32 from 0"
std::string bake_kernel_label(const std::string& map_label, bool zero_start);

}  // namespace iclab::experiments::prompt_baking_detail
