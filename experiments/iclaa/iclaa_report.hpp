#pragma once
// Experiment `iclaa`, internal: per layer-head diagnostics of the model with the prompt, the claims (declared before
// the run), and the tables written at the end (/tables/iclaa, /tables/tradeoff, /tables/diagnostics, /tables/pairs,
// /claims) with the terminal summary.
#include <cstddef>
#include <vector>

#include "experiments/iclaa/iclaa_rows.hpp"
#include "framework/config/config.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/io/claims.hpp"
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

// The claims of this config, with their rules, before anything is measured: per random map (prf, orf) at
// iclaa.claim_features, and for the learned map at the F picked on the validation pairs, the gap claims of
// framework/icl/iclaa_claims.hpp ("G > 0" qualitative, "G >= 0.446" own check), one G per test pair (its error
// averaged over the feature or fit seeds); `iclab claims` pools the model seeds by their mean G (seed_means).
std::vector<io::Claim> declare_claims(const config::Config& cfg);

struct FitSummary {
    std::size_t features = 0, fit_seed = 0;
    icl::FeatureFitReport report;
};

// The learned map's F, picked on the validation pairs: per F (iclaa.learned.features, in order) the mean over the
// validation pairs of the pair's relative logit error averaged over the fit seeds; the pick is the lowest (the first
// of equal ones).
struct LearnedSelection {
    std::vector<std::int64_t> features;
    std::vector<double> validation_error, validation_gap;  // per F; G = 1 − error / the no-prompt error on the validation pairs
    double validation_before = 0.0;                        // the no-prompt row's mean error on the validation pairs
    std::size_t picked = 0;                                // index into features
    std::size_t pairs = 0;                                 // validation pairs
    std::size_t redrawn = 0;                               // validation draws refused as equal to a test pair
    bool empty() const { return features.empty(); }
};
// rows: the no-prompt row first, then the learned rows (their fit seeds grouped by F); scores on the validation pairs.
LearnedSelection select_learned(const std::vector<Row>& rows, const std::vector<RowScores>& scores);

void write_results(const config::Config& cfg, const model::ModelSpec& spec, const std::vector<Row>& rows,
                   const std::vector<RowScores>& scores, const std::vector<tasks::PromptPair>& pairs, const Diagnostics& diagnostics,
                   const std::vector<FitSummary>& fits, const LearnedSelection& selection, const std::vector<io::Claim>& claims,
                   Rng& bootstrap, double seconds,
                   run::RunFolder& run, bool quiet);

}  // namespace iclab::experiments::iclaa_detail
