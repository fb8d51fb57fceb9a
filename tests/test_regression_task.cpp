// Tests for the regression-family ICL tasks (papers 003 App. E, 004 §5.1; Garg et al. 2022).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>

#include "framework/core/check.hpp"
#include "framework/core/rng.hpp"
#include "framework/tasks/regression.hpp"

namespace iclab_test_regression_task {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::tasks;

namespace {

RegressionSpec make_spec(RegressionKind kind, TokenFormat format, InputDistribution distribution = InputDistribution::uniform) {
    RegressionSpec spec;
    spec.kind = kind;
    spec.format = format;
    spec.x_distribution = distribution;
    spec.x_dim = 5;
    spec.y_dim = 3;  // != x_dim, so a transposed W would not fit
    spec.examples = 7;
    spec.queries = 3;
    spec.classes = 4;
    return spec;
}

template <class T>
RegressionBatch<T> sample(const RegressionSpec& spec, std::uint64_t seed, std::size_t batch) {
    Rng rng(seed);
    RegressionBatch<T> out;
    sample_regression_batch(out, batch, spec, rng);
    return out;
}

// Sample mean and variance, and the standard errors a correct sampler's estimates have, from the
// values and their 4th central moment (var of the sample variance ~ (m4 - var^2) / n).
struct Moments {
    double mean = 0, variance = 0, mean_error = 0, variance_error = 0;
    std::size_t count = 0;
};

Moments moments_of(const std::vector<double>& values) {
    Moments m;
    m.count = values.size();
    const double n = static_cast<double>(values.size());
    for (double v : values) m.mean += v;
    m.mean /= n;
    double m4 = 0;
    for (double v : values) {
        const double d = v - m.mean;
        m.variance += d * d;
        m4 += d * d * d * d;
    }
    m.variance /= n;
    m4 /= n;
    m.mean_error = std::sqrt(m.variance / n);
    m.variance_error = std::sqrt((m4 - m.variance * m.variance) / n);
    return m;
}

// Within 5 standard errors: a correct sampler fails a fixed-seed test with probability ~6e-7.
void check_moments(const Moments& m, double mean, double variance) {
    INFO("n " << m.count << " mean " << m.mean << " variance " << m.variance);
    CHECK(std::abs(m.mean - mean) < 5 * m.mean_error);
    CHECK(std::abs(m.variance - variance) < 5 * m.variance_error);
}

template <class T>
std::vector<double> all_values(const xt::xtensor<T, 3>& tensor) {
    return std::vector<double>(tensor.data(), tensor.data() + tensor.size());
}

// Token index of example i, written from the format definitions (not via the library helper).
std::size_t expected_token_of_example(const RegressionSpec& spec, std::size_t i) {
    if (spec.format == TokenFormat::stacked) return i;
    return i < spec.examples ? 2 * i : 2 * spec.examples + (i - spec.examples);
}

const std::vector<TokenFormat> kFormats{TokenFormat::stacked, TokenFormat::interleaved};
const std::vector<RegressionKind> kKinds{RegressionKind::linear, RegressionKind::sigmoid,
                                         RegressionKind::classification};

}  // namespace

TEST_CASE("regression: dimensions, T and P for both formats and several queries", "[regression_task]") {
    RegressionSpec spec;  // defaults: paper 004 §5.1, x_dim 11, y_dim 1, N 15, Q 1
    CHECK(regression_token_dim(spec) == 12);
    CHECK(regression_output_dim(spec) == 1);
    CHECK(regression_seq_len(spec) == 16);
    CHECK(regression_prefix_length(spec) == 15);
    spec.format = TokenFormat::interleaved;
    CHECK(regression_seq_len(spec) == 31);
    CHECK(regression_prefix_length(spec) == 30);
    spec.queries = 4;
    CHECK(regression_seq_len(spec) == 34);
    spec.format = TokenFormat::stacked;
    CHECK(regression_seq_len(spec) == 19);
    CHECK(regression_prefix_length(spec) == 15);
    spec.kind = RegressionKind::classification;
    spec.classes = 5;
    CHECK(regression_output_dim(spec) == 5);  // y_dim is ignored for classification
    CHECK(regression_token_dim(spec) == 16);

    for (TokenFormat format : kFormats) {
        for (RegressionKind kind : kKinds) {
            for (std::size_t queries : {std::size_t(1), std::size_t(6)}) {
                RegressionSpec s = make_spec(kind, format);
                s.queries = queries;
                const std::size_t B = 4, X = 5, N = 7;
                const std::size_t Y = kind == RegressionKind::classification ? 4 : 3;
                const std::size_t T = format == TokenFormat::stacked ? N + queries : 2 * N + queries;
                INFO(token_format_name(format) << " " << regression_kind_name(kind) << " Q " << queries);
                CHECK(regression_seq_len(s) == T);
                CHECK(regression_prefix_length(s) == (format == TokenFormat::stacked ? N : 2 * N));
                const auto batch = sample<double>(s, 1, B);
                CHECK(batch.inputs.shape() == std::array<std::size_t, 3>{B, T, X + Y});
                CHECK(batch.targets.shape() == std::array<std::size_t, 3>{B, T, Y});
                CHECK(batch.positions.shape() == std::array<std::size_t, 2>{B, T});
                CHECK(batch.task_weights.shape() == std::array<std::size_t, 3>{B, Y, X});
                CHECK(batch.x.shape() == std::array<std::size_t, 3>{B, N + queries, X});
                CHECK(batch.y.shape() == std::array<std::size_t, 3>{B, N + queries, Y});
            }
        }
    }
}

TEST_CASE("regression: token layout, targets and positions for both formats", "[regression_task]") {
    for (TokenFormat format : kFormats) {
        for (RegressionKind kind : kKinds) {
            const RegressionSpec spec = make_spec(kind, format);
            INFO(token_format_name(format) << " " << regression_kind_name(kind));
            const auto batch = sample<double>(spec, 2, 6);
            const std::size_t X = spec.x_dim, Y = regression_output_dim(spec), N = spec.examples;
            const std::size_t M = N + spec.queries, T = regression_seq_len(spec), P = regression_prefix_length(spec);
            for (std::size_t b = 0; b < 6; ++b) {
                // Expected tokens, targets and positions, built from the raw examples.
                xt::xtensor<double, 2> tokens = xt::zeros<double>({T, X + Y});
                xt::xtensor<double, 2> targets = xt::zeros<double>({T, Y});
                std::vector<RegressionPosition> positions(T, RegressionPosition::none);
                for (std::size_t i = 0; i < M; ++i) {
                    const std::size_t t = expected_token_of_example(spec, i);
                    REQUIRE(regression_prediction_position(spec, i) == t);
                    for (std::size_t j = 0; j < X; ++j) tokens(t, j) = batch.x(b, i, j);
                    for (std::size_t r = 0; r < Y; ++r) targets(t, r) = batch.y(b, i, r);
                    positions[t] = i < N ? RegressionPosition::context : RegressionPosition::query;
                    if (i < N) {
                        REQUIRE(t < P);
                        // stacked: [x_i; y_i]; interleaved: next token [0; y_i]
                        const std::size_t y_token = format == TokenFormat::stacked ? t : t + 1;
                        for (std::size_t r = 0; r < Y; ++r) tokens(y_token, X + r) = batch.y(b, i, r);
                    } else {
                        REQUIRE(t >= P);
                    }
                }
                for (std::size_t t = 0; t < T; ++t) {
                    REQUIRE(static_cast<RegressionPosition>(batch.positions(b, t)) == positions[t]);
                    for (std::size_t c = 0; c < X + Y; ++c) REQUIRE(batch.inputs(b, t, c) == tokens(t, c));
                    for (std::size_t r = 0; r < Y; ++r) REQUIRE(batch.targets(b, t, r) == targets(t, r));
                }
                // Direct statements of the layout, so the expectation above cannot be wrong in the same way.
                for (std::size_t t = P; t < T; ++t)  // query tokens: y-part zero
                    for (std::size_t r = 0; r < Y; ++r) REQUIRE(batch.inputs(b, t, X + r) == 0.0);
                if (format == TokenFormat::interleaved) {
                    for (std::size_t i = 0; i < N; ++i) {
                        for (std::size_t j = 0; j < X; ++j) REQUIRE(batch.inputs(b, 2 * i + 1, j) == 0.0);
                        for (std::size_t r = 0; r < Y; ++r) {
                            REQUIRE(batch.inputs(b, 2 * i, X + r) == 0.0);
                            REQUIRE(batch.inputs(b, 2 * i + 1, X + r) == batch.y(b, i, r));
                            REQUIRE(batch.targets(b, 2 * i + 1, r) == 0.0);
                        }
                    }
                }
                std::size_t counts[3] = {0, 0, 0};
                for (std::size_t t = 0; t < T; ++t) ++counts[batch.positions(b, t)];
                CHECK(counts[static_cast<int>(RegressionPosition::context)] == N);
                CHECK(counts[static_cast<int>(RegressionPosition::query)] == spec.queries);
                CHECK(counts[static_cast<int>(RegressionPosition::none)] == T - M);
            }
        }
    }
    CHECK_THROWS_AS(regression_prediction_position(make_spec(RegressionKind::linear, TokenFormat::stacked), 10), Error);
}

TEST_CASE("regression: linear y = W x exactly without noise", "[regression_task]") {
    for (TokenFormat format : kFormats) {
        for (InputDistribution distribution : {InputDistribution::uniform, InputDistribution::normal}) {
            const RegressionSpec spec = make_spec(RegressionKind::linear, format, distribution);
            const auto batch = sample<double>(spec, 3, 50);
            double largest = 0;
            for (std::size_t b = 0; b < 50; ++b)
                for (std::size_t i = 0; i < 10; ++i)
                    for (std::size_t r = 0; r < 3; ++r) {
                        double wx = 0;
                        for (std::size_t j = 0; j < 5; ++j) wx += batch.task_weights(b, r, j) * batch.x(b, i, j);
                        REQUIRE(batch.y(b, i, r) == Approx(wx).epsilon(0).margin(1e-12));
                        largest = std::max(largest, std::abs(wx));
                    }
            CHECK(largest > 1.0);  // the comparison had nonzero values to compare
        }
    }
}

TEST_CASE("regression: sigmoid y = sigmoid(W x), with and without the 0.5 shift", "[regression_task]") {
    RegressionSpec spec = make_spec(RegressionKind::sigmoid, TokenFormat::interleaved, InputDistribution::normal);
    const auto plain = sample<double>(spec, 4, 50);
    spec.sigmoid_shift = true;
    const auto shifted = sample<double>(spec, 4, 50);
    CHECK((plain.x == shifted.x));
    CHECK((plain.task_weights == shifted.task_weights));
    double low = 1, high = 0;
    for (std::size_t b = 0; b < 50; ++b)
        for (std::size_t i = 0; i < 10; ++i)
            for (std::size_t r = 0; r < 3; ++r) {
                double wx = 0;
                for (std::size_t j = 0; j < 5; ++j) wx += plain.task_weights(b, r, j) * plain.x(b, i, j);
                const double expected = 1.0 / (1.0 + std::exp(-wx));
                REQUIRE(plain.y(b, i, r) == Approx(expected).epsilon(0).margin(1e-14));
                REQUIRE(shifted.y(b, i, r) == Approx(expected - 0.5).epsilon(0).margin(1e-14));
                low = std::min(low, plain.y(b, i, r));
                high = std::max(high, plain.y(b, i, r));
            }
    // Both tails reached: the non-linearity was really exercised.
    CHECK(low < 0.05);
    CHECK(high > 0.95);
}

TEST_CASE("regression: classification labels are the one-hot argmax of w_c . x", "[regression_task]") {
    for (TokenFormat format : kFormats) {
        RegressionSpec spec = make_spec(RegressionKind::classification, format);
        spec.classes = 4;
        const std::size_t B = 2000, M = 10;
        const auto batch = sample<double>(spec, 5, B);
        REQUIRE(batch.y.shape()[2] == 4);
        std::vector<long> counts(4, 0);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t i = 0; i < M; ++i) {
                std::size_t best = 0;
                double best_score = -1e300;
                for (std::size_t c = 0; c < 4; ++c) {
                    double score = 0;
                    for (std::size_t j = 0; j < 5; ++j) score += batch.task_weights(b, c, j) * batch.x(b, i, j);
                    if (score > best_score) best_score = score, best = c;
                }
                for (std::size_t c = 0; c < 4; ++c) REQUIRE(batch.y(b, i, c) == (c == best ? 1.0 : 0.0));
                ++counts[best];
            }
        // By symmetry every class has probability 1/4: binomial standard error sqrt(n p (1-p)).
        const double n = static_cast<double>(B * M);
        for (long count : counts) CHECK(std::abs(count - n / 4) < 5 * std::sqrt(n * 0.25 * 0.75));
    }
}

