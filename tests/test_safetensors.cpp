// The safetensors reader and writer (framework/io/safetensors): round trip, dtype conversion (F16 subnormals,
// infinities, BF16, F64), and the integrity rules, each refused naming the tensor. PyTorch-written files:
// tests/gpt2/test_gpt2_checkpoint.py.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/safetensors.hpp"

namespace iclab_test_safetensors {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;

namespace {

std::filesystem::path scratch(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / "iclab_test_safetensors";
    std::filesystem::create_directories(dir);
    return dir / name;
}

void write_raw(const std::filesystem::path& path, const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xffu);
    std::ofstream(path, std::ios::binary) << bytes << header << data;
}

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, int begin, int end) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(begin) + "," +
           std::to_string(end) + "]}";
}

std::string refusal(const std::string& header, std::uint64_t data_bytes) {
    try {
        io::parse_safetensors_header(header, data_bytes, "f");
    } catch (const InputError& error) {
        return error.what();
    }
    return "accepted";
}

}  // namespace

TEST_CASE("safetensors written by iclab read back bit-exact, header 8-byte aligned", "[safetensors]") {
    const std::vector<float> a = {1.5f, -2.0f, 3.25f, 1e-30f, -0.0f, 7.0f}, b = {0.125f};
    const auto path = scratch("roundtrip.safetensors");
    io::write_safetensors(path, {{"a.weight", {2, 3}, a.data()}, {"b", {1}, b.data()}, {"empty", {0, 4}, b.data()}},
                          {{"format", "pt"}});
    std::ifstream file(path, std::ios::binary);
    std::uint64_t n = 0;
    file.read(reinterpret_cast<char*>(&n), 8);
    CHECK(n % 8 == 0);
    io::SafetensorsReader reader(path);
    REQUIRE(reader.index().tensors.size() == 3);
    CHECK(reader.index().metadata == std::vector<std::pair<std::string, std::string>>{{"format", "pt"}});
    CHECK(reader.index().find("a.weight")->shape == std::vector<std::size_t>{2, 3});
    const std::vector<float> a_read = reader.read("a.weight");
    CHECK(std::memcmp(a_read.data(), a.data(), 6 * sizeof(float)) == 0);  // -0.0 and the subnormal-free 1e-30 bit-exact
    CHECK(reader.read("b") == b);
    CHECK(reader.read("empty").empty());
    CHECK_THROWS_AS(reader.read("c"), InputError);
}

TEST_CASE("safetensors F16, BF16 and F64 convert exactly to float", "[safetensors]") {
    // F16: 1.0 (0x3c00), -2.5 (0xc100), smallest subnormal 2^-24 (0x0001), largest subnormal (0x03ff), 65504 (0x7bff)
    const std::uint16_t half[] = {0x3c00, 0xc100, 0x0001, 0x03ff, 0x7bff};
    // BF16: 1.0 (0x3f80), -3.0 (0xc040)
    const std::uint16_t bf16[] = {0x3f80, 0xc040};
    const double f64[] = {0.1, -1e30};
    std::string data(reinterpret_cast<const char*>(half), 10);
    data += std::string(reinterpret_cast<const char*>(bf16), 4) + std::string(reinterpret_cast<const char*>(f64), 16);
    const auto path = scratch("dtypes.safetensors");
    write_raw(path, "{" + entry("h", "F16", "[5]", 0, 10) + "," + entry("b", "BF16", "[2]", 10, 14) + "," + entry("d", "F64", "[2, 1]", 14, 30) + "}",
              data);
    io::SafetensorsReader reader(path);
    CHECK(reader.read("h") == std::vector<float>{1.0f, -2.5f, std::ldexp(1.0f, -24), std::ldexp(1023.0f, -24), 65504.0f});
    CHECK(reader.read("b") == std::vector<float>{1.0f, -3.0f});
    CHECK(reader.read("d") == std::vector<float>{static_cast<float>(0.1), static_cast<float>(-1e30)});
    // an F16 infinity (0x7c00) and an F64 beyond float's range are refused by name
    const std::uint16_t inf = 0x7c00;
    write_raw(path, "{" + entry("x.weight", "F16", "[1]", 0, 2) + "}", std::string(reinterpret_cast<const char*>(&inf), 2));
    try {
        io::SafetensorsReader(path).read("x.weight");
        FAIL("an F16 infinity was accepted");
    } catch (const InputError& error) {
        CHECK_THAT(error.what(), Catch::Contains("tensor 'x.weight' holds a non-finite value"));
    }
    const double big = 1e300;
    write_raw(path, "{" + entry("y", "F64", "[]", 0, 8) + "}", std::string(reinterpret_cast<const char*>(&big), 8));
    CHECK_THROWS_WITH(io::SafetensorsReader(path).read("y"), Catch::Contains("tensor 'y' holds 1e+300 at 0, outside the float32 range"));
}

