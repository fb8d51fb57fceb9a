#include <set>
#include <string>
#include <vector>

#include "framework/io/hdf5_detail.hpp"
#include "framework/io/results_file.hpp"

// ResultsReader::read_everything: what the child of check_hdf5_image (hdf5_guard.hpp) does with an untrusted file, so
// that whatever HDF5 does on a damaged file (crash, endless loop) happens in the child. Every read goes through the
// same reader methods the commands use, and reaches every structure their reads could reach: each group's link storage
// (listed by index, each link looked up by name), each object's attributes (by index and by name, values read), each
// dataset's header and data (checksums verified).
namespace iclab::io {

using namespace detail;

namespace {

constexpr int kMaxDepth = 64;  // iclab writes at most 4 levels

// A damaged item is left for the command that reads it (which reports it); only a crash or a hang matters here.
template <typename Read>
void attempt(Read&& read) {
    try {
        read();
    } catch (const Error&) {
    }
}

}  // namespace

void ResultsReader::read_everything() const {
    const H5::H5File& file = hdf5_->file;
    std::set<haddr_t> visited;
    // The attributes of a group or dataset: names and kinds by index, then each value read by name as the commands do.
    const auto read_attributes = [&](const std::string& path, bool is_group) {
        std::vector<std::pair<std::string, H5T_class_t>> found;
        attempt([&] {
            read_step(path_, "listing attributes of " + path, [&] {
                const auto list_from = [&](const H5::H5Object& object) {
                    const int count = object.getNumAttrs();
                    for (int i = 0; i < count; ++i) {
                        const H5::Attribute attribute = object.openAttribute(static_cast<unsigned int>(i));
                        found.emplace_back(attribute.getName(), attribute.getTypeClass());
                    }
                };
                if (is_group) list_from(file.openGroup(path));
                else list_from(file.openDataSet(path));
                return 0;
            });
        });
        for (const auto& entry : found) {
            const std::string& name = entry.first;  // (clang's C++17 captures no structured binding)
            const H5T_class_t kind = entry.second;
            attempt([&] { (void)has_attr(path, name); });
            if (kind == H5T_STRING) attempt([&] { (void)read_attr_string(path, name); });
            if (kind == H5T_INTEGER) attempt([&] { (void)read_attr_int64(path, name); });
            if (kind == H5T_INTEGER || kind == H5T_FLOAT) attempt([&] { (void)read_attr_double(path, name); });
        }
    };
    const auto read_dataset = [&](const std::string& path) {
        read_attributes(path, false);
        H5T_class_t kind = H5T_NO_CLASS;
        attempt([&] { kind = read_step(path_, "reading " + path, [&] { return file.openDataSet(path).getTypeClass(); }); });
        attempt([&] { (void)holds_floats(path); });
        if (kind == H5T_STRING) attempt([&] { (void)read_column_string(path); });
        if (kind == H5T_INTEGER || kind == H5T_FLOAT) attempt([&] { (void)read_tensor_double(path); });
        if (kind == H5T_INTEGER) attempt([&] { (void)read_int32(path); });
    };
    const auto read_group = [&](const auto& self, const std::string& path, int depth) -> void {
        ICLAB_INPUT_CHECK(depth <= kMaxDepth, path_.string() << ": groups nested deeper than " << kMaxDepth
                                                             << " (iclab writes at most 4 levels): refused");
        read_attributes(path, true);
        attempt([&] {
            if (is_table(path)) (void)read_table(path);
        });
        std::vector<std::string> names;
        attempt([&] { names = list(path); });
        for (const std::string& name : names) {
            if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos) continue;  // never read
            const std::string child = (path == "/" ? "" : path) + "/" + name;
            H5L_info_t link{};
            if (H5Lget_info(file.getId(), child.c_str(), &link, H5P_DEFAULT) < 0) continue;
            ICLAB_INPUT_CHECK(link.type == H5L_TYPE_HARD,
                              path_.string() << ": " << child << " is a soft, external or user-defined link; iclab writes only "
                                                                 "hard links and follows no other kind: refused");
            attempt([&] { (void)has(child); });
            if (!visited.insert(link.u.address).second) continue;  // an object reached twice is read once
            H5O_type_t type = H5O_TYPE_UNKNOWN;
            attempt([&] { type = read_step(path_, "looking up " + child, [&] { return file.childObjType(child); }); });
            if (type == H5O_TYPE_GROUP) self(self, child, depth + 1);
            if (type == H5O_TYPE_DATASET) read_dataset(child);
        }
    };
    read_group(read_group, "/", 0);
}

}  // namespace iclab::io
