#pragma once
// A tokenizer folder's two files read as untrusted input, for commands that carry them into a folder of their own
// (iclab import gpt2, iclab export): each file is opened without following a symbolic link out of its folder, held to
// the loader's size limit, parsed and validated by the loader (Bpe::from_text) before a byte of it is written
// anywhere. A downloaded folder cannot pull another file of the machine into a run.
#include <filesystem>
#include <string>
#include <vector>

namespace iclab::text {

// The loader's limit on one tokenizer file (GPT-2's are 1.0 MB and 0.46 MB).
constexpr std::size_t kMaxTokenizerFileBytes = std::size_t{64} << 20;

struct TokenizerFile {
    std::string name;   // "encoder.json", "vocab.bpe", "vocab.json" or "merges.txt"
    std::string bytes;  // the file's content, validated
};

// The names of the tokenizer pair in `dir`: Hugging Face's (vocab.json + merges.txt) or OpenAI's (encoder.json +
// vocab.bpe), not both, not one of a pair; none is allowed (an empty list). InputError naming `who` otherwise.
std::vector<std::string> tokenizer_file_names(const std::filesystem::path& dir, const std::string& who);

// Both files of the pair, read and validated as above (empty when the folder holds none). InputError naming the file
// when one is a link out of `dir`, not a regular file, over the limit, or refused by the loader.
std::vector<TokenizerFile> read_tokenizer_files(const std::filesystem::path& dir, const std::string& who);

// Writes the files into `folder` (created if missing), each under its own name.
void write_tokenizer_files(const std::vector<TokenizerFile>& files, const std::filesystem::path& folder);

}  // namespace iclab::text
