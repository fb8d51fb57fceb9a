#include "framework/checkpoint/checkpoint_io.hpp"

#include <cmath>

#include "framework/core/check.hpp"

namespace iclab::run {

template <class T>
void write_parameter_tensors(io::ResultsWriter& writer, const std::string& group, const model::ParameterLayout& layout,
                             const std::vector<T>& buffer) {
    ICLAB_CHECK(buffer.size() == layout.total(), "buffer of " << buffer.size() << " values for a layout of " << layout.total());
    for (const auto& entry : layout.entries())
        writer.write_tensor(group + "/" + entry.name, buffer.data() + entry.offset, entry.shape,
                            {{"layout", entry.layout}, {"trainable", entry.trainable ? "true" : "false"}});
}

template <class T>
void read_parameter_tensors(const io::ResultsReader& reader, const std::string& group, const model::ParameterLayout& layout,
                            std::vector<T>& buffer) {
    buffer.resize(layout.total());
    for (const auto& entry : layout.entries()) {
        const std::string path = group + "/" + entry.name;
        ICLAB_INPUT_CHECK(reader.has(path), reader.path().string() << ": " << group << " has no tensor " << entry.name
                                                                   << " (was it written by another model?)");
        ICLAB_INPUT_CHECK(reader.holds_floats(path), reader.path().string() << ": " << path << " does not hold floating-point values");
        // Read in the stored precision's own type: float32 values come back exactly either way. The reader verifies
        // the tensor's checksum.
        const auto tensor = reader.read_tensor_double(path);
        ICLAB_INPUT_CHECK(tensor.shape == entry.shape, reader.path().string() << ": " << path
                                                                              << " has another shape than the model's");
        for (std::size_t i = 0; i < entry.size; ++i) {
            ICLAB_INPUT_CHECK(std::isfinite(tensor.values[i]), reader.path().string() << ": " << path << " holds a non-finite value ("
                                                                                      << tensor.values[i] << " at " << i << ")");
            buffer[entry.offset + i] = static_cast<T>(tensor.values[i]);
        }
    }
}

template void write_parameter_tensors<float>(io::ResultsWriter&, const std::string&, const model::ParameterLayout&,
                                             const std::vector<float>&);
template void write_parameter_tensors<double>(io::ResultsWriter&, const std::string&, const model::ParameterLayout&,
                                              const std::vector<double>&);
template void read_parameter_tensors<float>(const io::ResultsReader&, const std::string&, const model::ParameterLayout&,
                                            std::vector<float>&);
template void read_parameter_tensors<double>(const io::ResultsReader&, const std::string&, const model::ParameterLayout&,
                                             std::vector<double>&);

template <class T>
void write_checkpoint(io::ResultsWriter& writer, const model::Transformer<T>& model) {
    write_parameter_tensors(writer, "/checkpoint", model.layout(), model.params);
}

template <class T>
void read_checkpoint(const io::ResultsReader& reader, model::Transformer<T>& model) {
    read_parameter_tensors(reader, "/checkpoint", model.layout(), model.params);
}

template void write_checkpoint<float>(io::ResultsWriter&, const model::Transformer<float>&);
template void write_checkpoint<double>(io::ResultsWriter&, const model::Transformer<double>&);
template void read_checkpoint<float>(const io::ResultsReader&, model::Transformer<float>&);
template void read_checkpoint<double>(const io::ResultsReader&, model::Transformer<double>&);

}  // namespace iclab::run
