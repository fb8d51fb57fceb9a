#pragma once
// Results files: one HDF5 file per run, written under a temporary name and renamed when complete,
// so a file under the final name is always a finished run (CONVENTIONS.md: a writer killed
// mid-write can leave an HDF5 file unreadable).
//
// Layout readable from Python in one line per table (h5py 3.7):
//   root attributes        strings (variable-length UTF-8, read as str), int64, double
//   /curves, /tables/<t>   one 1-D dataset per column + attribute column_order = "step,train_loss,..."
//                          pandas.DataFrame({k: f[g][k][()] for k in f[g].attrs['column_order'].split(',')})
//                          (h5py returns string *datasets* as bytes: f[g][k].asstr()[()] gives str)
//   /checkpoint/<name>     N-d float/double/int32/int64 datasets with string attributes (e.g. layout)
//
// The writer knows nothing of models: it takes names, flat buffers and shapes.
// Every HDF5 failure throws iclab::Error naming the file; HDF5's own error printing is silenced.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "framework/core/check.hpp"

namespace iclab::io {

namespace detail {
struct Hdf5File;  // keeps H5Cpp.h out of every file that includes this header
}
struct FileImage;  // hdf5_guard.hpp

// One column of a table: all columns of one table must have the same length.
struct Column {
    std::string name;  // no ',' (it separates column_order) and no '/'
    std::variant<std::vector<double>, std::vector<int64_t>, std::vector<std::string>> values;
};

// String attributes attached to a dataset, e.g. {{"layout", "(C, 3C) row-major"}}.
using Attributes = std::map<std::string, std::string>;

// A dataset read back: values in row-major order, shape {} for a scalar.
template <typename T>
struct TensorData {
    std::vector<size_t> shape;
    std::vector<T> values;
};

// A table read back by ResultsReader::read_table: its columns in column_order, every one of `rows` values (checked
// when read: show, collect and the adapter reader never index past a shorter column).
struct Table {
    std::string path;             // the table's group
    std::vector<Column> columns;  // in column_order
    std::size_t rows = 0;
    bool has(const std::string& name) const;
    // InputError naming the table and the column when it is missing (or not numbers / not strings).
    const Column& column(const std::string& name) const;
    std::vector<double> numbers(const std::string& name) const;  // a float or integer column, as double
    const std::vector<int64_t>& integers(const std::string& name) const;
    const std::vector<std::string>& strings(const std::string& name) const;
};

// A display copy of text for a string attribute: HDF5 ends a variable-length string at its first NUL, so each NUL byte
// becomes U+2400 "␀" (the symbol for null). For text whose exact bytes are kept elsewhere (write_bytes, token ids).
std::string nul_as_symbol(const std::string& text);

class ResultsWriter {
public:
    // Builds the file in memory; nothing is on disk until commit(). The temporary file of commit() has a name of
    // its own per writer, "<final_path>.partial.<pid>.<random>", created exclusively.
    // Throws iclab::InputError if final_path exists and overwrite is false: a completed result is
    // never replaced silently. With overwrite, the old file is replaced only by commit().
    explicit ResultsWriter(std::filesystem::path final_path, bool overwrite = false);
    // Without commit(): discards the in-memory file, so no file appears under the final name.
    ~ResultsWriter();
    ResultsWriter(const ResultsWriter&) = delete;
    ResultsWriter& operator=(const ResultsWriter&) = delete;

    // Root attributes; setting a name again replaces the value.
    void set_attr(const std::string& name, const std::string& value);
    void set_attr(const std::string& name, const char* value) { set_attr(name, std::string(value)); }
    void set_attr(const std::string& name, int64_t value);
    void set_attr(const std::string& name, double value);
    // Any other integer type (int, size_t, ...) is stored as int64; without this, an int literal
    // would be ambiguous between the int64_t and double overloads.
    template <typename Integer,
              std::enable_if_t<std::is_integral_v<Integer> && !std::is_same_v<Integer, bool>, int> = 0>
    void set_attr(const std::string& name, Integer value) {
        ICLAB_CHECK(!std::is_unsigned_v<Integer> || static_cast<uint64_t>(value) <= INT64_MAX,
                    "attribute " << name << " = " << value << " does not fit int64");
        set_attr(name, static_cast<int64_t>(value));
    }
    // Flags are written as the strings "true"/"false" by the caller: say which you mean.
    void set_attr(const std::string& name, bool value) = delete;

    // Creates group_path (and missing parents) holding one 1-D dataset per column and the
    // attribute column_order, plus the given string attributes (e.g. "paper_bands", see docs/results_layout.md).
    // Throws if the group already exists.
    void write_columns(const std::string& group_path, const std::vector<Column>& columns, const Attributes& attributes = {});

