// Experiment iclaa_lm's numerics (experiments/iclaa_lm/iclaa_lm_eval.hpp) on a tiny random GPT-2-shaped model
// (softmax, learned absolute positions, tied embeddings, pre-LN with biases, GELU): the exact prompt cache with X at
// positions M.. reproduces M_old on [X'; X] to fp64 rounding (G = 1) and its greedy generation equals the one with the
// prompt; M_old without the prompt has G = 0 exactly; the wrong adapters (the exact cache with X at positions 0.., or
// another window's prompt) are caught by the same measure; truncated caches and PRF lie in between; held-out windows
// never span an end-of-text token.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "experiments/iclaa_lm/iclaa_lm_eval.hpp"
#include "experiments/registry.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/rng.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/model/transformer_decode.hpp"
#include "framework/run/memory_estimate.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclaa_lm {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::experiments::iclaa_lm_detail;

namespace {

model::ModelSpec gpt2_shaped_spec() {
    model::ModelSpec spec;
    spec.vocab = 61;
    spec.width = 16;
    spec.heads = 2;
    spec.layers = 2;
    spec.max_seq_len = 48;
    spec.attention = model::ModelSpec::Attention::softmax;
    spec.rope = false;
    spec.positions = model::ModelSpec::Positions::learned;
    spec.tie_embeddings = true;
    spec.init_std = 0.3;  // far from uniform attention, so positions and prompts matter
    return spec;
}

std::vector<std::int32_t> random_stream(std::size_t n, std::size_t vocab, Rng& rng) {
    std::vector<std::int32_t> tokens(n);
    for (auto& t : tokens) t = static_cast<std::int32_t>(rng.uniform_int(vocab - 1));  // never the last id (end-of-text)
    return tokens;
}

}  // namespace

TEST_CASE("iclaa_lm: held-out windows are contiguous, disjoint and never span end-of-text", "[iclaa_lm]") {
    Rng rng(3);
    std::vector<std::int32_t> stream = random_stream(400, 61, rng);
    const std::int32_t eot = 60;
    for (const std::size_t at : {0u, 55u, 130u, 131u, 299u}) stream[at] = eot;
    const auto windows = heldout_windows(stream, eot, 12, 8, 5, "test");
    REQUIRE(windows.size() == 5);
    std::size_t previous_end = 0;
    for (const Window& w : windows) {
        REQUIRE(w.prompt.size() == 12);
        REQUIRE(w.continuation.size() == 8);
        CHECK(w.start >= previous_end);
        previous_end = w.start + 20;
        for (std::size_t i = 0; i < 20; ++i) CHECK(stream[w.start + i] != eot);
        CHECK(std::equal(w.prompt.begin(), w.prompt.end(), stream.begin() + static_cast<std::ptrdiff_t>(w.start)));
        CHECK(std::equal(w.continuation.begin(), w.continuation.end(), stream.begin() + static_cast<std::ptrdiff_t>(w.start + 12)));
    }
    CHECK_THROWS_AS(heldout_windows(stream, eot, 12, 8, 21, "test"), InputError);  // 21 windows of 20 > 400 tokens
}

TEST_CASE("iclaa_lm: the exact cache is exact (G = 1), no prompt has G = 0, wrong adapters are caught", "[iclaa_lm]") {
    model::Transformer<double> net(gpt2_shaped_spec(), model::Transformer<double>::Mode::inference);
    Rng init(11);
    net.init(init);
    Rng data(12);
    const std::vector<std::int32_t> stream = random_stream(600, 61, data);
    const std::size_t M = 16, N = 12;
    const auto windows = heldout_windows(stream, 60, M, N, 6, "test");
    const std::size_t D = net.spec().head_dim();
    Rng features(13);
    icl::FeatureMapChoice choice;
    choice.map = "prf";
    choice.features = 512;
    const icl::LayerHeadMaps prf = icl::build_feature_maps(net, choice, nullptr, M + N, features, nullptr);

    std::vector<Row> rows;
    rows.push_back({Method::no_prompt, "no prompt", 0, 0, 0, nullptr, 0.0, false});
    rows.push_back({Method::exact_cache, "exact cache", M, 0, 0, nullptr, icl::cache_bytes(M, D), true});
    rows.push_back({Method::exact_cache, "exact cache, X at 0", M, 0, 0, nullptr, icl::cache_bytes(M, D), false});  // wrong positions
    rows.push_back({Method::recent, "recent k=4", 4, 0, 0, nullptr, icl::cache_bytes(4, D), true});
    rows.push_back({Method::prf, "prf F=512", 512, 0, 0, &prf, icl::kernel_bytes(512, D), true});
    rows.push_back({Method::no_prompt_shifted, "no prompt (shifted)", 0, 0, 0, nullptr, 0.0, true});
    const Scores scores = score_rows(net, rows, windows, 4);  // batches of 4 and 2 windows
    REQUIRE(scores.relative_error.size() == rows.size());
    for (std::size_t w = 0; w < windows.size(); ++w) {
        const double before = scores.relative_error[0][w];
        INFO("window " << w << ": no prompt " << before);
        REQUIRE(before > 1e-3);  // the prompt matters in this model
        CHECK(1.0 - scores.relative_error[0][w] / before == 0.0);  // G of M_old without the prompt, exactly
        CHECK(scores.relative_error[1][w] <= 1e-12);                // the exact cache, X behind it: fp64 rounding
        CHECK(scores.top1[1][w] == 1.0);
        CHECK(std::abs(scores.kl[1][w]) <= 1e-14);
        CHECK(scores.relative_error[2][w] > 1e-4);                  // X at the wrong learned positions is caught
        CHECK(scores.relative_error[3][w] > 1e-6);                  // a truncated cache is not exact
        CHECK(scores.relative_error[4][w] < before);                // PRF with many features: closer than no prompt
        CHECK(scores.relative_error[4][w] > 1e-6);                  // ... but approximate
    }
    // another window's prompt: the exact cache of window 1 scored against window 0's reference is far off
    std::vector<Window> swapped = {windows[0]};
    swapped[0].prompt = windows[1].prompt;
    const Scores wrong = score_rows(net, {rows[1]}, swapped, 1);
    const Scores right = score_rows(net, {rows[1]}, {windows[0]}, 1);
    CHECK(right.relative_error[0][0] <= 1e-12);
    // the reference is recomputed with the swapped prompt, so compare the terms against the true window's reference
    const icl::PromptKeysValues kv_other = icl::capture_prompt_keys_values(net, windows[1].prompt.data(), 1, M);
    icl::PromptTerms terms = icl::empty_prompt_terms(net.spec().layers, net.spec().heads);
    add_row_terms(terms, 0, rows[1], kv_other, 0, net.rope());
    net.set_learned_position_start(M);
    const auto logits = icl::logits_with_terms(net, terms, windows[0].continuation.data(), 1, N);
    net.set_learned_position_start(0);
    std::vector<std::int32_t> whole = windows[0].prompt;
    whole.insert(whole.end(), windows[0].continuation.begin(), windows[0].continuation.end());
    net.forward(whole.data(), 1, M + N);
    const std::size_t V = net.spec().vocab;
    CHECK(relative_error(logits.data(), std::vector<double>(net.logits() + M * V, net.logits() + (M + N) * V)) > 1e-3);
    CHECK(wrong.relative_error[0][0] <= 1e-12);  // scored against its own (swapped) reference it is exact again
}

