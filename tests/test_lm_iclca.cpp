// Exact ICLCA under generation (issue 22, paper 000 Algorithm 1 and Eq. 16): on a GPT-2-sized-vocabulary-like linear
// RoPE language model with tied embeddings, the adapter converted from a prompt of a hundred tokens makes greedy
// incremental decoding produce the same tokens as decoding with the prompt in context, for 20 prompts, with relative
// logit error <= 1e-12 in fp64 and <= 1e-5 in fp32 at every generated step.
#include <catch2/catch.hpp>

#include <algorithm>

#include "framework/core/measure.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/model/transformer_decode.hpp"

namespace iclab_test_lm_iclca {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

model::ModelSpec linear_lm_spec() {
    model::ModelSpec spec;
    spec.vocab = 401;
    spec.width = 32;
    spec.heads = 2;
    spec.layers = 2;
    spec.max_seq_len = 160;
    spec.attention = model::ModelSpec::Attention::linear;
    spec.feature_map = nn::FeatureMap::elu1;
    spec.rope = true;
    spec.tie_embeddings = true;
    spec.init_std = 0.2;
    return spec;
}

// Greedy continuation of `context` by `steps` tokens; logits (steps, V) of every choice appended to `logits`.
template <class T>
std::vector<std::int32_t> greedy(model::TransformerDecoder<T>& decoder, const std::vector<std::int32_t>& context, std::size_t steps,
                                 std::size_t V, std::vector<double>& logits) {
    decoder.reset();
    decoder.append(context.data(), context.size());
    std::vector<std::int32_t> out;
    for (std::size_t s = 0; s < steps; ++s) {
        const T* row = decoder.last_logits();
        logits.insert(logits.end(), row, row + V);
        const std::int32_t next = static_cast<std::int32_t>(std::max_element(row, row + V) - row);
        out.push_back(next);
        decoder.append(&next, 1);
    }
    return out;
}

template <class T>
void check_generation(double tolerance) {
    const model::ModelSpec spec = linear_lm_spec();
    model::Transformer<T> net(spec, model::Transformer<T>::Mode::inference);
    Rng rng(2026);
    net.init(rng);
    const auto original = icl::read_biases(net);
    const std::size_t prompts = 20, M = 100, N = 8, steps = 24, V = spec.vocab;
    double worst = 0.0;
    std::size_t identical = 0;
    for (std::size_t p = 0; p < prompts; ++p) {
        std::vector<std::int32_t> prompt(M), input(N);
        for (auto& t : prompt) t = static_cast<std::int32_t>(rng.uniform_int(V));
        for (auto& t : input) t = static_cast<std::int32_t>(rng.uniform_int(V));
        // M_old with the prompt in context
        icl::write_biases(net, original);
        std::vector<std::int32_t> whole = prompt;
        whole.insert(whole.end(), input.begin(), input.end());
        std::vector<double> with_prompt, with_adapter;
        model::TransformerDecoder<T> plain(net);
        const auto reference = greedy(plain, whole, steps, V, with_prompt);
        // M_new: the prompt converted into b_KV, b_D, the input alone
        icl::write_biases(net, icl::iclca_convert(net, prompt.data(), prompt.size()));
        model::TransformerDecoder<T> adapted(net);
        const auto converted = greedy(adapted, input, steps, V, with_adapter);
        identical += converted == reference;
        for (std::size_t s = 0; s < steps; ++s)
            worst = std::max(worst, relative_error(with_adapter.data() + s * V, with_prompt.data() + s * V, V));
        // the negative control: the input alone without the adapter is another model
        icl::write_biases(net, original);
        model::TransformerDecoder<T> without(net);
        std::vector<double> alone;
        greedy(without, input, 1, V, alone);
        CHECK(relative_error(alone.data(), with_prompt.data(), V) > 1e-3);
    }
    CAPTURE(worst);
    CHECK(identical == prompts);
    CHECK(worst <= tolerance);
}

}  // namespace

TEST_CASE("ICLCA adapters generate the same greedy tokens as the prompt (fp64, 20 prompts)", "[decode][iclca]") {
    check_generation<double>(1e-12);
}

TEST_CASE("ICLCA adapters generate the same greedy tokens as the prompt (fp32, 20 prompts)", "[decode][iclca]") {
    check_generation<float>(1e-5);
}

}  // namespace iclab_test_lm_iclca
