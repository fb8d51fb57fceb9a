#pragma once
// Experiment `iclaa`, internal: its units of staged resume (framework/run/stage_store.hpp). After training, the run's
// work is a sequence of units, each stored in RUN_DIR/stages/ when done and loaded instead of recomputed on resume:
//   learned_fit_f<F>_seed<s>           one learned map fit: its maps (every layer and head) and its fit report
//   validation_pairs_<first>           one chunk (iclaa.batch_size pairs from index <first>) of the validation scoring
//   test_pairs_<first>                 one chunk of the test scoring: every row's pair scores and the chunk's diagnostics
// Stored doubles are read back bit for bit, so a resumed run's tables equal an uninterrupted run's (timings aside).
#include <cstddef>
#include <string>
#include <vector>

#include "experiments/iclaa/iclaa_report.hpp"
#include "experiments/iclaa/iclaa_rows.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/run/stage_store.hpp"

namespace iclab::experiments::iclaa_detail {

std::string fit_unit_name(std::size_t features, std::size_t fit_seed);
std::string chunk_unit_name(const std::string& pair_set, std::size_t first);

void save_fit(run::StageStore& store, std::size_t features, std::size_t fit_seed, const icl::LayerHeadMaps& maps,
              const icl::FeatureFitReport& report);
// The stored fit when there is one for this run with the model's layers, heads, head width and F, every value finite.
bool load_fit(run::StageStore& store, std::size_t features, std::size_t fit_seed, const model::ModelSpec& spec, icl::LayerHeadMaps& maps,
              icl::FeatureFitReport& report);

// One chunk of scored pairs: per row its B pair scores and conversion time; the values the chunk appended to each
// layer-head's diagnostics (test pairs only); the chunk's wall time.
struct ChunkScores {
    std::vector<std::vector<PairScore>> rows;
    std::vector<double> conversion_seconds;
    std::vector<std::vector<double>> share, norm;  // [l·H + h], empty without diagnostics
    double seconds = 0.0;
};
void save_chunk(run::StageStore& store, const std::string& name, const std::vector<Row>& rows, const ChunkScores& chunk);
// The stored chunk when there is one for this run scoring the same rows (labels, in order) on `pairs` pairs, with
// diagnostics of `layer_heads` layer-heads (0: none).
bool load_chunk(run::StageStore& store, const std::string& name, const std::vector<Row>& rows, std::size_t pairs, std::size_t layer_heads,
                ChunkScores& chunk);

}  // namespace iclab::experiments::iclaa_detail
