#pragma once
// Token files (docs/text.md): a tokenized corpus for language-model training, one HDF5 file
//   /train, /heldout          int32 (N,) token ids; documents joined with <|endoftext|> between consecutive ones;
//                             attribute checksum = fnv1a64 of the values (the results-file convention, verified on read)
//   root attributes           format, tokenizer_fingerprint, vocab_size, end_of_text, source, split_rule,
//                             document_separator, <split>_documents, <split>_bytes, invalid_utf8_replaced,
//                             input_checksum, and the provenance of results files (git_commit, ...)
// written under a temporary name and renamed when complete.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "framework/text/bpe.hpp"

namespace iclab::text {

struct TokenFileSpec {
    std::vector<std::filesystem::path> train, heldout;  // text files; each holds one or more documents
    // A line equal to this separates documents inside a file ("": each file is one document). The separator
    // lines are not part of any document's text.
    std::string document_separator;
    std::string source;      // where the text came from, e.g. "bible-kjv 4.38: bible -f Gen1:1-Rev22:21"
    std::string split_rule;  // how train and held-out were cut, e.g. "every 20th chapter held out"
    std::filesystem::path out;
    bool overwrite = false;
};

struct TokenFileOutcome {
    bool written = false;  // false: `out` already held these inputs' tokens (nothing was done)
    std::size_t train_tokens = 0, heldout_tokens = 0;
    std::size_t train_documents = 0, heldout_documents = 0;
    std::size_t text_bytes = 0;        // bytes of document text encoded
    double encode_seconds = 0.0;       // wall time of the encoding alone
    std::size_t invalid_utf8_replaced = 0;
};

// Encodes the texts and writes spec.out atomically. When spec.out exists and was made from the same inputs
// (tokenizer, texts, separator, source, split rule: attribute input_checksum), nothing is done; when it was
// made from other inputs, InputError unless spec.overwrite.
TokenFileOutcome write_token_file(const Bpe& bpe, const TokenFileSpec& spec);

struct TokenFile {
    std::vector<std::int32_t> train, heldout;
    std::string tokenizer_fingerprint, source, split_rule;
    std::int64_t vocab_size = 0, end_of_text = 0;
};

// Reads and checks a token file: format, attributes, 1-D int32 datasets, their checksums, ids in [0, vocab_size).
// Every failure is an InputError naming the file and the field.
TokenFile read_token_file(const std::filesystem::path& path);

// A quick look that does not read the datasets (sweep planning, iclab run --dry-run): InputError naming `path` unless it
// is a regular file that starts with the HDF5 signature and holds the format attribute's value within its first MiB
// (where iclab's writer puts the root attributes, before the datasets). read_token_file checks everything.
void check_token_file_header(const std::filesystem::path& path);

// InputError unless the file was made by this tokenizer (fingerprint and vocabulary size).
void check_token_file_tokenizer(const TokenFile& file, const Bpe& bpe, const std::filesystem::path& path);

}  // namespace iclab::text
