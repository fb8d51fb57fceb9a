#include "framework/io/safetensors.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "framework/core/check.hpp"
#include "framework/io/json.hpp"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian; this reader assumes a little-endian host");

namespace iclab::io {

const char* safetensors_dtype_name(SafetensorsDtype dtype) {
    switch (dtype) {
        case SafetensorsDtype::f16: return "F16";
        case SafetensorsDtype::bf16: return "BF16";
        case SafetensorsDtype::f32: return "F32";
        case SafetensorsDtype::f64: return "F64";
    }
    return "?";
}

std::size_t safetensors_dtype_size(SafetensorsDtype dtype) {
    switch (dtype) {
        case SafetensorsDtype::f16:
        case SafetensorsDtype::bf16: return 2;
        case SafetensorsDtype::f32: return 4;
        case SafetensorsDtype::f64: return 8;
    }
    return 0;
}

const SafetensorsTensor* SafetensorsIndex::find(const std::string& name) const {
    for (const auto& tensor : tensors)
        if (tensor.name == name) return &tensor;
    return nullptr;
}

namespace {

SafetensorsDtype dtype_from_name(const std::string& name, const std::string& where) {
    if (name == "F16") return SafetensorsDtype::f16;
    if (name == "BF16") return SafetensorsDtype::bf16;
    if (name == "F32") return SafetensorsDtype::f32;
    if (name == "F64") return SafetensorsDtype::f64;
    throw InputError(where + ": dtype " + name + " is not supported (F16, BF16, F32, F64)");
}

// IEEE binary16 -> float, exactly (subnormals, infinities and NaN included).
float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    std::uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // inf / NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);  // rebias 15 -> 127
    } else {  // zero or subnormal: mantissa x 2^-24, exact in float
        float value = std::ldexp(static_cast<float>(mantissa), -24);
        std::memcpy(&bits, &value, 4);
        bits |= sign;
    }
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

}  // namespace

