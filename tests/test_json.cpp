// The strict JSON reader (framework/io/json.hpp) that safetensors headers, config.json and the BPE vocabulary go through.
#include <catch2/catch.hpp>

#include <string>

#include "framework/core/check.hpp"
#include "framework/io/json.hpp"

namespace iclab_test_json {  // this file's names (unity build: CMakeLists.txt)

using iclab::io::parse_json;

TEST_CASE("json: values, nesting, key order and exact integers", "[json]") {
    const auto doc = parse_json(R"( {"b": [1, -2.5e3, true, null, "x"], "a": {"n": 9007199254740993}, "": 0} )", "doc");
    const auto& members = doc.as_object("doc");
    REQUIRE(members.size() == 3);
    CHECK(members[0].first == "b");  // file order kept
    CHECK(members[1].first == "a");
    const auto& b = doc.at("b", "doc").as_array("b");
    CHECK(b[0].as_int("b0") == 1);
    CHECK(b[1].as_double("b1") == -2500.0);
    CHECK_THROWS_AS(b[1].as_int("b1"), iclab::InputError);  // an exponent is not an integer
    CHECK(b[2].as_bool("b2"));
    CHECK(b[3].is_null());
    CHECK(b[4].as_string("b4") == "x");
    // 2^53 + 1 is not representable in double: the integer comes from the text.
    CHECK(doc.at("a", "doc").at("n", "a").as_int("n") == 9007199254740993LL);
    CHECK(doc.find("missing") == nullptr);
    CHECK_THROWS_WITH(doc.at("missing", "doc"), Catch::Contains("missing key \"missing\""));
    CHECK_THROWS_WITH(doc.at("b", "doc").as_string("doc.b"), Catch::Contains("doc.b: expected a string, found an array"));
}

TEST_CASE("json: string escapes, surrogate pairs and UTF-8", "[json]") {
    CHECK(parse_json(R"("a\"\\\/\b\f\n\r\t")", "s").as_string("s") == "a\"\\/\b\f\n\r\t");
    CHECK(parse_json(R"("\u0120\u00e9")", "s").as_string("s") == "\xC4\xA0\xC3\xA9");        // Ġé
    CHECK(parse_json(R"("\ud83d\ude00")", "s").as_string("s") == "\xF0\x9F\x98\x80");        // 😀 from a pair
    CHECK(parse_json("\"\xF0\x9F\x98\x80 \xE4\xB8\xAD\"", "s").as_string("s") == "\xF0\x9F\x98\x80 \xE4\xB8\xAD");
    // json_quote then parse gives the text back, control characters included.
    const std::string text = std::string("tab\there \"q\" \\ \x01 ") + "\xC3\xA9\xF0\x9F\x98\x80";
    CHECK(parse_json(iclab::io::json_quote(text), "q").as_string("q") == text);
}

TEST_CASE("json: malformed and hostile input is refused with the byte offset", "[json]") {
    const char* bad[] = {
        "",  "{",  "[1,]",  "{\"a\":1,}",  "{\"a\":1 \"b\":2}",  "{\"a\":1,\"a\":2}",  "NaN",  "Infinity",  "-",  "01",
        "1.",  "1e",  "\"abc",  "\"\\x\"",  "\"\\ud800\"",  "\"\\udc00\"",  "\"\\ud800\\u0041\"",  "\"\x01\"",
        "\"\xC0\xAF\"",  "\"\xED\xA0\x80\"",  "\"\xF5\x80\x80\x80\"",  "\"\xE2\x82\"",  "tru",  "[1] 2",  "// c\n1",
        "1e999",  "{1:2}",  "[\"a\" \"b\"]",
    };
    for (const char* text : bad) {
        INFO("input: " << text);
        CHECK_THROWS_AS(parse_json(text, "t"), iclab::InputError);
    }
    CHECK_THROWS_WITH(parse_json("[1,]", "f.json"), Catch::StartsWith("f.json: invalid JSON at byte 3"));
    // Depth is bounded, so a deep nest cannot exhaust the stack.
    const std::string deep = std::string(100000, '[') + std::string(100000, ']');
    CHECK_THROWS_WITH(parse_json(deep, "deep"), Catch::Contains("nested deeper than 64"));
    const std::string ok = std::string(64, '[') + std::string(64, ']');
    CHECK(parse_json(ok, "ok").is_array());
    CHECK_THROWS_WITH(iclab::io::json_quote("\xFF"), Catch::Contains("invalid UTF-8"));
}

}  // namespace iclab_test_json
