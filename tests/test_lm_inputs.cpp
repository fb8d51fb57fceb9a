// Inputs of the language-model (lm) commands that were read wrong, stored wrong, accepted or refused wrong (issue 41):
// text files through the run's tokenizer, NaN / infinite logits refused (naming where the forward overflowed), text with
// NUL stored byte for byte, an empty merges file, negative counts, an lm config's data files checked before any work,
// and a tokenizer without <|endoftext|>. Every refusal exits 2; tiny byte-level lm runs (lm_run_helpers.hpp).
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "experiments/registry.hpp"
#include "framework/io/results_file.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/lm_run.hpp"
#include "framework/text/bpe.hpp"
#include "tests/lm_run_helpers.hpp"

namespace iclab_test_lm_inputs {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

void write_file(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Rewrites RUN/results.h5 with the config attribute and `model`'s parameters multiplied by `factor` (the run still
// loads: load_lm_run and load_induction_run read those two).
template <class T>
void write_scaled(const std::string& run, iclab::model::Transformer<T>& model, T factor) {
    const fs::path results = fs::path(run) / "results.h5";
    const std::string config = iclab::io::ResultsReader(results).read_attr_string("/", "config");
    for (auto& p : model.params) p *= factor;
    iclab::io::ResultsWriter writer(results, true);
    writer.set_attr("config", config);
    iclab::run::write_checkpoint(writer, model);
    writer.commit();
}

// An lm run whose float32 forward overflows while its float64 forward does not (factor 1e13: q k^T ~ 1e52).
void scale_lm_parameters(const std::string& run, float factor) {
    iclab::run::LmRun<float> loaded = iclab::run::load_lm_run<float>(run, iclab::experiments::catalog(), "test");
    write_scaled(run, *loaded.model, factor);
}

}  // namespace

TEST_CASE("predict --text-file and convert --prompt-file read an lm run's file as text, whitespace kept", "[cli][lm_inputs]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    write_file(scratch.path / "text.txt", "the light");
    const auto from_file = run_iclab("predict " + run + " --text-file " + (scratch.path / "text.txt").string() + " --top 1", scratch.path);
    INFO(from_file.err);
    REQUIRE(from_file.status == 0);
    // byte-level tokenizer: one row per byte, the space (id 32) at position 3
    CHECK_THAT(from_file.out, Catch::Contains("    3       32"));
    const auto from_text = run_iclab("predict " + run + " --text 'the light' --top 1", scratch.path);
    REQUIRE(from_text.status == 0);
    CHECK(from_file.out == from_text.out);
    // convert: the adapter's prompt holds the 9 bytes, space included
    const fs::path adapter = scratch.path / "a.h5";
    const auto converted = run_iclab("convert " + run + " --method exact --prompt-file " + (scratch.path / "text.txt").string() +
                                         " --out " + adapter.string(), scratch.path);
    INFO(converted.err);
    REQUIRE(converted.status == 0);
    const iclab::io::ResultsReader reader(adapter);
    CHECK(reader.read_attr_string("/", "prompt_text") == "the light");
    CHECK(reader.read_int32("/prompt_tokens").values.size() == 9);
}

TEST_CASE("predict and convert on an induction run still read a file's letters, whitespace dropped", "[cli][lm_inputs]") {
    Scratch scratch;
    const auto trained = run_iclab("run configs/quick/induction_head.yaml train.steps=2 train.warmup_steps=1 eval.every=2 eval.sequences=2 "
                                   "train.batch_size=2 --quiet output.dir=" + (scratch.path / "results").string(), scratch.path);
    REQUIRE(trained.status == 0);
    const std::string run = last_line(trained.out);
    write_file(scratch.path / "letters.txt", "ab c\nd\n");
    const auto from_file = run_iclab("predict " + run + " --text-file " + (scratch.path / "letters.txt").string(), scratch.path);
    const auto from_text = run_iclab("predict " + run + " --text abcd", scratch.path);
    INFO(from_file.err);
    REQUIRE(from_file.status == 0);
    CHECK(from_file.out == from_text.out);
    const auto converted = run_iclab("convert " + run + " --prompt-file " + (scratch.path / "letters.txt").string() + " --out " +
                                         (scratch.path / "a.h5").string(), scratch.path);
    INFO(converted.err);
    REQUIRE(converted.status == 0);
    CHECK(iclab::io::ResultsReader(scratch.path / "a.h5").read_attr_string("/", "prompt_text") == "abcd");
}

TEST_CASE("an lm run whose float32 forward overflows is refused by predict and generate, naming the layer, and runs in float64",
          "[cli][lm_inputs]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    scale_lm_parameters(run, 1e13f);
    const fs::path out = scratch.path / "p.h5";
    const auto predicted = run_iclab("predict " + run + " --text 'In the' --dtype float32 --out " + out.string(), scratch.path);
    CHECK(predicted.status == 2);
    CHECK_THAT(predicted.err, Catch::Contains("the float32 forward of 6 input tokens is not finite: it first became NaN or infinite in layer"));
    CHECK_THAT(predicted.err, Catch::Contains("--dtype float64"));
    CHECK_THAT(predicted.out, !Catch::Contains("nan"));
    CHECK_FALSE(fs::exists(out));
    const auto generated = run_iclab("generate " + run + " --prompt-text 'In the' --dtype float32 --max-new-tokens 4 --out " + out.string(),
                                     scratch.path);
    CHECK(generated.status == 2);
    CHECK_THAT(generated.err, Catch::Contains("the float32 forward of the prompt and 0 generated tokens is not finite"));
    CHECK_THAT(generated.err, Catch::Contains("it first became NaN or infinite in layer 0 (from 0), "));  // layer, op, position
    CHECK_THAT(generated.err, Catch::Contains(", at position "));
    CHECK_THAT(generated.err, Catch::Contains(" (token id "));
    CHECK_THAT(generated.err, Catch::Contains("generate with --dtype float64"));
    CHECK(generated.out.empty());
    CHECK_FALSE(fs::exists(out));
    // the remedy works: float64 holds these values
    const auto in_double = run_iclab("predict " + run + " --text 'In the' --dtype float64 --top 1", scratch.path);
    INFO(in_double.err);
    CHECK(in_double.status == 0);
    CHECK_THAT(in_double.out, !Catch::Contains("nan"));
    const auto generated_double = run_iclab("generate " + run + " --prompt-text 'In the' --max-new-tokens 4 --no-stop", scratch.path);
    INFO(generated_double.err);
    CHECK(generated_double.status == 0);
}

TEST_CASE("a float64 forward that overflows is refused by convert on an lm run and predict on an induction run", "[cli][lm_inputs]") {
    Scratch scratch;
    const std::string lm = train_tiny_lm_run(scratch.path, "model.dtype=float64");
    {
        iclab::run::LmRun<double> loaded = iclab::run::load_lm_run<double>(lm, iclab::experiments::catalog(), "test");
        write_scaled(lm, *loaded.model, 1e120);
    }
    const fs::path adapter = scratch.path / "a.h5";
    const auto converted = run_iclab("convert " + lm + " --method exact --prompt-text 'In the' --out " + adapter.string(), scratch.path);
    CHECK(converted.status == 2);
    CHECK_THAT(converted.err, Catch::Contains("the float64 forward of the prompt is not finite: it first became NaN or infinite in layer 0 (from 0)"));
    CHECK_THAT(converted.err, Catch::Contains("float64 overflowed too"));
    CHECK_FALSE(fs::exists(adapter));

    const auto trained = run_iclab("run configs/quick/induction_head.yaml train.steps=2 train.warmup_steps=1 eval.every=2 eval.sequences=2 "
                                   "train.batch_size=2 --quiet output.dir=" + (scratch.path / "results").string(), scratch.path);
    REQUIRE(trained.status == 0);
    const std::string induction = last_line(trained.out);
    {
        iclab::run::InductionRun loaded = iclab::run::load_induction_run(induction, iclab::experiments::catalog(), 1, "test");
        write_scaled(induction, *loaded.model, 1e120);
    }
    const auto predicted = run_iclab("predict " + induction + " --text abcab", scratch.path);
    CHECK(predicted.status == 2);
    CHECK_THAT(predicted.err, Catch::Contains("iclab predict: the float64 forward of the text is not finite: it first became NaN or infinite in "));
    CHECK_THAT(predicted.out, !Catch::Contains("nan"));
}

TEST_CASE("text with NUL bytes is stored byte for byte: generate's continuation and convert's prompt file", "[cli][lm_inputs]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    // The byte tokenizer decodes id 0 to "\0": a prompt of ids is decoded and printed, the continuation written in full.
    const fs::path out = scratch.path / "g.h5";
    const auto generated = run_iclab("generate " + run + " --prompt-tokens 0,65,0 --max-new-tokens 3 --no-stop --out " + out.string(), scratch.path);
    INFO(generated.err);
    REQUIRE(generated.status == 0);
    CHECK_THAT(generated.out, Catch::Contains(std::string("prompt (3 tokens): \0A\0\n", 23)));
    const iclab::io::ResultsReader reader(out);
    std::string expected;
    for (const auto id : reader.read_int32("/generated").values) expected += static_cast<char>(id);  // ids are bytes here
    CHECK(reader.read_bytes("/text") == expected);
    CHECK(reader.read_attr_string("/", "text") == iclab::io::nul_as_symbol(expected));

    // a continuation that is certainly NUL: a run whose only likely next byte is 0 is not at hand, so the writer is
    // checked directly with the bytes generate writes
    const fs::path bytes = scratch.path / "bytes.h5";
    {
        iclab::io::ResultsWriter writer(bytes);
        writer.write_bytes("/text", std::string("a\0b\xff", 4));
        writer.set_attr("text", iclab::io::nul_as_symbol(std::string("a\0b", 3)));
        writer.commit();
    }
    const iclab::io::ResultsReader back(bytes);
    CHECK(back.read_bytes("/text") == std::string("a\0b\xff", 4));
    CHECK(back.read_attr_string("/", "text") == "a\u2400b");

    // a prompt file holding NUL: converted, its tokens exact, its text shown with U+2400
    write_file(scratch.path / "prompt.txt", std::string("And\0God", 7));
    const fs::path adapter = scratch.path / "a.h5";
    const auto converted = run_iclab("convert " + run + " --method exact --prompt-file " + (scratch.path / "prompt.txt").string() +
                                         " --out " + adapter.string(), scratch.path);
    INFO(converted.err);
    REQUIRE(converted.status == 0);
    const iclab::io::ResultsReader adapter_reader(adapter);
    CHECK(adapter_reader.read_int32("/prompt_tokens").values == std::vector<std::int32_t>{65, 110, 100, 0, 71, 111, 100});
    CHECK(adapter_reader.read_attr_string("/", "prompt_text") == "And\u2400God");
    const auto applied = run_iclab("generate " + run + " --adapter " + adapter.string() + " --prompt-text ' said' --max-new-tokens 2", scratch.path);
    INFO(applied.err);
    CHECK(applied.status == 0);
    CHECK(run_iclab("show " + run, scratch.path).status == 0);
}

TEST_CASE("an empty merges file is refused, a header without merges is a byte-level tokenizer", "[cli][lm_inputs]") {
    Scratch scratch;
    const fs::path dir = scratch.path / "tok";
    write_byte_tokenizer(dir);
    CHECK(iclab::text::Bpe::load(dir).merge_count() == 0);
    write_file(dir / "vocab.bpe", "");
    CHECK_THROWS_WITH(iclab::text::Bpe::load(dir), Catch::Contains("vocab.bpe: empty file"));
    const auto encoded = run_iclab("tokenize --tokenizer " + dir.string() + " --text abc", scratch.path);
    CHECK(encoded.status == 2);
    CHECK_THAT(encoded.err, Catch::Contains("empty file"));
}

TEST_CASE("negative counts are refused naming the flag, not read as 2^64 - 1", "[cli][lm_inputs]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    const struct {
        std::string args, flag;
    } cases[] = {
        {"predict " + run + " --text abc --top -1", "--top"},
        {"generate " + run + " --prompt-text abc --top-k -1", "--top-k"},
        {"generate " + run + " --prompt-text abc --max-new-tokens -1", "--max-new-tokens"},
        {"generate " + run + " --prompt-text abc --seed -1", "--seed"},
        {"convert " + run + " --method recent --keep-tokens -1 --prompt-text abc --out " + (scratch.path / "a.h5").string(), "--keep-tokens"},
        {"convert " + run + " --random-features -1 --prompt-text abc --out " + (scratch.path / "a.h5").string(), "--random-features"},
        {"run configs/quick/induction_head.yaml --stop-after -1 --dry-run", "--stop-after"},
        {"run configs/quick/induction_head.yaml --stop-after-units -1 --dry-run", "--stop-after-units"},
        {"run configs/quick/induction_head.yaml --threads -1 --dry-run", "--threads"},
        {"run -m configs/quick/induction_head.yaml seed=0,1 --jobs -1 --dry-run", "--jobs"},
        {"run -m configs/quick/induction_head.yaml seed=0,1 --threads -1 --dry-run", "--threads"},
        {"bench configs/quick/induction_head.yaml --blas-size -1", "--blas-size"},
        {"bench configs/quick/induction_head.yaml --iters -1", "--iters"},
        {"sweep-job " + scratch.path.string() + " -1", "'-1'"},
    };
    for (const auto& c : cases) {
        const auto result = run_iclab(c.args, scratch.path);
        INFO(c.args << "\n" << result.err);
        CHECK(result.status == 2);
        CHECK_THAT(result.err, Catch::Contains(c.flag));
        CHECK_THAT(result.err, !Catch::Contains("18446744073709551615"));
    }
}

