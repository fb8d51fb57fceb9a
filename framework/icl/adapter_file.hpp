#pragma once
// Adapters as files (issue 4): the b_KV, b_D of every layer that ICLCA (iclca.hpp, paper 000 Algorithm 1)
// converted from a prompt, with what is needed to apply them safely later: the fingerprint of the model they
// were made for, the prompt, and the chain of adapters they were converted on top of.
// docs/adapter_format.md describes the file; `iclab convert` writes it, `iclab predict --adapter` applies it.
//
// An adapter holds the complete biases, not a difference: applying it sets b_KV, b_D of every layer. An
// adapter B converted on top of A (A applied while converting B's prompt) already contains A's context
// (paper 000 §4.5: converting X'_2 on top of X'_1 is converting [X'_1; X'_2]); it records A in its base chain
// and may only be applied right after A, so that what a command line says is what the model carries.
// Removing adapters is loading the model without them: the model's own biases come from its checkpoint.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/icl/iclca.hpp"

namespace iclab::icl {

// One adapter of a base chain: what a later adapter records about the adapters applied when it was converted.
struct AdapterLink {
    std::string fingerprint;        // that adapter's Adapter::fingerprint()
    std::size_t prompt_length = 0;  // its M
    std::string prompt_text;        // its prompt as letters ("" when it was given as tokens only)
    std::string file;               // its file as named when converting (information only, never compared)
};

struct Adapter {
    AttentionBiases<double> biases;        // b_kv[l] (H, F, D), b_d[l] (H, F), stored in double whatever the model's dtype
    std::vector<std::int32_t> prompt;      // (M) the prompt's tokens
    std::string prompt_text;               // the prompt as given ("" when given as tokens)
    std::string model_fingerprint;         // icl::model_fingerprint of the model it was made for
    std::vector<AdapterLink> base_chain;   // adapters the model carried while converting, in the order applied
    std::size_t layers = 0, heads = 0, feature_dim = 0, head_dim = 0;  // the model's L, H, F, D
    std::size_t model_parameter_count = 0;  // every parameter of the model (b_KV, b_D included)
    std::string source;                     // where it was converted from, e.g. the run folder (information only)

    std::size_t parameter_count() const {  // = biases.parameter_count(), here so that the file reader links without iclca.cpp
        std::size_t count = 0;
        for (const auto& v : biases.b_kv) count += v.size();
        for (const auto& v : biases.b_d) count += v.size();
        return count;
    }
    double size_percent() const;            // 100 · parameter_count / model_parameter_count
    // FNV-1a 64 (16 hex digits) of the format version, the model fingerprint, the base chain's fingerprints,
    // the prompt tokens and every bias value: names this adapter in later adapters' base chains.
    std::string fingerprint() const;
    AdapterLink link(const std::string& file) const;
};

// The adapter of converted biases for `model` (its fingerprint, shapes and parameter count).
template <class T>
Adapter make_adapter(const model::Transformer<T>& model, const AttentionBiases<T>& biases, std::vector<std::int32_t> prompt,
                     std::string prompt_text, std::vector<AdapterLink> base_chain);

// Writes the adapter with provenance as one HDF5 file, atomically (io::ResultsWriter: <path>.partial.<pid>.<random>, then
// rename). An existing file is replaced only with overwrite; otherwise InputError, and nothing is written.
void write_adapter_file(const std::filesystem::path& path, const Adapter& adapter, bool overwrite = false);

// Reads an adapter file; InputError when the file is missing, is no adapter file, or its contents no longer
// match its recorded fingerprint (edited after writing).
Adapter read_adapter_file(const std::filesystem::path& path);

// Checks `adapter` against `model` and the adapters applied before it and sets the model's biases to it.
// Refused with InputError (exit 2) naming both sides: a model the adapter was not made for (fingerprints),
// a base chain other than `applied_before` (wrong order, a missing or extra base), a model ICLCA does not
// support (check_iclca_assumptions). `name` names the adapter in messages (its file).
template <class T>
void apply_adapter(model::Transformer<T>& model, const Adapter& adapter, const std::vector<AdapterLink>& applied_before,
                   const std::string& name);

// What a model carries after apply_adapter_files: the chain of adapters applied, in order, and the prompt
// they stand for (their prompts concatenated: the model now behaves as if every input were prefixed by it).
struct AppliedAdapters {
    std::vector<AdapterLink> chain;
    std::vector<std::int32_t> context;
};

// Reads and applies adapter files in order (apply_adapter for each).
template <class T>
AppliedAdapters apply_adapter_files(model::Transformer<T>& model, const std::vector<std::filesystem::path>& files);

}  // namespace iclab::icl
