#include "framework/text/token_file.hpp"

#include <chrono>
#include <fstream>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/text/utf8.hpp"

namespace iclab::text {

namespace {

constexpr const char* kFormat = "iclab tokens 1";

std::string read_file(const std::filesystem::path& path) {
    std::ifstream file(path, std::ios::binary);
    ICLAB_INPUT_CHECK(file.good() && std::filesystem::is_regular_file(path), "cannot read the text file " << path.string());
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

// The documents of one file's text: cut at lines equal to `separator` (none when it is empty). An empty document
// (two separators in a row, or one at the start or end) is refused, so that every <|endoftext|> stands between
// two texts.
std::vector<std::string_view> documents_of(std::string_view text, const std::string& separator, const std::filesystem::path& path) {
    std::vector<std::string_view> documents;
    if (separator.empty()) {
        ICLAB_INPUT_CHECK(!text.empty(), path.string() << ": empty text");
        documents.push_back(text);
        return documents;
    }
    std::size_t document_begin = 0, line_number = 0;
    for (std::size_t begin = 0; begin < text.size();) {
        std::size_t end = text.find('\n', begin);
        const std::size_t next = end == std::string_view::npos ? text.size() : end + 1;
        if (end == std::string_view::npos) end = text.size();
        ++line_number;
        if (text.substr(begin, end - begin) == separator) {
            ICLAB_INPUT_CHECK(begin > document_begin, path.string() << ":" << line_number << ": an empty document before this separator");
            documents.push_back(text.substr(document_begin, begin - document_begin));
            document_begin = next;
        }
        begin = next;
    }
    ICLAB_INPUT_CHECK(text.size() > document_begin, path.string() << ": an empty document after the last separator");
    documents.push_back(text.substr(document_begin));
    return documents;
}

struct SplitText {
    std::vector<std::string> file_texts;  // owns the documents' bytes
    std::vector<std::string_view> documents;
    std::size_t bytes = 0;
};

SplitText read_split(const std::vector<std::filesystem::path>& files, const std::string& separator, Fnv1a64& input_hash) {
    SplitText split;
    split.file_texts.reserve(files.size());  // the views below must not move
    input_hash.mix_count(files.size());
    for (const auto& path : files) {
        split.file_texts.push_back(read_file(path));
        input_hash.mix_string(split.file_texts.back());
        for (const std::string_view document : documents_of(split.file_texts.back(), separator, path)) {
            split.documents.push_back(document);
            split.bytes += document.size();
        }
    }
    return split;
}

std::size_t replaced_in(const std::vector<std::string_view>& documents) {
    std::size_t total = 0;
    for (const auto& document : documents) {
        std::size_t replaced = 0;
        utf8_replace_invalid(document, &replaced);
        total += replaced;
    }
    return total;
}

}  // namespace

TokenFileOutcome write_token_file(const Bpe& bpe, const TokenFileSpec& spec) {
    ICLAB_INPUT_CHECK(!spec.train.empty(), "token file: no training text given");
    ICLAB_INPUT_CHECK(!spec.heldout.empty(), "token file: no held-out text given");
    ICLAB_INPUT_CHECK(spec.document_separator.find('\n') == std::string::npos, "token file: the document separator is one line");
    Fnv1a64 input_hash;
    input_hash.mix_string(kFormat);
    input_hash.mix_string(bpe.fingerprint());
    input_hash.mix_string(spec.document_separator);
    input_hash.mix_string(spec.source);
    input_hash.mix_string(spec.split_rule);
    const SplitText train = read_split(spec.train, spec.document_separator, input_hash);
    const SplitText heldout = read_split(spec.heldout, spec.document_separator, input_hash);
    const std::string input_checksum = "fnv1a64:" + input_hash.hex();

    TokenFileOutcome outcome;
    if (std::filesystem::exists(spec.out)) {
        std::string recorded;
        try {
            const io::ResultsReader existing(spec.out);
            if (existing.has_attr("/", "input_checksum")) recorded = existing.read_attr_string("/", "input_checksum");
        } catch (const Error&) {
            // unreadable: treated as made from other inputs
        }
        if (recorded == input_checksum) return outcome;  // up to date
        ICLAB_INPUT_CHECK(spec.overwrite, spec.out.string() << " exists and was made from other inputs (tokenizer, texts or split): "
                                                                "give --overwrite to replace it");
    }

    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::int32_t> train_ids = bpe.encode_documents(train.documents);
    const std::vector<std::int32_t> heldout_ids = bpe.encode_documents(heldout.documents);
    outcome.encode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    outcome.written = true;
    outcome.train_tokens = train_ids.size();
    outcome.heldout_tokens = heldout_ids.size();
    outcome.train_documents = train.documents.size();
    outcome.heldout_documents = heldout.documents.size();
    outcome.text_bytes = train.bytes + heldout.bytes;
    outcome.invalid_utf8_replaced = replaced_in(train.documents) + replaced_in(heldout.documents);

    io::ResultsWriter writer(spec.out, /*overwrite=*/true);
    io::write_provenance(writer);
    writer.set_attr("format", kFormat);
    writer.set_attr("tokenizer", "GPT-2 byte-level BPE (framework/text/bpe.hpp)");
    writer.set_attr("tokenizer_fingerprint", bpe.fingerprint());
    writer.set_attr("vocab_size", bpe.vocab_size());
    writer.set_attr("end_of_text", static_cast<std::int64_t>(bpe.end_of_text()));
    writer.set_attr("source", spec.source);
    writer.set_attr("split_rule", spec.split_rule);
    writer.set_attr("document_separator", "<|endoftext|> (id " + std::to_string(bpe.end_of_text()) +
                                              ") between consecutive documents, none at the start or end");
    writer.set_attr("train_documents", outcome.train_documents);
    writer.set_attr("heldout_documents", outcome.heldout_documents);
    writer.set_attr("train_bytes", train.bytes);
    writer.set_attr("heldout_bytes", heldout.bytes);
    writer.set_attr("invalid_utf8_replaced", outcome.invalid_utf8_replaced);
    writer.set_attr("input_checksum", input_checksum);
    writer.write_tensor("/train", train_ids.data(), {train_ids.size()}, {{"layout", "(N,) token ids"}});
    writer.write_tensor("/heldout", heldout_ids.data(), {heldout_ids.size()}, {{"layout", "(N,) token ids"}});
    writer.commit();
    return outcome;
}

TokenFile read_token_file(const std::filesystem::path& path) {
    ICLAB_INPUT_CHECK(std::filesystem::is_regular_file(path), "token file " << path.string() << " does not exist");
    const io::ResultsReader reader(path);
    const auto text_attribute = [&](const char* name) {
        ICLAB_INPUT_CHECK(reader.has_attr("/", name), path.string() << ": no attribute " << name << " (not a token file)");
        return reader.read_attr_string("/", name);
    };
    const auto int_attribute = [&](const char* name) {
        ICLAB_INPUT_CHECK(reader.has_attr("/", name), path.string() << ": no attribute " << name << " (not a token file)");
        return reader.read_attr_int64("/", name);
    };
    ICLAB_INPUT_CHECK(text_attribute("format") == kFormat,
                      path.string() << ": format '" << text_attribute("format") << "', expected '" << kFormat << "'");
    TokenFile file;
    file.tokenizer_fingerprint = text_attribute("tokenizer_fingerprint");
    file.source = text_attribute("source");
    file.split_rule = text_attribute("split_rule");
    file.vocab_size = int_attribute("vocab_size");
    file.end_of_text = int_attribute("end_of_text");
    ICLAB_INPUT_CHECK(file.vocab_size > 0 && file.vocab_size <= (std::int64_t{1} << 24),
                      path.string() << ": vocab_size " << file.vocab_size << " is out of range");
    ICLAB_INPUT_CHECK(file.end_of_text >= 0 && file.end_of_text < file.vocab_size,
                      path.string() << ": end_of_text " << file.end_of_text << " is outside [0, vocab_size)");
    for (const char* name : {"train", "heldout"}) {
        const std::string dataset = std::string("/") + name;
        ICLAB_INPUT_CHECK(reader.has(dataset), path.string() << ": no dataset " << dataset);
        io::TensorData<std::int32_t> data = reader.read_int32(dataset);  // verifies the checksum
        ICLAB_INPUT_CHECK(data.shape.size() == 1, path.string() << ": " << dataset << " is not 1-D");
        for (std::size_t i = 0; i < data.values.size(); ++i)
            ICLAB_INPUT_CHECK(data.values[i] >= 0 && data.values[i] < file.vocab_size,
                              path.string() << ": " << dataset << "[" << i << "] = " << data.values[i] << " is outside [0, "
                                            << file.vocab_size << ")");
        (std::string(name) == "train" ? file.train : file.heldout) = std::move(data.values);
    }
    return file;
}

void check_token_file_header(const std::filesystem::path& path) {
    std::error_code error;
    const auto status = std::filesystem::status(path, error);
    ICLAB_INPUT_CHECK(std::filesystem::exists(status), "token file " << path.string() << " does not exist");
    ICLAB_INPUT_CHECK(std::filesystem::is_regular_file(status), "token file " << path.string() << " is not a regular file");
    constexpr std::size_t kHeaderBytes = std::size_t{1} << 20;
    std::ifstream file(path, std::ios::binary);
    ICLAB_INPUT_CHECK(file.good(), "cannot read the token file " << path.string());
    std::string head(kHeaderBytes, '\0');
    file.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(file.gcount()));
    static const std::string signature("\x89HDF\r\n\x1a\n", 8);
    ICLAB_INPUT_CHECK(head.compare(0, signature.size(), signature) == 0,
                      path.string() << " is not an iclab token file (not HDF5; iclab tokenize --out writes one)");
    ICLAB_INPUT_CHECK(head.find(kFormat) != std::string::npos,
                      path.string() << " is not an iclab token file (an HDF5 file without the format '" << kFormat
                                    << "'; iclab tokenize --out writes one)");
}

void check_token_file_tokenizer(const TokenFile& file, const Bpe& bpe, const std::filesystem::path& path) {
    ICLAB_INPUT_CHECK(file.tokenizer_fingerprint == bpe.fingerprint() && static_cast<std::size_t>(file.vocab_size) == bpe.vocab_size(),
                      path.string() << ": made by the tokenizer " << file.tokenizer_fingerprint << " (vocab " << file.vocab_size
                                    << "), not by this one " << bpe.fingerprint() << " (vocab " << bpe.vocab_size() << ")");
}

}  // namespace iclab::text
