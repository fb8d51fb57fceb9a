// libFuzzer target, structure-aware: the adapter readers (framework/icl/adapter_io.cpp, iclaa_adapter_io.cpp) on
// arbitrary CONTENT of an HDF5 file — attribute values and types, dataset shapes, types and values, missing and extra
// objects — given as text (tree_text.hpp) and read through an in-memory io::ResultsReader (tree_reader.cpp) that
// refuses what the HDF5 reader refuses. fuzz_adapter_reader.cpp fuzzes the same readers on arbitrary BYTES, where
// nearly every input stops inside HDF5 (a few executions per second under ASan); this target spends every execution
// in iclab's own checks (thousands per second), which is where an adapter's meaning is decided.
// Anything but iclab::InputError is a finding; a read that succeeds is walked as attention would use it
// (adapter_use.hpp). The adapters' content checksums are fixed up once per input: when a read fails only because the
// recorded checksum differs, the computed one (named in the message) is written into the tree and the read repeated,
// so that content that passes every other check reaches the walk. Seeds: the library's own adapters as text
// (fuzz_adapter_reader with ICLAB_FUZZ_TREE_SEED_DIR; scripts/fuzz.sh adapter_fields).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "framework/core/check.hpp"
#include "framework/icl/adapter_file.hpp"
#include "framework/icl/iclaa_adapter.hpp"
#include "framework/io/provenance.hpp"
#include "tests/fuzz/adapter_use.hpp"
#include "tests/fuzz/tree_text.hpp"

// The writers record provenance (git, BLAS, OpenMP); this build writes nothing.
void iclab::io::write_provenance(ResultsWriter&) {}

namespace {

using namespace iclab;

// "...: its contents do not match its recorded <attribute> X (they give Y): ..." -> (attribute, Y)
bool checksum_fix(const std::string& message, std::string& attribute, std::string& computed) {
    const std::string recorded = "its contents do not match its recorded ", give = " (they give ";
    const std::size_t a = message.find(recorded), g = message.find(give);
    if (a == std::string::npos || g == std::string::npos) return false;
    const std::size_t name_begin = a + recorded.size(), name_end = message.find(' ', name_begin);
    const std::size_t value_end = message.find(')', g + give.size());
    if (name_end == std::string::npos || value_end == std::string::npos) return false;
    attribute = message.substr(name_begin, name_end - name_begin);
    computed = message.substr(g + give.size(), value_end - g - give.size());
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz::Tree tree = fuzz::parse_tree(data, size);
    fuzz::set_current_tree(&tree);
    // The readers check that the path is a regular file before reading it: an empty one stands for the tree.
    static const std::string path = [] {
        const char* root = std::getenv("ICLAB_FUZZ_TMP");
        const std::string name = std::string(root ? root : "/tmp") + "/iclab_fuzz_fields." + std::to_string(::getpid()) + ".h5";
        std::ofstream{name};
        return name;
    }();
    for (int attempt = 0; attempt < 2; ++attempt) {
        try {
            if (icl::is_iclaa_adapter_file(path)) (void)fuzz::use_iclaa(icl::read_iclaa_adapter(path));
            else (void)fuzz::use_iclca(icl::read_adapter_file(path));
            if (std::getenv("ICLAB_FUZZ_VERBOSE") != nullptr) std::fprintf(stderr, "accepted and walked\n");
            break;
        } catch (const iclab::InputError& error) {
            static const bool verbose = std::getenv("ICLAB_FUZZ_VERBOSE") != nullptr;  // replaying one input: say why it was refused
            if (verbose) std::fprintf(stderr, "refused: %s\n", error.what());
            std::string attribute, computed;
            if (attempt > 0 || !checksum_fix(error.what(), attribute, computed)) break;
            tree.objects["/"].attributes[attribute] = computed;
        }
    }
    fuzz::set_current_tree(nullptr);
    return 0;
}
