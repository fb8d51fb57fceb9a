#pragma once
// Experiment `iclaa`, internal: per layer-head diagnostics of the model with the prompt, and the tables written at
// the end (/tables/iclaa, /tables/tradeoff, /tables/diagnostics, /tables/pairs) with the terminal summary.
#include <cstddef>
#include <vector>

#include "experiments/iclaa/iclaa_rows.hpp"
#include "framework/config/config.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::experiments::iclaa_detail {

// Why random features fail or succeed (spec §2.4, §7.4): per layer and head, over X's queries in [X'; X],
// the prompt's share of the attention mass and the attention-weighted ‖q̃ + k̃'‖² over the prompt keys, whose
// exp drives the PRF variance: relative sd √((e^{‖x+y‖²} − 1)/F).
struct Diagnostics {
    Diagnostics(std::size_t layers, std::size_t heads) : layers(layers), heads(heads), share(layers * heads), norm(layers * heads) {}
    std::size_t layers, heads;
    std::vector<std::vector<double>> share, norm;  // [l·H + h]: one value per query
};
// After a forward of B sequences [X'; X] (M + N tokens) with capture_qkv on.
void accumulate_diagnostics(Diagnostics& diagnostics, const model::Transformer<double>& net, std::size_t B, std::size_t M,
                            std::size_t N);

struct FitSummary {
    std::size_t features = 0;
    icl::FeatureFitReport report;
};

void write_results(const config::Config& cfg, const model::ModelSpec& spec, const std::vector<Row>& rows,
                   const std::vector<RowScores>& scores, const std::vector<tasks::PromptPair>& pairs, const Diagnostics& diagnostics,
                   const std::vector<FitSummary>& fits, Rng& bootstrap, double seconds, run::RunFolder& run, bool quiet);

}  // namespace iclab::experiments::iclaa_detail
