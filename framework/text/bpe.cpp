// Encoding and decoding with a loaded vocabulary (loading: bpe_load.cpp).
#include "framework/text/bpe.hpp"

#include <limits>

#include "framework/core/check.hpp"
#include "framework/text/pre_split.hpp"
#include "framework/text/utf8.hpp"

namespace iclab::text {

namespace {
// The word cache is cleared when it holds this many ids (bounds memory on huge, varied inputs).
constexpr std::size_t kCacheIdLimit = std::size_t{1} << 24;
}  // namespace

// BPE inside one piece, as the reference's bpe(): start from the piece's bytes as one-character tokens; repeatedly
// take the adjacent pair of lowest rank (on a tie between different pairs, the rightmost, as the reference's
// rank -> pair object keeps the last one written), merge every occurrence of that pair left to right without
// overlap, until no adjacent pair has a rank.
void Bpe::merge_piece(std::string_view piece, std::vector<std::int32_t>& word) const {
    word.clear();
    for (const char byte : piece) word.push_back(byte_token_[static_cast<unsigned char>(byte)]);
    while (word.size() > 1) {
        std::int32_t best_rank = std::numeric_limits<std::int32_t>::max();
        const Merge* best = nullptr;
        std::int32_t left = -1, right = -1;
        for (std::size_t i = 0; i + 1 < word.size(); ++i) {
            const auto it = merges_.find(pair_key(word[i], word[i + 1]));
            if (it != merges_.end() && it->second.rank <= best_rank) {
                best_rank = it->second.rank;
                best = &it->second;
                left = word[i];
                right = word[i + 1];
            }
        }
        if (best == nullptr) break;
        std::size_t out = 0;
        for (std::size_t i = 0; i < word.size();) {
            if (i + 1 < word.size() && word[i] == left && word[i + 1] == right) {
                word[out++] = best->result;
                i += 2;
            } else {
                word[out++] = word[i++];
            }
        }
        word.resize(out);
    }
}

void Bpe::encode_into(std::string_view valid_text, WordCache& cache, std::vector<std::int32_t>& cached_ids,
                      std::vector<std::int32_t>& out) const {
    std::vector<std::int32_t> word;
    for (const auto& [offset, length] : gpt2_pre_split(valid_text)) {
        const std::string_view piece = valid_text.substr(offset, length);
        auto it = cache.find(piece);
        if (it == cache.end()) {
            merge_piece(piece, word);
            if (cached_ids.size() + word.size() > kCacheIdLimit) {
                cache.clear();
                cached_ids.clear();
            }
            it = cache.emplace(piece, std::make_pair(cached_ids.size(), word.size())).first;
            cached_ids.insert(cached_ids.end(), word.begin(), word.end());
        }
        const auto [first, count] = it->second;
        out.insert(out.end(), cached_ids.begin() + static_cast<std::ptrdiff_t>(first),
                   cached_ids.begin() + static_cast<std::ptrdiff_t>(first + count));
    }
}

std::vector<std::int32_t> Bpe::encode(std::string_view text) const {
    const std::string valid = utf8_replace_invalid(text);
    WordCache cache;
    std::vector<std::int32_t> cached_ids, out;
    out.reserve(valid.size() / 3 + 1);
    encode_into(valid, cache, cached_ids, out);
    return out;
}

std::vector<std::int32_t> Bpe::encode_documents(const std::vector<std::string_view>& documents) const {
    const std::int32_t separator = end_of_text();
    // The cache's keys view these strings: reserved up front, so that they never move.
    std::vector<std::string> valid;
    valid.reserve(documents.size());
    WordCache cache;
    std::vector<std::int32_t> cached_ids, out;
    for (std::size_t d = 0; d < documents.size(); ++d) {
        if (d > 0) out.push_back(separator);
        valid.push_back(utf8_replace_invalid(documents[d]));
        encode_into(valid.back(), cache, cached_ids, out);
    }
    return out;
}

std::string Bpe::decode_bytes(const std::vector<std::int32_t>& ids) const {
    std::string bytes;
    for (std::size_t i = 0; i < ids.size(); ++i) {
        ICLAB_INPUT_CHECK(ids[i] >= 0 && static_cast<std::size_t>(ids[i]) < token_bytes_.size(),
                          "token " << i << ": id " << ids[i] << " is outside the vocabulary [0, " << token_bytes_.size() << ")");
        bytes += token_bytes_[static_cast<std::size_t>(ids[i])];
    }
    return bytes;
}

std::string Bpe::decode(const std::vector<std::int32_t>& ids) const { return utf8_replace_invalid(decode_bytes(ids)); }

std::string Bpe::token_text(std::int32_t id) const {
    ICLAB_INPUT_CHECK(id >= 0 && static_cast<std::size_t>(id) < token_bytes_.size(),
                      "token id " << id << " is outside the vocabulary [0, " << token_bytes_.size() << ")");
    return token_bytes_[static_cast<std::size_t>(id)];
}

std::int32_t Bpe::end_of_text() const {
    ICLAB_INPUT_CHECK(end_of_text_ >= 0, "the tokenizer's vocabulary has no <|endoftext|> token");
    return end_of_text_;
}

}  // namespace iclab::text
