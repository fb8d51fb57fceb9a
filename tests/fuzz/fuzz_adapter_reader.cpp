// libFuzzer target: the adapter readers (framework/icl/adapter_io.cpp, iclaa_adapter_io.cpp) on arbitrary file contents,
// exactly the way `iclab predict --adapter` and `iclab convert --adapter` read them: is_iclaa_adapter_file, then
// read_iclaa_adapter or read_adapter_file, each opening the file through io::ResultsReader, which reads it into memory
// and checks it in a child process first (framework/io/hdf5_guard.hpp). So HDF5's own crashes and endless loops on
// damaged files (H5HG_read, H5G__dense_get_name_by_idx) are caught as the product catches them: an InputError
// "damaged HDF5 file". Damaged input must end in iclab::InputError; a crash, a hang, an allocation beyond the input's
// size or UB in this process is a finding. A read that succeeds is walked through every value attention would use
// (the terms' buffers against the maps' F and D), so a reader that lets inconsistent shapes through is caught here by
// ASan, not in predict. The child's CPU limit is 1 s here (5 s in iclab): a hang costs one second, not five.
// A fork per input costs ~100 ms of CPU under ASan; scripts/fuzz.sh therefore fuzzs with ICLAB_FUZZ_HDF5_IN_PROCESS=1 (the
// check's reading runs in this process, HDF5's own crashes and hangs are recorded as crash-/timeout- files) and then
// replays every recorded input through the forked check, where each must end in an InputError.
// On an empty corpus it writes its own seeds (ICLAB_FUZZ_SEED_DIR; with ICLAB_FUZZ_TREE_SEED_DIR also as text for
// fuzz_adapter_fields.cpp): an ICLCA adapter with a base chain, and ICLAA adapters with prf and elu1 maps and a prf
// hybrid, written by the library's own writers.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/io/hdf5_guard.hpp"
#include "framework/io/results_file.hpp"
#include "framework/io/provenance.hpp"
#include "framework/nn/kernel_features.hpp"
#include "tests/fuzz/adapter_use.hpp"
#include "tests/fuzz/tree_text.hpp"

// The writers record provenance (git, BLAS, OpenMP); the fuzz build links neither, and seeds need none.
void iclab::io::write_provenance(ResultsWriter&) {}

