// `import iclab` (issue 42): the C++ extension iclab._iclab. python/iclab/__init__.py is the API users call; this
// module binds iclab's own functions (the CLI's, experiments/cli/) and maps iclab's errors onto Python's:
//   iclab::InputError (exit 2 in the CLI: bad input, nothing done) -> ValueError, with the CLI's message
//   iclab::Error      (exit 1: a failure while working)           -> RuntimeError
// (a missing input file becomes FileNotFoundError in __init__.py, which knows the paths it was given).
#include <pybind11/pybind11.h>

#include <boost/program_options/errors.hpp>

#include "framework/core/check.hpp"
#include "framework/core/memory.hpp"
#include "python/src/call.hpp"

PYBIND11_MODULE(_iclab, m) {
    m.doc() = "iclab's C++ engine; use the package iclab (docs/python.md)";
    iclab::keep_freed_memory();  // as the iclab command does (framework/core/memory.hpp)
    pybind11::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error) std::rethrow_exception(error);
        } catch (const iclab::InputError& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const boost::program_options::error& e) {  // a command's flags (import, export, tokenize)
            PyErr_SetString(PyExc_ValueError, (std::string("iclab: ") + e.what()).c_str());
        } catch (const iclab::Error& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what());
        }
    });
    m.attr("binary") = ICLAB_BINARY;  // the iclab command of this build (iclab.sweep runs it)
    // the mapping above, for tests/python/test_errors.py: "input" throws InputError, "error" Error
    m.def("_raise_for_test", [](const std::string& kind) {
        if (kind == "input") throw iclab::InputError("iclab: an InputError for the test");
        throw iclab::Error("iclab: an Error for the test");
    });
    iclab::python::bind_model(m);
    iclab::python::bind_commands(m);
}
