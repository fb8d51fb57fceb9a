#pragma once
// Other programs are started with an argv, never through a shell (CONVENTIONS.md), and values written into a
// generated shell script go through shell_quote, the one quoting function (tests/test_process.cpp).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace iclab {

struct ProcessResult {
    int exit_status = 0;  // the program's status; 127: could not be started; 128 + n: killed by signal n
    std::string output;   // its stdout and stderr, at most max_output bytes
};

// Runs argv[0] (found on PATH when it has no '/') with argv[1...] as its arguments, stdin from /dev/null, in
// `working_dir` ("" : the current one); waits for it.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& working_dir = "",
                          std::size_t max_output = 1 << 20);

// True when `text` holds a byte below 0x20 or 0x7F (newline, tab, escape, ...).
bool has_control_characters(std::string_view text);

// `text` single-quoted for POSIX sh / bash ('it'\''s'): safe for any bytes but control characters, which are
// refused (InputError naming `what`): a newline in a generated script is a new command line.
std::string shell_quote(std::string_view text, const std::string& what);

}  // namespace iclab
