// GPT-2 byte-level BPE (framework/text): the byte map, the pre-split on hand-checked cases, the UTF-8 repair, the
// merge loop on a tiny vocabulary, the loader's refusals, token files and `iclab tokenize`'s refusals. Byte-identity
// with the reference encoder on 1670 strings and the whole KJV text: tests/text/test_bpe_reference.sh (ctest bpe_reference).
#include <catch2/catch.hpp>

#include <fstream>
#include <set>

#include "framework/core/check.hpp"
#include "framework/io/json.hpp"
#include "framework/io/results_file.hpp"
#include "framework/text/bpe.hpp"
#include "framework/text/byte_map.hpp"
#include "framework/text/pre_split.hpp"
#include "framework/text/token_file.hpp"
#include "framework/text/unicode_classes.hpp"
#include "framework/text/utf8.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_bpe {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab::text;
using Catch::Matchers::Contains;

namespace {

std::string utf8_of(char32_t c) {
    std::string s;
    utf8_append(s, c);
    return s;
}

std::vector<std::string> pieces_of(const std::string& text) {
    std::vector<std::string> pieces;
    for (const auto& [offset, length] : gpt2_pre_split(text)) pieces.push_back(text.substr(offset, length));
    return pieces;
}

// A tiny GPT-2-style vocabulary: the 256 byte tokens (ids 0..255 in byte order), one token per merge, then extra
// tokens; encoder.json and vocab.bpe as text.
struct TinyTokenizer {
    std::vector<std::pair<std::string, std::string>> merges;  // in the byte map's characters
    std::vector<std::string> extra = {"<|endoftext|>"};
    std::string vocab_json() const {
        std::string json = "{";
        int id = 0;
        const auto add = [&](const std::string& token) {
            json += (id ? ", " : "") + io::json_quote(token) + ": " + std::to_string(id);
            ++id;
        };
        for (int b = 0; b < 256; ++b) add(utf8_of(byte_to_unicode()[b]));
        for (const auto& [left, right] : merges) add(left + right);
        for (const auto& token : extra) add(token);
        return json + "}";
    }
    std::string merges_text() const {
        std::string text = "#version: 0.2\n";
        for (const auto& [left, right] : merges) text += left + " " + right + "\n";
        return text;
    }
    Bpe load() const { return Bpe::from_text(vocab_json(), "encoder.json", merges_text(), "vocab.bpe"); }
};

const std::string G = utf8_of(0x120);  // "Ġ": the space byte in the byte map

TinyTokenizer the_tokenizer() {
    TinyTokenizer t;
    t.merges = {{G, "t"}, {"h", "e"}, {G + "t", "he"}, {"a", "a"}};  // ids 256..259, <|endoftext|> 260
    return t;
}

std::string refusal(const std::string& vocab_json, const std::string& merges) {
    try {
        Bpe::from_text(vocab_json, "encoder.json", merges, "vocab.bpe");
    } catch (const InputError& error) {
        return error.what();
    }
    return "(loaded)";
}

}  // namespace

TEST_CASE("the GPT-2 byte map is a bijection onto 256 printable code points", "[bpe]") {
    const auto& map = byte_to_unicode();
    std::set<char32_t> seen(map.begin(), map.end());
    CHECK(seen.size() == 256);
    int identical = 0;
    for (int b = 0; b < 256; ++b) {
        CHECK(unicode_to_byte(map[b]) == b);
        identical += map[b] == char32_t(b);
        CHECK(char_class(map[b]) != CharClass::space);  // no token contains whitespace
    }
    CHECK(identical == 188);  // 33-126, 161-172, 174-255
    CHECK(map[' '] == 0x120);   // "Ġ"
    CHECK(map['\n'] == 0x10A);  // "Ċ"
    CHECK(map[0] == 0x100);
    CHECK(map[173] == 0x143);   // the last of the 68 moved bytes
    CHECK(map['!'] == '!');
    CHECK(unicode_to_byte(0x144) == -1);
    CHECK(unicode_to_byte(' ') == -1);
}

