// io::ResultsReader over an in-memory tree (tree_text.hpp), for the structure-aware adapter fuzzer: linked instead of
// framework/io/results_reader.cpp, it gives the adapter readers the same answers and the same refusals the HDF5 reader
// gives for a file of that content — a missing object or attribute, another type, integers wider than int32, a
// dataset that claims more values than it stores, a column that is not 1-D — at the speed of a map lookup. Datasets
// carry no per-dataset checksum here (the HDF5 reader's path for files written before checksums); the adapters' own
// content checksums still apply. read_table and Table are shared with the HDF5 reader (results_table.cpp).
#include <algorithm>

#include "framework/core/check.hpp"
#include "framework/io/hdf5_detail.hpp"
#include "framework/io/results_file.hpp"
#include "tests/fuzz/tree_text.hpp"

namespace iclab::fuzz {

namespace {
const Tree* g_tree = nullptr;
}

void set_current_tree(const Tree* tree) { g_tree = tree; }
const Tree* current_tree() { return g_tree; }

}  // namespace iclab::fuzz

namespace iclab::io {

namespace {

using fuzz::Tree;
using fuzz::TreeDataset;
using fuzz::TreeObject;

const Tree& tree() {
    ICLAB_CHECK(fuzz::current_tree() != nullptr, "no tree set (fuzz::set_current_tree)");
    return *fuzz::current_tree();
}

const TreeObject* find(const std::string& path) {
    const std::string absolute = detail::absolute_path(path);
    const auto it = tree().objects.find(absolute);
    return it == tree().objects.end() ? nullptr : &it->second;
}

// What the HDF5 reader checks before it reads a dataset (results_reader.cpp read_numeric), by the same rules.
const TreeDataset& dataset(const std::filesystem::path& file, const std::string& path, bool numeric, bool from_float, bool int32_only,
                           bool one_dimensional) {
    const TreeObject* object = find(path);
    const std::string where = file.string() + ": reading " + path + ": ";
    ICLAB_INPUT_CHECK(object != nullptr, where << "no dataset " << path);
    ICLAB_INPUT_CHECK(!object->group, where << path << " is not a dataset");
    const TreeDataset& d = object->data;
    if (numeric) {
        const bool is_float = d.type == 'f' || d.type == 'd';
        ICLAB_INPUT_CHECK(d.type != 's' && (!is_float || from_float), where << "it holds " << (is_float ? "floating-point" : "non-numeric") << " data");
        ICLAB_INPUT_CHECK(!int32_only || is_float || d.type == 'i', where << "it holds integers wider than int32");
    } else {
        ICLAB_INPUT_CHECK(d.type == 's', where << "it is not a 1-D column of strings");
    }
    ICLAB_INPUT_CHECK(!one_dimensional || d.shape.size() == 1, where << "it is not a 1-D column");
    std::size_t count = 1;
    for (const std::size_t n : d.shape) count *= n;
    ICLAB_INPUT_CHECK(count <= d.stored(), where << path << " claims " << count << " values but stores " << d.stored()
                                                 << ": the file is damaged or was not written by iclab");
    return d;
}

template <typename T>
TensorData<T> numeric(const std::filesystem::path& file, const std::string& path, bool from_float, bool int32_only, bool one_dimensional) {
    const TreeDataset& d = dataset(file, path, true, from_float, int32_only, one_dimensional);
    TensorData<T> tensor;
    tensor.shape = d.shape;
    std::size_t count = 1;
    for (const std::size_t n : d.shape) count *= n;
    for (std::size_t i = 0; i < count; ++i)
        tensor.values.push_back(d.type == 'f' || d.type == 'd' ? static_cast<T>(d.reals[i]) : static_cast<T>(d.ints[i]));
    return tensor;
}

template <typename T>
const T& attribute(const std::filesystem::path& file, const std::string& path, const std::string& name, const char* kind) {
    const TreeObject* object = find(path);
    const std::string where = file.string() + ": reading attribute " + name + " of " + path + ": ";
    ICLAB_INPUT_CHECK(object != nullptr, where << "no object " << path);
    const auto it = object->attributes.find(name);
    ICLAB_INPUT_CHECK(it != object->attributes.end(), where << "no attribute " << name << " on " << path);
    const T* value = std::get_if<T>(&it->second);
    ICLAB_INPUT_CHECK(value != nullptr, where << "it is not " << kind);
    return *value;
}

}  // namespace

ResultsReader::ResultsReader(const std::filesystem::path& path) : path_(path) { (void)tree(); }
ResultsReader::~ResultsReader() = default;

bool ResultsReader::holds_floats(const std::string& path) const {
    const TreeDataset& d = dataset(path_, path, true, true, false, false);
    return d.type == 'f' || d.type == 'd';
}

bool ResultsReader::has(const std::string& path) const { return find(path) != nullptr; }

std::vector<std::string> ResultsReader::list(const std::string& group_path) const {
    const std::string absolute = detail::absolute_path(group_path);
    const TreeObject* object = find(absolute);
    ICLAB_INPUT_CHECK(object != nullptr && object->group, path_.string() << ": listing " << group_path << ": no group " << absolute);
    const std::string prefix = absolute == "/" ? "/" : absolute + "/";
    std::vector<std::string> names;
    for (auto it = tree().objects.lower_bound(prefix); it != tree().objects.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it)
        if (it->first.size() > prefix.size() && it->first.find('/', prefix.size()) == std::string::npos)
            names.push_back(it->first.substr(prefix.size()));
    return names;  // map order: sorted
}

bool ResultsReader::has_attr(const std::string& object_path, const std::string& name) const {
    const TreeObject* object = find(object_path);
    return object != nullptr && object->attributes.count(name) != 0;
}

std::string ResultsReader::read_attr_string(const std::string& object_path, const std::string& name) const {
    return attribute<std::string>(path_, object_path, name, "a string");
}

int64_t ResultsReader::read_attr_int64(const std::string& object_path, const std::string& name) const {
    return attribute<std::int64_t>(path_, object_path, name, "a single integer");
}

double ResultsReader::read_attr_double(const std::string& object_path, const std::string& name) const {
    const TreeObject* object = find(object_path);
    if (object != nullptr && object->attributes.count(name) && std::holds_alternative<std::int64_t>(object->attributes.at(name)))
        return static_cast<double>(std::get<std::int64_t>(object->attributes.at(name)));  // HDF5 converts integers
    return attribute<double>(path_, object_path, name, "a single number");
}

TensorData<float> ResultsReader::read_tensor_float(const std::string& path) const { return numeric<float>(path_, path, true, false, false); }
TensorData<double> ResultsReader::read_tensor_double(const std::string& path) const { return numeric<double>(path_, path, true, false, false); }
TensorData<int32_t> ResultsReader::read_int32(const std::string& path) const { return numeric<int32_t>(path_, path, false, true, false); }
std::vector<double> ResultsReader::read_column_double(const std::string& path) const { return numeric<double>(path_, path, true, false, true).values; }
std::vector<int64_t> ResultsReader::read_column_int64(const std::string& path) const { return numeric<int64_t>(path_, path, false, false, true).values; }

std::vector<std::string> ResultsReader::read_column_string(const std::string& path) const {
    const TreeDataset& d = dataset(path_, path, false, false, false, true);
    return std::vector<std::string>(d.strings.begin(), d.strings.begin() + static_cast<std::ptrdiff_t>(d.shape[0]));
}

Column ResultsReader::read_column(const std::string& path) const {
    const TreeObject* object = find(path);
    ICLAB_INPUT_CHECK(object != nullptr && !object->group, path_.string() << ": reading " << path << ": no dataset " << path);
    const std::string name = path.substr(path.rfind('/') + 1);
    if (object->data.type == 's') return Column{name, read_column_string(path)};
    if (object->data.type == 'i' || object->data.type == 'I') return Column{name, read_column_int64(path)};
    return Column{name, read_column_double(path)};
}

std::vector<std::pair<std::string, ResultsReader::AttributeValue>> ResultsReader::attributes(const std::string& object_path) const {
    const TreeObject* object = find(object_path);
    ICLAB_INPUT_CHECK(object != nullptr && object->group, path_.string() << ": listing attributes of " << object_path << ": no group");
    return {object->attributes.begin(), object->attributes.end()};
}

bool ResultsReader::is_table(const std::string& group_path) const {
    const TreeObject* object = find(group_path);
    return object != nullptr && object->group && object->attributes.count("column_order") != 0;
}

}  // namespace iclab::io