TEST_CASE("an lm config whose data.tokens or data.tokenizer is missing or wrong is refused before any work, naming key and line",
          "[cli][lm_inputs]") {
    Scratch scratch;
    write_byte_tokenizer(scratch.path / "tok");
    write_file(scratch.path / "text.txt", "not a token file\n");
    fs::create_directories(scratch.path / "empty_folder");
    const fs::path results_h5 = scratch.path / "other.h5";  // an HDF5 file that is not a token file
    {
        iclab::io::ResultsWriter writer(results_h5);
        writer.set_attr("format", "something else");
        writer.commit();
    }
    const fs::path config = scratch.path / "lm.yaml";
    const auto write_config = [&](const std::string& tokens, const std::string& tokenizer) {
        std::ofstream(config) << "experiment: lm\ndata:\n  tokens: '" << tokens << "'\n  tokenizer: '" << tokenizer
                              << "'\nmodel:\n  attention: softmax\n  position_embedding: learned\n  rope: false\n"
                                 "  tie_embeddings: true\ntask:\n  vocab_size: 257\n  context_length: 64\n";
    };
    const std::string out = " output.dir=" + (scratch.path / "results").string();
    const struct {
        std::string tokens, tokenizer, expected;
    } cases[] = {
        {"", "", "data.tokens is required to train"},
        {(scratch.path / "missing.h5").string(), "", "does not exist"},
        {(scratch.path / "text.txt").string(), "", "is not an iclab token file (not HDF5"},
        {results_h5.string(), "", "an HDF5 file without the format 'iclab tokens 1'"},
        {(scratch.path / "empty_folder").string(), "", "is not a regular file"},
    };
    for (const auto& c : cases) {
        write_config(c.tokens, c.tokenizer);
        for (const std::string& command : {"run " + config.string() + " --dry-run" + out, "run " + config.string() + out}) {
            const auto result = run_iclab(command, scratch.path);
            INFO(command << "\n" << result.err);
            CHECK(result.status == 2);
            CHECK_THAT(result.err, Catch::Contains(c.expected));
            CHECK_THAT(result.err, Catch::Contains("data.tokens"));
            if (!c.tokens.empty()) CHECK_THAT(result.err, Catch::Contains(config.string() + ":3"));
        }
    }
    // a good token file, with a tokenizer folder that is none
    const std::string tokens = (scratch.path / "tokens.h5").string();
    write_file(scratch.path / "train.txt", "In the beginning God created the heaven and the earth.\n");
    write_file(scratch.path / "heldout.txt", "And God said, Let there be light.\n");
    REQUIRE(run_iclab("tokenize --tokenizer " + (scratch.path / "tok").string() + " --out " + tokens + " --train " +
                          (scratch.path / "train.txt").string() + " --heldout " + (scratch.path / "heldout.txt").string(), scratch.path)
                .status == 0);
    for (const auto& tokenizer : {(scratch.path / "empty_folder").string(), (scratch.path / "text.txt").string()}) {
        write_config(tokens, tokenizer);
        const auto result = run_iclab("run " + config.string() + " --dry-run" + out, scratch.path);
        INFO(result.err);
        CHECK(result.status == 2);
        CHECK_THAT(result.err, Catch::Contains(config.string() + ":4: data.tokenizer"));
    }
    write_config(tokens, (scratch.path / "tok").string());
    const auto valid = run_iclab("run " + config.string() + " --dry-run" + out, scratch.path);
    INFO(valid.err);
    CHECK(valid.status == 0);
    // a sweep lists nothing as runnable when a job's token file is not one
    write_config((scratch.path / "text.txt").string(), "");
    const fs::path sweep = scratch.path / "sweep.yaml";
    std::ofstream(sweep) << "configs: [" << config.string() << "]\ngrid:\n  seed: [0, 1]\noverrides:\n  - output.dir=" << (scratch.path / "results").string() << "\n";
    const auto planned = run_iclab("sweep " + sweep.string() + " --dry-run", scratch.path);
    INFO(planned.out << planned.err);
    CHECK(planned.status == 2);
    CHECK_THAT(planned.err, Catch::Contains("is not an iclab token file"));
    CHECK_FALSE(fs::exists(scratch.path / "results"));
}