TEST_CASE("the Unicode classes are those of the letter, number and space classes of JavaScript regexes", "[bpe]") {
    CHECK(char_class('a') == CharClass::letter);
    CHECK(char_class('7') == CharClass::number);
    CHECK(char_class(' ') == CharClass::space);
    CHECK(char_class('\'') == CharClass::other);
    CHECK(char_class(0xA0) == CharClass::space);     // no-break space
    CHECK(char_class(0xFEFF) == CharClass::space);   // JavaScript's \s has the BOM
    CHECK(char_class(0x85) == CharClass::other);     // and not NEL (Python's \s has it)
    CHECK(char_class(0x200B) == CharClass::other);   // zero width space is a format character
    CHECK(char_class(0x0301) == CharClass::other);   // combining acute: Mn, not L
    CHECK(char_class(0x00BD) == CharClass::number);  // ½ (No)
    CHECK(char_class(0x2167) == CharClass::number);  // Ⅷ (Nl)
    CHECK(char_class(0x4E2D) == CharClass::letter);  // 中
    CHECK(char_class(0x1D518) == CharClass::letter); // 𝔘 (beyond the BMP table)
    CHECK(char_class(0x1D7D8) == CharClass::number); // 𝟘
    CHECK(char_class(0x1F44D) == CharClass::other);  // 👍
    CHECK(char_class(0x110000) == CharClass::other);
}

TEST_CASE("the pre-split cuts as GPT-2's pattern on hand-checked cases", "[bpe]") {
    using V = std::vector<std::string>;
    CHECK(pieces_of("") == V{});
    CHECK(pieces_of("Hello world") == V{"Hello", " world"});
    CHECK(pieces_of("I'm fine") == V{"I", "'m", " fine"});
    CHECK(pieces_of("don't") == V{"don", "'t"});
    CHECK(pieces_of("they'll've") == V{"they", "'ll", "'ve"});
    CHECK(pieces_of("IT'S") == V{"IT", "'", "S"});  // the contractions are lower case only
    CHECK(pieces_of("'sa") == V{"'s", "a"});
    CHECK(pieces_of("a  b") == V{"a", " ", " b"});  // \s+(?!\S) leaves the last space to the word
    CHECK(pieces_of("a   b") == V{"a", "  ", " b"});
    CHECK(pieces_of("trailing  ") == V{"trailing", "  "});
    CHECK(pieces_of("x \n y") == V{"x", " \n", " y"});
    CHECK(pieces_of("\t\tx") == V{"\t", "\t", "x"});  // " ?" is U+0020 only
    CHECK(pieces_of("line\n\nnext") == V{"line", "\n", "\n", "next"});
    CHECK(pieces_of("123abc 42") == V{"123", "abc", " 42"});
    CHECK(pieces_of("3.14") == V{"3", ".", "14"});
    CHECK(pieces_of("!!! ok ...") == V{"!!!", " ok", " ..."});
    CHECK(pieces_of("e\xCC\x81t") == V{"e", "\xCC\x81", "t"});  // e + combining acute: the mark is not a letter
    CHECK(pieces_of("\xC2\xA0x") == V{"\xC2\xA0", "x"});        // no-break space: \s, but not the optional " "
    CHECK(pieces_of("\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD ok") == V{"\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", " ok"});  // 👍🏽
    CHECK(pieces_of("\xF0\x9D\x94\x98\xF0\x9D\x94\xAB x\xF0\x9D\x9F\x98") ==
          V{"\xF0\x9D\x94\x98\xF0\x9D\x94\xAB", " x", "\xF0\x9D\x9F\x98"});  // 𝔘𝔫 x𝟘
}

