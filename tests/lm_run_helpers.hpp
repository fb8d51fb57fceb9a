#pragma once
// A tiny GPT-2-shaped lm run (learned positions, tied embeddings, softmax) trained by `iclab run` in a test's scratch
// folder, with a byte-level tokenizer: the run's BPE ids of a text are its bytes. Shared by the adapter tests
// (test_cache_adapter.cpp, test_hybrid_adapter.cpp, test_generate_dtype.cpp).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "framework/io/json.hpp"
#include "framework/text/byte_map.hpp"
#include "framework/text/utf8.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test {

// A byte-level tokenizer without merges: ids 0..255 are the bytes, 256 is <|endoftext|>.
inline void write_byte_tokenizer(const fs::path& dir) {
    fs::create_directories(dir);
    std::string json = "{";
    for (int b = 0; b < 256; ++b) {
        std::string token;
        iclab::text::utf8_append(token, iclab::text::byte_to_unicode()[b]);
        json += (b ? ", " : "") + iclab::io::json_quote(token) + ": " + std::to_string(b);
    }
    std::ofstream(dir / "encoder.json") << json << ", \"<|endoftext|>\": 256}";
    std::ofstream(dir / "vocab.bpe") << "#version: 0.2\n";
}

// Tokenizes two KJV lines and trains configs/quick/lm_kjv.yaml for 3 steps at width 16, 2 heads, a context of 96
// learned positions, then `overrides` (e.g. linear attention with RoPE); returns the run folder.
inline std::string train_tiny_lm_run(const fs::path& scratch, const std::string& overrides = "") {
    const fs::path tokenizer = scratch / "tok";
    write_byte_tokenizer(tokenizer);
    std::ofstream(scratch / "train.txt") << "In the beginning God created the heaven and the earth. And the earth was without form.\n";
    std::ofstream(scratch / "heldout.txt") << "And God said, Let there be light: and there was light.\n";
    const fs::path tokens = scratch / "tokens.h5";
    const auto tokenized = run_iclab("tokenize --tokenizer " + tokenizer.string() + " --out " + tokens.string() + " --train " +
                                         (scratch / "train.txt").string() + " --heldout " + (scratch / "heldout.txt").string(),
                                     scratch);
    INFO(tokenized.err);
    REQUIRE(tokenized.status == 0);
    const auto trained = run_iclab("run configs/quick/lm_kjv.yaml --quiet data.tokens=" + tokens.string() + " data.tokenizer=" + tokenizer.string() +
                                       " task.vocab_size=257 task.context_length=96 task.seq_len=16 model.width=16 model.heads=2 "
                                       "model.init_std=0.3 train.steps=3 train.warmup_steps=1 eval.every=3 eval.sequences=2 output.dir=" +
                                       (scratch / "runs").string() + " " + overrides,
                                   scratch);
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    return trained.out.substr(0, trained.out.find('\n'));
}

}  // namespace iclab_test
