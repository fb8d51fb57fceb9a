#pragma once
// Parameters in results.h5 and checkpoint.h5: one dataset per tensor of the flat layout
// (docs/checkpoint_format.md).
#include <string>
#include <vector>

#include "framework/io/results_file.hpp"
#include "framework/model/parameters.hpp"
#include "framework/model/transformer.hpp"

namespace iclab::run {

// Parameters (or anything in their layout, e.g. optimizer moments) as one dataset per tensor
// <group>/<name>, with its shape and the attributes layout and trainable.
template <class T>
void write_parameter_tensors(io::ResultsWriter& writer, const std::string& group, const model::ParameterLayout& layout,
                             const std::vector<T>& buffer);
// Reads <group>/<name> for every tensor of the layout into the buffer; InputError naming the file
// when one is missing or has another shape.
template <class T>
void read_parameter_tensors(const io::ResultsReader& reader, const std::string& group, const model::ParameterLayout& layout,
                            std::vector<T>& buffer);

// /checkpoint/<parameter name> for every parameter, with its shape and math convention as attributes.
template <class T>
void write_checkpoint(io::ResultsWriter& writer, const model::Transformer<T>& model);
// Loads /checkpoint/* into the model; every parameter must be present with the right shape.
template <class T>
void read_checkpoint(const io::ResultsReader& reader, model::Transformer<T>& model);

}  // namespace iclab::run
