// Bigram induction-head task, paper 000 §6.2 (after Bietti et al. 2023).
#include "framework/tasks/induction_head.hpp"

#include <array>
#include <cstddef>

#include "framework/core/check.hpp"

namespace iclab::tasks {

namespace {

using TriggerMask = std::array<bool, kInductionVocab>;

// Checks the trigger list and marks the triggers; a repeated trigger is rejected because it
// usually means a typo in the config, not an intended trigger set.
TriggerMask make_trigger_mask(const std::vector<int>& triggers) {
    TriggerMask is_trigger{};
    for (std::size_t i = 0; i < triggers.size(); ++i) {
        const int token = triggers[i];
        ICLAB_INPUT_CHECK(token >= 0 && token < kInductionVocab,
                          "induction head: trigger " << i << " is token " << token << ", outside [0, "
                                                     << kInductionVocab << ")");
        ICLAB_INPUT_CHECK(!is_trigger[token], "induction head: trigger '" << token_to_letter(token)
                                                                          << "' is listed twice");
        is_trigger[token] = true;
    }
    return is_trigger;
}

}  // namespace

void validate_induction_spec(const InductionHeadSpec& spec) {
    ICLAB_INPUT_CHECK(spec.seq_len >= 1, "induction head: seq_len must be >= 1, got " << spec.seq_len);
    ICLAB_INPUT_CHECK(!spec.triggers.empty(), "induction head: give at least one trigger (with none no position is an "
                                              "in-context one, and the ICL loss and accuracy have nothing to measure)");
    make_trigger_mask(spec.triggers);
    ICLAB_INPUT_CHECK(spec.successors != InductionHeadSpec::Successors::non_trigger ||
                          static_cast<int>(spec.triggers.size()) < kInductionVocab,
                      "induction head: successors 'non_trigger' needs at least one letter that is not a trigger");
}

InductionHeadSpec::Successors parse_successors(const std::string& name) {
    if (name == "non_trigger") return InductionHeadSpec::Successors::non_trigger;
    if (name == "any") return InductionHeadSpec::Successors::any;
    ICLAB_INPUT_CHECK(false, "induction head: successors must be 'non_trigger' or 'any', got '" << name << "'");
    return InductionHeadSpec::Successors::non_trigger;  // not reached
}

const char* successors_name(InductionHeadSpec::Successors successors) {
    return successors == InductionHeadSpec::Successors::any ? "any" : "non_trigger";
}

int letter_to_token(char letter) {
    if (letter >= 'a' && letter <= 'z') return letter - 'a';
    if (letter >= 'A' && letter <= 'Z') return 26 + (letter - 'A');
    // Show the character itself only when printable; the code always identifies it.
    const int code = static_cast<unsigned char>(letter);
    const std::string shown = (code >= 32 && code < 127) ? "'" + std::string(1, letter) + "' " : std::string();
    ICLAB_INPUT_CHECK(false, "induction head: character " << shown << "(code " << code
                                                          << ") is not a letter a-z or A-Z");
    return -1;  // not reached
}

char token_to_letter(int token) {
    ICLAB_CHECK(token >= 0 && token < kInductionVocab, "token " << token << " outside [0, " << kInductionVocab << ")");
    return token < 26 ? static_cast<char>('a' + token) : static_cast<char>('A' + (token - 26));
}

std::vector<int> encode_letters(const std::string& text) {
    std::vector<int> tokens(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        try {
            tokens[i] = letter_to_token(text[i]);
        } catch (const InputError& error) {
            throw InputError(std::string(error.what()) + " at position " + std::to_string(i) + " of the text");
        }
    }
    return tokens;
}

std::string decode_tokens(const std::vector<int>& tokens) {
    std::string text(tokens.size(), '?');
    for (std::size_t i = 0; i < tokens.size(); ++i) text[i] = token_to_letter(tokens[i]);
    return text;
}

const char* position_kind_name(PositionKind kind) {
    switch (kind) {
        case PositionKind::non_trigger: return "non_trigger";
        case PositionKind::first_trigger: return "first_trigger";
        case PositionKind::icl: return "icl";
    }
    return "unknown";
}

// The Markov chain of paper 000 §6.2, one sequence at a time, over raw row-major storage.
void sample_induction_batch(TokenBatch& out, int batch_size, const InductionHeadSpec& spec, Rng& rng) {
    validate_induction_spec(spec);
    ICLAB_INPUT_CHECK(batch_size >= 1, "induction head: batch_size must be >= 1, got " << batch_size);
    const std::size_t B = static_cast<std::size_t>(batch_size);
    const std::size_t T = static_cast<std::size_t>(spec.seq_len);
    const std::array<std::size_t, 2> shape{B, T};
    out.inputs.resize(shape);   // (B, T)
    out.targets.resize(shape);  // (B, T)
    out.kinds.resize(shape);    // (B, T)

    const TriggerMask is_trigger = make_trigger_mask(spec.triggers);
    // Letters a committed successor may be: all of them, or only the non-triggers.
    std::array<std::int32_t, kInductionVocab> successor_pool{};
    std::uint64_t pool_size = 0;
    for (int token = 0; token < kInductionVocab; ++token) {
        if (spec.successors == InductionHeadSpec::Successors::any || !is_trigger[token]) {
            successor_pool[pool_size++] = token;
        }
    }

    std::int32_t* inputs = out.inputs.data();
    std::int32_t* targets = out.targets.data();
    std::uint8_t* kinds = out.kinds.data();
    std::array<std::int32_t, kInductionVocab> committed{};  // committed[trigger], -1 before its first occurrence
    for (std::size_t b = 0; b < B; ++b) {
        committed.fill(-1);
        auto current = static_cast<std::int32_t>(rng.uniform_int(kInductionVocab));  // x[0] uniform
        for (std::size_t t = 0; t < T; ++t) {
            std::int32_t next;
            PositionKind kind;
            if (!is_trigger[current]) {
                next = static_cast<std::int32_t>(rng.uniform_int(kInductionVocab));
                kind = PositionKind::non_trigger;
            } else if (committed[current] < 0) {
                // First occurrence: the fresh draw becomes this trigger's commitment.
                next = successor_pool[rng.uniform_int(pool_size)];
                committed[current] = next;
                kind = PositionKind::first_trigger;
            } else {
                next = committed[current];
                kind = PositionKind::icl;
            }
            inputs[b * T + t] = current;
            targets[b * T + t] = next;
            kinds[b * T + t] = static_cast<std::uint8_t>(kind);
            current = next;
        }
    }
}

std::vector<PositionKind> classify_positions(const std::vector<int>& tokens, const std::vector<int>& triggers) {
    const TriggerMask is_trigger = make_trigger_mask(triggers);
    TriggerMask seen{};
    std::vector<PositionKind> kinds(tokens.size());
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const int token = tokens[t];
        ICLAB_INPUT_CHECK(token >= 0 && token < kInductionVocab,
                          "induction head: token " << token << " at position " << t << " outside [0, "
                                                   << kInductionVocab << ")");
        if (!is_trigger[token]) {
            kinds[t] = PositionKind::non_trigger;
        } else {
            kinds[t] = seen[token] ? PositionKind::icl : PositionKind::first_trigger;
            seen[token] = true;
        }
    }
    return kinds;
}