TEST_CASE("regression: x ~ U(-1, 1): range and moments", "[regression_task]") {
    RegressionSpec spec = make_spec(RegressionKind::linear, TokenFormat::stacked, InputDistribution::uniform);
    spec.x_dim = 11;
    spec.examples = 15;
    spec.queries = 5;
    const auto batch = sample<double>(spec, 6, 2000);  // 440,000 values
    const std::vector<double> values = all_values(batch.x);
    std::size_t inner = 0;
    for (double v : values) {
        REQUIRE(v >= -1.0);
        REQUIRE(v < 1.0);
        if (std::abs(v) < 0.5) ++inner;
    }
    check_moments(moments_of(values), 0.0, 1.0 / 3.0);
    // P(|x| < 0.5) = 1/2 under U(-1, 1), 0.383 under N(0, 1/3): tells the shapes apart.
    const double n = static_cast<double>(values.size());
    CHECK(std::abs(inner / n - 0.5) < 5 * std::sqrt(0.25 / n));
}

TEST_CASE("regression: x ~ N(0, I): moments and tails", "[regression_task]") {
    RegressionSpec spec = make_spec(RegressionKind::linear, TokenFormat::interleaved, InputDistribution::normal);
    spec.x_dim = 11;
    spec.examples = 15;
    spec.queries = 5;
    const auto batch = sample<double>(spec, 7, 2000);
    const std::vector<double> values = all_values(batch.x);
    check_moments(moments_of(values), 0.0, 1.0);
    std::size_t beyond_one = 0;
    for (double v : values)
        if (std::abs(v) > 1.0) ++beyond_one;
    const double n = static_cast<double>(values.size());
    const double p = std::erfc(1.0 / std::sqrt(2.0));  // P(|z| > 1) = 0.3173
    CHECK(std::abs(beyond_one / n - p) < 5 * std::sqrt(p * (1 - p) / n));
}

