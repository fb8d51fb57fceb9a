#pragma once
// Prompt baking (Bhargava et al. 2024, "Prompt Baking", arXiv:2409.13697): a prompt X' of M tokens distilled into a
// delta δ of the weights, the learned baseline beside ICLCA (iclca.hpp, exact on linear models) and ICLAA (iclaa.hpp,
// softmax models). Over S continuations x (N tokens each, sampled once per prompt) it minimises
//   L(δ) = 1/(S·N) Σ_x Σ_t KL( p_θ(· | X', x_≤t) ‖ p_{θ+δ}(· | x_≤t) )
// (their Eq. 2 with the per-position KL averaged instead of summed): the teacher is the unchanged model with the
// prompt, the student the model without it plus δ. Gradient with respect to the student's logits z_t (B continuations
// per step):  ∂L/∂z_t = (softmax(z_t) − p_teacher,t) / (B·N),  passed to the model's own backward.
// Two parametrisations of δ at equal bytes:
//   biases  b_KV (H, F, D) and b_D (H, F) of every layer (paper 000 Eq. 13): exactly the parameters ICLCA sets, so
//           the ICLCA adapter is a minimiser with L = 0 on a linear model (tests); starts at the model's own biases.
//   lora    W_Q, W_K, W_V of every layer += A B (A (C, r), B (r, C), Hu et al. 2021; row-vector y = x W), A ~ N(0, s²),
//           B = 0 so δ = 0 at the start; dA = dW Bᵀ, dB = Aᵀ dW from the model's dW_qkv. The rank r is the largest
//           whose 6·C·r values per layer do not exceed the bias adapter's H·F·(D+1) (lora_rank_for_equal_bytes).
// Continuations: sampled from the teacher (the paper's choice: x ~ p_θ(· | X'), temperature τ) or given by the caller
// (e.g. the task's own chain continuing X'): make_baking_data takes any tokens.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/icl/iclaa.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/model/transformer.hpp"
#include "framework/train/optimizer.hpp"