    // An N-d dataset of prod(shape) values in row-major order; missing parent groups are created.
    // shape {} writes a scalar. Throws if path already exists.
    void write_tensor(const std::string& path, const float* data, const std::vector<size_t>& shape,
                      const Attributes& attributes = {});
    void write_tensor(const std::string& path, const double* data, const std::vector<size_t>& shape,
                      const Attributes& attributes = {});
    void write_tensor(const std::string& path, const int32_t* data, const std::vector<size_t>& shape,
                      const Attributes& attributes = {});
    void write_tensor(const std::string& path, const int64_t* data, const std::vector<size_t>& shape,
                      const Attributes& attributes = {});

    // Text stored exactly, as a 1-D uint8 dataset of its bytes: any byte (NUL included, which ends an HDF5 string),
    // valid UTF-8 or not. For text a model generates or a user's file holds. h5py: bytes(f[path][()]).
    void write_bytes(const std::string& path, const std::string& bytes, const Attributes& attributes = {});

    // Writes the image to the temporary name, fsyncs, and moves it to the final name (atomic on POSIX; without
    // overwrite through link(), which refuses a final name another process completed meanwhile). A full disk
    // throws Error "no space left writing FILE" with the temporary file removed and an earlier file intact.
    // Nothing can be written afterwards.
    void commit();

    const std::filesystem::path& final_path() const { return final_path_; }
    const std::filesystem::path& partial_path() const { return partial_path_; }
    bool committed() const { return committed_; }

private:
    std::filesystem::path final_path_;
    std::filesystem::path partial_path_;
    bool overwrite_ = false;
    bool committed_ = false;
    std::unique_ptr<detail::Hdf5File> hdf5_;  // null once closed

    detail::Hdf5File& open_file(const char* action);
};

// Read-only access to a results file. Paths are absolute ("/curves/step") or relative to the root.
class ResultsReader {
public:
    // Reads the file into memory once, checks that image in a child process (hdf5_guard.hpp: HDF5 may crash or hang
    // on a damaged file) and then reads the same bytes here: every HDF5 file iclab reads is untrusted.
    explicit ResultsReader(const std::filesystem::path& path);
    // Reads an image as it is, with no check: for the child of check_hdf5_image, and for images it passed.
    struct Unchecked {};
    ResultsReader(std::shared_ptr<const FileImage> image, Unchecked);
    ~ResultsReader();
    ResultsReader(const ResultsReader&) = delete;
    ResultsReader& operator=(const ResultsReader&) = delete;

    bool has(const std::string& path) const;                                 // group or dataset
    bool holds_floats(const std::string& path) const;                        // a float32/float64 dataset
    std::vector<std::string> list(const std::string& group_path) const;      // member names, sorted

    bool has_attr(const std::string& object_path, const std::string& name) const;
    std::string read_attr_string(const std::string& object_path, const std::string& name) const;
    int64_t read_attr_int64(const std::string& object_path, const std::string& name) const;
    double read_attr_double(const std::string& object_path, const std::string& name) const;

    // Converted from whichever numeric type is stored (float, double or integer).
    TensorData<float> read_tensor_float(const std::string& path) const;
    TensorData<double> read_tensor_double(const std::string& path) const;
    // Only from stored integers that fit int32 (never truncates floats).
    TensorData<int32_t> read_int32(const std::string& path) const;

    // A 1-D uint8 dataset (write_bytes) as the bytes it holds.
    std::string read_bytes(const std::string& path) const;

    // 1-D datasets, as written by write_columns.
    std::vector<double> read_column_double(const std::string& path) const;  // from float or integer
    std::vector<int64_t> read_column_int64(const std::string& path) const;  // from integer only
    std::vector<std::string> read_column_string(const std::string& path) const;
    // A 1-D column in its stored kind: strings, integers (as int64) or floats (as double).
    Column read_column(const std::string& path) const;
    // The one way to read a table (a group with column_order): InputError (exit 2) naming the table when
    // column_order is missing, empty, names a column twice or a column that is absent, or when the columns differ
    // in length. Every command that reads tables (show, collect, adapters' base chains) reads them through it.
    Table read_table(const std::string& group_path) const;
    bool is_table(const std::string& group_path) const;  // a group with the attribute column_order

    // Every attribute of an object, in name order: strings, int64 or double (other kinds are skipped).
    using AttributeValue = std::variant<std::string, int64_t, double>;
    std::vector<std::pair<std::string, AttributeValue>> attributes(const std::string& object_path) const;

    const std::filesystem::path& path() const { return path_; }

    // Reads every group, link, attribute and dataset once, the ways the methods above read them (the child of
    // check_hdf5_image does this, so that a crash or a hang inside HDF5 happens there). A damaged item is skipped (the
    // read that needs it reports it); InputError for what iclab never follows: a soft, external or user-defined link,
    // groups nested deeper than 64.
    void read_everything() const;

private:
    std::filesystem::path path_;
    std::shared_ptr<const FileImage> image_;  // the bytes HDF5 reads; outlives hdf5_ (declared before it)
    std::unique_ptr<detail::Hdf5File> hdf5_;
};

}  // namespace iclab::io
