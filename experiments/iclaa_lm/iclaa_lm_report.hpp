#pragma once
// Experiment `iclaa_lm`, internal: the claims (declared before the run), and the tables written at the end
// (/tables/iclaa_lm, /tables/windows, /tables/generations, /claims) with the terminal summary.
#include <cstddef>
#include <filesystem>
#include <vector>

#include "experiments/iclaa_lm/iclaa_lm_eval.hpp"
#include "framework/config/config.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/icl/iclaa_claims.hpp"
#include "framework/io/claims.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::experiments::iclaa_lm_detail {

// The claims of this config, with their rules, before anything is measured: per random map (prf, orf) at
// iclaa_lm.claim_features, the gap claims of framework/icl/iclaa_claims.hpp ("G > 0" qualitative, "G >= 0.446" own
// check) over the held-out windows, and the exact cache's relative error <= 1e-12 on every window (own check of the
// machinery).
std::vector<io::Claim> declare_claims(const config::Config& cfg);

struct FitSummary {
    std::size_t features = 0;
    icl::FeatureFitReport report;
};

void write_results(const config::Config& cfg, const model::ModelSpec& spec, const std::vector<Row>& rows, const Scores& scores,
                   const std::vector<Window>& windows, const std::vector<Generation>& generations, const std::vector<io::Claim>& claims,
                   const std::vector<FitSummary>& fits, const std::filesystem::path& tokenizer, double seconds, run::RunFolder& run,
                   bool quiet);

}  // namespace iclab::experiments::iclaa_lm_detail