TEST_CASE("regression: task weights W ~ N(0, 1) entries", "[regression_task]") {
    for (RegressionKind kind : {RegressionKind::linear, RegressionKind::classification}) {
        RegressionSpec spec = make_spec(kind, TokenFormat::stacked);
        spec.examples = 1;
        spec.queries = 1;
        const auto batch = sample<double>(spec, 8, 20000);  // 300,000 or 400,000 entries
        const std::vector<double> values = all_values(batch.task_weights);
        check_moments(moments_of(values), 0.0, 1.0);
        // Fresh per sequence: consecutive sequences do not share W.
        CHECK(batch.task_weights(0, 0, 0) != batch.task_weights(1, 0, 0));
    }
}

TEST_CASE("regression: observation noise has the requested std and leaves W and x unchanged", "[regression_task]") {
    for (RegressionKind kind : {RegressionKind::linear, RegressionKind::sigmoid}) {
        RegressionSpec spec = make_spec(kind, TokenFormat::interleaved);
        const auto clean = sample<double>(spec, 9, 4000);
        spec.noise_std = 0.3;
        const auto noisy = sample<double>(spec, 9, 4000);
        CHECK((clean.x == noisy.x));
        CHECK((clean.task_weights == noisy.task_weights));
        const std::vector<double> residuals = all_values(xt::xtensor<double, 3>(noisy.y - clean.y));
        check_moments(moments_of(residuals), 0.0, 0.09);
        // Targets at query positions carry the same noisy y.
        const std::size_t t = regression_prediction_position(spec, spec.examples);
        CHECK(noisy.targets(0, t, 0) == noisy.y(0, spec.examples, 0));
        CHECK(noisy.targets(0, t, 0) != clean.targets(0, t, 0));
    }
}

