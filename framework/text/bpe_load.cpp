// Loading a GPT-2 tokenizer folder: untrusted files, checked before use (docs/text.md).
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unordered_map>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/io/json.hpp"
#include "framework/text/bpe.hpp"
#include "framework/text/byte_map.hpp"
#include "framework/text/utf8.hpp"

namespace iclab::text {

namespace {

constexpr std::size_t kMaxFileBytes = std::size_t{64} << 20;  // GPT-2's files: 1.0 MB and 0.46 MB
constexpr std::size_t kMaxVocab = std::size_t{1} << 24;

std::string read_text_file(const std::filesystem::path& path) {
    struct stat info {};
    ICLAB_INPUT_CHECK(::stat(path.c_str(), &info) == 0, path.string() << ": cannot read (" << std::strerror(errno) << ")");
    ICLAB_INPUT_CHECK(S_ISREG(info.st_mode), path.string() << ": not a regular file");
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(info.st_size) <= kMaxFileBytes,
                      path.string() << ": " << info.st_size << " bytes, more than the limit of " << kMaxFileBytes);
    std::ifstream file(path, std::ios::binary);
    ICLAB_INPUT_CHECK(file.good(), path.string() << ": cannot read");
    std::string text(static_cast<std::size_t>(info.st_size), '\0');
    file.read(text.data(), static_cast<std::streamsize>(text.size()));
    ICLAB_INPUT_CHECK(static_cast<std::size_t>(file.gcount()) == text.size(), path.string() << ": short read");
    return text;
}

std::string code_point_name(char32_t c) {
    char name[16];
    std::snprintf(name, sizeof name, "U+%04lX", static_cast<unsigned long>(c));
    return name;
}

// The line `number` (from 1) of `text` for an error message, cut to 60 bytes.
std::string shown(std::string_view line) {
    std::string s = io::json_quote(utf8_replace_invalid(line.substr(0, 60)));
    return line.size() > 60 ? s + "..." : s;
}

}  // namespace

std::pair<std::filesystem::path, std::filesystem::path> Bpe::files(const std::filesystem::path& dir) {
    ICLAB_INPUT_CHECK(std::filesystem::is_directory(dir), "tokenizer folder " << dir.string() << " is not a folder");
    const auto has = [&](const char* name) { return std::filesystem::exists(dir / name); };
    const bool openai = has("encoder.json") && has("vocab.bpe");
    const bool hugging_face = has("vocab.json") && has("merges.txt");
    ICLAB_INPUT_CHECK(!(openai && hugging_face), "tokenizer folder " << dir.string()
                          << " holds both encoder.json + vocab.bpe and vocab.json + merges.txt: keep one pair");
    ICLAB_INPUT_CHECK(openai || hugging_face, "tokenizer folder " << dir.string()
                          << " holds neither encoder.json + vocab.bpe nor vocab.json + merges.txt (scripts/text/setup_tokenizer.sh "
                             "installs GPT-2's)");
    const std::filesystem::path vocab = dir / (openai ? "encoder.json" : "vocab.json");
    const std::filesystem::path merges = dir / (openai ? "vocab.bpe" : "merges.txt");
    for (const auto& file : {vocab, merges})
        ICLAB_INPUT_CHECK(std::filesystem::is_regular_file(file), file.string() << ": not a regular file");
    return {vocab, merges};
}

Bpe Bpe::load(const std::filesystem::path& dir) {
    const auto [vocab, merges] = files(dir);
    return from_text(read_text_file(vocab), vocab.string(), read_text_file(merges), merges.string());
}

