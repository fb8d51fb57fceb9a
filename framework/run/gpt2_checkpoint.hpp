#pragma once
// Hugging Face GPT-2 folders in and out of iclab (docs/gpt2.md). GPT-2 is the one transformer with the option set
// softmax attention (scale 1/sqrt(D), causal, no RoPE), learned positions, pre-LN with biases on every linear,
// GELU-tanh (gelu_new) MLP of 4C, final LayerNorm, logits = ln_f(x) wte^T (tied; untied: lm_head.weight).
//
// Tensor names (HF, optionally prefixed "transformer.") and iclab's (docs/checkpoint_format.md); GPT-2's Conv1D
// stores (in, out), y = x W + b, which is iclab's row-vector convention, so matrices copy as they are:
//   wte.weight (V, C)                 embedding.wte            wpe.weight (n_positions, C)  position_embedding
//   h.{l}.ln_1.{weight,bias}          blocks.l.ln1.{gamma,beta} h.{l}.ln_2.*               blocks.l.ln2.*
//   h.{l}.attn.c_attn.{weight,bias}   blocks.l.attn.{w_qkv,b_qkv}  (C, 3C): columns [q | k | v], head h = columns
//                                     h*D..h*D+D-1 of each, in both (HF's split(C) then view(H, D))
//   h.{l}.attn.c_proj.{weight,bias}   blocks.l.attn.{w_o,b_o}  h.{l}.mlp.c_fc.*  blocks.l.mlp.{w_fc,b_fc}
//   h.{l}.mlp.c_proj.{weight,bias}    blocks.l.mlp.{w_proj,b_proj}   ln_f.{weight,bias}  final_norm.{gamma,beta}
//   lm_head.weight (V, C)             tied: must equal wte; untied: unembedding.w (C, V) = its transpose
// h.{l}.attn.bias / masked_bias (the causal-mask buffers) are ignored; any other tensor is refused by name.
#include <cstddef>
#include <filesystem>
#include <string>

#include "framework/model/transformer.hpp"

namespace iclab::run {

class Catalog;

// What iclab takes from config.json. Keys iclab does not implement with another value than GPT-2's are refused by
// name (scale_attn_by_inverse_layer_idx: true, reorder_and_upcast_attn: true, activation_function other than
// gelu_new, scale_attn_weights: false, layer_norm_epsilon other than 1e-5, n_inner other than 4 n_embd or null,
// model_type other than gpt2, add_cross_attention: true).
struct Gpt2Config {
    std::size_t layers = 0, width = 0, heads = 0, positions = 0, vocab = 0;
    bool tie = true;
};
Gpt2Config read_gpt2_config(const std::filesystem::path& config_json);

// The resolved lm config text (YAML) of that model, with `source` recorded in output.name's place: none; the text is
// loaded and validated with the lm schema by the caller.
std::string gpt2_lm_config_yaml(const Gpt2Config& config);

// The model spec GPT-2 is: refuses (InputError naming the key) a spec export cannot write as GPT-2.
Gpt2Config gpt2_config_of(const model::ModelSpec& spec);

// `iclab import gpt2 DIR --out RUN_DIR`: DIR/config.json, DIR/model.safetensors and the tokenizer files (vocab.json +
// merges.txt or encoder.json + vocab.bpe; optional) into an lm run folder: config.yaml, log.txt, results.h5 (float32
// /checkpoint), tokenizer/. Built in RUN_DIR.partial and renamed, so nothing appears under RUN_DIR on failure;
// an existing RUN_DIR is refused unless overwrite. Prints what it did unless quiet.
void import_gpt2(const std::filesystem::path& dir, const std::filesystem::path& run_dir, const Catalog& catalog, bool overwrite,
                 bool quiet = false);

// `iclab export RUN_DIR --format safetensors --out DIR`: an lm run of GPT-2's shape into DIR/config.json,
// DIR/model.safetensors (F32, HF names without prefix) and the run's tokenizer files; atomically (DIR.partial, then
// rename); an existing DIR is refused unless overwrite.
void export_gpt2(const std::filesystem::path& run_dir, const std::filesystem::path& out_dir, const Catalog& catalog,
                 bool overwrite, bool quiet = false);

}  // namespace iclab::run
