// Language-model runs on the command line (docs/gpt2.md): the lm experiment's refusals, predict's context limit on
// learned positions, and model.tie_embeddings where it does not apply. Import/export against PyTorch:
// tests/gpt2/test_gpt2_checkpoint.py.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli_helpers.hpp"

namespace iclab_test_lm_cli {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab_test;

TEST_CASE("predict on a learned-position run refuses a text longer than its positions, saying the limit", "[cli][predict][gpt2]") {
    Scratch scratch;
    const auto run = run_iclab("run configs/quick/induction_head.yaml train.steps=4 train.warmup_steps=1 eval.every=2 task.seq_len=16 "
                               "eval.sequences=4 train.batch_size=2 model.position_embedding=learned --quiet output.dir=" +
                                   (scratch.path / "results").string(),
                               scratch.path);
    REQUIRE(run.status == 0);
    const std::string run_dir = last_line(run.out);
    const auto fits = run_iclab("predict " + run_dir + " --text abcdefghijklmnop", scratch.path);  // 16 letters
    CHECK(fits.status == 0);
    const auto too_long = run_iclab("predict " + run_dir + " --text abcdefghijklmnopq", scratch.path);  // 17
    CHECK(too_long.status == 2);
    CHECK_THAT(too_long.err, Catch::Contains("17 tokens do not fit this model: it has learned positions for 16 (task.seq_len)"));
    CHECK_THAT(too_long.err, !Catch::Contains("another shape"));
    const auto tokens = run_iclab("predict " + run_dir + " --tokens 1,2,3", scratch.path);
    CHECK(tokens.status == 2);
    CHECK_THAT(tokens.err, Catch::Contains("--tokens is for language-model (lm) runs"));
}

TEST_CASE("the lm experiment refuses training without a token file, and configs without positions", "[cli][gpt2]") {
    Scratch scratch;
    const fs::path config = scratch.path / "lm.yaml";
    std::ofstream(config) << "experiment: lm\nmodel:\n  attention: softmax\n  position_embedding: learned\n  rope: false\n"
                             "  tie_embeddings: true\ntask:\n  vocab_size: 50257\n  context_length: 64\n";
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const auto dry_run = run_iclab("run " + config.string() + " --dry-run" + out, scratch.path);  // refused before any work too
    CHECK(dry_run.status == 2);
    CHECK_THAT(dry_run.err, Catch::Contains(config.string() + ": data.tokens is required"));
    const auto train = run_iclab("run " + config.string() + out, scratch.path);
    CHECK(train.status == 2);
    CHECK_THAT(train.err, Catch::Contains("data.tokens is required"));
    CHECK_FALSE(fs::exists(scratch.path / "results"));  // refused before the run folder
    const auto no_positions = run_iclab("run " + config.string() + " model.position_embedding=none --dry-run" + out, scratch.path);
    CHECK(no_positions.status == 2);
    CHECK_THAT(no_positions.err, Catch::Contains("a language model needs positions"));
    const auto regression = run_iclab("run configs/quick/regression.yaml model.tie_embeddings=true --dry-run" + out, scratch.path);
    CHECK(regression.status == 2);
    CHECK_THAT(regression.err, Catch::Contains("tied embeddings need a token model"));
}

TEST_CASE("import and export refuse bad command lines and folders before writing", "[cli][gpt2]") {
    Scratch scratch;
    const auto no_format = run_iclab("import bert " + scratch.path.string() + " --out " + (scratch.path / "r").string(), scratch.path);
    CHECK(no_format.status == 2);
    CHECK_THAT(no_format.err, Catch::Contains("gpt2 is the one format imported"));
    fs::create_directories(scratch.path / "hf");
    const auto no_config = run_iclab("import gpt2 " + (scratch.path / "hf").string() + " --out " + (scratch.path / "r").string(), scratch.path);
    CHECK(no_config.status == 2);
    CHECK_THAT(no_config.err, Catch::Contains("config.json: no such file"));
    CHECK(!fs::exists(scratch.path / "r"));
    const auto not_run = run_iclab("export " + scratch.path.string() + " --format safetensors --out " + (scratch.path / "e").string(),
                                   scratch.path);
    CHECK(not_run.status == 2);
    CHECK_THAT(not_run.err, Catch::Contains("is not a run folder"));
    const auto format = run_iclab("export " + scratch.path.string() + " --format onnx --out " + (scratch.path / "e").string(), scratch.path);
    CHECK(format.status == 2);
    CHECK_THAT(format.err, Catch::Contains("--format must be safetensors"));
}

}  // namespace iclab_test_lm_cli