TEST_CASE("regression: same seed gives the same batch, another seed does not", "[regression_task]") {
    for (TokenFormat format : kFormats) {
        for (RegressionKind kind : kKinds) {
            RegressionSpec spec = make_spec(kind, format, InputDistribution::normal);
            if (kind != RegressionKind::classification) spec.noise_std = 0.1;
            const auto a = sample<double>(spec, 10, 8);
            const auto b = sample<double>(spec, 10, 8);
            const auto c = sample<double>(spec, 11, 8);
            CHECK((a.inputs == b.inputs));
            CHECK((a.targets == b.targets));
            CHECK((a.positions == b.positions));
            CHECK((a.task_weights == b.task_weights));
            CHECK((a.x != c.x));
            CHECK((a.task_weights != c.task_weights));
            CHECK((a.inputs != c.inputs));
            // Consecutive batches from one Rng are fresh draws.
            Rng rng(10);
            RegressionBatch<double> first, second;
            sample_regression_batch(first, 8, spec, rng);
            sample_regression_batch(second, 8, spec, rng);
            CHECK((first.inputs == a.inputs));
            CHECK((second.inputs != a.inputs));
        }
    }
}

TEST_CASE("regression: the documented draw order", "[regression_task]") {
    // regression.hpp: all W (normal), then all x (context first), then all noise, over the whole batch.
    for (InputDistribution distribution : {InputDistribution::uniform, InputDistribution::normal}) {
        RegressionSpec spec = make_spec(RegressionKind::linear, TokenFormat::stacked, distribution);
        spec.noise_std = 0.25;
        const std::size_t B = 3, M = 10, X = 5, Y = 3;
        const auto batch = sample<double>(spec, 12, B);
        Rng rng(12);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t r = 0; r < Y; ++r)
                for (std::size_t j = 0; j < X; ++j) REQUIRE(batch.task_weights(b, r, j) == rng.normal());
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t i = 0; i < M; ++i)
                for (std::size_t j = 0; j < X; ++j) {
                    const double v = distribution == InputDistribution::uniform ? rng.uniform(-1.0, 1.0) : rng.normal();
                    REQUIRE(batch.x(b, i, j) == v);
                }
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t i = 0; i < M; ++i)
                for (std::size_t r = 0; r < Y; ++r) {
                    double wx = 0;
                    for (std::size_t j = 0; j < X; ++j) wx += batch.task_weights(b, r, j) * batch.x(b, i, j);
                    REQUIRE(batch.y(b, i, r) == Approx(wx + 0.25 * rng.normal()).epsilon(0).margin(1e-12));
                }
    }
}

