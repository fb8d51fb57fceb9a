// ResultsReader::read_table and Table's accessors: built on the reader's primitives only (has, read_attr_string,
// read_column, is_table), so that they hold for any implementation of those primitives — the HDF5 one
// (results_reader.cpp) and the in-memory one of the structure-aware adapter fuzzer (tests/fuzz/tree_reader.cpp).
#include <algorithm>
#include <sstream>

#include "framework/io/hdf5_detail.hpp"  // absolute_path
#include "framework/io/results_file.hpp"

namespace iclab::io {

using detail::absolute_path;

namespace {

std::size_t column_length(const Column& column) {
    return std::visit([](const auto& values) { return values.size(); }, column.values);
}

}  // namespace

Table ResultsReader::read_table(const std::string& group_path) const {
    Table table;
    table.path = absolute_path(group_path);
    ICLAB_INPUT_CHECK(is_table(table.path), path_.string() << ": " << table.path << " is not a table (no group with column_order)");
    const std::string order = read_attr_string(table.path, "column_order");
    std::vector<std::string> names;
    std::stringstream stream(order);
    for (std::string name; std::getline(stream, name, ',');) {
        ICLAB_INPUT_CHECK(!name.empty() && name.find('/') == std::string::npos && name != "." && name != "..",
                          path_.string() << ": table " << table.path << " has a bad column name '" << name << "' in column_order");
        ICLAB_INPUT_CHECK(std::find(names.begin(), names.end(), name) == names.end(),
                          path_.string() << ": table " << table.path << " names column " << name << " twice in column_order");
        names.push_back(name);
    }
    ICLAB_INPUT_CHECK(!names.empty() && order.back() != ',', path_.string() << ": table " << table.path << " has an empty column_order");
    for (const std::string& name : names) {
        ICLAB_INPUT_CHECK(has(table.path + "/" + name),
                          path_.string() << ": table " << table.path << " has no column " << name << " (named in column_order)");
        table.columns.push_back(read_column(table.path + "/" + name));
        const std::size_t length = column_length(table.columns.back());
        if (table.columns.size() == 1) table.rows = length;
        ICLAB_INPUT_CHECK(length == table.rows, path_.string() << ": table " << table.path << ": column " << name << " has " << length
                                                               << " rows, column " << names.front() << " has " << table.rows
                                                               << " (the file is damaged or was not written by iclab)");
    }
    return table;
}

bool Table::has(const std::string& name) const {
    return std::any_of(columns.begin(), columns.end(), [&](const Column& column) { return column.name == name; });
}

const Column& Table::column(const std::string& name) const {
    for (const Column& column : columns)
        if (column.name == name) return column;
    throw InputError("table " + path + " has no column " + name);
}

std::vector<double> Table::numbers(const std::string& name) const {
    const Column& found = column(name);
    if (const auto* doubles = std::get_if<std::vector<double>>(&found.values)) return *doubles;
    const auto* integers = std::get_if<std::vector<int64_t>>(&found.values);
    ICLAB_INPUT_CHECK(integers != nullptr, "table " << path << ": column " << name << " holds strings, numbers were expected");
    return std::vector<double>(integers->begin(), integers->end());
}

const std::vector<int64_t>& Table::integers(const std::string& name) const {
    const auto* integers = std::get_if<std::vector<int64_t>>(&column(name).values);
    ICLAB_INPUT_CHECK(integers != nullptr, "table " << path << ": column " << name << " does not hold integers");
    return *integers;
}

const std::vector<std::string>& Table::strings(const std::string& name) const {
    const auto* strings = std::get_if<std::vector<std::string>>(&column(name).values);
    ICLAB_INPUT_CHECK(strings != nullptr, "table " << path << ": column " << name << " holds numbers, strings were expected");
    return *strings;
}

}  // namespace iclab::io
