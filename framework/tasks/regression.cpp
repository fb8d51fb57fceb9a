// Regression-family ICL tasks (papers 003 App. E, 004 §5.1; Garg et al. 2022). Layout and draw order:
// regression.hpp.
#include "framework/tasks/regression.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <vector>

#include "framework/core/check.hpp"

namespace iclab::tasks {

namespace {

// Logistic function without overflow for large |z|.
double sigmoid(double z) {
    if (z >= 0.0) return 1.0 / (1.0 + std::exp(-z));
    const double e = std::exp(z);
    return e / (1.0 + e);
}

}  // namespace

void validate_regression_spec(const RegressionSpec& spec) {
    ICLAB_INPUT_CHECK(spec.x_dim >= 1, "regression: x_dim must be >= 1, got " << spec.x_dim);
    ICLAB_INPUT_CHECK(spec.examples >= 1, "regression: examples must be >= 1, got " << spec.examples);
    ICLAB_INPUT_CHECK(spec.queries >= 1, "regression: queries must be >= 1, got " << spec.queries);
    if (spec.kind == RegressionKind::classification) {
        ICLAB_INPUT_CHECK(spec.classes >= 2, "regression: classes must be >= 2 for classification, got "
                                                 << spec.classes);
    } else {
        ICLAB_INPUT_CHECK(spec.y_dim >= 1, "regression: y_dim must be >= 1, got " << spec.y_dim);
    }
    ICLAB_INPUT_CHECK(std::isfinite(spec.noise_std) && spec.noise_std >= 0.0,
                      "regression: noise_std must be finite and >= 0, got " << spec.noise_std);
    ICLAB_INPUT_CHECK(spec.kind != RegressionKind::classification || spec.noise_std == 0.0,
                      "regression: noise_std must be 0 for classification (labels are one-hot), got "
                          << spec.noise_std);
    ICLAB_INPUT_CHECK(!spec.sigmoid_shift || spec.kind == RegressionKind::sigmoid,
                      "regression: sigmoid_shift applies only to kind 'sigmoid', not '"
                          << regression_kind_name(spec.kind) << "'");
}

std::size_t regression_output_dim(const RegressionSpec& spec) {
    return spec.kind == RegressionKind::classification ? spec.classes : spec.y_dim;
}

std::size_t regression_token_dim(const RegressionSpec& spec) { return spec.x_dim + regression_output_dim(spec); }

std::size_t regression_seq_len(const RegressionSpec& spec) {
    return regression_prefix_length(spec) + spec.queries;
}

std::size_t regression_prefix_length(const RegressionSpec& spec) {
    return spec.format == TokenFormat::stacked ? spec.examples : 2 * spec.examples;
}

std::size_t regression_prediction_position(const RegressionSpec& spec, std::size_t example) {
    const std::size_t N = spec.examples;
    ICLAB_CHECK(example < N + spec.queries,
                "regression: example " << example << " outside [0, " << N + spec.queries << ")");
    if (spec.format == TokenFormat::stacked) return example;
    return example < N ? 2 * example : 2 * N + (example - N);
}

// Three phases (task weights, inputs, noise), then the tokens; see regression.hpp for the draw order.
template <class T>
void sample_regression_batch(RegressionBatch<T>& out, std::size_t batch, const RegressionSpec& spec, Rng& rng) {
    validate_regression_spec(spec);
    ICLAB_INPUT_CHECK(batch >= 1, "regression: batch must be >= 1, got " << batch);
    const std::size_t B = batch;
    const std::size_t X = spec.x_dim;                      // x_dim
    const std::size_t Y = regression_output_dim(spec);     // y_dim (classes)
    const std::size_t M = spec.examples + spec.queries;    // N + Q examples per sequence
    const std::size_t N = spec.examples;
    const std::size_t T_len = regression_seq_len(spec);    // T
    const std::size_t D = regression_token_dim(spec);      // d_in = X + Y

    // 1. Task weights W_b (Y, X), entries N(0, 1): the linear map, or the class vectors w_c as rows.
    // With spec.fixed_weights (paper 004 A.3's single task) every sequence uses that one W and nothing is drawn.
    std::vector<double> weights(B * Y * X);  // (B, Y, X)
    if (spec.fixed_weights.empty()) {
        for (double& w : weights) w = rng.normal();
    } else {
        ICLAB_INPUT_CHECK(spec.fixed_weights.size() == Y * X,
                          "regression: the fixed task has " << spec.fixed_weights.size() << " weights, expected " << Y * X);
        for (std::size_t b = 0; b < B; ++b) std::copy(spec.fixed_weights.begin(), spec.fixed_weights.end(), weights.begin() + b * Y * X);
    }

    // 2. Inputs x_{b,i}, context examples first, then queries.
    std::vector<double> xs(B * M * X);  // (B, M, X)
    if (spec.x_distribution == InputDistribution::uniform) {
        for (double& v : xs) v = rng.uniform(-1.0, 1.0);
    } else {
        for (double& v : xs) v = rng.normal();
    }

    // Labels from the task: y = W x, sigmoid(W x) [- 0.5], or one-hot(argmax_c w_c·x).
    std::vector<double> ys(B * M * Y);  // (B, M, Y)
    std::vector<double> scores(Y);      // W x for one example
    for (std::size_t b = 0; b < B; ++b) {
        const double* w = weights.data() + b * Y * X;
        for (std::size_t i = 0; i < M; ++i) {
            const double* x = xs.data() + (b * M + i) * X;
            double* y = ys.data() + (b * M + i) * Y;
            for (std::size_t r = 0; r < Y; ++r) {
                double s = 0.0;
                for (std::size_t j = 0; j < X; ++j) s += w[r * X + j] * x[j];
                scores[r] = s;
            }
            switch (spec.kind) {
                case RegressionKind::linear:
                    for (std::size_t r = 0; r < Y; ++r) y[r] = scores[r];
                    break;
                case RegressionKind::sigmoid: {
                    const double shift = spec.sigmoid_shift ? 0.5 : 0.0;
                    for (std::size_t r = 0; r < Y; ++r) y[r] = sigmoid(scores[r]) - shift;
                    break;
                }
                case RegressionKind::classification: {
                    // max_element returns the first maximum: ties go to the lowest class.
                    const std::size_t label =
                        static_cast<std::size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
                    for (std::size_t r = 0; r < Y; ++r) y[r] = (r == label) ? 1.0 : 0.0;
                    break;
                }
            }
        }
    }

    // 3. Observation noise on every example's y (validate rejects it for classification).
    if (spec.noise_std > 0.0) {
        for (double& v : ys) v += spec.noise_std * rng.normal();
    }

    // Cast once to T; tokens, targets and positions.
    out.task_weights.resize(std::array<std::size_t, 3>{B, Y, X});
    out.x.resize(std::array<std::size_t, 3>{B, M, X});
    out.y.resize(std::array<std::size_t, 3>{B, M, Y});
    out.inputs.resize(std::array<std::size_t, 3>{B, T_len, D});
    out.targets.resize(std::array<std::size_t, 3>{B, T_len, Y});
    out.positions.resize(std::array<std::size_t, 2>{B, T_len});
    std::transform(weights.begin(), weights.end(), out.task_weights.data(), [](double v) { return static_cast<T>(v); });
    std::transform(xs.begin(), xs.end(), out.x.data(), [](double v) { return static_cast<T>(v); });
    std::transform(ys.begin(), ys.end(), out.y.data(), [](double v) { return static_cast<T>(v); });
    std::fill(out.inputs.data(), out.inputs.data() + out.inputs.size(), T(0));
    std::fill(out.targets.data(), out.targets.data() + out.targets.size(), T(0));
    std::fill(out.positions.data(), out.positions.data() + out.positions.size(),
              static_cast<std::uint8_t>(RegressionPosition::none));

    T* inputs = out.inputs.data();     // (B, T, D)
    T* targets = out.targets.data();   // (B, T, Y)
    std::uint8_t* positions = out.positions.data();  // (B, T)
    const T* x_cast = out.x.data();    // (B, M, X)
    const T* y_cast = out.y.data();    // (B, M, Y)
    const bool interleaved = spec.format == TokenFormat::interleaved;
    for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < M; ++i) {
            const T* x = x_cast + (b * M + i) * X;
            const T* y = y_cast + (b * M + i) * Y;
            const bool is_context = i < N;
            // The token holding x_i is where its prediction is read.
            const std::size_t t = regression_prediction_position(spec, i);
            T* token = inputs + (b * T_len + t) * D;
            std::copy(x, x + X, token);
            if (is_context) {
                // stacked: y_i in the same token; interleaved: y_i in the next token, x-part zero.
                T* y_token = interleaved ? inputs + (b * T_len + t + 1) * D : token;
                std::copy(y, y + Y, y_token + X);
            }
            std::copy(y, y + Y, targets + (b * T_len + t) * Y);
            positions[b * T_len + t] = static_cast<std::uint8_t>(is_context ? RegressionPosition::context
                                                                             : RegressionPosition::query);
        }
    }
}