TEST_CASE("invalid UTF-8 is replaced as the WHATWG decoder replaces it", "[bpe]") {
    const std::string R = "\xEF\xBF\xBD";
    std::size_t count = 99;
    CHECK(utf8_replace_invalid("plain \xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x91\x8D", &count) == "plain \xC3\xA9 \xE4\xB8\xAD \xF0\x9F\x91\x8D");
    CHECK(count == 0);
    CHECK(utf8_replace_invalid("\xFF", &count) == R);
    CHECK(count == 1);
    CHECK(utf8_replace_invalid("ab\xE2\x82") == "ab" + R);           // a truncated sequence at the end: one U+FFFD
    CHECK(utf8_replace_invalid("\xE2\x82" "a") == R + "a");          // cut by an ASCII byte: one U+FFFD, the byte kept
    CHECK(utf8_replace_invalid("\xED\xA0\x80", &count) == R + R + R); // a surrogate: ED is cut at A0
    CHECK(count == 3);
    CHECK(utf8_replace_invalid("\xF0\x80\x80\xAF") == R + R + R + R);  // overlong
    CHECK(utf8_replace_invalid("\xC0\xAF") == R + R);
    CHECK(utf8_replace_invalid("\xF4\x90\x80\x80") == R + R + R + R);  // beyond U+10FFFF
    CHECK(utf8_replace_invalid("\xF0\x9F\x98 x") == R + " x");
    CHECK(utf8_replace_invalid("\x80\x80") == R + R);
    CHECK(utf8_replace_invalid("\xEF\xBB\xBF" "a") == "\xEF\xBB\xBF" "a");  // a BOM is kept
}

TEST_CASE("merges apply by rank inside each piece, and decode inverts encode", "[bpe]") {
    const Bpe bpe = the_tokenizer().load();
    CHECK(bpe.vocab_size() == 261);
    CHECK(bpe.merge_count() == 4);
    CHECK(bpe.end_of_text() == 260);
    CHECK(bpe.encode(" the") == std::vector<std::int32_t>{258});         // Ġ+t (0), h+e (1), then Ġt+he (2)
    CHECK(bpe.encode("the") == std::vector<std::int32_t>{'t', 257});     // no leading space: t, he
    CHECK(bpe.encode("aaa") == std::vector<std::int32_t>{259, 'a'});     // left to right, without overlap
    CHECK(bpe.encode("aaaa the") == std::vector<std::int32_t>{259, 259, 258});
    CHECK(bpe.encode("<|endoftext|>") != std::vector<std::int32_t>{260});  // text never becomes the special token
    CHECK(bpe.token_text(258) == " the");
    CHECK(bpe.token_text(260) == "<|endoftext|>");
    for (const std::string text : {"", " the aaa\n\n", "caf\xC3\xA9 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD  \t x", "\xEF\xBB\xBF" "BOM"})
        CHECK(bpe.decode(bpe.encode(text)) == text);
    // Invalid UTF-8 encodes as its replacement; a sequence cut mid-character decodes to U+FFFD.
    CHECK(bpe.encode("a\xFF") == bpe.encode("a\xEF\xBF\xBD"));
    CHECK(bpe.decode({0xC3}) == "\xEF\xBF\xBD");
    CHECK(bpe.decode({0xC3, 0xA9}) == "\xC3\xA9");
    CHECK(bpe.decode_bytes({0xC3}) == "\xC3");
    CHECK(bpe.encode_documents({"the", " the"}) == std::vector<std::int32_t>{'t', 257, 260, 258});
    CHECK_THROWS_WITH(bpe.decode({5, 261}), Contains("token 1: id 261 is outside the vocabulary [0, 261)"));
    CHECK_THROWS_WITH(bpe.token_text(-1), Contains("outside the vocabulary"));
}

TEST_CASE("a pair whose joined key equals a merge's key gets its rank, as in the reference", "[bpe]") {
    // The reference keys ranks by left + "," + right: ('",', '"') -> '",,"' is the key of the merge ('"', ',"').
    TinyTokenizer t;
    t.merges = {{"\"", ","}, {",", "\""}, {"\"", ",\""}};  // ids 256, 257, 258
    const Bpe bpe = t.load();
    CHECK(bpe.encode("\",\"") == std::vector<std::int32_t>{258});  // exact pair ranks would give {256, '"'}
}

