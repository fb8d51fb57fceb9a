// The experiment list: one line per experiment. Each experiment lives in experiments/<name>/ and defines
// `run::Experiment experiments::<name>()` (docs/adding_an_experiment.md). Listed in `iclab list` order.
#include "experiments/registry.hpp"

#define ICLAB_EXPERIMENTS(X) \
    X(induction_head)        \
    X(regression)            \
    X(iclca_serving)         \
    X(forward_pass)          \
    X(iclca_exactness)       \
    X(iclca_induction)       \
    X(bias_training)         \
    X(iclaa)                 \
    X(lsa_gd)                \
    X(gd_duals)              \
    X(vo_trained)            \
    X(gd004_example)         \
    X(gd004_figures)         \
    X(gd004_fig5)            \
    X(prefix_vs_causal)      \
    X(prefix_vs_causal_probes) \
    X(lm)                    \
    X(iclaa_lm)              \
    X(prompt_baking)         \
    X(prompt_baking_lm)      \
    X(decay_attention)

namespace iclab::experiments {

#define ICLAB_DECLARE(name) run::Experiment name();
ICLAB_EXPERIMENTS(ICLAB_DECLARE)
#undef ICLAB_DECLARE

const run::Catalog& catalog() {
#define ICLAB_ENTRY(name) name(),
    static const run::Catalog experiments({ICLAB_EXPERIMENTS(ICLAB_ENTRY)});
#undef ICLAB_ENTRY
    return experiments;
}

}  // namespace iclab::experiments