TEST_CASE("safetensors headers breaking an integrity rule are refused naming the tensor", "[safetensors]") {
    const std::string a = entry("a", "F32", "[2]", 0, 8);
    CHECK(refusal("{" + a + "}", 8) == "accepted");
    CHECK(refusal("{" + a + "," + entry("z", "F32", "[0]", 8, 8) + "}", 8) == "accepted");  // an empty tensor at the end
    CHECK_THAT(refusal("{" + a + "}", 12), Catch::Contains("cover 8 bytes of a data buffer of 12"));  // bytes left over
    CHECK_THAT(refusal("{" + entry("a", "F32", "[2]", 4, 12) + "}", 12), Catch::Contains("tensor 'a' starts at byte 4"));  // gap
    CHECK_THAT(refusal("{" + a + "," + entry("b", "F32", "[1]", 4, 8) + "}", 8), Catch::Contains("tensor 'b' [4, 8) overlaps tensor 'a'"));
    CHECK_THAT(refusal("{" + entry("a", "F32", "[2]", 0, 16) + "}", 8), Catch::Contains("tensor 'a': data_offsets [0, 16] lie outside"));
    CHECK_THAT(refusal("{" + entry("a", "F32", "[3]", 0, 8) + "}", 16), Catch::Contains("tensor 'a': data_offsets [0, 8] hold 8 bytes but shape x F32 needs 12"));
    CHECK_THAT(refusal("{" + entry("a", "F32", "[3]", 0, 8) + "}", 8), Catch::Contains("tensor 'a': shape [3] holds more values than the file's data buffer of 8"));
    CHECK_THAT(refusal("{" + entry("a", "F32", "[2]", 8, 0) + "}", 8), Catch::Contains("tensor 'a': data_offsets [8, 0]"));
    CHECK_THAT(refusal("{" + entry("a", "I32", "[2]", 0, 8) + "}", 8), Catch::Contains("tensor 'a': dtype I32 is not supported"));
    CHECK_THAT(refusal("{" + entry("a", "F32", "[-2]", 0, 8) + "}", 8), Catch::Contains("tensor 'a': shape has a negative extent"));
    CHECK_THAT(refusal("{" + entry("a", "F32", "[4294967296, 4294967296, 4294967296]", 0, 8) + "}", 8),
               Catch::Contains("tensor 'a': shape [4294967296, 4294967296, 4294967296] holds more values"));
    CHECK_THAT(refusal("{" + entry("a", "F32", "[1,1,1,1,1,1,1,1,2]", 0, 8) + "}", 8), Catch::Contains("at most 8"));
    CHECK_THAT(refusal("{" + a + "," + a + "}", 8), Catch::Contains("duplicate"));  // the JSON reader refuses repeated names
    CHECK_THAT(refusal("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}", 8), Catch::Contains("unknown field 'extra'"));
    CHECK_THAT(refusal("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8), Catch::Contains("data_offsets"));
    CHECK_THAT(refusal("{\"__metadata__\":{\"k\":1}," + a + "}", 8), Catch::Contains("__metadata__.k"));
    CHECK_THAT(refusal("[1]", 8), Catch::Contains("header"));
    // the file-level checks: a header length past the end, a file shorter than 8 bytes
    const auto path = scratch("short.safetensors");
    std::ofstream(path, std::ios::binary) << std::string("\x10\x00\x00\x00\x00\x00\x00\x00{}", 10);
    CHECK_THROWS_WITH(io::SafetensorsReader(path), Catch::Contains("header length 16 runs past the end of the 10-byte file"));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "abc";
    CHECK_THROWS_WITH(io::SafetensorsReader(path), Catch::Contains("shorter than the 8-byte header length"));
}

}  // namespace iclab_test_safetensors
