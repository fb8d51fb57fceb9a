// libFuzzer target: the safetensors reader (framework/io/safetensors) on arbitrary file contents, the way
// `iclab import gpt2` reads model.safetensors: open (header length, JSON header, offsets), then read every tensor.
// Damaged input must end in iclab::InputError; a crash, a hang, an allocation beyond the input's size, any other
// exception or UB is a finding. On an empty corpus it writes its own seeds (ICLAB_FUZZ_SEED=FOLDER): a file written
// by write_safetensors (F32, metadata) and a hand-made one with F16, BF16, F64 and an empty tensor.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/safetensors.hpp"

namespace {

std::string scratch_file() {
    const char* root = std::getenv("ICLAB_FUZZ_TMP");
    return std::string(root ? root : "/tmp") + "/iclab_fuzz_st." + std::to_string(::getpid()) + ".safetensors";
}

void write_raw(const std::string& path, const std::string& header, const std::string& data) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xffu);
    std::ofstream(path, std::ios::binary) << bytes << header << data;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    if (const char* seed = std::getenv("ICLAB_FUZZ_SEED")) {
        const std::filesystem::path folder(seed);
        std::filesystem::create_directories(folder);
        const std::vector<float> w = {0.5f, -1.0f, 2.0f, 0.125f, 3.0f, -0.75f}, b = {1.0f, 2.0f};
        iclab::io::write_safetensors(folder / "f32.safetensors", {{"h.0.attn.c_attn.weight", {2, 3}, w.data()}, {"ln_f.bias", {2}, b.data()}},
                                     {{"format", "pt"}});
        // F16 1.0 = 0x3c00, BF16 -2.0 = 0xc000, F64 0.5
        const std::string data = std::string("\x00\x3c\x00\x3c", 4) + std::string("\x00\xc0", 2) +
                                 std::string("\x00\x00\x00\x00\x00\x00\xe0\x3f", 8);
        write_raw((folder / "mixed.safetensors").string(),
                  "{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"BF16\",\"shape\":[1,1],"
                  "\"data_offsets\":[4,6]},\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[6,6]},\"c\":{\"dtype\":\"F64\","
                  "\"shape\":[],\"data_offsets\":[6,14]}}",
                  data);
    }
    (void)argc, (void)argv;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = scratch_file();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    try {
        iclab::io::SafetensorsReader reader(path);
        for (const auto& tensor : reader.index().tensors) (void)reader.read(tensor.name);
    } catch (const iclab::InputError&) {
        // damaged input, reported with the file's and the tensor's name
    }
    return 0;
}
