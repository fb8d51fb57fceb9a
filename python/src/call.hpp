#pragma once
// How every compute call of the Python module runs (issue 42, docs/python.md "Threads, the GIL and Ctrl-C"):
// without the GIL, then Python's pending signals checked, so that a Ctrl-C received during the call raises
// KeyboardInterrupt when it returns; and, unless verbose, with the CLI's report lines (C stdio on fd 1) discarded.
#include <pybind11/pybind11.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace iclab::python {

namespace py = pybind11;

// Raises the KeyboardInterrupt (or whatever a Python signal handler raised) that arrived during a call.
inline void check_python_signals() {
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

[[noreturn]] inline void raise_keyboard_interrupt(const std::string& message) {
    PyErr_SetString(PyExc_KeyboardInterrupt, message.c_str());
    throw py::error_already_set();
}

// fd 1 pointed at /dev/null for the scope (the CLI functions print their report with printf; in a notebook it would
// land in the kernel's log). stderr (warnings) is left alone.
class SilencedStdout {
public:
    explicit SilencedStdout(bool silence) {
        if (!silence) return;
        std::fflush(stdout);
        saved_ = ::dup(1);
        const int null = ::open("/dev/null", O_WRONLY);
        if (saved_ < 0 || null < 0) {
            if (null >= 0) ::close(null);
            return;
        }
        ::dup2(null, 1);
        ::close(null);
    }
    ~SilencedStdout() {
        if (saved_ < 0) return;
        std::fflush(stdout);
        ::dup2(saved_, 1);
        ::close(saved_);
    }
    SilencedStdout(const SilencedStdout&) = delete;
    SilencedStdout& operator=(const SilencedStdout&) = delete;

private:
    int saved_ = -1;
};

// Runs work() without the GIL, then raises a KeyboardInterrupt that arrived meanwhile. An exception of work()
// propagates (the GIL taken back first) and becomes a Python exception (module.cpp).
template <class Work>
auto without_gil(Work&& work) -> decltype(work()) {
    using Result = decltype(work());
    if constexpr (std::is_void_v<Result>) {
        {
            py::gil_scoped_release release;
            work();
        }
        check_python_signals();
    } else {
        std::optional<Result> result;
        {
            py::gil_scoped_release release;
            result.emplace(work());
        }
        check_python_signals();
        return std::move(*result);
    }
}

void bind_model(py::module_& m);
void bind_commands(py::module_& m);

}  // namespace iclab::python
