// gd004_fig5: one seed's shared draws and the training of paper 004 §5.1's single Performer layer with one §4
// modification (specs/gd_duals.md §4 and §9): plain SGD, batch 1 sequence, loss (ŷ − y_{N+1})² (A.3, no ½), a fixed
// training set in stored order (option: reshuffled each epoch), E epochs; the epoch loss is the mean over its steps.
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "experiments/gd004_fig5/fig5.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/rng.hpp"
#include "framework/nn/kernel_features.hpp"
#include "framework/tasks/regression.hpp"
#include "framework/train/perturb.hpp"

namespace iclab::experiments::fig5 {

namespace {
constexpr std::size_t kWidth = 12, kInputs = 11;  // C = d_x + d_y (paper 004 §5.1)
enum Stream : std::uint64_t { kTask = 1, kInit = 2, kFeatures = 3, kTrain = 4, kTest = 5, kOrder = 6 };

// Query tokens and targets of `count` sequences of the task (x ~ U(−1, 1)^11, A10; h_{N+1} = [x_{N+1}; 0], A11).
void sample(std::vector<double>& h, std::vector<double>& y, std::size_t count, const tasks::RegressionSpec& spec, Rng rng) {
    tasks::RegressionBatch<double> batch;
    tasks::sample_regression_batch(batch, count, spec, rng);
    h.assign(batch.inputs.begin(), batch.inputs.end());
    y.resize(count);
    for (std::size_t b = 0; b < count; ++b) y[b] = batch.targets(b, spec.examples, 0);
}
}  // namespace

SeedData make_seed_data(std::int64_t seed, const DataSettings& s) {
    const std::size_t C = kWidth, N = s.examples, TT = N + 1;
    const Rng root(static_cast<std::uint64_t>(seed));
    SeedData d;
    d.seed = seed;
    d.per_sequence = s.per_sequence;
    Rng task_rng = root.derive(kTask);  // one W ~ N(0, 1)^{1×11} (spec §4), drawn in either mode so streams stay put
    d.task_w.resize(kInputs);
    for (auto& w : d.task_w) w = task_rng.normal();
    tasks::RegressionSpec spec;
    spec.x_dim = kInputs;
    spec.y_dim = 1;
    spec.examples = N;
    spec.queries = 1;
    if (!s.per_sequence) spec.fixed_weights = d.task_w;
    const nn::Attention004Shape shape{TT, C, s.features};
    const double bound = s.init_bound > 0.0 ? s.init_bound : 1.0 / std::sqrt(static_cast<double>(C));
    Rng init_rng = root.derive(kInit);  // W_Q, W_K, W_V and every G ~ U(±1/√12) (spec §4, §9: our choice)
    d.init.resize(nn::attention_004_layout(shape).size);
    for (auto& w : d.init) w = init_rng.uniform(-bound, bound);
    Rng feature_rng = root.derive(kFeatures);  // ω: the transformer's own draw (nn::draw_feature_directions)
    d.random = nn::draw_feature_directions(C, s.features, false, feature_rng);
    sample(d.train_h, d.train_y, s.train_sequences, spec, root.derive(kTrain));
    sample(d.test_h, d.test_y, s.test_sequences, spec, root.derive(kTest));
    d.test_zeroed_h = d.test_h;
    for (std::size_t b = 0; b < s.test_sequences; ++b)
        for (std::size_t j = 0; j < N; ++j) d.test_zeroed_h[(b * TT + j) * C + kInputs] = 0.0;
    return d;
}

namespace {

template <class T>
RunCurves train_typed(const SeedData& d, const RunSpec& spec, const TrainSettings& s, std::size_t features) {
    const auto started = std::chrono::steady_clock::now();
    const std::size_t C = kWidth, B = d.train_y.size(), TT = d.train_h.size() / (B * C);
    const nn::Attention004Shape shape{TT, C, features};
    std::vector<T> params(d.init.begin(), d.init.end()), grads(params.size()), random(d.random.begin(), d.random.end());
    Rng directions = Rng(static_cast<std::uint64_t>(d.seed)).derive(iclab::train::kPerturbStream);  // in T's own ulps; draws nothing at 0
    iclab::train::perturb_values_by_ulps(params.data(), params.size(), s.perturb_init_ulps, directions);
    const std::vector<T> train_h(d.train_h.begin(), d.train_h.end()), test_h(d.test_h.begin(), d.test_h.end());
    const std::vector<T> zeroed_h(d.test_zeroed_h.begin(), d.test_zeroed_h.end());
    nn::Attention004Cache<T> cache;
    std::vector<T> out(C), d_out(C, T(0));
    auto evaluate = [&](const std::vector<T>& h, const std::vector<double>& y) {
        double sum = 0.0;
        for (std::size_t b = 0; b < y.size(); ++b) {
            nn::attention_004_forward(out.data(), cache, h.data() + b * TT * C, params.data(), random.data(), shape, spec.variant);
            const double e = static_cast<double>(out[C - 1]) - y[b];
            sum += e * e;
        }
        return sum / static_cast<double>(y.size());
    };
    std::vector<std::size_t> order(B);
    std::iota(order.begin(), order.end(), std::size_t(0));
    Rng order_rng = Rng(static_cast<std::uint64_t>(d.seed)).derive(kOrder);  // the same orders for every variant
    RunCurves curves;
    for (const double y : d.train_y) curves.zero_loss += y * y;
    curves.zero_loss /= static_cast<double>(B);
    const T lr = static_cast<T>(spec.lr);
    for (std::size_t epoch = 0; epoch < s.epochs; ++epoch) {
        if (s.shuffle)
            for (std::size_t i = B; i-- > 1;) std::swap(order[i], order[order_rng.uniform_int(i + 1)]);
        double sum = 0.0;
        for (const std::size_t b : order) {
            const T* h = train_h.data() + b * TT * C;
            nn::attention_004_forward(out.data(), cache, h, params.data(), random.data(), shape, spec.variant);
            const double e = static_cast<double>(out[C - 1]) - d.train_y[b];  // loss (ŷ − y)², dL/dŷ = 2(ŷ − y)
            sum += e * e;
            d_out[C - 1] = static_cast<T>(2.0 * e);
            std::fill(grads.begin(), grads.end(), T(0));
            nn::attention_004_backward(grads.data(), d_out.data(), h, params.data(), random.data(), cache, shape, spec.variant);
            for (std::size_t i = 0; i < params.size(); ++i) params[i] -= lr * grads[i];  // plain SGD
        }
        curves.steps += B;
        if (!std::isfinite(sum)) {  // diverged: the remaining epochs count as +inf (a poorer, slower run)
            curves.train_loss.resize(s.epochs, std::numeric_limits<double>::infinity());
            curves.test_mse.resize(s.epochs, std::numeric_limits<double>::infinity());
            curves.test_mse_ctx_zeroed = std::numeric_limits<double>::infinity();
            curves.seconds = seconds_since(started);
            return curves;
        }
        curves.train_loss.push_back(sum / static_cast<double>(B));
        curves.test_mse.push_back(evaluate(test_h, d.test_y));
    }
    curves.test_mse_ctx_zeroed = evaluate(zeroed_h, d.test_y);
    curves.seconds = seconds_since(started);
    return curves;
}

}  // namespace

RunCurves train_run(const SeedData& data, const RunSpec& spec, const TrainSettings& settings, std::size_t features) {
    return settings.fp64 ? train_typed<double>(data, spec, settings, features) : train_typed<float>(data, spec, settings, features);
}

}  // namespace iclab::experiments::fig5