PromptDesign parse_prompt_design(const std::string& name) {
    if (name == "chain") return PromptDesign::chain;
    if (name == "pairs") return PromptDesign::pairs;
    ICLAB_INPUT_CHECK(false, "induction head: prompt design must be 'chain' or 'pairs', got '" << name << "'");
    return PromptDesign::chain;  // not reached
}

const char* prompt_design_name(PromptDesign design) { return design == PromptDesign::pairs ? "pairs" : "chain"; }

namespace {

// The chain's transition out of `current` under the commitments: deterministic after a trigger, uniform after
// any other letter (paper 000 §6.2).
std::int32_t chain_step(std::int32_t current, const std::vector<int>& committed, Rng& rng) {
    if (committed[current] >= 0) return committed[current];
    return static_cast<std::int32_t>(rng.uniform_int(kInductionVocab));
}

}  // namespace

// Prompts and inputs for ICLCA's Table 2: see PromptDesign.
PromptPair sample_prompt_pair(const InductionHeadSpec& spec, PromptDesign design, std::size_t prompt_length,
                              std::size_t input_length, Rng& rng) {
    validate_induction_spec(spec);
    const TriggerMask is_trigger = make_trigger_mask(spec.triggers);
    const std::size_t K = spec.triggers.size(), M = prompt_length, N = input_length;
    ICLAB_INPUT_CHECK(M >= 2 * K, "induction head: a prompt that shows " << K << " triggers with their successors needs at least "
                                                                         << 2 * K << " tokens, got " << M);
    ICLAB_INPUT_CHECK(N >= 1, "induction head: the input needs at least one token");
    std::vector<std::int32_t> non_triggers, pool;
    for (int token = 0; token < kInductionVocab; ++token) {
        if (!is_trigger[token]) non_triggers.push_back(token);
        if (!is_trigger[token] || spec.successors == InductionHeadSpec::Successors::any) pool.push_back(token);
    }
    PromptPair pair;
    pair.committed.assign(kInductionVocab, -1);
    pair.prompt.assign(M, 0);
    if (design == PromptDesign::chain) {
        constexpr std::size_t kMaxAttempts = 1000000;
        bool accepted = false;
        for (std::size_t attempt = 0; attempt < kMaxAttempts && !accepted; ++attempt) {
            for (int trigger : spec.triggers) pair.committed[trigger] = pool[rng.uniform_int(pool.size())];
            pair.prompt[0] = static_cast<std::int32_t>(rng.uniform_int(kInductionVocab));
            for (std::size_t t = 1; t < M; ++t) pair.prompt[t] = chain_step(pair.prompt[t - 1], pair.committed, rng);
            // accepted when every trigger occurs at a position whose successor is inside X' (t <= M-2)
            TriggerMask shown{};
            std::size_t distinct = 0;
            for (std::size_t t = 0; t + 1 < M; ++t)
                if (is_trigger[pair.prompt[t]] && !shown[pair.prompt[t]]) {
                    shown[pair.prompt[t]] = true;
                    ++distinct;
                }
            accepted = distinct == K;
        }
        ICLAB_INPUT_CHECK(accepted, "induction head: no chain prompt of " << M << " tokens out of " << kMaxAttempts
                                                                           << " showed all " << K
                                                                           << " triggers; use a longer prompt or the pairs design");
    } else {
        // K bigram blocks and M - 2K filler tokens: M - K items, K of them (a uniform subset) are blocks.
        std::vector<std::size_t> items(M - K);
        for (std::size_t i = 0; i < items.size(); ++i) items[i] = i;
        shuffle_with(items, rng);
        std::vector<bool> is_block(M - K, false);
        for (std::size_t i = 0; i < K; ++i) is_block[items[i]] = true;
        std::vector<int> order = spec.triggers;
        shuffle_with(order, rng);
        for (int trigger : spec.triggers) pair.committed[trigger] = non_triggers[rng.uniform_int(non_triggers.size())];
        std::size_t t = 0, block = 0;
        for (std::size_t item = 0; item < M - K; ++item) {
            if (is_block[item]) {
                pair.prompt[t++] = order[block];
                pair.prompt[t++] = pair.committed[order[block]];
                ++block;
            } else {
                pair.prompt[t++] = non_triggers[rng.uniform_int(non_triggers.size())];
            }
        }
    }
    // X continues the chain from X'[M-1]: N inputs and their N next tokens.
    std::vector<std::int32_t> x(N + 1);
    x[0] = chain_step(pair.prompt[M - 1], pair.committed, rng);
    for (std::size_t t = 1; t <= N; ++t) x[t] = chain_step(x[t - 1], pair.committed, rng);
    pair.input.assign(x.begin(), x.begin() + N);
    pair.targets.assign(x.begin() + 1, x.end());
    pair.kinds = classify_positions(std::vector<int>(pair.input.begin(), pair.input.end()), spec.triggers);
    return pair;
}

}  // namespace iclab::tasks
