#pragma once
// Experiment `iclaa`, internal: its run-level precondition (framework/io/precondition.hpp), "the model learned the
// task", declared by iclaa.precondition.min_icl_accuracy before the runs and measured on the validation pairs.
#include <vector>

#include "framework/io/precondition.hpp"
#include "framework/model/transformer.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab::experiments::iclaa_detail {

// The ICL accuracy of the trained model with the prompt in its context, M_old on [X'; X]: over every validation pair,
// the share of X's first trigger occurrences (the answer only in X', PairScore::scored) whose argmax logit is the
// successor. The same measure as /tables/iclaa's icl_accuracy (and the attribute icl_accuracy_with_prompt, on the
// test pairs), on the validation pairs so that no test pair decides which seeds count. Forward passes of
// `batch_size` pairs; NaN when no pair has a first trigger occurrence in X.
double icl_accuracy_with_prompt(model::Transformer<double>& net, const std::vector<tasks::PromptPair>& pairs, std::size_t batch_size);

// The precondition of a run: key, measure (naming the pair count), the value above and the bar.
io::Precondition learned_task_precondition(double bar, double value, std::size_t pairs);

}  // namespace iclab::experiments::iclaa_detail
