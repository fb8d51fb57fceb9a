// Why the default kernel is iclab's blocked one (model.small_gemm / model.large_gemm: blocked, docs/configs.md): each
// element of every product is one in-order multiply-add chain, so a training step gives the same bits whichever kernel
// OpenBLAS picks at run time. OpenBLAS's own results depend on that pick (its kernels block the sums differently).
// Checked end to end: `iclab bench --iters 0 --export` (one step's parameters, batch, outputs, loss and gradients) of
// the quick induction-head config with OpenBLAS told to run its Haswell (AVX2) and its Sandybridge (AVX) kernels.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_kernel_bits {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab_test;

namespace {

// Every float dataset under `group` of two exports: how many there are and how many differ in any bit.
struct Comparison {
    std::size_t datasets = 0, differing = 0;
    std::string first_differing;
};

bool is_group(const iclab::io::ResultsReader& reader, const std::string& path) {
    try {
        reader.list(path);
        return true;
    } catch (const std::exception&) {
        return false;  // a dataset
    }
}

void compare_group(const iclab::io::ResultsReader& a, const iclab::io::ResultsReader& b, const std::string& group,
                   Comparison& result) {
    for (const std::string& name : a.list(group)) {
        const std::string path = group == "/" ? "/" + name : group + "/" + name;
        REQUIRE(b.has(path));
        if (is_group(a, path)) {
            compare_group(a, b, path, result);
            continue;
        }
        if (!a.holds_floats(path)) continue;  // an integer dataset (tokens, positions): the same batch on both sides
        const auto x = a.read_tensor_double(path), y = b.read_tensor_double(path);
        ++result.datasets;
        REQUIRE(x.values.size() == y.values.size());
        if (std::memcmp(x.values.data(), y.values.data(), x.values.size() * sizeof(double)) != 0) {
            if (result.differing++ == 0) result.first_differing = path;
        }
    }
}

Comparison export_under_two_cores(const std::string& tag, const std::string& overrides, const Scratch& scratch) {
    std::vector<fs::path> files;
    for (const char* core : {"Haswell", "Sandybridge"}) {
        const fs::path file = scratch.path / (tag + "_" + core + ".h5");
        const auto r = run_iclab("bench configs/quick/induction_head.yaml model.dtype=float32 " + overrides +
                                     " --threads 2 --iters 0 --export " + file.string(),
                                 scratch.path, std::string("OPENBLAS_CORETYPE=") + core);
        INFO(r.err);
        REQUIRE(r.status == 0);
        files.push_back(file);
    }
    const iclab::io::ResultsReader a(files[0]), b(files[1]);
    // The recorded core shows that OpenBLAS took the hint (a build without run-time dispatch would ignore it).
    REQUIRE(a.read_attr_string("/", "blas_core") != b.read_attr_string("/", "blas_core"));
    Comparison result;
    compare_group(a, b, "/", result);
    return result;
}

}  // namespace

TEST_CASE("the default kernels give a training step the same bits whichever kernel OpenBLAS runs", "[cli][bench][gemm]") {
    Scratch scratch;
    const Comparison blocked = export_under_two_cores("blocked", "", scratch);
    INFO("first differing dataset: " << blocked.first_differing);
    CHECK(blocked.datasets > 20);  // parameters, outputs, loss inputs and one gradient per parameter tensor
    CHECK(blocked.differing == 0);
    // The same comparison sees a kernel that depends on OpenBLAS's pick: the gradients differ in the last bits.
    const Comparison openblas = export_under_two_cores("openblas", "model.small_gemm=openblas model.large_gemm=openblas", scratch);
    CHECK(openblas.datasets == blocked.datasets);
    CHECK(openblas.differing > 0);
}

}  // namespace iclab_test_kernel_bits
