#pragma once
// Regression-family in-context-learning tasks: linear regression, non-linear (sigmoid) regression and
// multiclass classification, as sequences of real-valued tokens. Pure data: no model, no config.
//
// Task, per sequence (a fresh task for every sequence):
//   linear          y = W x + e,                W (y_dim, x_dim), entries N(0, 1)
//                   (paper 004 §5.1: W_ij ~ N(0,1), x ~ U(-1,1), x_dim 11, y_dim 1; paper 003 E.1;
//                   Garg et al. 2022 and Akyürek et al. 2022 draw x ~ N(0, I)).
//   sigmoid         y = sigmoid(W x) + e,       or sigmoid(W x) - 0.5 + e with sigmoid_shift
//                   (paper 003 E.2 / Tables 3-7 "N-LR"; the shift centres y on 0 like the linear task).
//   classification  `classes` vectors w_c ~ N(0, I_{x_dim}) (the rows of W, shape (classes, x_dim));
//                   y = one-hot(argmax_c w_c·x), so y_dim = classes (paper 003 E.2 / Tables 3-7 "MC").
//                   Ties (probability zero) go to the lowest class index.
//   The stored text of paper 003 E.2 does not spell out the N-LR and MC tasks (it says only that the code
//   is Akyürek et al.'s, whose public sampler has linear regression only); the two definitions above are
//   the project's, made explicit so a reader who would choose otherwise can see what to change.
//   e ~ N(0, noise_std^2) i.i.d. per y entry, observation noise added after the non-linearity; it is
//   added to every example, queries included (a query is an example whose y is hidden from the model),
//   so targets at query positions are noisy too; the noiseless value is W x_q from task_weights.
//   Classification takes no noise (noise_std must be 0): a noisy one-hot vector is not a class label.
//
// Examples: N in-context examples then Q queries, all i.i.d. x ~ U[-1, 1)^{x_dim} (papers 003/004) or
// N(0, I) (Garg et al.), from the same task.
//
// Token formats (d_in = x_dim + y_dim):
//   stacked      (paper 003 Eq. 4, used in App. C Prop. 6 as z_j = (x_j; y_j); paper 004 §5.1): one token
//                per example, h_i = [x_i; y_i] for i < N, query tokens [x_q; 0]. T = N + Q, prefix P = N.
//   interleaved  (Garg et al., Akyürek et al.): token [x_i; 0_y] then token [0_x; y_i] for each example,
//                then the query tokens [x_q; 0_y]. T = 2N + Q, prefix P = 2N.
//   Positions [0, P) hold the in-context examples and [P, T) the queries, so a prefixLM mask (paper 003)
//   makes [0, P) fully visible. Queries are independent of each other in the papers (paper 003 E.1,
//   Fig. 5: a query attends to the examples, not to other queries); the data cannot enforce that: with
//   Q > 1 the model's mask must.
//
// Positions and targets. A prediction for example i is read at the token that holds x_i
// (regression_prediction_position): stacked i, interleaved 2i (context) or 2N + q (query q).
//   context: the prediction position of an in-context example; target y_i.
//   query:   the prediction position of a query; target y_q.
//   none:    the y-tokens of the interleaved format; target 0.
//   Caution for the stacked format: context token i already holds y_i, so a loss there only teaches
//   copying (paper 003 E.2 instead pulls the outputs at context tokens towards 0 with an optional L2
//   regularizer). Experiments on the stacked format normally take the loss at query positions only.
//
// Draw order (fixed; the same Rng state gives the same batch). Three phases over the whole batch:
//   1. task weights: for b in [0, B), W_b row-major (row r, column j), rng.normal() each (none drawn when
//                    spec.fixed_weights holds the one task of every sequence, paper 004 A.3's single task);
//   2. inputs:       for b, for example i in [0, N+Q) (context first), for j in [0, x_dim):
//                    rng.uniform(-1, 1) or rng.normal();
//   3. noise:        only when noise_std > 0: for b, for i, for r in [0, y_dim): noise_std * rng.normal().
//   So a seed gives the same W for any N, Q, distribution of x or noise level, and the same W and x for any
//   noise level. rng.normal() is Box-Muller with a kept spare value: the draws above are consecutive
//   normal() calls of one Rng, continuing any spare the caller's Rng already holds.
// Everything is computed in double and cast to T once, so a float batch is the double batch of the same
// seed rounded to float, element for element.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "framework/core/rng.hpp"