Bpe Bpe::from_text(std::string_view vocab_json, const std::string& vocab_name, std::string_view merges_text,
                   const std::string& merges_name) {
    Bpe bpe;
    // ---- vocabulary: {"token": id, ...}, ids numbering the tokens 0..V-1 ----
    const io::JsonValue root = io::parse_json(vocab_json, vocab_name);
    const auto& entries = root.as_object(vocab_name);
    const std::size_t vocab = entries.size();
    ICLAB_INPUT_CHECK(vocab >= 256 && vocab <= kMaxVocab,
                      vocab_name << ": " << vocab << " tokens; a byte-level vocabulary has between 256 and " << kMaxVocab);
    std::vector<const std::string*> token_of_id(vocab, nullptr);
    std::unordered_map<std::string, std::int32_t> id_of_token;
    id_of_token.reserve(vocab);
    for (const auto& [token, value] : entries) {
        const std::int64_t id = value.as_int(vocab_name + ": the id of " + shown(token));
        ICLAB_INPUT_CHECK(id >= 0 && static_cast<std::size_t>(id) < vocab,
                          vocab_name << ": token " << shown(token) << " has id " << id << ", outside [0, " << vocab
                                     << "): the ids must number the " << vocab << " tokens 0.." << vocab - 1);
        ICLAB_INPUT_CHECK(token_of_id[id] == nullptr,
                          vocab_name << ": id " << id << " is given to both " << shown(*token_of_id[id]) << " and " << shown(token));
        token_of_id[id] = &token;
        id_of_token.emplace(token, static_cast<std::int32_t>(id));
    }
    bpe.token_bytes_.resize(vocab);
    for (std::size_t id = 0; id < vocab; ++id) {
        const std::string& token = *token_of_id[id];
        ICLAB_INPUT_CHECK(!token.empty(), vocab_name << ": token " << id << " is the empty string");
        std::string& bytes = bpe.token_bytes_[id];
        for (std::size_t position = 0; position < token.size();) {
            const char32_t c = utf8_next(token, position);  // valid: the JSON reader refuses invalid UTF-8
            const int byte = unicode_to_byte(c);
            ICLAB_INPUT_CHECK(byte >= 0, vocab_name << ": token " << shown(token) << " (id " << id << ") has the character "
                                                    << code_point_name(c) << ", which GPT-2's byte map does not use");
            bytes += static_cast<char>(byte);
        }
    }
    std::string one_character;
    for (int byte = 0; byte < 256; ++byte) {
        one_character.clear();
        utf8_append(one_character, byte_to_unicode()[byte]);
        const auto it = id_of_token.find(one_character);
        ICLAB_INPUT_CHECK(it != id_of_token.end(), vocab_name << ": no token for the byte " << byte << " (the character "
                                                               << code_point_name(byte_to_unicode()[byte]) << ")");
        bpe.byte_token_[byte] = it->second;
    }
    if (const auto it = id_of_token.find("<|endoftext|>"); it != id_of_token.end()) bpe.end_of_text_ = it->second;

    // ---- merges: "#version..." then one "left right" per line, in rank order ----
    std::size_t replaced = 0;
    utf8_replace_invalid(merges_text, &replaced);
    ICLAB_INPUT_CHECK(replaced == 0, merges_name << ": not valid UTF-8");
    // An empty file has no header line either (a header alone, 0 merges, is a byte-level vocabulary).
    ICLAB_INPUT_CHECK(!merges_text.empty(), merges_name << ": empty file: expected the header line '#version: 0.2' and the merges");
    std::vector<std::pair<std::string_view, std::string_view>> merges;
    std::unordered_map<std::string, std::size_t> line_of_merge;  // "left right" -> line
    std::size_t line_number = 0;
    for (std::size_t begin = 0; begin < merges_text.size();) {
        std::size_t end = merges_text.find('\n', begin);
        if (end == std::string_view::npos) end = merges_text.size();
        const std::string_view line = merges_text.substr(begin, end - begin);
        ++line_number;
        begin = end + 1;
        if (line_number == 1) {
            ICLAB_INPUT_CHECK(line.substr(0, 8) == "#version", merges_name << ":1: expected the header line '#version: 0.2', found "
                                                                            << shown(line));
            continue;
        }
        const std::size_t space = line.find(' ');
        const bool two_fields = space != std::string_view::npos && space > 0 && space + 1 < line.size() &&
                                line.find_first_of(" \t\r\v\f", space + 1) == std::string_view::npos &&
                                line.find_first_of("\t\r\v\f") == std::string_view::npos;
        ICLAB_INPUT_CHECK(two_fields, merges_name << ":" << line_number << ": expected two tokens separated by one space, found "
                                                  << shown(line));
        const std::string_view left = line.substr(0, space), right = line.substr(space + 1);
        const auto known = [&](std::string_view token) { return id_of_token.count(std::string(token)) > 0; };
        ICLAB_INPUT_CHECK(known(left) && known(right) && known(std::string(left) + std::string(right)),
                          merges_name << ":" << line_number << ": the merge " << shown(line) << " needs " << shown(left) << ", "
                                      << shown(right) << " and " << shown(std::string(left) + std::string(right)) << " in "
                                      << vocab_name << ", and one of them is not there");
        const auto [previous, inserted] = line_of_merge.emplace(std::string(line), line_number);
        ICLAB_INPUT_CHECK(inserted, merges_name << ":" << line_number << ": the merge " << shown(line)
                                                << " repeats line " << previous->second);
        merges.emplace_back(left, right);
    }
    ICLAB_INPUT_CHECK(merges.size() < vocab, merges_name << ": " << merges.size() << " merges for a vocabulary of " << vocab
                                                          << " tokens (each merge makes one token beyond the 256 bytes)");
    bpe.merge_count_ = merges.size();

    // The reference looks a pair's rank up under the key left + "," + right (a JavaScript array used as an object
    // key), so a pair (x, y) of other tokens whose joined key equals a merge's key gets that merge's rank (11 such
    // pairs in GPT-2's files, e.g. ('",', '"') has the rank of ('"', ',"')), and of equal keys the later line's rank
    // holds. Both are kept here. An aliased pair whose concatenation is not a token is left out (the reference
    // would emit an undefined id for it).
    std::unordered_map<std::string, std::int32_t> rank_of_key;
    for (std::size_t rank = 0; rank < merges.size(); ++rank)
        rank_of_key[std::string(merges[rank].first) + "," + std::string(merges[rank].second)] = static_cast<std::int32_t>(rank);
    for (const auto& [key, rank] : rank_of_key) {
        for (std::size_t comma = key.find(','); comma != std::string::npos; comma = key.find(',', comma + 1)) {
            const std::string left = key.substr(0, comma), right = key.substr(comma + 1);
            const auto l = id_of_token.find(left), r = id_of_token.find(right), joined = id_of_token.find(left + right);
            if (l == id_of_token.end() || r == id_of_token.end() || joined == id_of_token.end()) continue;
            bpe.merges_[pair_key(l->second, r->second)] = Merge{rank, joined->second};
        }
    }

    Fnv1a64 hash;
    hash.mix_string("gpt2 byte-level bpe");
    hash.mix_count(vocab);
    for (const std::string& bytes : bpe.token_bytes_) hash.mix_string(bytes);
    hash.mix_count(merges.size());
    for (const auto& [left, right] : merges) {
        hash.mix_string(std::string(left));
        hash.mix_string(std::string(right));
    }
    bpe.fingerprint_ = "fnv1a64:" + hash.hex();
    return bpe;
}

}  // namespace iclab::text
