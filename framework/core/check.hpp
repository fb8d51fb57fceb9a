#pragma once
// Error handling for all of iclab (CONVENTIONS.md: one check/expect family).
// Library code throws; only the CLI turns exceptions into exit codes.
//   iclab::Error        -> exit 1 (a failure while working)
//   iclab::InputError   -> exit 2 (bad config, bad command line, bad input file: nothing was done)
#include <sstream>
#include <stdexcept>
#include <string>

namespace iclab {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct InputError : Error {
    using Error::Error;
};

namespace detail {
[[noreturn]] inline void throw_check(const char* file, int line, const char* cond, const std::string& msg) {
    std::ostringstream os;
    os << file << ":" << line << ": check failed (" << cond << "): " << msg;
    throw Error(os.str());
}
}  // namespace detail

}  // namespace iclab

// ICLAB_CHECK(cond, "message " << value): throws iclab::Error naming file:line when cond is false.
#define ICLAB_CHECK(cond, msg_stream)                                                  \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            std::ostringstream iclab_check_os_;                                        \
            iclab_check_os_ << msg_stream;                                             \
            ::iclab::detail::throw_check(__FILE__, __LINE__, #cond, iclab_check_os_.str()); \
        }                                                                              \
    } while (0)

// ICLAB_INPUT_CHECK(cond, msg): a user-input error (exit status 2), no source location in the text.
#define ICLAB_INPUT_CHECK(cond, msg_stream)                 \
    do {                                                    \
        if (!(cond)) {                                      \
            std::ostringstream iclab_check_os_;             \
            iclab_check_os_ << msg_stream;                  \
            throw ::iclab::InputError(iclab_check_os_.str()); \
        }                                                   \
    } while (0)