namespace {

using namespace iclab;

std::string scratch_file() {
    const char* root = std::getenv("ICLAB_FUZZ_TMP");
    return std::string(root ? root : "/tmp") + "/iclab_fuzz_adapter." + std::to_string(::getpid()) + ".h5";
}

void write_seeds(const std::filesystem::path& dir) {
    std::filesystem::create_directories(dir);
    const std::size_t L = 2, H = 2, D = 4;
    {  // ICLCA: biases (H, F, D), (H, F) with F = D, a prompt and one base adapter
        icl::Adapter adapter;
        adapter.layers = L, adapter.heads = H, adapter.feature_dim = D, adapter.head_dim = D;
        for (std::size_t l = 0; l < L; ++l) {
            std::vector<double> b_kv(H * D * D), b_d(H * D);
            for (std::size_t i = 0; i < b_kv.size(); ++i) b_kv[i] = 0.25 * static_cast<double>(i % 7) - 0.5;
            for (std::size_t i = 0; i < b_d.size(); ++i) b_d[i] = 1.0 + 0.125 * static_cast<double>(i);
            adapter.biases.b_kv.push_back(b_kv);
            adapter.biases.b_d.push_back(b_d);
        }
        adapter.prompt = {0, 1, 2, 0, 1};
        adapter.prompt_text = "abcab";
        adapter.model_fingerprint = "0123456789abcdef";
        adapter.base_chain.push_back({"fedcba9876543210", 3, "xyz", "base.h5"});
        adapter.model_parameter_count = 1000;
        if (!std::filesystem::exists(dir / "iclca.h5")) icl::write_adapter_file(dir / "iclca.h5", adapter);
    }
    for (const std::string map_name : {"prf", "elu1"}) {
        icl::IclaaAdapter adapter;
        adapter.feature_map = map_name;
        adapter.features = map_name == "elu1" ? D : 6;
        adapter.seed = 3;
        adapter.layers = L, adapter.heads = H, adapter.head_dim = D;
        adapter.prompt = {0, 1, 2};
        adapter.prompt_text = "abc";
        adapter.model_fingerprint = "0123456789abcdef";
        Rng rng(5);
        adapter.maps.assign(L, {});
        for (auto& layer : adapter.maps) {
            nn::KernelFeatures<double> map;
            if (map_name == "prf") {
                map = nn::random_kernel_features<double>(D, adapter.features, false, std::pow(static_cast<double>(D), -0.25), rng);
            } else {
                map.kind = nn::KernelMapKind::elu1;
                map.dim = map.features = D;
                map.input_scale = 1.0;
            }
            layer.assign(H, map);
        }
        adapter.terms = icl::PromptTerms(L, std::vector<nn::SoftmaxPromptHead<double>>(H));
        for (auto& layer : adapter.terms)
            for (auto& term : layer) {
                term.b_d.assign(adapter.features, 0.5);
                term.b_d[0] = 1.0;
                term.b_kv.assign(adapter.features * D, -0.25);
                term.b_kv[1] = -1.0;
                term.log_b_d = 1.5;
                term.log_b_kv = -2.0;
            }
        adapter.point_terms_at_maps();
        const auto file = dir / ("iclaa_" + map_name + ".h5");
        if (!std::filesystem::exists(file)) icl::write_iclaa_adapter(file, adapter, false);
        if (map_name != "prf") continue;
        adapter.keep_tokens = 2;  // a hybrid: the last 2 prompt tokens' keys and values (H, K, D) besides the kernel
        adapter.learned_positions = true;
        for (auto& layer : adapter.terms)
            for (auto& term : layer) {
                term.cache_length = 2;
                term.cache_keys.assign(2 * D, 0.75);
                term.cache_values.assign(2 * D, -0.125);
            }
        if (!std::filesystem::exists(dir / "iclaa_hybrid.h5")) icl::write_iclaa_adapter(dir / "iclaa_hybrid.h5", adapter, false);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    if (const char* seed_dir = std::getenv("ICLAB_FUZZ_SEED_DIR")) {
        write_seeds(seed_dir);
        // ICLAB_FUZZ_TREE_SEED_DIR: the same seeds as text (tree_text.hpp), the corpus of fuzz_adapter_fields.cpp
        if (const char* tree_dir = std::getenv("ICLAB_FUZZ_TREE_SEED_DIR")) {
            std::filesystem::create_directories(tree_dir);
            for (const auto& entry : std::filesystem::directory_iterator(seed_dir))
                std::ofstream(std::filesystem::path(tree_dir) / (entry.path().stem().string() + ".txt"))
                    << fuzz::dump_tree(iclab::io::ResultsReader(entry.path()));
        }
    }
    iclab::io::Hdf5CheckLimits limits;
    limits.cpu_seconds = 1.0;
    limits.wall_extra_seconds = 60.0;  // the wall-clock limit only catches a starved child: generous
    iclab::io::set_hdf5_check_limits(limits);
    // ICLAB_FUZZ_HDF5_IN_PROCESS=1: the check reads in this process (~50x more inputs per second); HDF5's own crashes and
    // hangs are then recorded by libFuzzer and replayed by scripts/fuzz.sh through the forked check.
    if (const char* in_process = std::getenv("ICLAB_FUZZ_HDF5_IN_PROCESS"); in_process != nullptr && std::string(in_process) == "1")
        iclab::io::set_hdf5_check_in_process(true);
    (void)argc, (void)argv;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = scratch_file();
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    try {
        if (icl::is_iclaa_adapter_file(path)) (void)fuzz::use_iclaa(icl::read_iclaa_adapter(path));
        else (void)fuzz::use_iclca(icl::read_adapter_file(path));
    } catch (const iclab::InputError&) {
        // damaged input, reported with the file's name
    }
    return 0;
}
