#include "framework/core/interrupt.hpp"

#include <unistd.h>

namespace iclab {

namespace {

volatile std::sig_atomic_t g_signal = 0;
int g_depth = 0;
struct sigaction g_previous[3];
constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void on_interrupt(int signal) {
    if (g_signal == 0) {
        g_signal = signal;
        return;
    }
    if (signal == SIGINT) {  // a second Ctrl-C: stop now, as the default action would
        ::signal(SIGINT, SIG_DFL);
        ::raise(SIGINT);
    }
}

}  // namespace

InterruptScope::InterruptScope() {
    if (g_depth++ > 0) return;
    struct sigaction action {};
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR, so its loop sees the flag
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &action, &g_previous[i]);
}

InterruptScope::~InterruptScope() {
    if (--g_depth > 0) return;
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
}

int interrupt_signal() { return g_signal; }

void clear_interrupt() { g_signal = 0; }

const char* signal_name(int signal) {
    switch (signal) {
        case SIGINT: return "SIGINT";
        case SIGTERM: return "SIGTERM";
        case SIGHUP: return "SIGHUP";
        case SIGKILL: return "SIGKILL";
        default: return "a signal";
    }
}

}  // namespace iclab
