#include "experiments/iclaa/iclaa_precondition.hpp"

#include <algorithm>
#include <limits>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"

namespace iclab::experiments::iclaa_detail {

double icl_accuracy_with_prompt(model::Transformer<double>& net, const std::vector<tasks::PromptPair>& pairs, std::size_t batch_size) {
    ICLAB_CHECK(batch_size > 0, "icl_accuracy_with_prompt: a batch of 0 pairs");
    const std::size_t V = net.spec().vocab;
    std::size_t scored = 0, correct = 0;
    std::vector<std::int32_t> whole;  // (B, M + N)
    for (std::size_t first = 0; first < pairs.size(); first += batch_size) {
        const std::size_t B = std::min(batch_size, pairs.size() - first);
        const std::size_t M = pairs[first].prompt.size(), N = pairs[first].input.size();
        whole.clear();
        for (std::size_t b = 0; b < B; ++b) {
            const tasks::PromptPair& pair = pairs[first + b];
            ICLAB_CHECK(pair.prompt.size() == M && pair.input.size() == N, "icl_accuracy_with_prompt: pairs of different lengths");
            whole.insert(whole.end(), pair.prompt.begin(), pair.prompt.end());
            whole.insert(whole.end(), pair.input.begin(), pair.input.end());
        }
        net.forward(whole.data(), B, M + N);
        for (std::size_t b = 0; b < B; ++b) {
            const tasks::PromptPair& pair = pairs[first + b];
            for (std::size_t t = 0; t < N; ++t) {
                if (pair.kinds[t] != tasks::PositionKind::first_trigger) continue;
                const double* z = net.logits() + (b * (M + N) + M + t) * V;  // (V) at X's position t
                // the first of equal ones; V (no prediction) for a NaN logit: the accuracy is then NaN, so a NaN model
                // never meets the precondition by a token-0 guess, and is listed as excluded with its NaN (issue 45)
                const std::size_t best = argmax_of(z, V);
                if (best == V) return std::numeric_limits<double>::quiet_NaN();
                ++scored;
                correct += static_cast<std::int32_t>(best) == pair.targets[t];
            }
        }
    }
    return scored ? static_cast<double>(correct) / static_cast<double>(scored) : std::numeric_limits<double>::quiet_NaN();
}

io::Precondition learned_task_precondition(double bar, double value, std::size_t pairs) {
    io::Precondition p;
    p.key = "iclaa.precondition.min_icl_accuracy";
    p.measure = "ICL accuracy of the model with the prompt on " + std::to_string(pairs) + " validation pairs";
    p.value = value;
    p.bar = bar;
    return p;
}

}  // namespace iclab::experiments::iclaa_detail