template void sample_regression_batch<float>(RegressionBatch<float>&, std::size_t, const RegressionSpec&, Rng&);
template void sample_regression_batch<double>(RegressionBatch<double>&, std::size_t, const RegressionSpec&, Rng&);

template <class T>
void copy_regression_sequence(RegressionBatch<T>& out, std::size_t to, const RegressionBatch<T>& in, std::size_t from) {
    ICLAB_CHECK(to < out.inputs.shape()[0] && from < in.inputs.shape()[0], "regression: sequence index out of range");
    const auto copy_one = [&](auto& dst, const auto& src) {
        const std::size_t stride = src.size() / src.shape()[0];
        ICLAB_CHECK(dst.size() / dst.shape()[0] == stride, "regression: sequences of different shapes");
        std::copy(src.data() + from * stride, src.data() + (from + 1) * stride, dst.data() + to * stride);
    };
    copy_one(out.inputs, in.inputs);
    copy_one(out.targets, in.targets);
    copy_one(out.positions, in.positions);
    copy_one(out.task_weights, in.task_weights);
    copy_one(out.x, in.x);
    copy_one(out.y, in.y);
}

template <class T>
void sample_regression_pool_batch(RegressionBatch<T>& out, const std::vector<std::uint64_t>& indices,
                                  const RegressionSpec& spec, const Rng& pool) {
    ICLAB_INPUT_CHECK(!indices.empty(), "regression: a pool batch needs at least one index");
    RegressionBatch<T> one;
    for (std::size_t b = 0; b < indices.size(); ++b) {
        Rng rng = pool.derive(indices[b]);
        sample_regression_batch(one, 1, spec, rng);
        if (b == 0) {  // shape out like `one`, with indices.size() sequences
            const auto grow = [&](auto& dst, const auto& src) {
                auto shape = src.shape();  // std::array of the static rank
                shape[0] = indices.size();
                dst.resize(shape);
            };
            grow(out.inputs, one.inputs);
            grow(out.targets, one.targets);
            grow(out.positions, one.positions);
            grow(out.task_weights, one.task_weights);
            grow(out.x, one.x);
            grow(out.y, one.y);
        }
        copy_regression_sequence(out, b, one, 0);
    }
}

