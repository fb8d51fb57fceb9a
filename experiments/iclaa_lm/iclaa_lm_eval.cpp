#include "experiments/iclaa_lm/iclaa_lm_eval.hpp"

#include <algorithm>
#include <cmath>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/model/transformer_decode.hpp"

namespace iclab::experiments::iclaa_lm_detail {

const char* method_name(Method method) {
    switch (method) {
        case Method::no_prompt: return "no prompt";
        case Method::no_prompt_shifted: return "no prompt (shifted)";
        case Method::exact_cache: return "exact cache";
        case Method::recent: return "recent";
        case Method::heavy: return "heavy";
        case Method::prf: return "prf";
        case Method::orf: return "orf";
        case Method::learned: return "learned";
        case Method::hybrid: return "hybrid";
    }
    return "?";
}

void add_row_terms(icl::PromptTerms& terms, std::size_t slot, const Row& row, const icl::PromptKeysValues& kv, std::size_t b,
                   const nn::RopeTable* rope) {
    const auto convention = icl::RopeConvention::rotate_then_map;  // the only form there is without RoPE (GPT-2)
    switch (row.method) {
        case Method::no_prompt:
        case Method::no_prompt_shifted: return;
        case Method::exact_cache: icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::all, 0, rope); return;
        case Method::recent: icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::recent, row.size, rope); return;
        case Method::heavy: icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::heavy, row.size, rope); return;
        case Method::prf:
        case Method::orf:
        case Method::learned: icl::add_kernel_terms(terms, slot, kv, b, *row.maps, rope, convention); return;
        case Method::hybrid:
            icl::add_cache_terms(terms, slot, kv, b, icl::CacheSelection::recent, row.keep, rope);
            icl::add_kernel_terms(terms, slot, kv, b, *row.maps, rope, convention, row.keep);
            return;
    }
}

std::vector<Window> heldout_windows(const std::vector<std::int32_t>& heldout, std::int32_t end_of_text, std::size_t M, std::size_t N,
                                    std::size_t count, const std::string& name) {
    return text::heldout_windows(heldout, end_of_text, M, N, count, name, "iclaa_lm.prompts", "iclaa_lm.prompt_length + iclaa_lm.continuation_length");
}

namespace {

double log_sum_exp(const double* z, std::size_t V) {
    const double top = *std::max_element(z, z + V);
    double sum = 0.0;
    for (std::size_t v = 0; v < V; ++v) sum += std::exp(z[v] - top);
    return top + std::log(sum);
}

// Runs the model on `inputs` (B, N) with `terms` and X starting at learned position `start`; the start is reset after.
std::vector<double> logits_at(model::Transformer<double>& net, const icl::PromptTerms& terms, const std::int32_t* inputs,
                              std::size_t B, std::size_t N, std::size_t start) {
    struct Reset {
        model::Transformer<double>& m;
        ~Reset() { m.set_learned_position_start(0); }
    } reset{net};
    net.set_learned_position_start(start);
    return icl::logits_with_terms(net, terms, inputs, B, N);
}

}  // namespace