namespace iclab::tasks {

enum class RegressionKind { linear, sigmoid, classification };
enum class TokenFormat { stacked, interleaved };
enum class InputDistribution { uniform, normal };  // U[-1, 1)^{x_dim} (rng.uniform(-1, 1)) or N(0, I_{x_dim})

// What target position t is (stored as uint8 in RegressionBatch::positions).
enum class RegressionPosition : std::uint8_t {
    none = 0,     // no prediction is read here (interleaved y-tokens); target 0
    context = 1,  // prediction for an in-context example; target y_i
    query = 2,    // prediction for a query; target y_q
};

struct RegressionSpec {
    RegressionKind kind = RegressionKind::linear;
    TokenFormat format = TokenFormat::stacked;
    InputDistribution x_distribution = InputDistribution::uniform;
    std::size_t x_dim = 11;     // d, paper 004 §5.1
    std::size_t y_dim = 1;      // linear / sigmoid only; classification uses `classes`
    std::size_t examples = 15;  // N in-context examples (T = N + 1 = 16 in paper 004 §5.1)
    std::size_t queries = 1;    // Q >= 1 queries after the examples (paper 003 E.1 uses 200)
    std::size_t classes = 3;    // classification only, >= 2
    double noise_std = 0.0;     // linear / sigmoid only
    bool sigmoid_shift = false; // sigmoid only: subtract 0.5
    std::vector<double> fixed_weights;  // empty: a fresh W per sequence; else the one W (Y, x_dim) of every sequence
};

// Throws iclab::InputError naming the field: x_dim, examples or queries 0; y_dim 0 (linear, sigmoid);
// classes < 2 (classification); noise_std negative or not finite, or nonzero for classification;
// sigmoid_shift set for a kind other than sigmoid.
// Fields a kind does not use (y_dim for classification, classes for linear/sigmoid) are ignored.
void validate_regression_spec(const RegressionSpec& spec);

std::size_t regression_output_dim(const RegressionSpec& spec);     // y_dim, or classes for classification
std::size_t regression_token_dim(const RegressionSpec& spec);      // d_in = x_dim + output dim
std::size_t regression_seq_len(const RegressionSpec& spec);        // T: N + Q stacked, 2N + Q interleaved
std::size_t regression_prefix_length(const RegressionSpec& spec);  // P: N stacked, 2N interleaved
// Token index whose output is the prediction for example i (i < N: context, N <= i < N + Q: query).
// Throws iclab::Error when i >= N + Q.
std::size_t regression_prediction_position(const RegressionSpec& spec, std::size_t example);

template <class T>
struct RegressionBatch {
    xt::xtensor<T, 3> inputs;                // (B, T, d_in) tokens, layout above
    xt::xtensor<T, 3> targets;               // (B, T, y_dim) y at context and query positions, 0 elsewhere
    xt::xtensor<std::uint8_t, 2> positions;  // (B, T) RegressionPosition
    xt::xtensor<T, 3> task_weights;          // (B, y_dim, x_dim) W, or (B, classes, x_dim) rows w_c
    xt::xtensor<T, 3> x;                     // (B, N + Q, x_dim) raw examples, context first then queries
    xt::xtensor<T, 3> y;                     // (B, N + Q, y_dim) their labels (noise included)
};

// Draws `batch` fresh sequences into out (resized; no reallocation when the shapes are unchanged).
// Throws iclab::InputError on an invalid spec or batch 0.
template <class T>
void sample_regression_batch(RegressionBatch<T>& out, std::size_t batch, const RegressionSpec& spec, Rng& rng);

// Copies sequence `from` of `in` into slot `to` of `out` (same spec; out already holds at least to + 1 sequences).
template <class T>
void copy_regression_sequence(RegressionBatch<T>& out, std::size_t to, const RegressionBatch<T>& in, std::size_t from);

// Reorders the in-context examples of sequence b: example slot i receives the example that was in slot order[i]
// (order: a permutation of [0, N)). Moves every array of the example (its tokens, stacked 1 or interleaved 2;
// targets; positions; x; y); the queries stay in place. Paper 003 E.5 / Table 7 ("randomly permuting the in-context
// examples during training"). Throws iclab::InputError when order is not a permutation of [0, N) or b is out of range.
template <class T>
void permute_regression_examples(RegressionBatch<T>& batch, std::size_t b, const std::vector<std::size_t>& order,
                                 const RegressionSpec& spec);

// A fixed training pool (paper 003 §5.2 / B0, spec Q21): sequence i of the pool is the one sequence that
// sample_regression_batch(·, 1, spec, pool.derive(i)) draws, so any subset is made on demand, the same on every
// call, and the pool never lives in memory. Fills out with the sequences `indices`, in that order.
template <class T>
void sample_regression_pool_batch(RegressionBatch<T>& out, const std::vector<std::uint64_t>& indices,
                                  const RegressionSpec& spec, const Rng& pool);
// `count` distinct indices of [0, pool_size), uniform over subsets (Floyd's algorithm: `count` calls of
// rng.uniform_int), as [C]'s np.random.choice(replace=False) per step. Throws iclab::InputError when count > pool_size.
std::vector<std::uint64_t> draw_distinct_indices(std::size_t count, std::uint64_t pool_size, Rng& rng);

// Names for config files and results files; parse throws iclab::InputError on an unknown name.
const char* regression_position_name(RegressionPosition position);  // "none", "context", "query"
const char* regression_kind_name(RegressionKind kind);              // "linear", "sigmoid", "classification"
const char* token_format_name(TokenFormat format);                  // "stacked", "interleaved"
const char* input_distribution_name(InputDistribution distribution);  // "uniform", "normal"
RegressionKind parse_regression_kind(const std::string& name);
TokenFormat parse_token_format(const std::string& name);
InputDistribution parse_input_distribution(const std::string& name);

}  // namespace iclab::tasks
