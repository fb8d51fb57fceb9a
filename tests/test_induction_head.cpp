// Tests for the bigram induction-head task, paper 000 §6.2.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/rng.hpp"
#include "framework/tasks/induction_head.hpp"

namespace iclab_test_induction_head {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::tasks;

namespace {

constexpr int kSequences = 2000;
constexpr int kLength = 128;

// 0.999 quantile of chi-square with `dof` degrees of freedom (Wilson-Hilferty; within 0.1% of the
// exact 87.97 at 51 dof), so a correct sampler fails a fixed-seed test with probability ~1e-3.
double chi_square_quantile_999(int dof) {
    const double z = 3.0902;  // standard normal 0.999 quantile
    const double k = dof;
    const double a = 2.0 / (9.0 * k);
    return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// Pearson statistic of counts against equal cell probabilities.
double chi_square_uniform(const std::vector<long>& counts) {
    long total = 0;
    for (long c : counts) total += c;
    const double expected = static_cast<double>(total) / static_cast<double>(counts.size());
    double statistic = 0.0;
    for (long c : counts) statistic += (c - expected) * (c - expected) / expected;
    return statistic;
}

InductionHeadSpec make_spec(InductionHeadSpec::Successors successors, std::vector<int> triggers = {0, 1, 2, 3, 4}) {
    InductionHeadSpec spec;
    spec.seq_len = kLength;
    spec.triggers = std::move(triggers);
    spec.successors = successors;
    return spec;
}

TokenBatch sample(const InductionHeadSpec& spec, std::uint64_t seed, int batch_size = kSequences) {
    Rng rng(seed);
    TokenBatch batch;
    sample_induction_batch(batch, batch_size, spec, rng);
    return batch;
}

// The full sequence x[0..T] of row b.
std::vector<int> sequence_of(const TokenBatch& batch, std::size_t b) {
    const std::size_t T = batch.inputs.shape()[1];
    std::vector<int> x(T + 1);
    for (std::size_t t = 0; t < T; ++t) x[t] = batch.inputs(b, t);
    x[T] = batch.targets(b, T - 1);
    return x;
}

bool contains(const std::vector<int>& list, int token) {
    for (int item : list)
        if (item == token) return true;
    return false;
}

// Walks every sequence, checks (a) each later trigger occurrence repeats the first one's successor,
// and collects the successors drawn at first occurrences.
struct Commitments {
    std::vector<int> first_successors;  // successor drawn at each first occurrence
    long later_occurrences = 0;
};

Commitments collect_commitments(const TokenBatch& batch, const std::vector<int>& triggers) {
    Commitments result;
    for (std::size_t b = 0; b < batch.inputs.shape()[0]; ++b) {
        const std::vector<int> x = sequence_of(batch, b);
        std::map<int, int> first_successor;  // trigger -> token after its first occurrence
        for (std::size_t t = 0; t + 1 < x.size(); ++t) {
            if (!contains(triggers, x[t])) continue;
            auto found = first_successor.find(x[t]);
            if (found == first_successor.end()) {
                first_successor[x[t]] = x[t + 1];
                result.first_successors.push_back(x[t + 1]);
            } else {
                ++result.later_occurrences;
                REQUIRE(x[t + 1] == found->second);  // (a) the commitment holds
            }
        }
    }
    return result;
}

// Brute force, written differently from the library: scan backwards for an earlier occurrence.
PositionKind brute_force_kind(const std::vector<int>& x, std::size_t t, const std::vector<int>& triggers) {
    if (!contains(triggers, x[t])) return PositionKind::non_trigger;
    for (std::size_t s = t; s-- > 0;)
        if (x[s] == x[t]) return PositionKind::icl;
    return PositionKind::first_trigger;
}

}  // namespace

TEST_CASE("induction head: later occurrences of a trigger repeat its committed successor", "[induction_head]") {
    for (auto successors : {InductionHeadSpec::Successors::non_trigger, InductionHeadSpec::Successors::any}) {
        const InductionHeadSpec spec = make_spec(successors);
        const Commitments commitments = collect_commitments(sample(spec, 11), spec.triggers);
        // The check only has force if many later occurrences were seen.
        CHECK(commitments.later_occurrences > 10000);
        CHECK(commitments.first_successors.size() > 5000);
    }
}

TEST_CASE("induction head: kinds mark exactly the repeated-trigger positions", "[induction_head]") {
    // Default triggers, and a custom letter list given as text.
    const std::vector<std::vector<int>> trigger_sets{{0, 1, 2, 3, 4}, encode_letters("xQz")};
    for (const auto& triggers : trigger_sets) {
        const InductionHeadSpec spec = make_spec(InductionHeadSpec::Successors::non_trigger, triggers);
        const TokenBatch batch = sample(spec, 12);
        long counts[3] = {0, 0, 0};
        for (std::size_t b = 0; b < kSequences; ++b) {
            const std::vector<int> x = sequence_of(batch, b);
            const std::vector<int> inputs(x.begin(), x.end() - 1);
            const std::vector<PositionKind> classified = classify_positions(inputs, triggers);
            REQUIRE(classified.size() == inputs.size());
            for (std::size_t t = 0; t < inputs.size(); ++t) {
                const PositionKind expected = brute_force_kind(x, t, triggers);
                REQUIRE(static_cast<PositionKind>(batch.kinds(b, t)) == expected);
                REQUIRE(classified[t] == expected);
                ++counts[static_cast<int>(expected)];
            }
        }
        // Every kind occurs, so a sampler that mislabels any of them would have been caught.
        CHECK(counts[0] > 0);
        CHECK(counts[1] > 0);
        CHECK(counts[2] > 0);
    }
}

TEST_CASE("induction head: classify_positions on a hand-made sequence", "[induction_head]") {
    // x a y b a z a b : a and b repeat; x, y, z are not triggers.
    const auto kinds = classify_positions(encode_letters("xaybazab"), encode_letters("abcde"));
    const std::vector<PositionKind> expected{
        PositionKind::non_trigger, PositionKind::first_trigger, PositionKind::non_trigger,
        PositionKind::first_trigger, PositionKind::icl, PositionKind::non_trigger,
        PositionKind::icl, PositionKind::icl};
    CHECK(kinds == expected);
    CHECK(std::string(position_kind_name(PositionKind::icl)) == "icl");
    CHECK_THROWS_AS(classify_positions({0, 52}, {0}), InputError);
    CHECK_THROWS_AS(classify_positions({0, 1}, {0, 0}), InputError);
}

TEST_CASE("induction head: first tokens are uniform over the 52 letters", "[induction_head]") {
    // The shared 2000-sequence sample, and 52000 short sequences: with 1000 expected per letter a
    // letter that is never drawn (or drawn 30% too often) pushes the statistic far past the bound.
    InductionHeadSpec short_spec = make_spec(InductionHeadSpec::Successors::non_trigger);
    short_spec.seq_len = 2;
    for (const auto& [spec, batch_size] : {std::pair{make_spec(InductionHeadSpec::Successors::non_trigger), kSequences},
                                           std::pair{short_spec, 52000}}) {
        const TokenBatch batch = sample(spec, 13, batch_size);
        std::vector<long> counts(kInductionVocab, 0);
        for (std::size_t b = 0; b < static_cast<std::size_t>(batch_size); ++b) ++counts[batch.inputs(b, 0)];
        CHECK(chi_square_uniform(counts) < 87.97);  // chi2(51) 0.999 quantile
    }
}

TEST_CASE("induction head: where committed successors come from", "[induction_head]") {
    const std::vector<int> triggers{0, 1, 2, 3, 4};
    SECTION("non_trigger: never a trigger, uniform over the 47 non-triggers") {
        const auto commitments =
            collect_commitments(sample(make_spec(InductionHeadSpec::Successors::non_trigger), 14), triggers);
        std::vector<long> counts;  // over non-trigger tokens only
        std::vector<long> all_counts(kInductionVocab, 0);
        for (int token : commitments.first_successors) ++all_counts[token];
        for (int token = 0; token < kInductionVocab; ++token) {
            if (contains(triggers, token)) {
                CHECK(all_counts[token] == 0);
            } else {
                counts.push_back(all_counts[token]);
            }
        }
        CHECK(chi_square_uniform(counts) < chi_square_quantile_999(kInductionVocab - 5 - 1));
    }
    SECTION("any: sometimes a trigger, uniform over all 52 letters") {
        const auto commitments = collect_commitments(sample(make_spec(InductionHeadSpec::Successors::any), 15), triggers);
        std::vector<long> counts(kInductionVocab, 0);
        long to_trigger = 0;
        for (int token : commitments.first_successors) {
            ++counts[token];
            if (contains(triggers, token)) ++to_trigger;
        }
        CHECK(to_trigger > 0);
        CHECK(chi_square_uniform(counts) < 87.97);
    }
}

TEST_CASE("induction head: non-trigger transitions are uniform over the vocabulary", "[induction_head]") {
    const InductionHeadSpec spec = make_spec(InductionHeadSpec::Successors::non_trigger);
    const TokenBatch batch = sample(spec, 16);
    // Per source token (a transition table), so a next token that depends on the current one fails
    // even when the pooled counts look uniform.
    std::vector<std::vector<long>> table(kInductionVocab, std::vector<long>(kInductionVocab, 0));
    std::vector<long> pooled(kInductionVocab, 0);
    for (std::size_t b = 0; b < kSequences; ++b) {
        for (std::size_t t = 0; t < kLength; ++t) {
            const int current = batch.inputs(b, t);
            if (contains(spec.triggers, current)) continue;
            ++table[current][batch.targets(b, t)];
            ++pooled[batch.targets(b, t)];
        }
    }
    double statistic = 0.0;
    int dof = 0;
    for (int current = 0; current < kInductionVocab; ++current) {
        if (contains(spec.triggers, current)) continue;
        statistic += chi_square_uniform(table[current]);
        dof += kInductionVocab - 1;
    }
    CHECK(dof == 47 * 51);
    CHECK(statistic < chi_square_quantile_999(dof));
    CHECK(chi_square_uniform(pooled) < 87.97);
}

TEST_CASE("induction head: a seed fixes the batch", "[induction_head]") {
    const InductionHeadSpec spec = make_spec(InductionHeadSpec::Successors::non_trigger);
    const TokenBatch first = sample(spec, 17, 64);
    const TokenBatch again = sample(spec, 17, 64);
    const TokenBatch other = sample(spec, 18, 64);
    // Double parentheses: Catch's expression decomposition does not compose with xtensor's operators.
    CHECK((first.inputs == again.inputs));
    CHECK((first.targets == again.targets));
    CHECK((first.kinds == again.kinds));
    CHECK((first.inputs != other.inputs));
    // The generator advances: the next batch from the same stream differs.
    Rng rng(17);
    TokenBatch batch;
    sample_induction_batch(batch, 64, spec, rng);
    CHECK((batch.inputs == first.inputs));
    sample_induction_batch(batch, 64, spec, rng);
    CHECK((batch.inputs != first.inputs));
}

TEST_CASE("induction head: inputs and targets are the shifted sequence", "[induction_head]") {
    const TokenBatch batch = sample(make_spec(InductionHeadSpec::Successors::any), 19, 200);
    REQUIRE(batch.inputs.shape()[0] == 200);
    REQUIRE(batch.inputs.shape()[1] == kLength);
    REQUIRE(batch.targets.shape() == batch.inputs.shape());
    REQUIRE(batch.kinds.shape() == batch.inputs.shape());
    for (std::size_t b = 0; b < 200; ++b) {
        for (std::size_t t = 0; t + 1 < kLength; ++t) REQUIRE(batch.targets(b, t) == batch.inputs(b, t + 1));
        for (std::size_t t = 0; t < kLength; ++t) {
            REQUIRE(batch.targets(b, t) >= 0);
            REQUIRE(batch.targets(b, t) < kInductionVocab);
        }
    }
}

TEST_CASE("induction head: letters encode and decode", "[induction_head]") {
    const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const std::vector<int> tokens = encode_letters(alphabet);
    for (int i = 0; i < kInductionVocab; ++i) CHECK(tokens[i] == i);
    CHECK(decode_tokens(tokens) == alphabet);
    CHECK(letter_to_token('a') == 0);
    CHECK(letter_to_token('z') == 25);
    CHECK(letter_to_token('A') == 26);
    CHECK(letter_to_token('Z') == 51);
    CHECK(token_to_letter(30) == 'E');
    CHECK_THROWS_WITH(encode_letters("ab1c"), Catch::Contains("'1'") && Catch::Contains("position 2"));
    CHECK_THROWS_AS(encode_letters("ab c"), InputError);
    CHECK_THROWS_WITH(encode_letters(std::string("a\x01")), Catch::Contains("code 1") && Catch::Contains("position 1"));
    CHECK_THROWS_AS(letter_to_token('['), InputError);
    CHECK_THROWS_AS(token_to_letter(52), Error);
    CHECK_THROWS_AS(token_to_letter(-1), Error);
}

TEST_CASE("induction head: bad specs are input errors", "[induction_head]") {
    InductionHeadSpec spec;
    CHECK_NOTHROW(validate_induction_spec(spec));
    spec.seq_len = 0;
    CHECK_THROWS_AS(validate_induction_spec(spec), InputError);
    spec = InductionHeadSpec{};
    spec.triggers = {0, 52};
    CHECK_THROWS_AS(validate_induction_spec(spec), InputError);
    spec.triggers = {3, 3};
    CHECK_THROWS_WITH(validate_induction_spec(spec), Catch::Contains("'d'"));
    spec.triggers = encode_letters("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
    CHECK_THROWS_AS(validate_induction_spec(spec), InputError);
    spec.successors = InductionHeadSpec::Successors::any;
    CHECK_NOTHROW(validate_induction_spec(spec));
    Rng rng(1);
    TokenBatch batch;
    CHECK_THROWS_AS(sample_induction_batch(batch, 0, InductionHeadSpec{}, rng), InputError);
    CHECK(parse_successors("any") == InductionHeadSpec::Successors::any);
    CHECK(parse_successors("non_trigger") == InductionHeadSpec::Successors::non_trigger);
    CHECK(std::string(successors_name(InductionHeadSpec::Successors::any)) == "any");
    CHECK_THROWS_WITH(parse_successors("nontrigger"), Catch::Contains("'nontrigger'"));
}

}  // namespace iclab_test_induction_head
