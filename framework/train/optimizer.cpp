#include "framework/train/optimizer.hpp"

#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/core/profile.hpp"

namespace iclab::train {

OptimizerKind optimizer_from_name(const std::string& name) {
    if (name == "sgd") return OptimizerKind::sgd;
    if (name == "adam") return OptimizerKind::adam;
    if (name == "adamw") return OptimizerKind::adamw;
    throw Error("unknown optimizer '" + name + "'");
}

std::string optimizer_name(OptimizerKind kind) {
    switch (kind) {
        case OptimizerKind::sgd: return "sgd";
        case OptimizerKind::adam: return "adam";
        case OptimizerKind::adamw: return "adamw";
    }
    throw Error("unknown optimizer kind");
}

ScheduleKind schedule_from_name(const std::string& name) {
    if (name == "constant") return ScheduleKind::constant;
    if (name == "warmup_cosine") return ScheduleKind::warmup_cosine;
    throw Error("unknown schedule '" + name + "'");
}

double learning_rate(const ScheduleSpec& schedule, std::size_t step) {
    if (schedule.kind == ScheduleKind::constant) return schedule.base_lr;
    if (step < schedule.warmup_steps)
        return schedule.base_lr * static_cast<double>(step + 1) / static_cast<double>(schedule.warmup_steps);
    const std::size_t decay_steps = schedule.total_steps > schedule.warmup_steps ? schedule.total_steps - schedule.warmup_steps : 1;
    double progress = static_cast<double>(step - schedule.warmup_steps) / static_cast<double>(std::max<std::size_t>(decay_steps - 1, 1));
    progress = std::min(progress, 1.0);
    const double min_lr = schedule.min_lr_ratio * schedule.base_lr;
    return min_lr + 0.5 * (schedule.base_lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

template <class T>
Optimizer<T>::Optimizer(const OptimizerSpec& spec, const model::ParameterLayout& layout) : spec_(spec), layout_(layout) {
    m_.assign(layout.total(), T(0));
    if (spec.kind != OptimizerKind::sgd) v_.assign(layout.total(), T(0));
}

template <class T>
void Optimizer<T>::step(std::vector<T>& params, const std::vector<T>& grads, double lr) {
    ICLAB_CHECK(params.size() == layout_.total() && grads.size() == layout_.total(), "optimizer: buffer size mismatch");
    const profile::Scope scope(profile::Kind::optimizer);
    ++steps_;
    const double bias1 = 1.0 - std::pow(spec_.beta1, static_cast<double>(steps_));
    const double bias2 = 1.0 - std::pow(spec_.beta2, static_cast<double>(steps_));
    // Elements [first, last) of one trainable tensor; every element is updated on its own.
    const auto update = [&](const model::ParameterInfo& entry, std::size_t first, std::size_t last) {
        T* p = params.data();
        const T* g = grads.data();
        T* m = m_.data();
        const double decay = entry.weight_decay ? spec_.weight_decay : 0.0;
        switch (spec_.kind) {
            case OptimizerKind::sgd:
                for (std::size_t i = first; i < last; ++i) {
                    const double grad = g[i] + decay * p[i];
                    m[i] = static_cast<T>(spec_.momentum * m[i] + grad);
                    p[i] -= static_cast<T>(lr * m[i]);
                }
                break;
            case OptimizerKind::adam:
            case OptimizerKind::adamw: {
                T* v = v_.data();
                const bool decoupled = spec_.kind == OptimizerKind::adamw;
                for (std::size_t i = first; i < last; ++i) {
                    const double grad = decoupled ? g[i] : g[i] + decay * p[i];
                    m[i] = static_cast<T>(spec_.beta1 * m[i] + (1.0 - spec_.beta1) * grad);
                    v[i] = static_cast<T>(spec_.beta2 * v[i] + (1.0 - spec_.beta2) * grad * grad);
                    const double m_hat = m[i] / bias1, v_hat = v[i] / bias2;
                    double update = m_hat / (std::sqrt(v_hat) + spec_.eps);
                    if (decoupled) update += decay * p[i];
                    p[i] -= static_cast<T>(lr * update);
                }
                break;
            }
        }
        if (entry.nonnegative)
            for (std::size_t i = first; i < last; ++i) p[i] = std::max(p[i], T(0));
    };
    // The flat buffer in fixed chunks of kChunk elements (a chunk may span tensors), shared by the threads in one
    // parallel region (one per step; it was one per tensor, and tensors under 2^16 elements ran on one thread: the
    // paper induction-head model's optimizer step took as long with 2 threads as with 1); a model of one chunk stays on
    // one thread. Which thread updates an element changes none of its bits.
    constexpr std::size_t kChunk = 8192;
    constexpr std::size_t kParallelMin = 2 * kChunk;
    const std::size_t total = layout_.total(), chunks = (total + kChunk - 1) / kChunk;
    const auto& entries = layout_.entries();
#pragma omp parallel for schedule(static) if (total >= kParallelMin)
    for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
        const std::size_t lo = chunk * kChunk, hi = std::min(total, lo + kChunk);
        for (const auto& entry : entries) {  // entries are in offset order
            if (entry.offset >= hi) break;
            if (!entry.trainable || entry.offset + entry.size <= lo) continue;
            update(entry, std::max(lo, entry.offset), std::min(hi, entry.offset + entry.size));
        }
    }
}

template <class T>
double clip_gradient_norm(std::vector<T>& grads, const model::ParameterLayout& layout, double max_norm) {
    const profile::Scope scope(profile::Kind::optimizer);
    double sum_squares = 0.0;
    for (const auto& entry : layout.entries()) {
        if (!entry.trainable) continue;
        const T* g = grads.data() + entry.offset;
        for (std::size_t i = 0; i < entry.size; ++i) sum_squares += static_cast<double>(g[i]) * g[i];
    }
    const double norm = std::sqrt(sum_squares);
    if (max_norm > 0.0 && norm > max_norm) {
        const T scale = static_cast<T>(max_norm / norm);
        for (const auto& entry : layout.entries()) {
            if (!entry.trainable) continue;
            T* g = grads.data() + entry.offset;
            for (std::size_t i = 0; i < entry.size; ++i) g[i] *= scale;
        }
    }
    return norm;
}

template class Optimizer<float>;
template class Optimizer<double>;
template double clip_gradient_norm<float>(std::vector<float>&, const model::ParameterLayout&, double);
template double clip_gradient_norm<double>(std::vector<double>&, const model::ParameterLayout&, double);

}  // namespace iclab::train