TEST_CASE("iclaa_lm: greedy generation with the exact cache equals generation with the prompt", "[iclaa_lm]") {
    model::Transformer<double> net(gpt2_shaped_spec(), model::Transformer<double>::Mode::inference);
    Rng init(21);
    net.init(init);
    Rng data(22);
    const std::vector<std::int32_t> stream = random_stream(400, 61, data);
    const std::size_t M = 14, N = 10;
    const auto windows = heldout_windows(stream, 60, M, N, 4, "test");
    const Row none{Method::no_prompt, "no prompt", 0, 0, 0, nullptr, 0.0, false};
    const Row exact{Method::exact_cache, "exact cache", M, 0, 0, nullptr, 0.0, true};
    const auto generations = generate_examples(net, {&none, &exact}, windows, 4, 6, 20, 60);
    REQUIRE(generations.size() == 12);
    std::size_t differing_without = 0;
    for (std::size_t e = 0; e < 4; ++e) {
        const Generation& with = generations[3 * e];
        REQUIRE(with.model == "with prompt");
        REQUIRE(generations[3 * e + 2].model == "exact cache");
        CHECK(generations[3 * e + 2].tokens == with.tokens);
        CHECK(with.tokens.size() == 20);
        differing_without += generations[3 * e + 1].tokens != with.tokens;
    }
    CHECK(differing_without >= 1);  // without the prompt the model says something else (the test can fail)
    // the context limit counts the adapter's prompt: a decoder starting at learned position 40 holds 8 tokens, not 9
    model::TransformerDecoder<double> shifted(net, nullptr, 40);
    CHECK(shifted.context_limit() == 8);
    CHECK_THROWS_AS(shifted.append(windows[0].prompt.data(), 9), InputError);
    CHECK_THROWS_AS(model::TransformerDecoder<double>(net, nullptr, 48), InputError);
}

TEST_CASE("an lm config without data.tokens (what import gpt2 writes) is estimated as the model alone", "[iclaa_lm][cli]") {
    // Regression: the training estimate of a GPT-2-small-shaped config at its defaults (1024-token windows) asked for
    // 56 GiB, so `iclab import gpt2` of GPT-2 small, and every command loading the run, refused it.
    // (`iclab run --dry-run` refuses it now: it cannot train without data.tokens; the config itself loads.)
    iclab_test::Scratch scratch;
    const std::vector<std::string> overrides = {"data.tokens=\"\"", "model.layers=12", "model.width=768", "model.heads=12",
                                                "task.context_length=1024", "task.seq_len=0", "train.batch_size=64"};
    const config::Config cfg = iclab::experiments::catalog().load_config(std::string(ICLAB_SOURCE_DIR) + "/configs/quick/lm_kjv.yaml", overrides);
    const std::string described = iclab::run::describe_estimate(iclab::experiments::catalog().find("lm").estimate(cfg));
    CHECK_THAT(described, Catch::Contains("about 0.46"));  // 124M float32 parameters, 0.464 GiB
    const auto trains = iclab_test::run_iclab(
        "run configs/quick/lm_kjv.yaml model.layers=12 model.width=768 model.heads=12 task.context_length=1024 "
        "task.seq_len=0 train.batch_size=1024 --dry-run output.dir=" + (scratch.path / "out").string(), scratch.path);
    CHECK(trains.status == 2);  // with a token file the same model would train: 1024 windows of 1024 tokens do not fit
}

}  // namespace iclab_test_iclaa_lm
