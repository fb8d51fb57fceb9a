#include "experiments/cli/tokenize.hpp"

#include <boost/program_options.hpp>

#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "framework/core/check.hpp"
#include "framework/io/output_path.hpp"
#include "framework/text/bpe.hpp"
#include "framework/text/token_file.hpp"

namespace po = boost::program_options;

namespace iclab::cli {

namespace {

const char* kTokenizeUsage =
    "usage: iclab tokenize --tokenizer DIR (--text TEXT | --text-file FILE)     print the ids, space-separated\n"
    "       iclab tokenize --tokenizer DIR (--ids \"ID ...\" | --ids-file FILE)   print the decoded text\n"
    "       iclab tokenize --tokenizer DIR --out tokens.h5 --train FILE... --heldout FILE...\n"
    "                      [--document-separator LINE] [--source TEXT] [--split-rule TEXT] [--overwrite]\n"
    "       iclab tokenize --tokenizer DIR (--encode-hex-lines FILE | --decode-id-lines FILE)   batch modes (tests)\n"
    "DIR holds encoder.json + vocab.bpe or vocab.json + merges.txt (scripts/text/setup_tokenizer.sh installs GPT-2's)\n";

std::string read_binary_file(const std::string& path, const char* flag) {
    std::ifstream file(path, std::ios::binary);
    ICLAB_INPUT_CHECK(file.good(), "iclab tokenize: cannot read " << flag << " " << path);
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

// "464 3290 ..." -> ids; anything but decimal integers separated by whitespace is refused, naming `what`.
std::vector<std::int32_t> parse_ids(const std::string& text, const std::string& what) {
    std::vector<std::int32_t> ids;
    std::size_t i = 0;
    while (true) {
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        if (i == text.size()) break;
        const std::size_t begin = i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - begin < 10) ++i;
        ICLAB_INPUT_CHECK(i > begin && (i == text.size() || std::isspace(static_cast<unsigned char>(text[i]))),
                          what << ": expected token ids (non-negative integers), found '" << text.substr(begin, 20) << "'");
        const long long id = std::stoll(text.substr(begin, i - begin));
        ICLAB_INPUT_CHECK(id <= INT32_MAX, what << ": id " << id << " is too large");
        ids.push_back(static_cast<std::int32_t>(id));
    }
    return ids;
}

void print_ids(const std::vector<std::int32_t>& ids, std::string& out) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
        if (i) out += ' ';
        out += std::to_string(ids[i]);
    }
    out += '\n';
}

std::string hex_decode(std::string_view hex, const std::string& what) {
    ICLAB_INPUT_CHECK(hex.size() % 2 == 0, what << ": odd number of hex digits");
    const auto digit = [&](char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        throw InputError(what + ": '" + std::string(1, c) + "' is not a hex digit");
    };
    std::string bytes(hex.size() / 2, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(digit(hex[2 * i]) * 16 + digit(hex[2 * i + 1]));
    return bytes;
}

std::string hex_encode(std::string_view bytes) {
    static const char* digits = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * bytes.size());
    for (const char c : bytes) {
        hex += digits[static_cast<unsigned char>(c) >> 4];
        hex += digits[static_cast<unsigned char>(c) & 15];
    }
    return hex;
}

// Each line of `path` through `line_to_output`, one output line per input line.
template <typename Function>
void for_each_line(const std::string& path, const char* flag, Function line_to_output) {
    const std::string text = read_binary_file(path, flag);
    std::string out;
    std::size_t line_number = 0;
    for (std::size_t begin = 0; begin < text.size();) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string::npos) end = text.size();
        ++line_number;
        out += line_to_output(std::string_view(text).substr(begin, end - begin), path + ":" + std::to_string(line_number));
        out += '\n';
        begin = end + 1;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
}

}  // namespace