TEST_CASE("the fingerprint covers vocabulary and merges, not the file format", "[bpe]") {
    TinyTokenizer t = the_tokenizer();
    const std::string base = t.load().fingerprint();
    CHECK(base.rfind("fnv1a64:", 0) == 0);
    CHECK(t.load().fingerprint() == base);
    std::swap(t.merges[0], t.merges[1]);  // the same tokens, another merge order
    CHECK(t.load().fingerprint() != base);
}

TEST_CASE("the tokenizer loader refuses damaged files by name and line", "[bpe]") {
    const TinyTokenizer t = the_tokenizer();
    const std::string vocab = t.vocab_json(), merges = t.merges_text();
    const auto replaced = [](std::string text, const std::string& from, const std::string& to) {
        const auto at = text.find(from);
        REQUIRE(at != std::string::npos);
        return text.replace(at, from.size(), to);
    };
    CHECK_THAT(refusal(replaced(vocab, "\"<|endoftext|>\": 260", "\"<|endoftext|>\": 38"), merges),
               Contains("encoder.json: id 38 is given to both \"&\" and \"<|endoftext|>\""));
    CHECK_THAT(refusal(replaced(vocab, "\"<|endoftext|>\": 260", "\"<|endoftext|>\": 261"), merges),
               Contains("has id 261, outside [0, 261)"));
    CHECK_THAT(refusal(replaced(vocab, "\"<|endoftext|>\": 260", "\"<|endoftext|>\": -1"), merges), Contains("outside [0, 261)"));
    CHECK_THAT(refusal(replaced(vocab, "\"<|endoftext|>\": 260", "\"<|endoftext|>\": 2.5"), merges), Contains("expected an integer"));
    CHECK_THAT(refusal(replaced(vocab, "\"<|endoftext|>\"", "\"\xE2\x82\xAC\""), merges), Contains("U+20AC, which GPT-2's byte map does not use"));
    CHECK_THAT(refusal(replaced(vocab, "\"A\": 65", "\"" + G + "A\": 65"), merges), Contains("no token for the byte 65"));
    CHECK_THAT(refusal("[1, 2]", merges), Contains("encoder.json: expected an object"));
    CHECK_THAT(refusal("{\"a\": 0", merges), Contains("encoder.json"));
    CHECK_THAT(refusal(vocab, replaced(merges, "#version: 0.2\n", "")), Contains("vocab.bpe:1: expected the header line"));
    CHECK_THAT(refusal(vocab, replaced(merges, "h e\n", "h  e\n")), Contains("vocab.bpe:3: expected two tokens separated by one space"));
    CHECK_THAT(refusal(vocab, replaced(merges, "h e\n", "h\te\n")), Contains("vocab.bpe:3: expected two tokens"));
    CHECK_THAT(refusal(vocab, replaced(merges, "h e\n", "he\n")), Contains("vocab.bpe:3: expected two tokens"));
    CHECK_THAT(refusal(vocab, replaced(merges, "h e\n", "h e\r\n")), Contains("vocab.bpe:3: expected two tokens"));
    CHECK_THAT(refusal(vocab, replaced(merges, "h e\n", "h e\n\n")), Contains("vocab.bpe:4: expected two tokens"));
    CHECK_THAT(refusal(vocab, replaced(merges, "a a\n", "a a\nh e\n")), Contains("vocab.bpe:6: the merge \"h e\" repeats line 3"));
    CHECK_THAT(refusal(vocab, replaced(merges, "a a\n", "a b\n")), Contains("vocab.bpe:5: the merge \"a b\" needs"));
    CHECK_THAT(refusal(vocab, merges + "\xFF\n"), Contains("vocab.bpe: not valid UTF-8"));
    CHECK(refusal(vocab, merges) == "(loaded)");
    CHECK(refusal(vocab, replaced(merges, "a a\n", "a a")) == "(loaded)");  // no newline at the end is fine
}

