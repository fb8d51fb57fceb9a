#pragma once
// `iclab generate RUN_DIR (--prompt-text TEXT | --prompt-tokens IDS) [--adapter A.h5 ...] [--max-new-tokens N]
//  [--temperature T] [--top-k K] [--seed S] [--dtype float64|float32] [--out FILE.h5]`: continues a prompt with a
// language-model (lm) run by incremental decoding (model::TransformerDecoder: the prompt is prefilled once, then one
// token per step), greedy by default, sampled from a seeded Rng with --temperature > 0. Runs in fp64 by default
// (float32 parameters convert exactly); --dtype float32 reads the parameters as float and decodes in float, as
// training runs (ICLCA adapters only: their fp64 biases rounded to float).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace iclab::cli {

struct GenerateOptions {
    std::filesystem::path run_dir;
    bool has_text = false;
    std::string prompt_text;               // BPE through RUN_DIR/tokenizer (when has_text)
    std::vector<int> prompt_tokens;        // otherwise
    std::vector<std::filesystem::path> adapters;
    std::size_t max_new_tokens = 50;
    double temperature = 0.0;              // 0: greedy (argmax, lowest id on ties)
    std::size_t top_k = 0;                 // sampling: only the k most likely tokens (0: all)
    std::uint64_t seed = 0;
    bool stop_at_end_of_text = true;       // stop after generating <|endoftext|> (when the run has a tokenizer)
    std::string dtype = "float64";         // float64 | float32: the type of parameters and activations
    std::filesystem::path out;             // empty: none; else /prompt, /generated, /logits (N, V) stored as float64
    bool overwrite = false;
    bool quiet = false;                    // print only the generated text
};

void generate(const GenerateOptions& options);
int command_generate(const std::vector<std::string>& args);

}  // namespace iclab::cli
