#pragma once
// Experiment `bias_training` (paper 000 §6.3, Figure 1): the induction-head model trained with and without
// trainable attention biases b_KV, b_D (model.attention_bias_trainable), for several seeds, each variant with the
// same seeds (so the same initialization, since b_KV = b_D = 0 at the start either way, and the same data).
//
// Every (variant, seed) is a complete induction_head run in <run folder>/runs/<variant>_seed<k>/ (its own
// config.yaml, log.txt, checkpoint.h5, results.h5), trained by run_induction_head. The parent run copies their
// curves into one results.h5 (/curves/<variant>_seed<k>/, /steps/<variant>_seed<k>/) and writes
// /tables/runs (one row per sub-run) and /tables/summary (per variant: steps to reach each ICL-accuracy threshold,
// final loss and accuracy; mean, sample std, min and max over the seeds).
//
// Resuming: the parent keeps a small checkpoint.h5 (its identity and the count of finished sub-runs), so
// `iclab run --resume <run folder>` re-enters it: finished sub-runs are read back, an interrupted one continues
// from its own checkpoint.h5 (bit-identical, as any induction_head run), missing ones start. --stop-after S
// stops the first unfinished sub-run after its step S, and the parent with it.
#include "experiments/common.hpp"

namespace iclab::experiments {

config::Schema bias_training_schema();
RunOutcome run_bias_training(const config::Config& cfg, const RunOptions& options);

}  // namespace iclab::experiments