TEST_CASE("a tokenizer folder holds one pair of files", "[bpe]") {
    iclab_test::Scratch scratch;
    const TinyTokenizer t = the_tokenizer();
    const auto write = [&](const std::string& name, const std::string& text) { std::ofstream(scratch.path / name) << text; };
    CHECK_THROWS_WITH(Bpe::load(scratch.path / "missing"), Contains("is not a folder"));
    write("encoder.json", t.vocab_json());
    write("merges.txt", t.merges_text());
    CHECK_THROWS_WITH(Bpe::load(scratch.path), Contains("holds neither encoder.json + vocab.bpe nor vocab.json + merges.txt"));
    write("vocab.bpe", t.merges_text());
    const std::string fingerprint = Bpe::load(scratch.path).fingerprint();
    write("vocab.json", t.vocab_json());
    CHECK_THROWS_WITH(Bpe::load(scratch.path), Contains("keep one pair"));
    std::filesystem::remove(scratch.path / "encoder.json");
    CHECK(Bpe::load(scratch.path).fingerprint() == fingerprint);  // Hugging Face's names, the same content
    write("merges.txt", t.merges_text() + "h\n");
    CHECK_THROWS_WITH(Bpe::load(scratch.path), Contains("merges.txt:6: expected two tokens"));
}

TEST_CASE("token files hold documents joined with <|endoftext|>, checked when read", "[bpe]") {
    iclab_test::Scratch scratch;
    const Bpe bpe = the_tokenizer().load();
    const auto write = [&](const std::string& name, const std::string& text) { std::ofstream(scratch.path / name) << text; };
    write("a.txt", "the aaa\n<|endoftext|>\n the\n");
    write("b.txt", "aaaa\n");
    write("h.txt", "the the\n");
    TokenFileSpec spec;
    spec.train = {scratch.path / "a.txt", scratch.path / "b.txt"};
    spec.heldout = {scratch.path / "h.txt"};
    spec.document_separator = "<|endoftext|>";
    spec.source = "test";
    spec.split_rule = "by file";
    spec.out = scratch.path / "tokens.h5";
    const TokenFileOutcome first = write_token_file(bpe, spec);
    CHECK(first.written);
    CHECK(first.train_documents == 3);
    CHECK(first.heldout_documents == 1);
    const TokenFile file = read_token_file(spec.out);
    std::vector<std::int32_t> expected = bpe.encode("the aaa\n");
    expected.push_back(260);
    for (const auto id : bpe.encode(" the\n")) expected.push_back(id);
    expected.push_back(260);
    for (const auto id : bpe.encode("aaaa\n")) expected.push_back(id);
    CHECK(file.train == expected);
    CHECK(file.heldout == bpe.encode("the the\n"));
    CHECK(file.tokenizer_fingerprint == bpe.fingerprint());
    CHECK(file.split_rule == "by file");
    CHECK(file.vocab_size == 261);
    CHECK(file.end_of_text == 260);
    check_token_file_tokenizer(file, bpe, spec.out);
    CHECK_THROWS_WITH(check_token_file_tokenizer(file, [] { TinyTokenizer t = the_tokenizer(); t.extra.push_back("zz"); return t.load(); }(), spec.out),
                      Contains("made by the tokenizer"));

    const auto modified = std::filesystem::last_write_time(spec.out);
    CHECK_FALSE(write_token_file(bpe, spec).written);  // the same inputs: nothing is done
    CHECK(std::filesystem::last_write_time(spec.out) == modified);
    write("h.txt", "aa\n");
    CHECK_THROWS_WITH(write_token_file(bpe, spec), Contains("exists and was made from other inputs"));
    spec.overwrite = true;
    CHECK(write_token_file(bpe, spec).written);
    CHECK(read_token_file(spec.out).heldout == std::vector<std::int32_t>{259, '\n'});

    write("h.txt", "aa\n<|endoftext|>\n");
    CHECK_THROWS_WITH(write_token_file(bpe, spec), Contains("h.txt: an empty document after the last separator"));
    write("h.txt", "<|endoftext|>\naa\n");
    CHECK_THROWS_WITH(write_token_file(bpe, spec), Contains("h.txt:1: an empty document before this separator"));

    // A file with an id beyond the vocabulary, or without the attributes, is refused.
    {
        io::ResultsWriter writer(scratch.path / "bad.h5");
        writer.set_attr("format", "iclab tokens 1");
        for (const char* name : {"tokenizer_fingerprint", "source", "split_rule"}) writer.set_attr(name, "x");
        writer.set_attr("vocab_size", 261);
        writer.set_attr("end_of_text", 260);
        const std::vector<std::int32_t> ids = {1, 261};
        writer.write_tensor("/train", ids.data(), {2});
        writer.write_tensor("/heldout", ids.data(), {1});
        writer.commit();
    }
    CHECK_THROWS_WITH(read_token_file(scratch.path / "bad.h5"), Contains("/train[1] = 261 is outside [0, 261)"));
    {
        io::ResultsWriter writer(scratch.path / "other.h5");
        writer.set_attr("format", "iclab tokens 1");
        writer.commit();
    }
    CHECK_THROWS_WITH(read_token_file(scratch.path / "other.h5"), Contains("no attribute tokenizer_fingerprint"));
}