TEST_CASE("a tokenizer without <|endoftext|> generates, to --max-new-tokens, saying it has no stop token", "[cli][lm_inputs]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    // the run's tokenizer without <|endoftext|>: 256 byte tokens (the model's vocabulary of 257 holds them)
    const fs::path tokenizer = fs::path(run) / "tokenizer";
    std::string json = iclab_test::read_file(tokenizer / "encoder.json");
    json = json.substr(0, json.rfind(", \"<|endoftext|>\"")) + "}";
    write_file(tokenizer / "encoder.json", json);
    REQUIRE_FALSE(iclab::text::Bpe::load(tokenizer).has_end_of_text());
    const fs::path out = scratch.path / "g.h5";
    for (const std::string& flags : {std::string(" --no-stop"), std::string()}) {
        const auto generated = run_iclab("generate " + run + " --prompt-text 'And God' --max-new-tokens 5 --overwrite --out " + out.string() + flags,
                                         scratch.path);
        INFO(flags << "\n" << generated.err);
        REQUIRE(generated.status == 0);
        CHECK(iclab::io::ResultsReader(out).read_int32("/generated").values.size() == 5);
        CHECK(iclab::io::ResultsReader(out).read_attr_string("/", "stop_token") == "none");
        if (flags.empty()) CHECK_THAT(generated.err, Catch::Contains("no <|endoftext|> token: no stop token, generating up to --max-new-tokens 5"));
    }
}

}  // namespace iclab_test_lm_inputs
