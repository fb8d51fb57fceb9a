#pragma once
// Bigram induction-head task, paper 000 §6.2 (after Bietti et al. 2023, "Birth of a transformer").
// Vocabulary: the 52 letters, 'a'..'z' -> 0..25, 'A'..'Z' -> 26..51. Each sequence is a Markov chain
// whose transitions out of non-trigger tokens are uniform over the vocabulary, while each trigger
// token commits, at its first occurrence, to a random successor that follows all its later
// occurrences in the same sequence. Those later occurrences are the "committed trigger tokens" on
// which paper 000 measures in-context accuracy (Table 2).
#include <cstdint>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "framework/core/rng.hpp"

namespace iclab::tasks {

constexpr int kInductionVocab = 52;

struct InductionHeadSpec {
    // Where a trigger's committed successor is drawn from.
    //   non_trigger: uniform over the non-trigger letters. A trigger committed to itself or to
    //                another trigger makes loops ("aaaa...") that degenerate the task.
    //   any:         uniform over the whole vocabulary, the literal wording of paper 000 §6.2.
    enum class Successors { non_trigger, any };

    int seq_len = 256;                         // T: model inputs per sequence (T + 1 tokens drawn)
    std::vector<int> triggers{0, 1, 2, 3, 4};  // token ids of the triggers, paper 000: {a, b, c, d, e}
    Successors successors = Successors::non_trigger;
};

// Throws iclab::InputError on seq_len < 1, a trigger outside [0, 52), a repeated trigger, or
// non_trigger successors with every letter a trigger (nothing left to commit to).
void validate_induction_spec(const InductionHeadSpec& spec);

// "non_trigger" / "any", for config files and results files; parse throws InputError otherwise.
InductionHeadSpec::Successors parse_successors(const std::string& name);
const char* successors_name(InductionHeadSpec::Successors successors);

int letter_to_token(char letter);             // InputError on a non-letter
char token_to_letter(int token);              // iclab::Error on a token outside [0, 52)
std::vector<int> encode_letters(const std::string& text);  // InputError names the character and position
std::string decode_tokens(const std::vector<int>& tokens);

// What can be known about target position t (predicting x[t+1] from x[0..t]).
enum class PositionKind : std::uint8_t {
    non_trigger = 0,    // x[t] is not a trigger: x[t+1] is uniform, chance 1/52
    first_trigger = 1,  // x[t] is a trigger seen for the first time: x[t+1] is a fresh draw
    icl = 2,            // x[t] is a trigger already seen at some s < t: x[t+1] is its committed
                        // successor, learnable in context (paper 000 §6.2 "committed trigger tokens")
};
const char* position_kind_name(PositionKind kind);  // "non_trigger", "first_trigger", "icl"

// B sequences of T + 1 tokens x[0..T], split into model inputs and next-token targets.
struct TokenBatch {
    xt::xtensor<std::int32_t, 2> inputs;   // (B, T) x[0..T-1]
    xt::xtensor<std::int32_t, 2> targets;  // (B, T) x[1..T]
    xt::xtensor<std::uint8_t, 2> kinds;    // (B, T) PositionKind of each target position
};

// Draws batch_size fresh sequences from the task into out (resized to (B, T); no reallocation
// when the shape is unchanged). All randomness comes from rng, so a seed fixes the batch.
void sample_induction_batch(TokenBatch& out, int batch_size, const InductionHeadSpec& spec, Rng& rng);

// Kinds for an arbitrary token sequence (user text at predict/evaluation time).
// Result has tokens.size() entries; entry t describes predicting tokens[t + 1].
// Throws InputError on a token outside [0, 52) or an invalid trigger list.
std::vector<PositionKind> classify_positions(const std::vector<int>& tokens, const std::vector<int>& triggers);

// ---- ICL prompts and inputs for ICLCA (paper 000 §6.2, Table 2) ------------------------------------
// A prompt X' of M tokens that shows every trigger with its committed successor, and an input X of N tokens
// that continues the same chain (same commitments), so that at X's first occurrence of a trigger the answer
// is known only from X'. [X'; X] is always a path the task's chain can produce.
enum class PromptDesign {
    // X' is a sample path of the task's own chain (x[0] uniform, successors from the task's pool),
    // conditioned on every trigger occurring at some position <= M-2, i.e. followed by its successor
    // inside X'. Drawn by rejection (whole paths are redrawn, commitments included), so the conditional
    // law is exact. Throws InputError when no path of 1e6 is accepted (M too short for the triggers).
    chain,
    // X' holds the K = |triggers| bigrams "trigger successor" once each, in a uniformly random order at
    // uniformly random non-overlapping places; its other M - 2K tokens are uniform over the non-trigger
    // letters (so no trigger occurs elsewhere). With M = 2K it is "a x b y c z d w e v" shuffled.
    // Successors are uniform over the non-trigger letters (whatever spec.successors says: a trigger
    // successor would have to be followed by its own successor, breaking the layout). Needs M >= 2K.
    pairs,
};
PromptDesign parse_prompt_design(const std::string& name);  // "chain" | "pairs"; InputError otherwise
const char* prompt_design_name(PromptDesign design);

struct PromptPair {
    std::vector<int> committed;          // (52): committed successor of each trigger token, -1 for the others
    std::vector<std::int32_t> prompt;    // (M) X'
    std::vector<std::int32_t> input;     // (N) X[0..N-1], the model inputs; X[0] follows X'[M-1] in the chain
    std::vector<std::int32_t> targets;   // (N) X[1..N], the next token after each input position
    // (N) classify_positions over X alone: first_trigger marks the positions whose answer only the prompt
    // determines (a trigger's first occurrence within X; Table 2 scores these), icl a trigger repeated
    // within X (X itself shows the answer), non_trigger the rest.
    std::vector<PositionKind> kinds;
};

// One (X', X) pair; all randomness from rng. InputError when M < 2K or M, N < 1.
PromptPair sample_prompt_pair(const InductionHeadSpec& spec, PromptDesign design, std::size_t prompt_length,
                              std::size_t input_length, Rng& rng);

}  // namespace iclab::tasks
