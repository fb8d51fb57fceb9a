// libFuzzer target: the HDF5 results reader (framework/io/results_file) on arbitrary file contents, the way
// predict, convert, --resume, collect and show read results.h5, checkpoint.h5 and adapters: list groups, read root
// attributes, every table's columns and every tensor under /checkpoint. Damaged input must end in iclab::Error
// (InputError where iclab can tell); a crash, a hang, an allocation beyond the input's size or UB is a finding.
// On an empty corpus it writes its own seed: a small results file with attributes, a table and tensors.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"

namespace {

std::string scratch_file() {
    const char* root = std::getenv("ICLAB_FUZZ_TMP");
    return std::string(root ? root : "/tmp") + "/iclab_fuzz_h5." + std::to_string(::getpid()) + ".h5";
}

void read_everything(const std::string& path) {
    const iclab::io::ResultsReader reader(path);
    for (const auto& [name, value] : reader.attributes("/")) (void)name, (void)value;
    if (reader.has("/tables"))
        for (const std::string& table : reader.list("/tables"))
            for (const std::string& column : reader.list("/tables/" + table)) (void)reader.read_column("/tables/" + table + "/" + column);
    if (reader.has("/checkpoint"))
        for (const std::string& tensor : reader.list("/checkpoint")) {
            const std::string path_in = "/checkpoint/" + tensor;
            if (reader.holds_floats(path_in)) (void)reader.read_tensor_double(path_in);
            else (void)reader.read_int32(path_in);
        }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    // The seed, when the script asks for it (ICLAB_FUZZ_SEED=FILE): what iclab writes, in small.
    if (const char* seed = std::getenv("ICLAB_FUZZ_SEED")) {
        if (!std::filesystem::exists(seed)) {
            iclab::io::ResultsWriter writer(seed);
            writer.set_attr("experiment", "induction_head");
            writer.set_attr("seed", static_cast<std::int64_t>(3));
            writer.set_attr("wall_time_s", 1.5);
            writer.write_columns("/tables/final_eval", {{"kind", std::vector<std::string>{"icl", "other"}},
                                                        {"loss", std::vector<double>{0.25, 4.0}},
                                                        {"positions", std::vector<std::int64_t>{10, 20}}},
                                 {{"paper_bands", "loss paper_loss abs 0.1"}});
            const std::vector<float> w = {0.5f, -1.0f, 2.0f, 0.125f, 3.0f, -0.75f};
            writer.write_tensor("/checkpoint/blocks.0.attn.w_qkv", w.data(), {2, 3}, {{"layout", "(C, 3C)"}});
            const std::vector<std::int32_t> tokens = {0, 1, 2, 49};
            writer.write_tensor("/checkpoint/tokens", tokens.data(), {4});
            writer.commit();
        }
    }
    (void)argc, (void)argv;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = scratch_file();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    try {
        read_everything(path);
    } catch (const iclab::Error&) {
        // damaged input, reported with the file's name
    }
    return 0;
}
