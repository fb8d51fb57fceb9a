#include "experiments/cli/lm_input.hpp"

#include <type_traits>

#include "framework/core/check.hpp"
#include "framework/run/lm_run.hpp"

namespace iclab::cli {

text::Bpe load_run_tokenizer(const std::filesystem::path& run_dir, const std::string& who) {
    const std::filesystem::path dir = run_dir / run::kTokenizerFolder;
    ICLAB_INPUT_CHECK(std::filesystem::is_directory(dir),
                      who << ": " << run_dir.string() << " has no tokenizer (" << dir.string()
                          << " with encoder.json + vocab.bpe or vocab.json + merges.txt): give token ids instead of text");
    return text::Bpe::load(dir);
}

std::vector<std::int32_t> lm_input_tokens(const std::filesystem::path& run_dir, const std::string* text,
                                          const std::vector<int>& ids, std::size_t vocab, std::size_t context,
                                          const std::string& who, const std::string& flag) {
    std::vector<std::int32_t> tokens;
    if (text != nullptr) {
        const text::Bpe bpe = load_run_tokenizer(run_dir, who);
        ICLAB_INPUT_CHECK(bpe.vocab_size() <= vocab, who << ": the tokenizer of " << run_dir.string() << " has " << bpe.vocab_size()
                                                         << " tokens, the model " << vocab);
        tokens = bpe.encode(*text);
    } else {
        tokens.assign(ids.begin(), ids.end());
    }
    ICLAB_INPUT_CHECK(!tokens.empty(), who << ": " << flag << " is empty");
    for (std::size_t t = 0; t < tokens.size(); ++t)
        ICLAB_INPUT_CHECK(tokens[t] >= 0 && static_cast<std::size_t>(tokens[t]) < vocab,
                          who << ": " << flag << ": id " << tokens[t] << " at position " << t << " is outside the vocabulary of " << vocab);
    ICLAB_INPUT_CHECK(context == 0 || tokens.size() <= context,
                      who << ": " << flag << " has " << tokens.size() << " tokens, more than the model's context of " << context
                          << " tokens (task.context_length)");
    return tokens;
}

const char* LmAdapters::kind() const {
    if (has_iclaa)
        return iclaa.keep_tokens == 0 ? "ICLAA: approximate"
               : iclaa.keep_tokens == iclaa.prompt.size() ? "hybrid keeping every prompt token: the exact prompt cache"
                                                          : "hybrid: recent-K cache + ICLAA, approximate";
    if (has_cache) return cache.selection == "exact" ? "exact prompt cache" : "truncated prompt cache";
    return "";
}

template <class T>
void apply_lm_adapters(LmAdapters& out, model::Transformer<T>& model, const std::vector<std::filesystem::path>& files,
                       const std::string& who) {
    std::size_t iclaa_files = 0, cache_files = 0;
    for (const auto& file : files) {
        iclaa_files += icl::is_iclaa_adapter_file(file);
        cache_files += icl::is_cache_adapter_file(file);
    }
    ICLAB_INPUT_CHECK(iclaa_files + cache_files == 0 || files.size() == 1,
                      who << ": an ICLAA or prompt-cache adapter is applied alone (convert the whole prompt instead)");
    if constexpr (!std::is_same_v<T, double>) {
        ICLAB_INPUT_CHECK(iclaa_files + cache_files == 0,
                          who << ": " << files[0].string() << " is an ICLAA, hybrid or prompt-cache adapter, whose prompt terms are "
                                 "float64: --dtype float32 applies ICLCA adapters only (use --dtype float64)");
        out.applied = icl::apply_adapter_files(model, files);
    } else if (cache_files == 1) {
        out.cache = icl::read_cache_adapter(files[0]);
        icl::check_cache_adapter(model, out.cache, files[0].string());
        out.has_cache = true;
        out.applied.context = out.cache.prompt;
        out.applied.chain.push_back({out.cache.model_fingerprint, out.cache.prompt.size(), out.cache.prompt_text, files[0].string()});
    } else if (iclaa_files == 1) {
        out.iclaa = icl::read_iclaa_adapter(files[0]);
        out.iclaa.point_terms_at_maps();
        icl::check_iclaa_adapter(model, out.iclaa, files[0].string());
        out.has_iclaa = true;
        out.applied.context = out.iclaa.prompt;
        out.applied.chain.push_back({out.iclaa.model_fingerprint, out.iclaa.prompt.size(), out.iclaa.prompt_text, files[0].string()});
    } else {
        out.applied = icl::apply_adapter_files(model, files);
    }
}

template void apply_lm_adapters(LmAdapters&, model::Transformer<float>&, const std::vector<std::filesystem::path>&,
                                const std::string&);
template void apply_lm_adapters(LmAdapters&, model::Transformer<double>&, const std::vector<std::filesystem::path>&,
                                const std::string&);

}  // namespace iclab::cli
