// libFuzzer target: the sweep-file loader and the override grammar of `iclab run -m` (framework/workflow/sweep_file.cpp)
// on arbitrary bytes. Bad input must end in iclab::InputError (exit 2 naming file, line and key); anything else — another
// exception (yaml-cpp's "bad conversion" included), a crash, a hang, a leak or undefined behaviour (ASan/UBSan) — is
// a finding. Built and run by scripts/fuzz.sh sweep_file.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/workflow/sweep.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        if (data[0] % 2 == 0) {  // a sweep file
            const char* folder = std::getenv("ICLAB_FUZZ_TMP");
            const std::string path = std::string(folder ? folder : "/tmp") + "/fuzz_sweep_" + std::to_string(::getpid()) + ".yaml";
            {
                std::ofstream out(path, std::ios::binary);
                out << text;
            }
            const iclab::run::SweepFile file = iclab::run::load_sweep_file(path);
            (void)file;
        } else {  // command-line overrides, one per line, and a sweep name
            std::vector<std::string> overrides;
            std::string line;
            for (const char c : text) {
                if (c == '\n') {
                    overrides.push_back(line);
                    line.clear();
                } else {
                    line += c;
                }
            }
            overrides.push_back(line);
            const iclab::run::SweepSpec spec = iclab::run::sweep_from_command_line("config.yaml", overrides);
            (void)spec;
            iclab::run::check_sweep_name(overrides.front(), "fuzz");
        }
    } catch (const iclab::InputError&) {
        // the expected outcome of bad input
    }
    return 0;
}
