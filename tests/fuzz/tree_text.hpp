#pragma once
// An HDF5 file's content as text, for the structure-aware adapter fuzzer (fuzz_adapter_fields.cpp): groups,
// attributes and datasets, one per line, so that libFuzzer's mutations change values, shapes, types and names
// rather than HDF5's on-disk structures (those are fuzzed by fuzz_adapter_reader.cpp and fuzz_results_reader.cpp).
//   G /path                              a group (its parent must exist; "/" always does)
//   A /path name s text                  a string attribute (the rest of the line; \n \t \\ \xHH escapes)
//   A /path name i 123                   an integer attribute (int64)
//   A /path name d 1.5e-3                a floating-point attribute (strtod: nan, inf, hex floats too)
//   D /path f|d|i|I 2,3 v v v ...        a float32 | float64 | int32 | int64 dataset of that shape ('-': a scalar)
//   D /path s 2                          a 1-D string column of 2 values, one per following line (escaped)
// A dataset may list fewer values than its shape claims (a damaged file's header): reading it is then refused the
// way io::ResultsReader refuses it. Lines that do not parse are skipped. Shapes are capped (kMaxValues values).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace iclab::io {
class ResultsReader;
}

namespace iclab::fuzz {

constexpr std::size_t kMaxValues = 1 << 16;

struct TreeDataset {
    char type = 'd';                  // f (float32), d (float64), i (int32), I (int64), s (strings)
    std::vector<std::size_t> shape;   // as claimed
    std::vector<double> reals;        // f, d (f values already rounded to float)
    std::vector<std::int64_t> ints;   // i, I
    std::vector<std::string> strings; // s
    std::size_t stored() const { return type == 's' ? strings.size() : (type == 'i' || type == 'I') ? ints.size() : reals.size(); }
};

struct TreeObject {
    bool group = true;
    TreeDataset data;  // datasets only
    std::map<std::string, std::variant<std::string, std::int64_t, double>> attributes;
};

struct Tree {
    std::map<std::string, TreeObject> objects;  // by absolute path; "/" is the root group
};

Tree parse_tree(const std::uint8_t* data, std::size_t size);
// The text of a file read through the real reader (for seeds): every group, group attribute and dataset.
std::string dump_tree(const io::ResultsReader& reader);

// The tree the in-memory io::ResultsReader (tree_reader.cpp) reads, whatever path it is given.
void set_current_tree(const Tree* tree);
const Tree* current_tree();

}  // namespace iclab::fuzz
