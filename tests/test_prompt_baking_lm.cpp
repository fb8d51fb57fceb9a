// Experiment prompt_baking_lm (experiments/prompt_baking_lm/README.md) on tiny GPT-2-shaped language models: ICLCA on a
// linear LM (MLPs, LayerNorms, tied embeddings, qkv biases, RoPE: the quick KJV linear model's blocks) reproduces the
// prompted model to fp64 rounding; baking lowers the KL to the prompted model on a held-out input, linear and softmax
// (learned positions, the student reading X at M..); the experiment end to end on a byte-level token file, its
// methods' table and claims; its refusals.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "framework/core/rng.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/icl/logit_comparison.hpp"
#include "framework/icl/prompt_baking.hpp"
#include "framework/io/results_file.hpp"
#include "framework/text/heldout_windows.hpp"
#include "tests/lm_run_helpers.hpp"

namespace iclab_test_prompt_baking_lm {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using iclab_test::run_iclab;
using iclab_test::Scratch;
namespace fs = std::filesystem;

namespace {

// The quick KJV models' blocks at toy size: pre-LN with biases, GELU MLP, final LayerNorm, tied embeddings.
model::ModelSpec tiny_lm_spec(bool linear) {
    model::ModelSpec spec;
    spec.vocab = 61;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 2;
    spec.mlp = true;
    spec.layernorm = true;
    spec.final_layernorm = true;
    spec.qkv_bias = true;
    spec.tie_embeddings = true;
    spec.max_seq_len = 48;
    spec.init_std = 0.3;  // far from uniform attention: the prompt matters
    if (linear) {
        spec.attention = model::ModelSpec::Attention::linear;
        spec.feature_map = nn::FeatureMap::elu1;
        spec.rope = true;
        spec.positions = model::ModelSpec::Positions::none;
    } else {
        spec.attention = model::ModelSpec::Attention::softmax;
        spec.rope = false;
        spec.positions = model::ModelSpec::Positions::learned;
    }
    return spec;
}

std::vector<std::int32_t> random_tokens(std::size_t n, Rng& rng) {
    std::vector<std::int32_t> t(n);
    for (auto& x : t) x = static_cast<std::int32_t>(rng.uniform_int(61));
    return t;
}

// M_old on [X'; X] at X's positions (N, V).
std::vector<double> prompted_logits(model::Transformer<double>& model, const std::vector<std::int32_t>& prompt, const std::vector<std::int32_t>& input) {
    std::vector<std::int32_t> whole(prompt);
    whole.insert(whole.end(), input.begin(), input.end());
    model.forward(whole.data(), 1, whole.size());
    const std::size_t V = model.spec().vocab;
    return std::vector<double>(model.logits() + prompt.size() * V, model.logits() + whole.size() * V);
}

std::vector<double> plain_logits(model::Transformer<double>& model, const std::vector<std::int32_t>& input, std::size_t start) {
    model.set_learned_position_start(start);
    model.forward(input.data(), 1, input.size());
    model.set_learned_position_start(0);
    return std::vector<double>(model.logits(), model.logits() + input.size() * model.spec().vocab);
}

}  // namespace

TEST_CASE("prompt_baking_lm: ICLCA on a tiny linear language model equals the model with the prompt to fp64 rounding", "[prompt_baking_lm]") {
    model::Transformer<double> model(tiny_lm_spec(true), model::Transformer<double>::Mode::inference);
    Rng rng(21);
    model.init(rng);
    const std::vector<double> base = model.params;
    for (const std::size_t M : {std::size_t{1}, std::size_t{12}, std::size_t{32}}) {
        INFO("prompt of " << M);
        const auto prompt = random_tokens(M, rng), input = random_tokens(16, rng);
        const std::vector<double> reference = prompted_logits(model, prompt, input);
        const double without = icl::compare_logits(plain_logits(model, input, 0).data(), reference.data(), 16, 61).relative_error;
        CHECK(without > 1e-3);  // the prompt matters: the check below can fail
        icl::write_biases(model, icl::iclca_convert(model, prompt.data(), M));
        const icl::LogitComparison converted = icl::compare_logits(plain_logits(model, input, 0).data(), reference.data(), 16, 61);
        CHECK(converted.relative_error <= 1e-12);
        CHECK(std::abs(converted.kl) <= 1e-12);
        CHECK(converted.top1 == 1.0);
        model.params = base;
    }
}

TEST_CASE("prompt_baking_lm: baking lowers the KL to the prompted language model on a held-out input", "[prompt_baking_lm]") {
    struct Case {
        bool linear;
        icl::BakeTarget target;
    };
    for (const Case c : {Case{true, icl::BakeTarget::biases}, Case{true, icl::BakeTarget::lora}, Case{false, icl::BakeTarget::lora}}) {
        INFO((c.linear ? "linear " : "softmax ") << icl::bake_target_name(c.target));
        const std::size_t M = 12, N = 10;
        model::Transformer<double> model(tiny_lm_spec(c.linear), model::Transformer<double>::Mode::training);
        Rng rng(23);
        model.init(rng);
        const std::vector<double> base = model.params;
        const auto prompt = random_tokens(M, rng);
        // the held-out input: a continuation the model with the prompt would write (sampled, never baked on)
        const auto input = icl::sample_teacher_continuations(model, prompt.data(), M, 1, N, 1.0, rng);
        const std::vector<double> reference = prompted_logits(model, prompt, input);
        const std::size_t start = c.linear ? 0 : M;  // learned positions: X where it sat behind the prompt
        const double kl_before = icl::compare_logits(plain_logits(model, input, start).data(), reference.data(), N, 61).kl;
        const icl::BakingData<double> data = icl::make_baking_data(
            model, prompt.data(), M, icl::sample_teacher_continuations(model, prompt.data(), M, 32, N, 1.0, rng), 32, N, 8);
        model.set_learned_position_start(start);
        icl::BakingSettings settings;
        settings.target = c.target;
        settings.steps = 80;
        settings.batch = 8;
        settings.lr = 3e-2;
        settings.optimizer.kind = train::OptimizerKind::adam;
        const icl::BakeResult<double> result = icl::bake_prompt(model, data, settings, rng);
        model.set_learned_position_start(0);
        CHECK(result.final_kl < 0.7 * result.initial_kl);
        if (c.target == icl::BakeTarget::biases)
            icl::write_biases(model, result.biases);
        else
            icl::apply_lora(model, base, result.lora);
        const double kl_after = icl::compare_logits(plain_logits(model, input, start).data(), reference.data(), N, 61).kl;
        CHECK(kl_before > 1e-2);
        CHECK(kl_after < 0.8 * kl_before);
        model.params = base;
    }
}

TEST_CASE("prompt_baking_lm: held-out windows skip end-of-text and name the keys when they do not fit", "[prompt_baking_lm]") {
    std::vector<std::int32_t> stream(100, 1);
    stream[10] = 0;  // end-of-text inside the first window's span [0, 14)
    const auto windows = text::heldout_windows(stream, 0, 8, 6, 3, "split", "k.windows", "k.lengths");
    REQUIRE(windows.size() == 3);
    CHECK(windows[0].start == 11);
    for (const auto& w : windows) CHECK((w.prompt.size() == 8 && w.continuation.size() == 6));
    CHECK(windows[1].start >= windows[0].start + 14);
    try {
        text::heldout_windows(stream, 0, 8, 6, 8, "split", "k.windows", "k.lengths");
        FAIL("no error");
    } catch (const InputError& e) {
        CHECK_THAT(std::string(e.what()), Catch::Contains("k.windows") || Catch::Contains("k.lengths"));
    }
}

TEST_CASE("prompt_baking_lm: a tiny run on a token file writes every method's table and the claims", "[prompt_baking_lm][cli]") {
    Scratch scratch;
    const fs::path tokenizer = scratch.path / "tok";
    iclab_test::write_byte_tokenizer(tokenizer);
    std::ofstream(scratch.path / "train.txt") << "In the beginning God created the heaven and the earth. And the earth was without form, and void.\n";
    std::ofstream(scratch.path / "heldout.txt") << "And God said, Let there be light: and there was light. And God saw the light, that it was good.\n";
    const fs::path tokens = scratch.path / "tokens.h5";
    const auto tokenized = run_iclab("tokenize --tokenizer " + tokenizer.string() + " --out " + tokens.string() + " --train " +
                                         (scratch.path / "train.txt").string() + " --heldout " + (scratch.path / "heldout.txt").string(),
                                     scratch.path);
    REQUIRE(tokenized.status == 0);
    const std::string tiny = " --quiet output.dir=" + scratch.path.string() + " data.tokens=" + tokens.string() + " data.tokenizer=" + tokenizer.string() +
                             " task.vocab_size=257 task.context_length=32 task.seq_len=24 model.width=16 model.heads=2 model.init_std=0.3 "
                             "train.steps=3 train.warmup_steps=1 eval.every=3 eval.sequences=2 prompt_baking_lm.windows=2 "
                             "prompt_baking_lm.prompt_length=12 prompt_baking_lm.input_length=8 prompt_baking_lm.generate=4 prompt_baking_lm.samples=8 "
                             "prompt_baking_lm.steps=4 prompt_baking_lm.batch=4 prompt_baking_lm.lora_rank=1 prompt_baking_lm.iclaa.learned.split_max=16";
    const auto linear = run_iclab("run configs/quick/prompt_baking_lm.yaml output.name=lin" + tiny, scratch.path);
    INFO(linear.err);
    REQUIRE(linear.status == 0);
    const io::ResultsReader reader(scratch.path / "lin" / "results.h5");
    const io::Table methods = reader.read_table("/tables/methods");
    REQUIRE(methods.strings("method") == std::vector<std::string>{"no prompt (before)", "with prompt (reference)", "iclca (exact)", "bake biases", "bake lora r=1"});
    const auto error = methods.numbers("relative_logit_error");
    CHECK(error[0] > 1e-3);
    CHECK(error[1] == 0.0);
    CHECK(error[2] < 1e-12);  // ICLCA is exact
    CHECK(methods.numbers("generated_agreement")[2] == 1.0);
    CHECK(methods.numbers("perplexity")[2] == Approx(methods.numbers("perplexity")[1]).epsilon(1e-9));
    const auto ids = reader.read_column_string("/claims/id");
    CHECK(std::find(ids.begin(), ids.end(), "bakelm-lin exact<bake lora") != ids.end());
    const auto soft = run_iclab("run configs/quick/prompt_baking_lm_softmax.yaml output.name=soft" + tiny +
                                    " prompt_baking_lm.iclaa.learned.steps=2 "
                                    "prompt_baking_lm.iclaa.random_features=[16] prompt_baking_lm.iclaa.keep_tokens=[4]",
                                scratch.path);
    INFO(soft.err);
    REQUIRE(soft.status == 0);
    const io::Table soft_methods = io::ResultsReader(scratch.path / "soft" / "results.h5").read_table("/tables/methods");
    // before, reference, cache, prf F=8, prf F=16, orf F=8, elu1 F=8, learned F=8, hybrid, lora
    CHECK(soft_methods.strings("method").size() == 10);
    CHECK(soft_methods.numbers("relative_logit_error")[2] < 1e-12);  // the exact cache, X at positions M..
    CHECK(soft_methods.numbers("generated_agreement")[2] == 1.0);
}

TEST_CASE("prompt_baking_lm: a bad key or a setting it cannot serve exits 2 naming the key", "[prompt_baking_lm][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string() + " --dry-run";
    const auto typo = run_iclab("run configs/quick/prompt_baking_lm.yaml prompt_baking_lm.stepz=3" + out, scratch.path);
    CHECK(typo.status == 2);
    CHECK_THAT(typo.err, Catch::Contains("prompt_baking_lm.stepz"));
    const auto softmax_biases = run_iclab("run configs/quick/prompt_baking_lm_softmax.yaml prompt_baking_lm.targets=[biases]" + out, scratch.path);
    CHECK(softmax_biases.status == 2);
    CHECK_THAT(softmax_biases.err, Catch::Contains("prompt_baking_lm.targets"));
    const auto too_long = run_iclab("run configs/quick/prompt_baking_lm.yaml prompt_baking_lm.generate=17" + out, scratch.path);
    CHECK(too_long.status == 2);
    CHECK_THAT(too_long.err, Catch::Contains("task.seq_len"));
}

}  // namespace iclab_test_prompt_baking_lm
