#pragma once
// Graceful stops on SIGINT, SIGTERM and SIGHUP (Ctrl-C, `kill`, Slurm's scancel / time limit, a closed terminal).
// Outside an InterruptScope the signals keep their default action (the process ends at once). Inside one, the
// first signal only sets a flag that the owner polls at a safe point (the trainer: after a step, then a
// checkpoint); later SIGTERM/SIGHUP are ignored (already stopping), a second SIGINT ends the process at once
// (the user insists).
#include <csignal>

namespace iclab {

class InterruptScope {
public:
    InterruptScope();   // installs the handlers (nests: the outermost scope installs and restores)
    ~InterruptScope();  // restores the previous dispositions
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;
};

// The first signal received inside a scope (SIGINT, SIGTERM or SIGHUP), or 0. Stays set after the scope ends,
// so that the command can report it and exit with 128 + signal.
int interrupt_signal();
inline bool interrupt_requested() { return interrupt_signal() != 0; }
// Forgets the signal received: for a process that runs several commands (the Python module, python/src/), after it
// reported the stop. The CLI runs one command and never calls it.
void clear_interrupt();
const char* signal_name(int signal);  // "SIGTERM", ...

}  // namespace iclab
