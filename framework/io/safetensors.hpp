#pragma once
// safetensors (Hugging Face's tensor file, the format of GPT-2's model.safetensors), read and written here without
// the reference library. Layout: 8 bytes little-endian u64 N, then N bytes of UTF-8 JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the data buffer after the header), an optional
// "__metadata__" map of strings, then the data buffer: row-major, little-endian tensors.
//
// Untrusted input (CONVENTIONS.md "checked before use"). Before anything is allocated for tensor data:
// N fits in the file and is at most kMaxSafetensorsHeader; the header is strict JSON (framework/io/json.hpp: duplicate
// names refused) whose entries have exactly the three keys; dtype is F16, BF16, F32 or F64; the shape has at most
// kMaxSafetensorsRank non-negative extents; begin <= end <= the data buffer's size; end - begin = product(shape) x
// dtype size; and, sorted by offset, the tensors tile the data buffer exactly: no overlap, no gap, nothing after the
// last (the reference library's rule: it refuses holes and a buffer of another length). When read, every value
// must be finite (and an F64 value must fit in float). Every failure is an InputError (exit 2) naming the file and
// the tensor.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace iclab::io {

enum class SafetensorsDtype { f16, bf16, f32, f64 };
const char* safetensors_dtype_name(SafetensorsDtype dtype);  // "F16", "BF16", "F32", "F64"
std::size_t safetensors_dtype_size(SafetensorsDtype dtype);  // bytes per value

constexpr std::uint64_t kMaxSafetensorsHeader = 100u << 20;  // the reference library's limit (100 MB)
constexpr std::size_t kMaxSafetensorsRank = 8;

struct SafetensorsTensor {
    std::string name;
    SafetensorsDtype dtype = SafetensorsDtype::f32;
    std::vector<std::size_t> shape;
    std::uint64_t begin = 0, end = 0;  // byte offsets into the data buffer
    std::size_t count = 0;             // product(shape)
};

struct SafetensorsIndex {
    std::vector<SafetensorsTensor> tensors;                        // header order
    std::vector<std::pair<std::string, std::string>> metadata;     // "__metadata__", header order
    const SafetensorsTensor* find(const std::string& name) const;  // null when absent
};

// Parses and checks a header (the N bytes of JSON) against a data buffer of `data_bytes` bytes; `what` names the
// file in errors.
SafetensorsIndex parse_safetensors_header(std::string_view header, std::uint64_t data_bytes, const std::string& what);

// Converts a tensor's raw little-endian bytes (tensor.end - tensor.begin of them) to float; InputError naming the
// tensor and the flat index of the first non-finite value (or F64 value out of float range).
void decode_safetensors_values(float* out, const unsigned char* bytes, const SafetensorsTensor& tensor, const std::string& what);

// A file opened for reading: the index is checked on construction, tensor data read on request.
class SafetensorsReader {
public:
    explicit SafetensorsReader(const std::filesystem::path& path);
    const SafetensorsIndex& index() const { return index_; }
    const std::filesystem::path& path() const { return path_; }
    // The tensor's values as float (row-major), checked finite. InputError when there is no such tensor.
    std::vector<float> read(const std::string& name);

private:
    std::filesystem::path path_;
    std::ifstream file_;
    std::uint64_t data_start_ = 0;
    SafetensorsIndex index_;
};

struct SafetensorsOutput {
    std::string name;
    std::vector<std::size_t> shape;
    const float* data;  // product(shape) values, row-major
};

// Writes F32 tensors in the given order, contiguous from offset 0, the header padded with spaces to a multiple of 8
// bytes (as the reference library aligns its data). Names must be unique and valid UTF-8. Writes `path` directly:
// callers wanting atomicity write a temporary name and rename.
void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsOutput>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata = {});

}  // namespace iclab::io