namespace iclab::icl {

enum class BakeTarget { biases, lora };
BakeTarget parse_bake_target(const std::string& name);  // "biases" | "lora"; InputError otherwise
const char* bake_target_name(BakeTarget target);

// Refuses (InputError naming why) what baking cannot do: a mask under which the prompt's states depend on the input,
// shared layers (one δ per depth), vector inputs, and biases on softmax attention (it has no b_KV, b_D).
void check_baking_assumptions(const model::ModelSpec& spec, BakeTarget target);

// The work of one bake (bake_prompt on continuations made by sample_teacher_continuations and make_baking_data), for
// the experiments' estimates (issue 44). forward(T): the FLOPs of one forward of T tokens; S continuations of N tokens
// after a prompt of M; step_sequences = steps × batch; teacher: the continuations are sampled here (else drawn from
// data); V the vocabulary.
//   products: the teacher's forwards S f(M + N), with teacher sampling its S prefills f(M), the objective on all S
//     before and after (2 S f(N)) and the steps' forwards + backwards (3 f(N) a sequence);
//   decode: the sampling's S (N - 1) one-token steps f(1): the same arithmetic, but every weight is read once per
//     token (memory-bound for a large vocabulary: the caller weights it);
//   loops: the V-wide loops per position, at icl::kEstimateExpFlops an exp or log: the sampling's and the teacher's
//     softmax (exp), the objective's softmax and KL (an exp and two logs), its gradient (a subtraction and a division).
struct BakeWork {
    double products = 0.0, decode = 0.0, loops = 0.0;
};
BakeWork bake_work(const std::function<double(double)>& forward, double S, double M, double N, double step_sequences, bool teacher,
                   double V);

// Values of the ICLCA bias adapter, Σ_l H·F·(D+1) (for any attention: the softmax model's elu1-sized kernel biases,
// F = D); of a LoRA of rank r on W_Q, W_K, W_V, 6·C·r·L; and the largest r with lora ≤ bias values (0: none fits).
std::size_t bias_value_count(const model::ModelSpec& spec);
std::size_t lora_value_count(const model::ModelSpec& spec, std::size_t rank);
std::size_t lora_rank_for_equal_bytes(const model::ModelSpec& spec);

// A rank-r LoRA on W_Q, W_K, W_V of every layer, in one flat buffer: per layer l and projection s ∈ {q, k, v}
// "blocks.<l>.lora.<s>.a" (C, r) then ".b" (r, C).
template <class T>
struct LoraDelta {
    std::size_t layers = 0, width = 0, rank = 0;
    model::ParameterLayout layout;
    std::vector<T> values;
    T* a(std::size_t l, std::size_t s) { return values.data() + (l * 3 + s) * 2 * width * rank; }
    const T* a(std::size_t l, std::size_t s) const { return values.data() + (l * 3 + s) * 2 * width * rank; }
    T* b(std::size_t l, std::size_t s) { return a(l, s) + width * rank; }
    const T* b(std::size_t l, std::size_t s) const { return a(l, s) + width * rank; }
};
// A zero-initialised LoRA of rank r for the model (A and B zero; bake_prompt draws A).
template <class T>
LoraDelta<T> make_lora(const model::ModelSpec& spec, std::size_t rank);
// model W_qkv := base W_qkv + [A_q B_q | A_k B_k | A_v B_v] in every layer (the other parameters are not touched).
template <class T>
void apply_lora(model::Transformer<T>& model, const std::vector<T>& base_params, const LoraDelta<T>& delta);
// After the model's backward (its grads hold dW_qkv of W = W0 + A B): d_values (delta.values.size()) = (dA, dB),
// written (not accumulated): dA_s = dW_s B_sᵀ (C, r), dB_s = A_sᵀ dW_s (r, C).
template <class T>
void lora_backward(std::vector<T>& d_values, const model::Transformer<T>& model, const LoraDelta<T>& delta);

// S continuations of N tokens and the teacher's next-token distributions at each of their positions.
template <class T>
struct BakingData {
    std::size_t samples = 0, length = 0, vocab = 0;
    std::vector<std::int32_t> tokens;  // (S, N)
    std::vector<T> teacher_probs;      // (S, N, V): p_θ(· | X', x_≤t)
};
// S continuations sampled from the teacher, x_t ~ softmax(z_t / τ) of the model after [X'; x_<t] (incremental
// decoding); M + N must fit the model's context.
template <class T>
std::vector<std::int32_t> sample_teacher_continuations(const model::Transformer<T>& model, const std::int32_t* prompt,
                                                       std::size_t prompt_length, std::size_t samples, std::size_t length,
                                                       double temperature, Rng& rng);
// The teacher's distributions on [X'; x] for the given continuations (S, N), in forwards of at most `chunk` sequences.
template <class T>
BakingData<T> make_baking_data(model::Transformer<T>& model, const std::int32_t* prompt, std::size_t prompt_length,
                               std::vector<std::int32_t> continuations, std::size_t samples, std::size_t length, std::size_t chunk);

// The student's loss on continuations [first, first + count) of `data`: a forward of `student` (its parameters as they
// are), the mean KL over the count·N positions; with `backward` the student's grads are zeroed and then hold ∂L/∂θ.
template <class T>
double baking_loss(model::Transformer<T>& student, const BakingData<T>& data, std::size_t first, std::size_t count, bool backward);

struct BakingSettings {
    BakeTarget target = BakeTarget::biases;
    std::size_t rank = 0;         // lora: 0 = lora_rank_for_equal_bytes
    std::size_t steps = 200;
    std::size_t batch = 16;       // continuations per step, taken in order (wrapping around the S)
    double lr = 1e-2;             // constant
    train::OptimizerSpec optimizer;  // sgd | adam (weight_decay 0)
    double lora_init_std = 0.02;  // A's entries N(0, s²)
    bool bias_d_nonnegative = true;  // biases: b_D projected onto >= 0 after each step (the values a prompt gives)
};

template <class T>
struct BakeResult {
    AttentionBiases<T> biases;  // target biases
    LoraDelta<T> lora;          // target lora
    std::vector<double> loss;   // per step, before its update (on that step's batch)
    double initial_kl = 0.0, final_kl = 0.0;  // on every continuation of the data, before and after
};

// Bakes: `model` is a training-mode model holding the base parameters θ (restored on return). `initial` (biases
// only, may be null): the biases to start from instead of the model's own. rng draws the LoRA's A.
template <class T>
BakeResult<T> bake_prompt(model::Transformer<T>& model, const BakingData<T>& data, const BakingSettings& settings, Rng& rng,
                          const AttentionBiases<T>* initial = nullptr);

// Baking into ICLAA's kernel biases of a softmax model (prompt_baking_kernel.cpp): the student is the model without
// the prompt plus, per layer and head, the kernel term of a feature map φ added to every query's un-normalized
// softmax numerator and denominator, φ(q̃_i)ᵀb_KV and φ(q̃_i)ᵀb_D (nn::SoftmaxPromptHead: exactly how an ICLAA adapter
// combines them with the in-window softmax, iclaa.hpp step (3)). Baking learns the stored unit-scale vectors b̂_kv
// (F, D) and b̂_d (F) of every head (b_KV = e^{log_b_kv} b̂_kv, the log scales held at the start's) by minimising the
// same KL as bake_prompt; the gradient comes through the model's backward and softmax_attention_backward ((K2)-(K6) in
// softmax_attention.hpp). Same bytes as the closed form: F·(D+1) values per layer and head.
template <class T>
using KernelTerms = std::vector<std::vector<nn::SoftmaxPromptHead<T>>>;  // [l][h]
template <class T>
using KernelMaps = std::vector<std::vector<nn::KernelFeatures<T>>>;  // [l][h]

// Refuses (InputError naming why) what kernel baking cannot do: linear attention (bake into b_KV, b_D: target
// biases), and what check_baking_assumptions refuses for every target (mask, shared layers, vector inputs).
void check_kernel_baking_assumptions(const model::ModelSpec& spec);
// Σ_l H·F·(D+1): the values of kernel biases of F features (F = D: bias_value_count's softmax size).
std::size_t kernel_bias_value_count(const model::ModelSpec& spec, std::size_t features);

// Where baking starts: ICLAA's closed-form biases of the map (add_kernel_terms), or b̂_kv = b̂_d = 0 with the closed
// form's log scales (the prompt then adds nothing until b̂_d > 0; the first step's gradient is the limit from
// φᵀb_D > 0, softmax_attention.hpp).
enum class KernelStart { closed_form, zero };
KernelStart parse_kernel_start(const std::string& name);  // "closed_form" | "zero"; InputError otherwise
const char* kernel_start_name(KernelStart start);

// ICLAA's maps and terms (fp64) in precision T; the terms' features point into `maps`, which must outlive them.
template <class T>
KernelMaps<T> cast_kernel_maps(const LayerHeadMaps& maps);
template <class T>
KernelTerms<T> cast_kernel_terms(const PromptTerms& terms, const KernelMaps<T>& maps);

template <class T>
struct KernelBakeResult {
    KernelTerms<T> terms;      // the baked biases: features as the start's, log scales as the start's
    std::vector<double> loss;  // per step, before its update
    double initial_kl = 0.0, final_kl = 0.0;
};

// Bakes into the kernel biases: `model` a training-mode softmax model (its parameters untouched), `start` one
// prompt's kernel terms ([l][h], features set, no exact cache). settings.target, rank and lora_init_std are not read;
// settings.bias_d_nonnegative projects b̂_d onto >= 0 after each step.
template <class T>
KernelBakeResult<T> bake_prompt_kernel(model::Transformer<T>& model, const BakingData<T>& data, const BakingSettings& settings,
                                       const KernelTerms<T>& start, KernelStart how = KernelStart::closed_form);

}  // namespace iclab::icl