TEST_CASE("regression: float batch is the double batch rounded to float", "[regression_task]") {
    for (TokenFormat format : kFormats) {
        for (RegressionKind kind : kKinds) {
            RegressionSpec spec = make_spec(kind, format, InputDistribution::normal);
            if (kind != RegressionKind::classification) spec.noise_std = 0.2;
            spec.sigmoid_shift = kind == RegressionKind::sigmoid;
            const auto f = sample<float>(spec, 13, 16);
            const auto d = sample<double>(spec, 13, 16);
            CHECK((f.positions == d.positions));
            CHECK((f.inputs == xt::xtensor<float, 3>(xt::cast<float>(d.inputs))));
            CHECK((f.targets == xt::xtensor<float, 3>(xt::cast<float>(d.targets))));
            CHECK((f.task_weights == xt::xtensor<float, 3>(xt::cast<float>(d.task_weights))));
            CHECK((f.x == xt::xtensor<float, 3>(xt::cast<float>(d.x))));
            CHECK((f.y == xt::xtensor<float, 3>(xt::cast<float>(d.y))));
        }
    }
}

TEST_CASE("regression: a reused batch is resized and cleared", "[regression_task]") {
    // A large interleaved batch first, then a smaller stacked one into the same object: no stale values.
    Rng rng(14);
    RegressionBatch<double> reused;
    RegressionSpec big = make_spec(RegressionKind::linear, TokenFormat::interleaved);
    big.examples = 20;
    sample_regression_batch(reused, 9, big, rng);
    const RegressionSpec small = make_spec(RegressionKind::sigmoid, TokenFormat::stacked);
    Rng rng_reused(15), rng_fresh(15);
    sample_regression_batch(reused, 4, small, rng_reused);
    RegressionBatch<double> fresh;
    sample_regression_batch(fresh, 4, small, rng_fresh);
    CHECK((reused.inputs == fresh.inputs));
    CHECK((reused.targets == fresh.targets));
    CHECK((reused.positions == fresh.positions));
    CHECK((reused.y == fresh.y));
}

