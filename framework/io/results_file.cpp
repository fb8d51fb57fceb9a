#include "framework/io/results_file.hpp"

#include "framework/core/hash.hpp"

#include <H5Cpp.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <functional>
#include <numeric>

namespace iclab::io {

namespace {

// The HDF5 error stack holds the root cause ("file signature not found"); the C++ exception only
// names the failed call, so the two innermost causes go into the message too.
herr_t collect_error_description(unsigned depth, const H5E_error2_t* cause, void* text) {
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

// "curves/step" and "/curves/step" both mean "/curves/step". Empty components and "." / ".."
// are refused: HDF5 would interpret them, and a results file should not need them.
std::string absolute_path(const std::string& path) {
    ICLAB_CHECK(!path.empty(), "empty HDF5 path");
    std::string out;
    for (size_t begin = path[0] == '/' ? 1 : 0; begin < path.size();) {
        const size_t end = std::min(path.find('/', begin), path.size());
        const std::string component = path.substr(begin, end - begin);
        ICLAB_CHECK(!component.empty() && component != "." && component != "..",
                    "bad HDF5 path '" << path << "'");
        out += "/" + component;
        begin = end + 1;
    }
    return out.empty() ? "/" : out;
}

// True if every prefix of the path exists (H5Lexists fails, not answers false, on missing parents).
bool link_exists(const H5::H5File& file, const std::string& absolute) {
    if (absolute == "/") return true;
    for (size_t slash = absolute.find('/', 1);; slash = absolute.find('/', slash + 1)) {
        if (!file.nameExists(absolute.substr(0, slash))) return false;
        if (slash == std::string::npos) return true;
    }
}

// Missing parent groups are created on the way; link names are marked UTF-8 (h5py reads str).
H5::LinkCreatPropList link_properties() {
    H5::LinkCreatPropList properties;
    properties.setCreateIntermediateGroup(true);
    properties.setCharEncoding(H5T_CSET_UTF8);
    return properties;
}

H5::StrType utf8_string_type() {
    H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
    type.setCset(H5T_CSET_UTF8);
    return type;
}

// A scalar attribute; an existing one of that name is replaced. For variable-length strings the
// buffer holds a `const char*`.
void write_attribute(const H5::H5Object& object, const std::string& name, const H5::DataType& file_type,
                     const H5::DataType& memory_type, const void* buffer) {
    if (object.attrExists(name)) object.removeAttr(name);
    object.createAttribute(name, file_type, H5::DataSpace(H5S_SCALAR)).write(memory_type, buffer);
}

// Variable-length strings end at the first NUL: refuse one inside rather than truncate silently.
void write_string_attribute(const H5::H5Object& object, const std::string& name, const std::string& value) {
    ICLAB_CHECK(value.find('\0') == std::string::npos, "attribute " << name << " contains a NUL");
    const char* text = value.c_str();
    write_attribute(object, name, utf8_string_type(), utf8_string_type(), &text);
}

// Every tensor carries "fnv1a64:<hex>" of its values' bytes (little-endian, as stored), verified when read: a flipped
// bit or an edited value in a checkpoint is refused instead of computed with (issue 15).
constexpr const char* kChecksumAttribute = "checksum";

std::string checksum_text(const void* data, size_t bytes) {
    Fnv1a64 hash;
    if (bytes > 0) hash.mix(data, bytes);
    return "fnv1a64:" + hash.hex();
}

size_t element_count(const std::vector<size_t>& shape) {
    return std::accumulate(shape.begin(), shape.end(), size_t{1}, std::multiplies<size_t>());
}

// Creates and fills a dataset at an absolute path that must not exist yet. shape {} is a scalar.
H5::DataSet create_dataset(const H5::H5File& file, const std::string& path, const std::vector<size_t>& shape,
                           const H5::DataType& file_type, const H5::DataType& memory_type, const void* data) {
    ICLAB_CHECK(!link_exists(file, path), path << " already exists");
    const std::vector<hsize_t> dims(shape.begin(), shape.end());
    const H5::DataSpace space =
        dims.empty() ? H5::DataSpace(H5S_SCALAR) : H5::DataSpace(static_cast<int>(dims.size()), dims.data());
    H5::DataSet dataset = file.createDataSet(path, file_type, space, H5::DSetCreatPropList::DEFAULT,
                                             H5::DSetAccPropList::DEFAULT, link_properties());
    // HDF5 1.10 rejects a null buffer even for zero elements.
    if (element_count(shape) > 0) dataset.write(data, memory_type);
    return dataset;
}

void write_array(const H5::H5File& file, const std::filesystem::path& file_name, const std::string& path,
                 const void* data, const std::vector<size_t>& shape, const Attributes& attributes,
                 const H5::DataType& file_type, const H5::DataType& memory_type) {
    hdf5_step(file_name, "writing " + path, [&] {
        const std::string absolute = absolute_path(path);
        ICLAB_CHECK(data != nullptr || element_count(shape) == 0, "null data");
        const H5::DataSet dataset = create_dataset(file, absolute, shape, file_type, memory_type, data);
        for (const auto& [name, value] : attributes) {
            ICLAB_CHECK(name != kChecksumAttribute, kChecksumAttribute << " is the writer's own attribute");
            write_string_attribute(dataset, name, value);
        }
        write_string_attribute(dataset, kChecksumAttribute, checksum_text(data, element_count(shape) * memory_type.getSize()));
    });
}

}  // namespace

struct detail::Hdf5File {
    H5::H5File file;
    Hdf5File(const std::string& name, unsigned flags) : file(name, flags) {}
    Hdf5File(const std::string& name, unsigned flags, const H5::FileAccPropList& access)
        : file(name, flags, H5::FileCreatPropList::DEFAULT, access) {}
};

// ------------------------------------------------------------------------------------------------
// ResultsWriter

// A name no other writer uses: "<final>.partial.<pid>.<random>" (two processes with the same --out must not
// share, truncate or rename each other's temporary file).
std::filesystem::path unique_partial_path(const std::filesystem::path& final_path) {
    static std::atomic<std::uint64_t> counter{0};
    std::random_device entropy;
    const std::uint64_t random = (std::uint64_t{entropy()} << 32) ^ entropy() ^ (counter++ << 48);
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".partial.%ld.%016llx", static_cast<long>(::getpid()),
                  static_cast<unsigned long long>(random));
    return final_path.string() + suffix;
}

ResultsWriter::ResultsWriter(std::filesystem::path final_path, bool overwrite)
    : final_path_(std::move(final_path)), partial_path_(unique_partial_path(final_path_)), overwrite_(overwrite) {
    H5::Exception::dontPrint();
    std::error_code error;
    const bool final_exists = std::filesystem::exists(final_path_, error);
    ICLAB_CHECK(!error, "cannot check " << final_path_.string() << ": " << error.message());
    ICLAB_INPUT_CHECK(overwrite_ || !final_exists,
                      final_path_.string() << " already exists: refusing to overwrite a completed result");
    const std::filesystem::path directory = final_path_.has_parent_path() ? final_path_.parent_path() : ".";
    ICLAB_INPUT_CHECK(std::filesystem::is_directory(directory, error),
                      "cannot write " << final_path_.string() << ": " << directory.string() << " is not a directory");
    // The file is built in memory (HDF5's core driver, no backing store) and written to disk only by commit():
    // a full disk or a write error can then only happen in one place, in plain POSIX calls that clean up
    // (HDF5 closing a file after a failed write crashed: issue 15).
    hdf5_ = hdf5_step(final_path_, "creating the file in memory", [&] {
        H5::FileAccPropList access;
        access.setCore(1 << 20, /*backing_store=*/false);
        return std::make_unique<detail::Hdf5File>(partial_path_.string(), H5F_ACC_TRUNC, access);
    });
}

ResultsWriter::~ResultsWriter() {
    if (committed_) return;
    try {
        if (hdf5_) hdf5_->file.close();
    } catch (...) {  // an in-memory file: nothing on disk to clean up
    }
    hdf5_.reset();
    std::error_code ignored;
    std::filesystem::remove(partial_path_, ignored);  // only if commit() failed after creating it
}

detail::Hdf5File& ResultsWriter::open_file(const char* action) {
    ICLAB_CHECK(hdf5_ != nullptr, "cannot " << action << ": " << final_path_.string()
                                            << (committed_ ? " is already committed" : " is closed"));
    return *hdf5_;
}

void ResultsWriter::set_attr(const std::string& name, const std::string& value) {
    const H5::H5File& file = open_file("set an attribute").file;
    hdf5_step(partial_path_, "writing attribute " + name, [&] { write_string_attribute(file, name, value); });
}

void ResultsWriter::set_attr(const std::string& name, int64_t value) {
    const H5::H5File& file = open_file("set an attribute").file;
    hdf5_step(partial_path_, "writing attribute " + name, [&] {
        write_attribute(file, name, H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64, &value);
    });
}

void ResultsWriter::set_attr(const std::string& name, double value) {
    const H5::H5File& file = open_file("set an attribute").file;
    hdf5_step(partial_path_, "writing attribute " + name, [&] {
        write_attribute(file, name, H5::PredType::IEEE_F64LE, H5::PredType::NATIVE_DOUBLE, &value);
    });
}

void ResultsWriter::write_columns(const std::string& group_path, const std::vector<Column>& columns, const Attributes& attributes) {
    const H5::H5File& file = open_file("write columns").file;
    hdf5_step(partial_path_, "writing table " + group_path, [&] {
        const std::string group_name = absolute_path(group_path);
        ICLAB_CHECK(group_name != "/" && !columns.empty(), "a table needs its own group and at least one column");
        // Check before writing, so a refused table leaves no half-written group (duplicate names
        // are caught by create_dataset, which refuses existing paths).
        const auto length_of = [](const Column& column) {
            return std::visit([](const auto& values) { return values.size(); }, column.values);
        };
        const size_t rows = length_of(columns.front());
        std::string column_order;
        for (const Column& column : columns) {
            ICLAB_CHECK(!column.name.empty() && column.name.find_first_of(std::string(",/\0", 3)) == std::string::npos,
                        "bad column name '" << column.name << "' (no ',', '/' or NUL)");
            ICLAB_CHECK(length_of(column) == rows, "column " << column.name << " has " << length_of(column)
                                                             << " rows, " << columns.front().name << " has " << rows);
            if (const auto* strings = std::get_if<std::vector<std::string>>(&column.values)) {
                for (const std::string& value : *strings) {
                    ICLAB_CHECK(value.find('\0') == std::string::npos, "column " << column.name << " contains a NUL");
                }
            }
            column_order += (column_order.empty() ? "" : ",") + column.name;
        }
        ICLAB_CHECK(!link_exists(file, group_name), group_name << " already exists");

        const H5::Group group = file.createGroup(group_name, link_properties());
        const H5::StrType string_type = utf8_string_type();
        for (const Column& column : columns) {
            const std::string path = group_name + "/" + column.name;
            if (const auto* doubles = std::get_if<std::vector<double>>(&column.values)) {
                write_string_attribute(create_dataset(file, path, {rows}, H5::PredType::IEEE_F64LE, H5::PredType::NATIVE_DOUBLE,
                                                      doubles->data()),
                                       kChecksumAttribute, checksum_text(doubles->data(), rows * sizeof(double)));
            } else if (const auto* integers = std::get_if<std::vector<int64_t>>(&column.values)) {
                write_string_attribute(create_dataset(file, path, {rows}, H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64,
                                                      integers->data()),
                                       kChecksumAttribute, checksum_text(integers->data(), rows * sizeof(int64_t)));
            } else {
                // Variable-length strings are written from an array of C string pointers.
                std::vector<const char*> pointers;
                for (const auto& value : std::get<std::vector<std::string>>(column.values)) {
                    pointers.push_back(value.c_str());
                }
                create_dataset(file, path, {rows}, string_type, string_type, pointers.data());
            }
        }
        write_string_attribute(group, "column_order", column_order);
        for (const auto& [name, value] : attributes) {
            ICLAB_CHECK(name != "column_order", "column_order is the writer's own attribute");
            write_string_attribute(group, name, value);
        }
    });
}

void ResultsWriter::write_tensor(const std::string& path, const float* data, const std::vector<size_t>& shape,
                                 const Attributes& attributes) {
    write_array(open_file("write a tensor").file, partial_path_, path, data, shape, attributes,
                H5::PredType::IEEE_F32LE, H5::PredType::NATIVE_FLOAT);
}

void ResultsWriter::write_tensor(const std::string& path, const double* data, const std::vector<size_t>& shape,
                                 const Attributes& attributes) {
    write_array(open_file("write a tensor").file, partial_path_, path, data, shape, attributes,
                H5::PredType::IEEE_F64LE, H5::PredType::NATIVE_DOUBLE);
}

void ResultsWriter::write_tensor(const std::string& path, const int32_t* data, const std::vector<size_t>& shape,
                                 const Attributes& attributes) {
    write_array(open_file("write a tensor").file, partial_path_, path, data, shape, attributes,
                H5::PredType::STD_I32LE, H5::PredType::NATIVE_INT32);
}

void ResultsWriter::write_tensor(const std::string& path, const int64_t* data, const std::vector<size_t>& shape,
                                 const Attributes& attributes) {
    write_array(open_file("write a tensor").file, partial_path_, path, data, shape, attributes,
                H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64);
}

namespace {

// Writes all of `bytes` to a new file created exclusively at `path`, fsynced. On failure the file is removed and
// the error names it; a full disk (or a file-size limit) says so.
void write_new_file(const std::filesystem::path& path, const std::vector<unsigned char>& bytes,
                    const std::filesystem::path& final_path) {
    const int descriptor = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ICLAB_CHECK(descriptor >= 0, "cannot create " << path.string() << ": " << std::strerror(errno));
    std::size_t done = 0;
    int failure = 0;
    while (done < bytes.size()) {
        const ssize_t written = ::write(descriptor, bytes.data() + done, bytes.size() - done);
        if (written < 0 && errno == EINTR) continue;
        if (written <= 0) {
            failure = written < 0 ? errno : ENOSPC;
            break;
        }
        done += static_cast<std::size_t>(written);
    }
    // The rename must not reach the disk before the data does, or a power cut could leave an empty
    // file under the final name: fsync the data first.
    if (failure == 0 && ::fsync(descriptor) != 0) failure = errno;
    if (::close(descriptor) != 0 && failure == 0) failure = errno;
    if (failure != 0) {
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
        if (failure == ENOSPC || failure == EFBIG || failure == EDQUOT) {
            throw Error("no space left writing " + final_path.string() + " (" + std::strerror(failure) + ", " +
                        std::to_string(bytes.size()) + " bytes); nothing was written, an earlier file is intact");
        }
        throw Error("cannot write " + path.string() + ": " + std::strerror(failure));
    }
}

}  // namespace

void ResultsWriter::commit() {
    H5::H5File& file = open_file("commit").file;
    std::vector<unsigned char> image = hdf5_step(final_path_, "closing the in-memory file", [&] {
        file.flush(H5F_SCOPE_GLOBAL);
        const ssize_t size = H5Fget_file_image(file.getId(), nullptr, 0);
        ICLAB_CHECK(size > 0, "cannot size the file image");
        std::vector<unsigned char> bytes(static_cast<std::size_t>(size));
        ICLAB_CHECK(H5Fget_file_image(file.getId(), bytes.data(), bytes.size()) == size, "cannot copy the file image");
        file.close();
        return bytes;
    });
    hdf5_.reset();
    write_new_file(partial_path_, image, final_path_);

    std::error_code error;
    if (overwrite_) {
        std::filesystem::rename(partial_path_, final_path_, error);
    } else if (::link(partial_path_.c_str(), final_path_.c_str()) == 0) {
        // link() creates the final name only if nothing has it: another process that completed the same name since
        // the constructor is never replaced (exists-then-rename would race).
        std::filesystem::remove(partial_path_, error);
        error.clear();
    } else {
        const bool taken = errno == EEXIST || std::filesystem::exists(final_path_);
        if (taken) {
            std::error_code ignored;
            std::filesystem::remove(partial_path_, ignored);
        }
        ICLAB_INPUT_CHECK(!taken, final_path_.string() << " appeared while writing: refusing to overwrite it");
        std::filesystem::rename(partial_path_, final_path_, error);  // a file system without hard links
    }
    if (error) {
        std::error_code ignored;
        std::filesystem::remove(partial_path_, ignored);
        throw Error("cannot rename " + partial_path_.string() + " to " + final_path_.string() + ": " + error.message());
    }
    committed_ = true;
}

// ------------------------------------------------------------------------------------------------
// ResultsReader

namespace {

H5::DataSet open_dataset(const H5::H5File& file, const std::string& absolute) {
    ICLAB_CHECK(link_exists(file, absolute), "no dataset " << absolute);
    ICLAB_CHECK(file.childObjType(absolute) == H5O_TYPE_DATASET, absolute << " is not a dataset");
    return file.openDataSet(absolute);
}

// Opens an attribute of the group or dataset at an absolute path (the root is the file itself).
// The attribute stays valid after the object handle closes: HDF5 keeps the object open for it.
H5::Attribute open_attribute(const H5::H5File& file, const std::string& absolute, const std::string& name) {
    ICLAB_CHECK(link_exists(file, absolute), "no object " << absolute);
    const auto open_from = [&](const H5::H5Object& object) {
        ICLAB_CHECK(object.attrExists(name), "no attribute " << name << " on " << absolute);
        return object.openAttribute(name);
    };
    const bool is_group = absolute == "/" || file.childObjType(absolute) == H5O_TYPE_GROUP;
    return is_group ? open_from(file.openGroup(absolute)) : open_from(file.openDataSet(absolute));
}

// Reads a whole numeric dataset; HDF5 converts from the stored type to memory_type.
template <typename T>
TensorData<T> read_numeric(const H5::H5File& file, const std::filesystem::path& file_name, const std::string& path,
                           const H5::PredType& memory_type, bool from_float, bool one_dimensional) {
    return hdf5_step(file_name, "reading " + path, [&] {
        const H5::DataSet dataset = open_dataset(file, absolute_path(path));
        const H5T_class_t stored = dataset.getTypeClass();
        ICLAB_CHECK(stored == H5T_INTEGER || (from_float && stored == H5T_FLOAT),
                    "it holds " << (stored == H5T_FLOAT ? "floating-point" : "non-numeric") << " data");
        if (stored == H5T_INTEGER && std::is_same_v<T, int32_t>) {
            const H5::IntType type = dataset.getIntType();  // HDF5 would clamp wider integers silently
            ICLAB_CHECK(type.getSize() < 4 || (type.getSize() == 4 && type.getSign() == H5T_SGN_2),
                        "it holds integers wider than int32");
        }
        const H5::DataSpace space = dataset.getSpace();
        std::vector<hsize_t> dims(static_cast<size_t>(space.getSimpleExtentNdims()));
        space.getSimpleExtentDims(dims.data());
        ICLAB_CHECK(!one_dimensional || dims.size() == 1, "it is not a 1-D column");
        TensorData<T> tensor;
        tensor.shape.assign(dims.begin(), dims.end());
        const size_t count = element_count(tensor.shape);
        // A damaged header can claim any size (a sparse 10^7 x 10^7 dataset): check what is stored before allocating.
        const size_t stored_size = dataset.getDataType().getSize();
        ICLAB_INPUT_CHECK(stored_size > 0 && count <= dataset.getStorageSize() / stored_size,
                          path << " claims " << count << " values but stores " << dataset.getStorageSize()
                               << " bytes: the file is damaged or was not written by iclab");
        tensor.values.resize(count);
        if (count == 0) return tensor;
        if (!dataset.attrExists(kChecksumAttribute)) {  // files written before checksums
            dataset.read(tensor.values.data(), memory_type);
            return tensor;
        }
        // Read in the stored type, verify, then convert (exactly: stored types are at most as wide as T's use).
        std::string recorded;
        dataset.openAttribute(kChecksumAttribute).read(utf8_string_type(), recorded);
        const auto verified = [&](auto zero, const H5::PredType& native) {
            std::vector<decltype(zero)> raw(count);
            dataset.read(raw.data(), native);
            ICLAB_INPUT_CHECK(checksum_text(raw.data(), count * sizeof(zero)) == recorded,
                              path << " does not match its checksum (" << recorded
                                   << "): the file was damaged or edited after it was written");
            for (size_t i = 0; i < count; ++i) tensor.values[i] = static_cast<T>(raw[i]);
        };
        if (stored == H5T_FLOAT && stored_size == 4) verified(float{}, H5::PredType::NATIVE_FLOAT);
        else if (stored == H5T_FLOAT) verified(double{}, H5::PredType::NATIVE_DOUBLE);
        else if (stored_size == 4) verified(int32_t{}, H5::PredType::NATIVE_INT32);
        else verified(int64_t{}, H5::PredType::NATIVE_INT64);
        return tensor;
    });
}

template <typename T>
T read_numeric_attribute(const H5::H5File& file, const std::filesystem::path& file_name, const std::string& path,
                         const std::string& name, const H5::PredType& memory_type, bool from_float) {
    return hdf5_step(file_name, "reading attribute " + name + " of " + path, [&] {
        const H5::Attribute attribute = open_attribute(file, absolute_path(path), name);
        const H5T_class_t stored = attribute.getTypeClass();
        ICLAB_CHECK((stored == H5T_INTEGER || (from_float && stored == H5T_FLOAT)) &&
                        attribute.getSpace().getSimpleExtentNpoints() == 1,
                    "it is not a single " << (from_float ? "number" : "integer"));
        T value{};
        attribute.read(memory_type, &value);
        return value;
    });
}

}  // namespace

ResultsReader::ResultsReader(const std::filesystem::path& path) : path_(path) {
    H5::Exception::dontPrint();
    ICLAB_INPUT_CHECK(std::filesystem::is_regular_file(path_), path_.string() << " is not a file");
    try {
        hdf5_ = hdf5_step(path_, "opening",
                          [&] { return std::make_unique<detail::Hdf5File>(path_.string(), H5F_ACC_RDONLY); });
    } catch (const Error& error) {  // empty, truncated, text: bad input, not a failure of iclab
        throw InputError(path_.string() + " is not a readable HDF5 results file (" + error.what() + ")");
    }
}

ResultsReader::~ResultsReader() = default;

bool ResultsReader::holds_floats(const std::string& path) const {
    return hdf5_step(path_, "reading the type of " + path,
                     [&] { return open_dataset(hdf5_->file, absolute_path(path)).getTypeClass() == H5T_FLOAT; });
}

bool ResultsReader::has(const std::string& path) const {
    return hdf5_step(path_, "looking up " + path, [&] { return link_exists(hdf5_->file, absolute_path(path)); });
}

std::vector<std::string> ResultsReader::list(const std::string& group_path) const {
    return hdf5_step(path_, "listing " + group_path, [&] {
        const std::string absolute = absolute_path(group_path);
        const H5::H5File& file = hdf5_->file;
        ICLAB_CHECK(link_exists(file, absolute) && (absolute == "/" || file.childObjType(absolute) == H5O_TYPE_GROUP),
                    "no group " << absolute);
        const H5::Group group = file.openGroup(absolute);
        std::vector<std::string> names;
        for (hsize_t index = 0; index < group.getNumObjs(); ++index) names.push_back(group.getObjnameByIdx(index));
        std::sort(names.begin(), names.end());
        return names;
    });
}

bool ResultsReader::has_attr(const std::string& object_path, const std::string& name) const {
    return hdf5_step(path_, "looking up attribute " + name + " of " + object_path, [&] {
        const std::string absolute = absolute_path(object_path);
        const H5::H5File& file = hdf5_->file;
        if (!link_exists(file, absolute)) return false;
        if (absolute == "/" || file.childObjType(absolute) == H5O_TYPE_GROUP) return file.openGroup(absolute).attrExists(name);
        return file.openDataSet(absolute).attrExists(name);
    });
}

std::string ResultsReader::read_attr_string(const std::string& object_path, const std::string& name) const {
    return hdf5_step(path_, "reading attribute " + name + " of " + object_path, [&] {
        const H5::Attribute attribute = open_attribute(hdf5_->file, absolute_path(object_path), name);
        ICLAB_CHECK(attribute.getTypeClass() == H5T_STRING, "it is not a string");
        std::string value;
        attribute.read(attribute.getStrType(), value);  // stored type: HDF5 never converts ASCII <-> UTF-8
        return value;
    });
}

int64_t ResultsReader::read_attr_int64(const std::string& object_path, const std::string& name) const {
    return read_numeric_attribute<int64_t>(hdf5_->file, path_, object_path, name, H5::PredType::NATIVE_INT64, false);
}

double ResultsReader::read_attr_double(const std::string& object_path, const std::string& name) const {
    return read_numeric_attribute<double>(hdf5_->file, path_, object_path, name, H5::PredType::NATIVE_DOUBLE, true);
}

TensorData<float> ResultsReader::read_tensor_float(const std::string& path) const {
    return read_numeric<float>(hdf5_->file, path_, path, H5::PredType::NATIVE_FLOAT, true, false);
}

TensorData<double> ResultsReader::read_tensor_double(const std::string& path) const {
    return read_numeric<double>(hdf5_->file, path_, path, H5::PredType::NATIVE_DOUBLE, true, false);
}

TensorData<int32_t> ResultsReader::read_int32(const std::string& path) const {
    return read_numeric<int32_t>(hdf5_->file, path_, path, H5::PredType::NATIVE_INT32, false, false);
}

std::vector<double> ResultsReader::read_column_double(const std::string& path) const {
    return read_numeric<double>(hdf5_->file, path_, path, H5::PredType::NATIVE_DOUBLE, true, true).values;
}

std::vector<int64_t> ResultsReader::read_column_int64(const std::string& path) const {
    return read_numeric<int64_t>(hdf5_->file, path_, path, H5::PredType::NATIVE_INT64, false, true).values;
}

std::vector<std::string> ResultsReader::read_column_string(const std::string& path) const {
    return hdf5_step(path_, "reading " + path, [&] {
        const H5::DataSet dataset = open_dataset(hdf5_->file, absolute_path(path));
        const H5::DataSpace space = dataset.getSpace();
        ICLAB_CHECK(dataset.getTypeClass() == H5T_STRING && space.getSimpleExtentNdims() == 1,
                    "it is not a 1-D column of strings");
        const H5::StrType type = dataset.getStrType();  // stored type: no ASCII <-> UTF-8 conversion
        ICLAB_CHECK(type.isVariableStr(), "it holds fixed-length strings (this writer never does)");
        std::vector<char*> pointers(static_cast<size_t>(space.getSimpleExtentNpoints()), nullptr);
        std::vector<std::string> strings;
        if (pointers.empty()) return strings;
        dataset.read(pointers.data(), type);
        for (const char* value : pointers) strings.emplace_back(value != nullptr ? value : "");
        H5::DataSet::vlenReclaim(pointers.data(), type, space);  // HDF5 allocated every string
        return strings;
    });
}

Column ResultsReader::read_column(const std::string& path) const {
    const auto type_class = hdf5_step(path_, "reading " + path, [&] {
        return open_dataset(hdf5_->file, absolute_path(path)).getTypeClass();
    });
    const std::string name = path.substr(path.rfind('/') + 1);
    if (type_class == H5T_STRING) return Column{name, read_column_string(path)};
    if (type_class == H5T_INTEGER) return Column{name, read_column_int64(path)};
    return Column{name, read_column_double(path)};
}

// Attributes of groups (the root, tables); datasets' attributes are read by name.
std::vector<std::pair<std::string, ResultsReader::AttributeValue>> ResultsReader::attributes(const std::string& object_path) const {
    const std::vector<std::pair<std::string, H5T_class_t>> found = hdf5_step(path_, "listing attributes of " + object_path, [&] {
        std::vector<std::pair<std::string, H5T_class_t>> names;
        const std::string where = absolute_path(object_path);
        H5::Group group = hdf5_->file.openGroup(where);
        const int count = group.getNumAttrs();
        for (int i = 0; i < count; ++i) {
            const H5::Attribute attribute = group.openAttribute(static_cast<unsigned int>(i));
            names.emplace_back(attribute.getName(), attribute.getTypeClass());
        }
        std::sort(names.begin(), names.end());
        return names;
    });
    std::vector<std::pair<std::string, AttributeValue>> values;
    for (const auto& [name, type_class] : found) {
        if (type_class == H5T_STRING) values.emplace_back(name, read_attr_string(object_path, name));
        else if (type_class == H5T_INTEGER) values.emplace_back(name, read_attr_int64(object_path, name));
        else if (type_class == H5T_FLOAT) values.emplace_back(name, read_attr_double(object_path, name));
    }
    return values;
}

}  // namespace iclab::io
