#pragma once
// `iclab predict RUN_DIR --text ...` (or --tokens for lm runs): load a trained induction-head run and show its next-token predictions,
// optionally with ICLCA adapters applied (`--adapter`, framework/icl/adapter_file.hpp). The model runs in float64
// whatever model.dtype it trained in (float32 parameters convert exactly), and an adapter's float64 biases are
// used as stored, not rounded to float.
#include <filesystem>
#include <string>
#include <vector>

#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/model/transformer.hpp"

namespace iclab::cli {

struct PredictOptions {
    std::filesystem::path run_dir;
    std::string text;
    bool text_from_file = false;  // --text-file: induction runs read its letters (whitespace dropped), lm runs its text as it is
    // Language-model (lm) runs: the input as token ids (--tokens), in place of text. The model runs in its
    // model.dtype (float32 for imported GPT-2), and --out writes its logits in that type.
    std::vector<int> token_ids;
    std::size_t top = 3;
    // lm runs: the type the model runs in, "" (the run's model.dtype), float64 or float32; induction runs: float64 only.
    std::string dtype;
    std::filesystem::path out;  // empty: no file; else logits (T, V) and tokens (T) as HDF5
    bool overwrite = false;
    // Adapter files applied in this order before predicting (icl::apply_adapter_files); none: the model as trained.
    std::vector<std::filesystem::path> adapters;
};

void predict(const PredictOptions& options);

// Adapters applied to an induction-head model as `predict --adapter` applies them: ICLCA files replace b_KV, b_D in
// order; one ICLAA file (softmax models) adds its kernel terms and stands alone. Filled in place, not returned by value:
// the model points at iclaa.terms. The Python module (python/src/) applies adapters through it too.
struct InductionAdapters {
    icl::IclaaAdapter iclaa;
    bool has_iclaa = false;
    icl::AppliedAdapters applied;
};
// InputError (`who`: "iclab predict") for several files with an ICLAA one among them, a file that does not fit the
// model, and an input of `tokens` that does not fit behind an ICLAA adapter's prompt.
void apply_induction_adapters(InductionAdapters& out, model::Transformer<double>& model,
                              const std::vector<std::filesystem::path>& files, std::size_t tokens, const std::string& who);
// predict on an lm run (experiments/cli/predict_lm.cpp); predict() calls it for lm runs.
void predict_lm(const PredictOptions& options);

}  // namespace iclab::cli