TEST_CASE("regression: invalid specs are rejected, naming the field", "[regression_task]") {
    const auto rejects = [](RegressionSpec spec, const std::string& field) {
        INFO("field " << field);
        bool threw = false;
        try {
            validate_regression_spec(spec);
        } catch (const InputError& error) {
            threw = true;
            CHECK_THAT(error.what(), Catch::Contains(field));
        }
        CHECK(threw);
        Rng rng(0);
        RegressionBatch<float> batch;
        CHECK_THROWS_AS(sample_regression_batch(batch, 2, spec, rng), InputError);
    };
    const RegressionSpec good = make_spec(RegressionKind::linear, TokenFormat::stacked);
    CHECK_NOTHROW(validate_regression_spec(good));
    RegressionSpec s = good;
    s.x_dim = 0;
    rejects(s, "x_dim");
    s = good;
    s.examples = 0;
    rejects(s, "examples");
    s = good;
    s.queries = 0;
    rejects(s, "queries");
    s = good;
    s.y_dim = 0;
    rejects(s, "y_dim");
    s = good;
    s.noise_std = -0.1;
    rejects(s, "noise_std");
    s.noise_std = std::nan("");
    rejects(s, "noise_std");
    s = good;
    s.sigmoid_shift = true;  // linear
    rejects(s, "sigmoid_shift");
    s = good;
    s.kind = RegressionKind::classification;
    s.classes = 1;
    rejects(s, "classes");
    s.classes = 2;
    s.noise_std = 0.1;
    rejects(s, "noise_std");
    s.noise_std = 0.0;
    s.y_dim = 0;  // ignored by classification
    CHECK_NOTHROW(validate_regression_spec(s));
    s = good;
    s.kind = RegressionKind::sigmoid;
    s.sigmoid_shift = true;
    s.classes = 0;  // ignored by sigmoid
    CHECK_NOTHROW(validate_regression_spec(s));

    Rng rng(0);
    RegressionBatch<double> batch;
    CHECK_THROWS_AS(sample_regression_batch(batch, 0, good, rng), InputError);
}

TEST_CASE("regression: names and parsing", "[regression_task]") {
    for (RegressionKind kind : kKinds) CHECK(parse_regression_kind(regression_kind_name(kind)) == kind);
    for (TokenFormat format : kFormats) CHECK(parse_token_format(token_format_name(format)) == format);
    for (InputDistribution d : {InputDistribution::uniform, InputDistribution::normal})
        CHECK(parse_input_distribution(input_distribution_name(d)) == d);
    CHECK(parse_regression_kind("classification") == RegressionKind::classification);
    CHECK(parse_token_format("interleaved") == TokenFormat::interleaved);
    CHECK(parse_input_distribution("normal") == InputDistribution::normal);
    CHECK(std::string(regression_position_name(RegressionPosition::none)) == "none");
    CHECK(std::string(regression_position_name(RegressionPosition::context)) == "context");
    CHECK(std::string(regression_position_name(RegressionPosition::query)) == "query");
    CHECK_THROWS_AS(parse_regression_kind("Linear"), InputError);
    CHECK_THROWS_AS(parse_regression_kind("logistic"), InputError);
    CHECK_THROWS_AS(parse_token_format("stack"), InputError);
    CHECK_THROWS_AS(parse_input_distribution("gaussian"), InputError);
    CHECK_THROWS_WITH(parse_input_distribution("gaussian"), Catch::Contains("gaussian"));
}

}  // namespace iclab_test_regression_task
