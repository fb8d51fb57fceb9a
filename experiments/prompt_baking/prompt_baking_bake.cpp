// Experiment `prompt_baking`: one baking conversion (into b_KV, b_D, a LoRA, or ICLAA's kernel biases) on one pair,
// in the config's precision, its result in float64 for the evaluation model; the heap measure of every conversion.
#include <malloc.h>

#include "experiments/prompt_baking/prompt_baking_rows.hpp"
#include "framework/core/check.hpp"
#include "framework/train/optimizer.hpp"

namespace iclab::experiments::prompt_baking_detail {

// Bytes the heap holds in use (glibc mallinfo2: arena + mmapped blocks), in MiB. The peak RSS rarely rises during a
// conversion (iclab keeps freed memory for reuse: core/memory.hpp), so the working set of a conversion is measured as
// the rise of this number while the conversion's objects are alive.
double heap_in_use_mib() {
    const struct mallinfo2 info = mallinfo2();
    return static_cast<double>(info.uordblks + info.hblkhd) / (1024.0 * 1024.0);
}

namespace {

// The task's chain continuing X' under the pair's commitments (tasks::sample_prompt_pair draws X so).
std::vector<std::int32_t> task_continuations(const tasks::PromptPair& pair, std::size_t S, std::size_t N, Rng& rng) {
    std::vector<std::int32_t> tokens(S * N);
    for (std::size_t s = 0; s < S; ++s) {
        std::int32_t current = pair.prompt.back();
        for (std::size_t t = 0; t < N; ++t) {
            current = pair.committed[current] >= 0 ? pair.committed[current] : static_cast<std::int32_t>(rng.uniform_int(tasks::kInductionVocab));
            tokens[s * N + t] = current;
        }
    }
    return tokens;
}

// `kernel` (a bake_kernel row) with `start` (the prompt's closed-form terms of its map): baking into the kernel
// biases; otherwise into `target`.
template <class T>
Baked bake(const config::Config& cfg, const model::Transformer<double>& net, const tasks::PromptPair& pair, icl::BakeTarget target,
           Rng continuation_rng, Rng lora_rng, const Row* kernel = nullptr, const icl::PromptTerms* start = nullptr) {
    const double heap_before = heap_in_use_mib();
    model::Transformer<T> student(net.spec(), model::Transformer<T>::Mode::training);
    for (std::size_t i = 0; i < net.params.size(); ++i) student.params[i] = static_cast<T>(net.params[i]);
    const std::size_t M = pair.prompt.size(), N = pair.input.size(), S = cfg.get_int("prompt_baking.samples");
    std::vector<std::int32_t> x = cfg.get_string("prompt_baking.continuations") == "teacher"
                                      ? icl::sample_teacher_continuations(student, pair.prompt.data(), M, S, N,
                                                                          cfg.get_float("prompt_baking.temperature"), continuation_rng)
                                      : task_continuations(pair, S, N, continuation_rng);
    const icl::BakingData<T> data = icl::make_baking_data(student, pair.prompt.data(), M, std::move(x), S, N, 32);
    icl::BakingSettings settings;
    settings.target = target;
    settings.rank = cfg.get_int("prompt_baking.lora_rank");
    settings.steps = cfg.get_int("prompt_baking.steps");
    settings.batch = cfg.get_int("prompt_baking.batch");
    settings.lr = cfg.get_float("prompt_baking.lr");
    settings.optimizer.kind = train::optimizer_from_name(cfg.get_string("prompt_baking.optimizer"));
    settings.lora_init_std = cfg.get_float("prompt_baking.lora_init_std");
    settings.bias_d_nonnegative = cfg.get_string("prompt_baking.bias_d") == "nonnegative";
    Baked out;
    if (kernel != nullptr) {
        const icl::KernelMaps<T> maps = icl::cast_kernel_maps<T>(*kernel->maps);
        const icl::KernelBakeResult<T> baked = icl::bake_prompt_kernel(
            student, data, settings, icl::cast_kernel_terms<T>(*start, maps), kernel->zero_start ? icl::KernelStart::zero : icl::KernelStart::closed_form);
        out.heap_mib = heap_in_use_mib() - heap_before;  // the student, its activations and gradients, the data, the terms
        out.initial_kl = baked.initial_kl;
        out.final_kl = baked.final_kl;
        out.terms = *start;  // the closed form's features and rotation, with the baked vectors and their log scales
        for (std::size_t l = 0; l < out.terms.size(); ++l)
            for (std::size_t h = 0; h < out.terms[l].size(); ++h) {
                auto& head = out.terms[l][h];
                const auto& learned = baked.terms[l][h];
                head.b_kv.assign(learned.b_kv.begin(), learned.b_kv.end());
                head.b_d.assign(learned.b_d.begin(), learned.b_d.end());
                head.log_b_kv = static_cast<double>(learned.log_b_kv);
                head.log_b_d = static_cast<double>(learned.log_b_d);
            }
        return out;
    }
    const icl::BakeResult<T> result = icl::bake_prompt(student, data, settings, lora_rng);
    out.heap_mib = heap_in_use_mib() - heap_before;  // the student (parameters, gradients, activations), the data, δ
    out.initial_kl = result.initial_kl;
    out.final_kl = result.final_kl;
    for (const auto& v : result.biases.b_kv) out.biases.b_kv.emplace_back(v.begin(), v.end());
    for (const auto& v : result.biases.b_d) out.biases.b_d.emplace_back(v.begin(), v.end());
    if (target == icl::BakeTarget::lora) {
        out.lora = icl::make_lora<double>(net.spec(), result.lora.rank);
        std::copy(result.lora.values.begin(), result.lora.values.end(), out.lora.values.begin());
    }
    return out;
}

}  // namespace

Baked bake_row(const config::Config& cfg, const model::Transformer<double>& net, const tasks::PromptPair& pair, icl::BakeTarget target,
               Rng continuation_rng, Rng lora_rng, const Row* kernel, const icl::PromptTerms* start) {
    return cfg.get_string("prompt_baking.precision") == "float32"
               ? bake<float>(cfg, net, pair, target, continuation_rng, lora_rng, kernel, start)
               : bake<double>(cfg, net, pair, target, continuation_rng, lora_rng, kernel, start);
}

}  // namespace iclab::experiments::prompt_baking_detail