template <class T>
void permute_regression_examples(RegressionBatch<T>& batch, std::size_t b, const std::vector<std::size_t>& order,
                                 const RegressionSpec& spec) {
    const std::size_t N = spec.examples;
    ICLAB_INPUT_CHECK(b < batch.inputs.shape()[0], "regression: sequence " << b << " out of range");
    std::vector<bool> seen(N, false);
    ICLAB_INPUT_CHECK(order.size() == N, "regression: a permutation of the " << N << " examples has " << order.size() << " entries");
    for (std::size_t i : order) {
        ICLAB_INPUT_CHECK(i < N && !seen[i], "regression: the example order is not a permutation of [0, " << N << ")");
        seen[i] = true;
    }
    // Rows of one example: `per_example` consecutive rows from example i's first row (tokens: 1 stacked, 2 interleaved).
    const std::size_t tokens_per_example = regression_prefix_length(spec) / N;
    const auto permute_rows = [&](auto& array, std::size_t per_example) {
        const std::size_t rows = array.shape()[1], width = array.size() / (array.shape()[0] * rows);
        auto* base = array.data() + b * rows * width;
        const std::size_t block = per_example * width;
        const std::vector<std::remove_reference_t<decltype(*base)>> old(base, base + N * block);
        for (std::size_t i = 0; i < N; ++i) std::copy_n(old.data() + order[i] * block, block, base + i * block);
    };
    permute_rows(batch.inputs, tokens_per_example);
    permute_rows(batch.targets, tokens_per_example);
    permute_rows(batch.positions, tokens_per_example);
    permute_rows(batch.x, 1);
    permute_rows(batch.y, 1);
}