SafetensorsIndex parse_safetensors_header(std::string_view header, std::uint64_t data_bytes, const std::string& what) {
    const JsonValue root = parse_json(header, what + " header");
    SafetensorsIndex index;
    for (const auto& [name, entry] : root.as_object(what + " header")) {
        const std::string where = what + ": tensor '" + name + "'";
        if (name == "__metadata__") {
            for (const auto& [key, value] : entry.as_object(what + ": __metadata__"))
                index.metadata.emplace_back(key, value.as_string(what + ": __metadata__." + key));
            continue;
        }
        ICLAB_INPUT_CHECK(!name.empty(), what << ": a tensor has an empty name");
        const auto& fields = entry.as_object(where);
        for (const auto& field : fields)
            ICLAB_INPUT_CHECK(field.first == "dtype" || field.first == "shape" || field.first == "data_offsets",
                              where << ": unknown field '" << field.first << "' (dtype, shape, data_offsets)");
        SafetensorsTensor tensor;
        tensor.name = name;
        tensor.dtype = dtype_from_name(entry.at("dtype", where).as_string(where + ".dtype"), where);
        const auto& shape = entry.at("shape", where).as_array(where + ".shape");
        ICLAB_INPUT_CHECK(shape.size() <= kMaxSafetensorsRank,
                          where << ": shape has " << shape.size() << " dimensions (at most " << kMaxSafetensorsRank << ")");
        // product(shape) x size must fit in the data buffer: checked factor by factor, so nothing overflows
        const std::uint64_t size = safetensors_dtype_size(tensor.dtype), bound = data_bytes / size;
        std::uint64_t count = 1;
        bool zero = false, over = false;
        std::string shape_text;
        for (const auto& extent_value : shape) {
            const std::int64_t extent = extent_value.as_int(where + ".shape");
            ICLAB_INPUT_CHECK(extent >= 0, where << ": shape has a negative extent " << extent);
            tensor.shape.push_back(static_cast<std::size_t>(extent));
            shape_text += (shape_text.empty() ? "" : ", ") + std::to_string(extent);
            if (extent == 0) zero = true;
            else if (!over && count > bound / static_cast<std::uint64_t>(extent)) over = true;
            else if (!over) count *= static_cast<std::uint64_t>(extent);
        }
        if (zero) count = 0;
        ICLAB_INPUT_CHECK(zero || !over, where << ": shape [" << shape_text << "] holds more values than the file's data buffer of "
                                               << data_bytes << " bytes");
        tensor.count = static_cast<std::size_t>(count);
        const auto& offsets = entry.at("data_offsets", where).as_array(where + ".data_offsets");
        ICLAB_INPUT_CHECK(offsets.size() == 2, where << ": data_offsets must be [begin, end], got " << offsets.size() << " numbers");
        const std::int64_t begin = offsets[0].as_int(where + ".data_offsets"), end = offsets[1].as_int(where + ".data_offsets");
        ICLAB_INPUT_CHECK(begin >= 0 && begin <= end, where << ": data_offsets [" << begin << ", " << end << "] are not 0 <= begin <= end");
        ICLAB_INPUT_CHECK(static_cast<std::uint64_t>(end) <= data_bytes,
                          where << ": data_offsets [" << begin << ", " << end << "] lie outside the file's data buffer of "
                                << data_bytes << " bytes (truncated file?)");
        tensor.begin = static_cast<std::uint64_t>(begin);
        tensor.end = static_cast<std::uint64_t>(end);
        ICLAB_INPUT_CHECK(tensor.end - tensor.begin == count * size,
                          where << ": data_offsets [" << begin << ", " << end << "] hold " << (tensor.end - tensor.begin)
                                << " bytes but shape x " << safetensors_dtype_name(tensor.dtype) << " needs " << count * size);
        index.tensors.push_back(std::move(tensor));
    }
    // Sorted by offset, the tensors tile [0, data_bytes): no overlap, no gap, nothing left over.
    std::vector<const SafetensorsTensor*> order;
    for (const auto& tensor : index.tensors) order.push_back(&tensor);
    std::stable_sort(order.begin(), order.end(), [](const SafetensorsTensor* a, const SafetensorsTensor* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t covered = 0;
    const SafetensorsTensor* previous = nullptr;
    for (const SafetensorsTensor* tensor : order) {
        ICLAB_INPUT_CHECK(tensor->begin >= covered,
                          what << ": tensor '" << tensor->name << "' [" << tensor->begin << ", " << tensor->end << ") overlaps tensor '"
                               << previous->name << "' [" << previous->begin << ", " << previous->end << ")");
        ICLAB_INPUT_CHECK(tensor->begin == covered, what << ": tensor '" << tensor->name << "' starts at byte " << tensor->begin
                                                         << " of the data buffer, leaving a gap after byte " << covered);
        covered = tensor->end;
        previous = tensor;
    }
    ICLAB_INPUT_CHECK(covered == data_bytes, what << ": the tensors cover " << covered << " bytes of a data buffer of " << data_bytes
                                                  << (previous ? " (after tensor '" + previous->name + "')" : std::string()));
    return index;
}

void decode_safetensors_values(float* out, const unsigned char* bytes, const SafetensorsTensor& tensor, const std::string& what) {
    const std::size_t n = tensor.count;
    switch (tensor.dtype) {
        case SafetensorsDtype::f32: std::memcpy(out, bytes, n * 4); break;
        case SafetensorsDtype::f16:
            for (std::size_t i = 0; i < n; ++i) {
                std::uint16_t h;
                std::memcpy(&h, bytes + 2 * i, 2);
                out[i] = half_to_float(h);
            }
            break;
        case SafetensorsDtype::bf16:  // the upper 16 bits of a float
            for (std::size_t i = 0; i < n; ++i) {
                std::uint16_t h;
                std::memcpy(&h, bytes + 2 * i, 2);
                const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
                std::memcpy(out + i, &bits, 4);
            }
            break;
        case SafetensorsDtype::f64:
            for (std::size_t i = 0; i < n; ++i) {
                double value;
                std::memcpy(&value, bytes + 8 * i, 8);
                ICLAB_INPUT_CHECK(!std::isfinite(value) || std::abs(value) <= std::numeric_limits<float>::max(),
                                  what << ": tensor '" << tensor.name << "' holds " << value << " at " << i
                                       << ", outside the float32 range");
                out[i] = static_cast<float>(value);
            }
            break;
    }
    for (std::size_t i = 0; i < n; ++i)
        ICLAB_INPUT_CHECK(std::isfinite(out[i]),
                          what << ": tensor '" << tensor.name << "' holds a non-finite value (" << out[i] << " at flat index " << i << ")");
}

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path) : path_(path) {
    namespace fs = std::filesystem;
    const std::string what = path.string();
    std::error_code error;
    ICLAB_INPUT_CHECK(fs::is_regular_file(path, error), what << ": not a regular file");
    const std::uint64_t file_size = fs::file_size(path, error);
    ICLAB_INPUT_CHECK(!error, what << ": cannot read its size");
    file_.open(path, std::ios::binary);
    ICLAB_INPUT_CHECK(file_.good(), what << ": cannot open");
    ICLAB_INPUT_CHECK(file_size >= 8, what << ": " << file_size << " bytes, shorter than the 8-byte header length");
    unsigned char length_bytes[8];
    file_.read(reinterpret_cast<char*>(length_bytes), 8);
    ICLAB_INPUT_CHECK(file_.good(), what << ": cannot read the header length");
    std::uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length_bytes[i];
    ICLAB_INPUT_CHECK(header_bytes <= kMaxSafetensorsHeader,
                      what << ": header length " << header_bytes << " exceeds the limit of " << kMaxSafetensorsHeader << " bytes");
    ICLAB_INPUT_CHECK(header_bytes <= file_size - 8,
                      what << ": header length " << header_bytes << " runs past the end of the " << file_size << "-byte file");
    std::string header(static_cast<std::size_t>(header_bytes), '\0');
    file_.read(header.data(), static_cast<std::streamsize>(header_bytes));
    ICLAB_INPUT_CHECK(file_.good(), what << ": cannot read the header");
    data_start_ = 8 + header_bytes;
    index_ = parse_safetensors_header(header, file_size - data_start_, what);
}

std::vector<float> SafetensorsReader::read(const std::string& name) {
    const SafetensorsTensor* tensor = index_.find(name);
    ICLAB_INPUT_CHECK(tensor != nullptr, path_.string() << ": no tensor '" << name << "'");
    std::vector<float> values(tensor->count);
    const std::size_t bytes = static_cast<std::size_t>(tensor->end - tensor->begin);
    std::vector<unsigned char> raw;
    unsigned char* target = reinterpret_cast<unsigned char*>(values.data());
    if (tensor->dtype != SafetensorsDtype::f32) {
        raw.resize(bytes);
        target = raw.data();
    }
    file_.clear();
    file_.seekg(static_cast<std::streamoff>(data_start_ + tensor->begin));
    file_.read(reinterpret_cast<char*>(target), static_cast<std::streamsize>(bytes));
    ICLAB_INPUT_CHECK(file_.good() || bytes == 0, path_.string() << ": tensor '" << name << "': cannot read its " << bytes
                                                                  << " bytes (file changed while reading?)");
    decode_safetensors_values(values.data(), target, *tensor, path_.string());
    return values;
}

void write_safetensors(const std::filesystem::path& path, const std::vector<SafetensorsOutput>& tensors,
                       const std::vector<std::pair<std::string, std::string>>& metadata) {
    std::string header = "{";
    if (!metadata.empty()) {
        header += "\"__metadata__\":{";
        for (std::size_t i = 0; i < metadata.size(); ++i)
            header += (i ? "," : "") + json_quote(metadata[i].first) + ":" + json_quote(metadata[i].second);
        header += "}";
    }
    std::set<std::string> names;
    std::uint64_t offset = 0;
    for (const auto& tensor : tensors) {
        ICLAB_CHECK(names.insert(tensor.name).second && tensor.name != "__metadata__", "safetensors: duplicate tensor name " << tensor.name);
        std::size_t count = 1;
        std::string shape;
        for (std::size_t extent : tensor.shape) {
            count *= extent;
            shape += (shape.empty() ? "" : ",") + std::to_string(extent);
        }
        if (header.size() > 1) header += ",";
        header += json_quote(tensor.name) + ":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[" +
                  std::to_string(offset) + "," + std::to_string(offset + 4 * count) + "]}";
        offset += 4 * count;
    }
    header += "}";
    while (header.size() % 8 != 0) header += ' ';
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    ICLAB_CHECK(out.good(), "cannot write " << path.string());
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>((header.size() >> (8 * i)) & 0xffu);
    out.write(reinterpret_cast<const char*>(length), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const auto& tensor : tensors) {
        std::size_t count = 1;
        for (std::size_t extent : tensor.shape) count *= extent;
        out.write(reinterpret_cast<const char*>(tensor.data), static_cast<std::streamsize>(4 * count));
    }
    out.flush();
    ICLAB_CHECK(out.good(), "writing " << path.string() << " failed (disk full?)");
}

}  // namespace iclab::io
