#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

#include "framework/io/hdf5_detail.hpp"
#include "framework/io/results_file.hpp"

// The writer half of results_file.hpp: the file is built in memory and written once by commit().
namespace iclab::io {

using namespace detail;

namespace {

// Missing parent groups are created on the way; link names are marked UTF-8 (h5py reads str).
H5::LinkCreatPropList link_properties() {
    H5::LinkCreatPropList properties;
    properties.setCreateIntermediateGroup(true);
    properties.setCharEncoding(H5T_CSET_UTF8);
    return properties;
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

void ResultsWriter::write_bytes(const std::string& path, const std::string& bytes, const Attributes& attributes) {
    write_array(open_file("write bytes").file, partial_path_, path, bytes.data(), {bytes.size()}, attributes, H5::PredType::STD_U8LE,
                H5::PredType::NATIVE_UINT8);
}

std::string nul_as_symbol(const std::string& text) {
    std::string shown;
    shown.reserve(text.size());
    for (const char c : text) shown += c == '\0' ? std::string("\u2400") : std::string(1, c);
    return shown;
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

}  // namespace iclab::io