int command_tokenize(const std::vector<std::string>& args) {
    po::options_description flags(std::string(kTokenizeUsage) + "options");
    std::string tokenizer, text, text_file, ids, ids_file, out, separator, source, split_rule, hex_lines, id_lines;
    std::vector<std::string> train, heldout;
    flags.add_options()("tokenizer", po::value<std::string>(&tokenizer), "the tokenizer folder")(
        "text", po::value<std::string>(&text), "the text to encode")("text-file", po::value<std::string>(&text_file),
                                                                     "encode this file's bytes (invalid UTF-8 reads as U+FFFD)")(
        "ids", po::value<std::string>(&ids), "token ids to decode, separated by spaces")(
        "ids-file", po::value<std::string>(&ids_file), "decode the ids in this file (separated by whitespace)")(
        "out", po::value<std::string>(&out), "write a token file (HDF5, docs/text.md) from --train and --heldout")(
        "train", po::value<std::vector<std::string>>(&train)->multitoken(), "training text files")(
        "heldout", po::value<std::vector<std::string>>(&heldout)->multitoken(), "held-out text files")(
        "document-separator", po::value<std::string>(&separator),
        "a line equal to this separates documents inside a file (default: each file is one document); "
        "documents are joined with <|endoftext|>")(
        "source", po::value<std::string>(&source), "where the text came from (the file's source attribute)")(
        "split-rule", po::value<std::string>(&split_rule), "how train and held-out were cut (the split_rule attribute)")(
        "overwrite", "replace an --out made from other inputs")(
        "encode-hex-lines", po::value<std::string>(&hex_lines), "each line: a text as hex bytes; prints a line of ids per line")(
        "decode-id-lines", po::value<std::string>(&id_lines), "each line: ids; prints the decoded text as hex per line")(
        "help,h", "this help");
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(flags).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const int modes = vm.count("text") + vm.count("text-file") + vm.count("ids") + vm.count("ids-file") + vm.count("out") +
                      vm.count("encode-hex-lines") + vm.count("decode-id-lines");
    ICLAB_INPUT_CHECK(modes == 1, "iclab tokenize: give exactly one of --text, --text-file, --ids, --ids-file, --out, "
                                  "--encode-hex-lines, --decode-id-lines\n" << kTokenizeUsage);
    ICLAB_INPUT_CHECK(vm.count("out") || (train.empty() && heldout.empty() && !vm.count("document-separator") &&
                                          !vm.count("source") && !vm.count("split-rule") && !vm.count("overwrite")),
                      "iclab tokenize: --train, --heldout, --document-separator, --source, --split-rule and --overwrite go with --out");
    ICLAB_INPUT_CHECK(!tokenizer.empty(), "iclab tokenize: missing --tokenizer DIR\n" << kTokenizeUsage);
    if (vm.count("out")) {  // the output policy (framework/io/output_path.hpp), before any work; an up-to-date file is kept
        std::vector<std::filesystem::path> inputs{tokenizer};
        inputs.insert(inputs.end(), train.begin(), train.end());
        inputs.insert(inputs.end(), heldout.begin(), heldout.end());
        io::check_output_file(out, /*overwrite=*/true, "iclab tokenize --out", inputs);
    }
    const text::Bpe bpe = text::Bpe::load(tokenizer);

    if (vm.count("text") || vm.count("text-file")) {
        if (vm.count("text-file")) text = read_binary_file(text_file, "--text-file");
        const auto wall_start = std::chrono::steady_clock::now();
        const std::clock_t cpu_start = std::clock();
        const std::vector<std::int32_t> encoded = bpe.encode(text);
        const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
        std::string line;
        print_ids(encoded, line);
        std::fwrite(line.data(), 1, line.size(), stdout);
        if (vm.count("text-file")) {
            const double megabytes = static_cast<double>(text.size()) / 1e6;
            std::fprintf(stderr, "iclab tokenize: %s: %zu bytes -> %zu tokens; encode %.3f s wall (%.2f MB/s), %.3f s cpu (%.2f MB/s)\n",
                         text_file.c_str(), text.size(), encoded.size(), wall, megabytes / wall, cpu, megabytes / cpu);
        }
        return 0;
    }
    if (vm.count("ids") || vm.count("ids-file")) {
        const std::string decoded =
            vm.count("ids") ? bpe.decode(parse_ids(ids, "--ids")) : bpe.decode(parse_ids(read_binary_file(ids_file, "--ids-file"), ids_file));
        std::fwrite(decoded.data(), 1, decoded.size(), stdout);
        return 0;
    }
    if (vm.count("encode-hex-lines")) {
        for_each_line(hex_lines, "--encode-hex-lines", [&](std::string_view line, const std::string& where) {
            std::string result;
            print_ids(bpe.encode(hex_decode(line, where)), result);
            result.pop_back();
            return result;
        });
        return 0;
    }
    if (vm.count("decode-id-lines")) {
        for_each_line(id_lines, "--decode-id-lines",
                      [&](std::string_view line, const std::string& where) { return hex_encode(bpe.decode(parse_ids(std::string(line), where))); });
        return 0;
    }
    ICLAB_INPUT_CHECK(!train.empty() && !heldout.empty(), "iclab tokenize --out: give --train FILE... and --heldout FILE...");
    text::TokenFileSpec spec;
    spec.train.assign(train.begin(), train.end());
    spec.heldout.assign(heldout.begin(), heldout.end());
    spec.document_separator = separator;
    spec.source = source;
    spec.split_rule = split_rule;
    spec.out = out;
    spec.overwrite = vm.count("overwrite") > 0;
    const text::TokenFileOutcome outcome = text::write_token_file(bpe, spec);
    if (!outcome.written) {
        std::cerr << "iclab tokenize: " << out << " is up to date (same tokenizer, texts and split)\n";
    } else {
        const double megabytes = static_cast<double>(outcome.text_bytes) / 1e6;
        std::fprintf(stderr,
                     "iclab tokenize: %s: train %zu tokens (%zu documents), heldout %zu tokens (%zu documents); encoded %.2f MB "
                     "in %.2f s (%.2f MB/s)%s\n",
                     out.c_str(), outcome.train_tokens, outcome.train_documents, outcome.heldout_tokens, outcome.heldout_documents,
                     megabytes, outcome.encode_seconds, megabytes / outcome.encode_seconds,
                     outcome.invalid_utf8_replaced ? "; invalid UTF-8 read as U+FFFD" : "");
    }
    std::cout << out << std::endl;
    return 0;
}

}  // namespace iclab::cli
