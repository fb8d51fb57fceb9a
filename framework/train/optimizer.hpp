#pragma once
// Optimizers over the flat parameter buffer (one loop per parameter tensor), learning-rate schedules
// and gradient-norm clipping. Only parameters marked trainable in the layout are touched.
#include <cstddef>
#include <string>
#include <vector>

#include "framework/model/parameters.hpp"

namespace iclab::train {

enum class OptimizerKind { sgd, adam, adamw };
enum class ScheduleKind { constant, warmup_cosine };

OptimizerKind optimizer_from_name(const std::string& name);  // "sgd" | "adam" | "adamw"
ScheduleKind schedule_from_name(const std::string& name);    // "constant" | "warmup_cosine"
std::string optimizer_name(OptimizerKind kind);              // inverse of optimizer_from_name

struct OptimizerSpec {
    OptimizerKind kind = OptimizerKind::adamw;
    double beta1 = 0.9;          // Adam first moment
    double beta2 = 0.999;        // Adam second moment
    double eps = 1e-8;
    double weight_decay = 0.0;   // adamw: decoupled (Loshchilov & Hutter); adam, sgd: L2 added to the gradient
    double momentum = 0.0;       // sgd: heavy-ball momentum, v = μ v + g ; θ -= lr v
};

struct ScheduleSpec {
    ScheduleKind kind = ScheduleKind::warmup_cosine;
    double base_lr = 1e-3;
    std::size_t warmup_steps = 0;   // linear ramp from base_lr / warmup_steps to base_lr
    std::size_t total_steps = 1;    // cosine decays to min_lr_ratio * base_lr at the last step
    double min_lr_ratio = 0.1;
};

// Learning rate at 0-based step `step`.
double learning_rate(const ScheduleSpec& schedule, std::size_t step);

template <class T>
class Optimizer {
public:
    Optimizer(const OptimizerSpec& spec, const model::ParameterLayout& layout);
    // params -= update(grads) for trainable tensors, at learning rate lr.
    void step(std::vector<T>& params, const std::vector<T>& grads, double lr);
    std::size_t steps_taken() const { return steps_; }
    // State for checkpoints: first/second moments (or momentum) and the step count. The second moment
    // is empty for sgd. Restoring all three continues the same sequence of updates bit for bit.
    std::vector<T>& first_moment() { return m_; }
    std::vector<T>& second_moment() { return v_; }
    const std::vector<T>& first_moment() const { return m_; }
    const std::vector<T>& second_moment() const { return v_; }
    void set_steps_taken(std::size_t steps) { steps_ = steps; }

private:
    OptimizerSpec spec_;
    const model::ParameterLayout& layout_;
    std::vector<T> m_, v_;
    std::size_t steps_ = 0;
};

// Global L2 norm of the trainable gradients; when max_norm > 0 and the norm exceeds it, the gradients
// are scaled by max_norm / norm. Returns the norm before clipping.
template <class T>
double clip_gradient_norm(std::vector<T>& grads, const model::ParameterLayout& layout, double max_norm);

}  // namespace iclab::train
