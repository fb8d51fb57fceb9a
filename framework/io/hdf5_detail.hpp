#pragma once
// Internal to framework/io (results_writer.cpp, results_reader.cpp): the HDF5 pieces both sides share. Not for
// other folders: the results file's interface is results_file.hpp.
#include <H5Cpp.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/hash.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::io::detail {

struct Hdf5File {
    H5::H5File file;
    Hdf5File(const std::string& name, unsigned flags) : file(name, flags) {}
    Hdf5File(const std::string& name, unsigned flags, const H5::FileAccPropList& access)
        : file(name, flags, H5::FileCreatPropList::DEFAULT, access) {}
};

// The HDF5 error stack holds the root cause ("file signature not found"); the C++ exception only
// names the failed call, so the two innermost causes go into the message too.
inline herr_t collect_error_description(unsigned depth, const H5E_error2_t* cause, void* text) {
    if (depth < 2 && cause->desc != nullptr) *static_cast<std::string*>(text) += std::string("; ") + cause->desc;
    return 0;
}

// Runs one step on a file; an HDF5 failure or a failed check inside becomes iclab::Error naming
// the file and the step, so the checks inside need not repeat the file name.
template <typename Step>
auto hdf5_step(const std::filesystem::path& file, const std::string& action, Step&& step) -> decltype(step()) {
    const std::string context = file.string() + " while " + action + ": ";
    try {
        return step();
    } catch (const H5::Exception& error) {
        std::string causes;
        H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, collect_error_description, &causes);
        throw Error("HDF5 error in " + context + error.getDetailMsg() + causes);
    } catch (const InputError& error) {  // damaged or foreign input stays input (exit 2)
        throw InputError("in " + context + error.what());
    } catch (const Error& error) {
        throw Error("in " + context + error.what());
    }
}

// hdf5_step for reading: the file read is input, so every failure (HDF5's own included) is an InputError (exit 2).
template <typename Step>
auto read_step(const std::filesystem::path& file, const std::string& action, Step&& step) -> decltype(step()) {
    try {
        return hdf5_step(file, action, std::forward<Step>(step));
    } catch (const InputError&) {
        throw;
    } catch (const Error& error) {
        throw InputError(error.what());
    }
}

// "curves/step" and "/curves/step" both mean "/curves/step". Empty components and "." / ".."
// are refused: HDF5 would interpret them, and a results file should not need them.
inline std::string absolute_path(const std::string& path) {
    ICLAB_INPUT_CHECK(!path.empty(), "empty HDF5 path");
    std::string out;
    for (size_t begin = path[0] == '/' ? 1 : 0; begin < path.size();) {
        const size_t end = std::min(path.find('/', begin), path.size());
        const std::string component = path.substr(begin, end - begin);
        ICLAB_INPUT_CHECK(!component.empty() && component != "." && component != "..", "bad HDF5 path '" << path << "'");
        out += "/" + component;
        begin = end + 1;
    }
    return out.empty() ? "/" : out;
}

// True if every prefix of the path exists (H5Lexists fails, not answers false, on missing parents).
inline bool link_exists(const H5::H5File& file, const std::string& absolute) {
    if (absolute == "/") return true;
    for (size_t slash = absolute.find('/', 1);; slash = absolute.find('/', slash + 1)) {
        if (!file.nameExists(absolute.substr(0, slash))) return false;
        if (slash == std::string::npos) return true;
    }
}

inline H5::StrType utf8_string_type() {
    H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    type.setCset(H5T_CSET_UTF8);
    return type;
}

// Every tensor carries "fnv1a64:<hex>" of its values' bytes (little-endian, as stored), verified when read: a flipped
// bit or an edited value in a checkpoint is refused instead of computed with (issue 15).
inline constexpr const char* kChecksumAttribute = "checksum";

inline std::string checksum_text(const void* data, size_t bytes) {
    Fnv1a64 hash;
    if (bytes > 0) hash.mix(data, bytes);
    return "fnv1a64:" + hash.hex();
}

inline size_t element_count(const std::vector<size_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), size_t{1}, std::multiplies<size_t>());
}

}  // namespace iclab::io::detail
