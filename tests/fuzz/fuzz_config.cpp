// libFuzzer target: the config loader (framework/config) on arbitrary file contents and overrides.
// Bad input must end in iclab::InputError (exit 2 with file and line); anything else — another exception, a crash,
// a hang, a leak or undefined behaviour (ASan/UBSan) — is a finding. Built and run by scripts/fuzz.sh.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/core/check.hpp"

namespace {

// Every kind of key the real schemas use: ints, floats, bools, enums, free strings, lists, and a cross-key rule.
const iclab::config::Schema& schema() {
    static const iclab::config::Schema s = [] {
        iclab::config::Schema k;
        const double inf = std::numeric_limits<double>::infinity();
        k.add_string("experiment", "induction_head", {"induction_head"}, "which experiment")
            .add_int("seed", 0, 0, std::numeric_limits<std::int64_t>::max(), "seed")
            .add_int("model.layers", 2, 1, 256, "layers")
            .add_int("model.width", 64, 2, 65536, "width")
            .add_int("model.heads", 2, 1, 1024, "heads")
            .add_bool("model.rope", true, "rope")
            .add_string("model.attention", "linear", {"linear", "softmax"}, "attention")
            .add_float("train.lr", 1e-3, 0.0, inf, "lr")
            .add_float("train.min_lr_ratio", 0.1, 0.0, 1.0, "ratio")
            .add_string_free("output.dir", "results", "dir")
            .add_string_list_free("task.triggers", {"a", "b"}, "triggers")
            .add_int_list("sizes", {1, 2}, 1, 1000, "sizes")
            .add_float_list("rates", {0.5}, 0.0, 1.0, "rates")
            .add_rule([](const iclab::config::Config& cfg) {
                if (cfg.get_int("model.width") % cfg.get_int("model.heads") != 0)
                    cfg.fail({"model.width", "model.heads"}, "width must be divisible by heads");
            });
        return k;
    }();
    return s;
}

// A folder per process, so that inputs can inherit "base.yaml" (a fixed name) and parallel jobs do not collide.
std::string scratch_file(const char* name) {
    const char* root = std::getenv("ICLAB_FUZZ_TMP");
    const std::string dir = std::string(root ? root : "/tmp") + "/iclab_fuzz_config." + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    return dir + "/" + name;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // The input: file text, then after the first 0xFF byte, override lines separated by newlines.
    const std::string all(reinterpret_cast<const char*>(data), size);
    const std::size_t split = all.find('\xff');
    const std::string text = all.substr(0, split);
    std::vector<std::string> overrides;
    if (split != std::string::npos) {
        std::string rest = all.substr(split + 1);
        for (std::size_t begin = 0; begin <= rest.size();) {
            const std::size_t end = std::min(rest.find('\n', begin), rest.size());
            if (end > begin) overrides.push_back(rest.substr(begin, end - begin));
            begin = end + 1;
        }
    }
    static const std::string main_file = scratch_file("main.yaml"), base_file = [] {
        const std::string file = scratch_file("base.yaml");
        std::ofstream(file, std::ios::binary) << "model:\n  layers: 3\n";
        return file;
    }();
    (void)base_file;
    std::ofstream(main_file, std::ios::binary | std::ios::trunc) << text;
    try {
        const iclab::config::Config cfg = iclab::config::load_config(main_file, overrides, schema());
        (void)cfg.to_yaml();
    } catch (const iclab::InputError&) {
        // bad input, reported: the expected outcome
    }
    return 0;
}