Scores score_rows(model::Transformer<double>& net, const std::vector<Row>& rows, const std::vector<Window>& windows,
                  std::size_t batch_size, Progress* progress) {
    ICLAB_CHECK(!windows.empty(), "no windows to score");
    const model::ModelSpec& spec = net.spec();
    const std::size_t M = windows.front().prompt.size(), N = windows.front().continuation.size(), V = spec.vocab;
    Scores scores;
    scores.relative_error.resize(rows.size());
    scores.kl.resize(rows.size());
    scores.top1.resize(rows.size());
    std::vector<std::int32_t> prompts, inputs, whole;
    for (std::size_t first = 0; first < windows.size(); first += batch_size) {
        const std::size_t B = std::min(batch_size, windows.size() - first);
        prompts.clear();
        inputs.clear();
        whole.clear();
        for (std::size_t b = 0; b < B; ++b) {
            const Window& w = windows[first + b];
            prompts.insert(prompts.end(), w.prompt.begin(), w.prompt.end());
            inputs.insert(inputs.end(), w.continuation.begin(), w.continuation.end());
            whole.insert(whole.end(), w.prompt.begin(), w.prompt.end());
            whole.insert(whole.end(), w.continuation.begin(), w.continuation.end());
        }
        // the reference: M_old on [X'; X] at X's positions M..M+N-1
        net.forward(whole.data(), B, M + N);
        std::vector<double> reference(B * N * V), reference_lse(B * N);
        for (std::size_t b = 0; b < B; ++b)
            std::copy(net.logits() + (b * (M + N) + M) * V, net.logits() + (b * (M + N) + M + N) * V, reference.begin() + b * N * V);
        for (std::size_t i = 0; i < B * N; ++i) reference_lse[i] = log_sum_exp(reference.data() + i * V, V);
        const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, prompts.data(), B, M);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const Row& row = rows[r];
            icl::PromptTerms terms = icl::empty_prompt_terms(spec.layers, B * spec.heads);
            for (std::size_t b = 0; b < B; ++b) add_row_terms(terms, b, row, kv, b, net.rope());
            const bool none = row.method == Method::no_prompt || row.method == Method::no_prompt_shifted;
            const std::vector<double> logits = logits_at(net, none ? icl::PromptTerms{} : terms, inputs.data(), B, N, row.shifted ? M : 0);
            for (std::size_t b = 0; b < B; ++b) {
                const double* z = logits.data() + b * N * V;
                const double* ref = reference.data() + b * N * V;
                scores.relative_error[r].push_back(relative_error(z, ref, N * V));
                double kl = 0.0, agree = 0.0;
                for (std::size_t t = 0; t < N; ++t) {
                    const double lz = log_sum_exp(z + t * V, V), lr = reference_lse[b * N + t];
                    for (std::size_t v = 0; v < V; ++v) {
                        const double log_p = ref[t * V + v] - lr;
                        kl += std::exp(log_p) * (log_p - (z[t * V + v] - lz));
                    }
                    const auto best = std::max_element(z + t * V, z + (t + 1) * V) - z;
                    const auto best_ref = std::max_element(ref + t * V, ref + (t + 1) * V) - ref;
                    agree += best == best_ref ? 1.0 : 0.0;
                }
                scores.kl[r].push_back(kl / static_cast<double>(N));
                scores.top1[r].push_back(agree / static_cast<double>(N));
            }
        }
        if (progress != nullptr) progress->tick(first + B, windows.size(), "windows");
    }
    return scores;
}

namespace {

// Greedy decoding: `new_tokens` argmax steps after the decoder has read its input; stops after end_of_text.
std::vector<std::int32_t> greedy(model::TransformerDecoder<double>& decoder, std::size_t new_tokens, std::size_t V, std::int32_t end_of_text) {
    std::vector<std::int32_t> out;
    for (std::size_t n = 0; n < new_tokens; ++n) {
        const double* z = decoder.last_logits();
        const auto next = static_cast<std::int32_t>(std::max_element(z, z + V) - z);
        out.push_back(next);
        if (next == end_of_text || n + 1 == new_tokens) break;
        decoder.append(&next, 1);
    }
    return out;
}

}  // namespace

std::vector<Generation> generate_examples(model::Transformer<double>& net, const std::vector<const Row*>& rows,
                                          const std::vector<Window>& windows, std::size_t examples, std::size_t input_tokens,
                                          std::size_t new_tokens, std::int32_t end_of_text) {
    const model::ModelSpec& spec = net.spec();
    std::vector<Generation> out;
    for (std::size_t e = 0; e < std::min(examples, windows.size()); ++e) {
        const Window& w = windows[e];
        const std::size_t M = w.prompt.size();
        const std::vector<std::int32_t> input(w.continuation.begin(), w.continuation.begin() + static_cast<std::ptrdiff_t>(input_tokens));
        {  // M_old with the prompt
            model::TransformerDecoder<double> decoder(net);
            std::vector<std::int32_t> whole = w.prompt;
            whole.insert(whole.end(), input.begin(), input.end());
            decoder.append(whole.data(), whole.size());
            out.push_back({e, "with prompt", input, greedy(decoder, new_tokens, spec.vocab, end_of_text)});
        }
        const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, w.prompt.data(), 1, M);
        for (const Row* row : rows) {
            icl::PromptTerms terms = icl::empty_prompt_terms(spec.layers, spec.heads);
            add_row_terms(terms, 0, *row, kv, 0, net.rope());
            const bool none = row->method == Method::no_prompt || row->method == Method::no_prompt_shifted;
            model::TransformerDecoder<double> decoder(net, none ? nullptr : &terms, row->shifted ? M : 0);
            decoder.append(input.data(), input.size());
            out.push_back({e, row->label, input, greedy(decoder, new_tokens, spec.vocab, end_of_text)});
        }
    }
    return out;
}

}  // namespace iclab::experiments::iclaa_lm_detail