std::vector<std::uint64_t> draw_distinct_indices(std::size_t count, std::uint64_t pool_size, Rng& rng) {
    ICLAB_INPUT_CHECK(count <= pool_size, "regression: cannot draw " << count << " distinct sequences from a pool of " << pool_size);
    // Floyd: for j = n-k .. n-1, take t ~ U{0..j}; keep t unless already taken, else take j.
    std::vector<std::uint64_t> chosen;
    chosen.reserve(count);
    for (std::uint64_t j = pool_size - count; j < pool_size; ++j) {
        const std::uint64_t t = rng.uniform_int(j + 1);
        const bool taken = std::find(chosen.begin(), chosen.end(), t) != chosen.end();
        chosen.push_back(taken ? j : t);
    }
    return chosen;
}

template void copy_regression_sequence<float>(RegressionBatch<float>&, std::size_t, const RegressionBatch<float>&, std::size_t);
template void copy_regression_sequence<double>(RegressionBatch<double>&, std::size_t, const RegressionBatch<double>&, std::size_t);
template void permute_regression_examples<float>(RegressionBatch<float>&, std::size_t, const std::vector<std::size_t>&,
                                                 const RegressionSpec&);
template void permute_regression_examples<double>(RegressionBatch<double>&, std::size_t, const std::vector<std::size_t>&,
                                                  const RegressionSpec&);
template void sample_regression_pool_batch<float>(RegressionBatch<float>&, const std::vector<std::uint64_t>&,
                                                  const RegressionSpec&, const Rng&);
template void sample_regression_pool_batch<double>(RegressionBatch<double>&, const std::vector<std::uint64_t>&,
                                                   const RegressionSpec&, const Rng&);

const char* regression_position_name(RegressionPosition position) {
    switch (position) {
        case RegressionPosition::none: return "none";
        case RegressionPosition::context: return "context";
        case RegressionPosition::query: return "query";
    }
    return "unknown";
}

const char* regression_kind_name(RegressionKind kind) {
    switch (kind) {
        case RegressionKind::linear: return "linear";
        case RegressionKind::sigmoid: return "sigmoid";
        case RegressionKind::classification: return "classification";
    }
    return "unknown";
}

const char* token_format_name(TokenFormat format) {
    return format == TokenFormat::interleaved ? "interleaved" : "stacked";
}

const char* input_distribution_name(InputDistribution distribution) {
    return distribution == InputDistribution::normal ? "normal" : "uniform";
}

RegressionKind parse_regression_kind(const std::string& name) {
    if (name == "linear") return RegressionKind::linear;
    if (name == "sigmoid") return RegressionKind::sigmoid;
    if (name == "classification") return RegressionKind::classification;
    ICLAB_INPUT_CHECK(false, "regression: kind must be 'linear', 'sigmoid' or 'classification', got '" << name << "'");
    return RegressionKind::linear;  // not reached
}

TokenFormat parse_token_format(const std::string& name) {
    if (name == "stacked") return TokenFormat::stacked;
    if (name == "interleaved") return TokenFormat::interleaved;
    ICLAB_INPUT_CHECK(false, "regression: token format must be 'stacked' or 'interleaved', got '" << name << "'");
    return TokenFormat::stacked;  // not reached
}

InputDistribution parse_input_distribution(const std::string& name) {
    if (name == "uniform") return InputDistribution::uniform;
    if (name == "normal") return InputDistribution::normal;
    ICLAB_INPUT_CHECK(false, "regression: x distribution must be 'uniform' or 'normal', got '" << name << "'");
    return InputDistribution::uniform;  // not reached
}

}  // namespace iclab::tasks