TEST_CASE("iclab tokenize encodes, decodes and refuses bad input with exit 2, writing nothing", "[bpe][cli]") {
    iclab_test::Scratch scratch;
    const TinyTokenizer t = the_tokenizer();
    std::ofstream(scratch.path / "encoder.json") << t.vocab_json();
    std::ofstream(scratch.path / "vocab.bpe") << t.merges_text();
    const std::string tokenizer = "--tokenizer '" + scratch.path.string() + "' ";
    auto r = iclab_test::run_iclab("tokenize " + tokenizer + "--text ' the aaa'", scratch.path);
    CHECK(r.status == 0);
    CHECK(r.out == "258 32 259 97\n");  // " the", " " (Ġ), "aa", "a"
    r = iclab_test::run_iclab("tokenize " + tokenizer + "--ids '258 32 259 97'", scratch.path);
    CHECK(r.status == 0);
    CHECK(r.out == " the aaa");
    r = iclab_test::run_iclab("tokenize " + tokenizer + "--ids '258 x'", scratch.path);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("--ids: expected token ids"));
    r = iclab_test::run_iclab("tokenize " + tokenizer + "--ids '261'", scratch.path);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("id 261 is outside the vocabulary"));
    r = iclab_test::run_iclab("tokenize " + tokenizer + "--text a --ids 1", scratch.path);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("give exactly one of"));
    r = iclab_test::run_iclab("tokenize --text a", scratch.path);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("missing --tokenizer"));
    std::ofstream(scratch.path / "train.txt") << "the\n";
    // a token file never lands inside the tokenizer folder it reads (docs/cli.md, where iclab writes)
    r = iclab_test::run_iclab("tokenize " + tokenizer + "--out '" + (scratch.path / "t.h5").string() + "' --train '" +
                                  (scratch.path / "train.txt").string() + "' --heldout '" + (scratch.path / "train.txt").string() + "'",
                              scratch.path);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("lies inside an input of the command"));
    const std::filesystem::path out = std::filesystem::temp_directory_path() / ("iclab_t_" + std::to_string(::getpid()) + ".h5");
    r = iclab_test::run_iclab("tokenize " + tokenizer + "--out '" + out.string() + "' --train '" +
                                  (scratch.path / "train.txt").string() + "' --heldout '" + (scratch.path / "missing.txt").string() + "'",
                              scratch.path);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("cannot read the text file"));
    CHECK_FALSE(std::filesystem::exists(out));
    CHECK_FALSE(std::filesystem::exists(scratch.path / "t.h5"));
    std::ofstream(scratch.path / "vocab.bpe") << "#version: 0.2\nh e\nh e\n";
    r = iclab_test::run_iclab("tokenize " + tokenizer + "--text a", scratch.path);
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Contains("vocab.bpe:3: the merge \"h e\" repeats line 2"));
}

}  // namespace iclab_test_bpe
