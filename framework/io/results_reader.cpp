#include <unistd.h>

#include <algorithm>
#include <atomic>

#include "framework/io/hdf5_detail.hpp"
#include "framework/io/hdf5_guard.hpp"
#include "framework/io/results_file.hpp"

// The reader half of results_file.hpp: everything read is input (a file iclab may not have written), so every
// failure is an InputError (exit 2) naming the file and what was being read.
namespace iclab::io {

using namespace detail;

// ------------------------------------------------------------------------------------------------
// ResultsReader

namespace {

H5::DataSet open_dataset(const H5::H5File& file, const std::string& absolute) {
    ICLAB_INPUT_CHECK(link_exists(file, absolute), "no dataset " << absolute);
    ICLAB_INPUT_CHECK(file.childObjType(absolute) == H5O_TYPE_DATASET, absolute << " is not a dataset");
    return file.openDataSet(absolute);
}

// Opens an attribute of the group or dataset at an absolute path (the root is the file itself).
// The attribute stays valid after the object handle closes: HDF5 keeps the object open for it.
H5::Attribute open_attribute(const H5::H5File& file, const std::string& absolute, const std::string& name) {
    ICLAB_INPUT_CHECK(link_exists(file, absolute), "no object " << absolute);
    const auto open_from = [&](const H5::H5Object& object) {
        ICLAB_INPUT_CHECK(object.attrExists(name), "no attribute " << name << " on " << absolute);
        return object.openAttribute(name);
    };
    const bool is_group = absolute == "/" || file.childObjType(absolute) == H5O_TYPE_GROUP;
    return is_group ? open_from(file.openGroup(absolute)) : open_from(file.openDataSet(absolute));
}

// Reads a whole numeric dataset; HDF5 converts from the stored type to memory_type.
template <typename T>
TensorData<T> read_numeric(const H5::H5File& file, const std::filesystem::path& file_name, const std::string& path,
                           const H5::PredType& memory_type, bool from_float, bool one_dimensional) {
    return read_step(file_name, "reading " + path, [&] {
        const H5::DataSet dataset = open_dataset(file, absolute_path(path));
        const H5T_class_t stored = dataset.getTypeClass();
        ICLAB_INPUT_CHECK(stored == H5T_INTEGER || (from_float && stored == H5T_FLOAT),
                    "it holds " << (stored == H5T_FLOAT ? "floating-point" : "non-numeric") << " data");
        if (stored == H5T_INTEGER && std::is_same_v<T, int32_t>) {
            const H5::IntType type = dataset.getIntType();  // HDF5 would clamp wider integers silently
            ICLAB_INPUT_CHECK(type.getSize() < 4 || (type.getSize() == 4 && type.getSign() == H5T_SGN_2),
                        "it holds integers wider than int32");
        }
        const H5::DataSpace space = dataset.getSpace();
        std::vector<hsize_t> dims(static_cast<size_t>(space.getSimpleExtentNdims()));
        space.getSimpleExtentDims(dims.data());
        ICLAB_INPUT_CHECK(!one_dimensional || dims.size() == 1, "it is not a 1-D column");
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
        else if (stored_size == 1 && dataset.getIntType().getSign() == H5T_SGN_NONE) verified(uint8_t{}, H5::PredType::NATIVE_UINT8);
        else if (stored_size == 1) verified(int8_t{}, H5::PredType::NATIVE_INT8);
        else verified(int64_t{}, H5::PredType::NATIVE_INT64);
        return tensor;
    });
}

template <typename T>
T read_numeric_attribute(const H5::H5File& file, const std::filesystem::path& file_name, const std::string& path,
                         const std::string& name, const H5::PredType& memory_type, bool from_float) {
    return read_step(file_name, "reading attribute " + name + " of " + path, [&] {
        const H5::Attribute attribute = open_attribute(file, absolute_path(path), name);
        const H5T_class_t stored = attribute.getTypeClass();
        ICLAB_INPUT_CHECK((stored == H5T_INTEGER || (from_float && stored == H5T_FLOAT)) &&
                        attribute.getSpace().getSimpleExtentNpoints() == 1,
                    "it is not a single " << (from_float ? "number" : "integer"));
        T value{};
        attribute.read(memory_type, &value);
        return value;
    });
}

// HDF5's core driver over an image in memory, read-only and not copied: the callbacks hand HDF5 the image's own buffer
// (the fapl's "copy" and the driver's "copy" are the same bytes) and release nothing; the reader holds the image.
void* image_malloc(size_t, H5FD_file_image_op_t op, void* udata) {
    const bool ours = op == H5FD_FILE_IMAGE_OP_PROPERTY_LIST_SET || op == H5FD_FILE_IMAGE_OP_PROPERTY_LIST_COPY ||
                      op == H5FD_FILE_IMAGE_OP_FILE_OPEN;
    return ours ? udata : nullptr;
}
void* image_memcpy(void* dest, const void* src, size_t, H5FD_file_image_op_t, void*) { return dest == src ? dest : nullptr; }
void* image_realloc(void*, size_t, H5FD_file_image_op_t, void*) { return nullptr; }  // read-only: never resized
herr_t image_free(void*, H5FD_file_image_op_t, void*) { return 0; }
void* image_udata_copy(void* udata) { return udata; }
herr_t image_udata_free(void*) { return 0; }

std::unique_ptr<detail::Hdf5File> open_image(const FileImage& image) {
    static std::atomic<unsigned long> opened{0};
    void* bytes = const_cast<unsigned char*>(image.bytes.data());  // HDF5 takes void*; the file is opened read-only
    H5::FileAccPropList access;
    access.setCore(1 << 20, /*backing_store=*/false);
    H5FD_file_image_callbacks_t callbacks = {image_malloc, image_memcpy, image_realloc, image_free,
                                             image_udata_copy, image_udata_free, bytes};
    ICLAB_CHECK(H5Pset_file_image_callbacks(access.getId(), &callbacks) >= 0 &&
                    H5Pset_file_image(access.getId(), bytes, image.bytes.size()) >= 0,
                "cannot hand HDF5 a file image");
    // A name of its own per open: HDF5 shares one open file between opens of the same name.
    const std::string name = "iclab-image-" + std::to_string(::getpid()) + "-" + std::to_string(++opened);
    return std::make_unique<detail::Hdf5File>(name, H5F_ACC_RDONLY, access);
}

}  // namespace

ResultsReader::ResultsReader(const std::filesystem::path& path)
    : ResultsReader(read_checked_hdf5_image(path), Unchecked{}) {}

ResultsReader::ResultsReader(std::shared_ptr<const FileImage> image, Unchecked)
    : path_(image->path), image_(std::move(image)) {
    H5::Exception::dontPrint();
    ICLAB_INPUT_CHECK(!image_->bytes.empty(), path_.string() << " is not a readable HDF5 results file (it is empty)");
    try {
        hdf5_ = read_step(path_, "opening", [&] { return open_image(*image_); });
    } catch (const Error& error) {  // truncated, text: bad input, not a failure of iclab
        throw InputError(path_.string() + " is not a readable HDF5 results file (" + error.what() + ")");
    }
}

ResultsReader::~ResultsReader() = default;

bool ResultsReader::holds_floats(const std::string& path) const {
    return read_step(path_, "reading the type of " + path,
                     [&] { return open_dataset(hdf5_->file, absolute_path(path)).getTypeClass() == H5T_FLOAT; });
}

bool ResultsReader::has(const std::string& path) const {
    return read_step(path_, "looking up " + path, [&] { return link_exists(hdf5_->file, absolute_path(path)); });
}

std::vector<std::string> ResultsReader::list(const std::string& group_path) const {
    return read_step(path_, "listing " + group_path, [&] {
        const std::string absolute = absolute_path(group_path);
        const H5::H5File& file = hdf5_->file;
        ICLAB_INPUT_CHECK(link_exists(file, absolute) && (absolute == "/" || file.childObjType(absolute) == H5O_TYPE_GROUP),
                    "no group " << absolute);
        const H5::Group group = file.openGroup(absolute);
        std::vector<std::string> names;
        for (hsize_t index = 0; index < group.getNumObjs(); ++index) names.push_back(group.getObjnameByIdx(index));
        std::sort(names.begin(), names.end());
        return names;
    });
}

bool ResultsReader::has_attr(const std::string& object_path, const std::string& name) const {
    return read_step(path_, "looking up attribute " + name + " of " + object_path, [&] {
        const std::string absolute = absolute_path(object_path);
        const H5::H5File& file = hdf5_->file;
        if (!link_exists(file, absolute)) return false;
        if (absolute == "/" || file.childObjType(absolute) == H5O_TYPE_GROUP) return file.openGroup(absolute).attrExists(name);
        return file.openDataSet(absolute).attrExists(name);
    });
}

std::string ResultsReader::read_attr_string(const std::string& object_path, const std::string& name) const {
    return read_step(path_, "reading attribute " + name + " of " + object_path, [&] {
        const H5::Attribute attribute = open_attribute(hdf5_->file, absolute_path(object_path), name);
        ICLAB_INPUT_CHECK(attribute.getTypeClass() == H5T_STRING, "it is not a string");
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

std::string ResultsReader::read_bytes(const std::string& path) const {
    const bool bytes = read_step(path_, "reading " + path, [&] {
        const H5::DataSet dataset = open_dataset(hdf5_->file, absolute_path(path));
        return dataset.getTypeClass() == H5T_INTEGER && dataset.getIntType().getSize() == 1 &&
               dataset.getIntType().getSign() == H5T_SGN_NONE;
    });
    ICLAB_INPUT_CHECK(bytes, path_.string() << ": " << path << " is not a dataset of bytes (uint8)");
    const TensorData<int32_t> data = read_numeric<int32_t>(hdf5_->file, path_, path, H5::PredType::NATIVE_INT32, false, true);
    return std::string(data.values.begin(), data.values.end());
}

std::vector<double> ResultsReader::read_column_double(const std::string& path) const {
    return read_numeric<double>(hdf5_->file, path_, path, H5::PredType::NATIVE_DOUBLE, true, true).values;
}

std::vector<int64_t> ResultsReader::read_column_int64(const std::string& path) const {
    return read_numeric<int64_t>(hdf5_->file, path_, path, H5::PredType::NATIVE_INT64, false, true).values;
}

std::vector<std::string> ResultsReader::read_column_string(const std::string& path) const {
    return read_step(path_, "reading " + path, [&] {
        const H5::DataSet dataset = open_dataset(hdf5_->file, absolute_path(path));
        const H5::DataSpace space = dataset.getSpace();
        ICLAB_INPUT_CHECK(dataset.getTypeClass() == H5T_STRING && space.getSimpleExtentNdims() == 1,
                    "it is not a 1-D column of strings");
        const H5::StrType type = dataset.getStrType();  // stored type: no ASCII <-> UTF-8 conversion
        ICLAB_INPUT_CHECK(type.isVariableStr(), "it holds fixed-length strings (this writer never does)");
        const size_t count = static_cast<size_t>(space.getSimpleExtentNpoints());
        // A damaged header can claim any count: every stored string takes at least one byte of the dataset's storage.
        ICLAB_INPUT_CHECK(count <= dataset.getStorageSize(), path << " claims " << count << " strings but stores "
                                                                  << dataset.getStorageSize() << " bytes: the file is damaged");
        std::vector<char*> pointers(count, nullptr);
        std::vector<std::string> strings;
        if (pointers.empty()) return strings;
        dataset.read(pointers.data(), type);
        for (const char* value : pointers) strings.emplace_back(value != nullptr ? value : "");
        H5::DataSet::vlenReclaim(pointers.data(), type, space);  // HDF5 allocated every string
        return strings;
    });
}

Column ResultsReader::read_column(const std::string& path) const {
    const auto type_class = read_step(path_, "reading " + path, [&] {
        return open_dataset(hdf5_->file, absolute_path(path)).getTypeClass();
    });
    const std::string name = path.substr(path.rfind('/') + 1);
    if (type_class == H5T_STRING) return Column{name, read_column_string(path)};
    if (type_class == H5T_INTEGER) return Column{name, read_column_int64(path)};
    return Column{name, read_column_double(path)};
}

// Attributes of groups (the root, tables); datasets' attributes are read by name.
std::vector<std::pair<std::string, ResultsReader::AttributeValue>> ResultsReader::attributes(const std::string& object_path) const {
    const std::vector<std::pair<std::string, H5T_class_t>> found = read_step(path_, "listing attributes of " + object_path, [&] {
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

bool ResultsReader::is_table(const std::string& group_path) const {
    return read_step(path_, "looking up table " + group_path, [&] {
        const std::string absolute = absolute_path(group_path);
        const H5::H5File& file = hdf5_->file;
        if (!link_exists(file, absolute) || (absolute != "/" && file.childObjType(absolute) != H5O_TYPE_GROUP)) return false;
        return file.openGroup(absolute).attrExists("column_order");
    });
}

}  // namespace iclab::io
