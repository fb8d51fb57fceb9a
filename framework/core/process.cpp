#include "framework/core/process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "framework/core/check.hpp"

namespace iclab {

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& working_dir, std::size_t max_output) {
    ICLAB_CHECK(!argv.empty(), "run_process: no program");
    std::vector<std::string> text = argv;
    std::vector<char*> pointers;
    for (auto& a : text) pointers.push_back(a.data());
    pointers.push_back(nullptr);
    int pipe_fds[2];
    ICLAB_CHECK(::pipe2(pipe_fds, O_CLOEXEC) == 0, "run_process: pipe failed");
    const pid_t pid = ::fork();
    ICLAB_CHECK(pid >= 0, "run_process: fork failed");
    if (pid == 0) {
        const int null_fd = ::open("/dev/null", O_RDONLY);
        if (null_fd >= 0) ::dup2(null_fd, 0);
        ::dup2(pipe_fds[1], 1);
        ::dup2(pipe_fds[1], 2);
        if (!working_dir.empty() && ::chdir(working_dir.c_str()) != 0) ::_exit(127);
        ::execvp(pointers[0], pointers.data());
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    ProcessResult result;
    char buffer[4096];
    for (;;) {
        const ssize_t count = ::read(pipe_fds[0], buffer, sizeof buffer);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        if (result.output.size() < max_output)
            result.output.append(buffer, std::min<std::size_t>(static_cast<std::size_t>(count), max_output - result.output.size()));
    }
    ::close(pipe_fds[0]);
    int raw = 0;
    while (::waitpid(pid, &raw, 0) < 0 && errno == EINTR) {
    }
    result.exit_status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + (WIFSIGNALED(raw) ? WTERMSIG(raw) : 0);
    return result;
}

bool has_control_characters(std::string_view text) {
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7F) return true;
    }
    return false;
}

std::string shell_quote(std::string_view text, const std::string& what) {
    ICLAB_INPUT_CHECK(!has_control_characters(text),
                      what << " holds a control character (newline, tab, ...), which iclab never writes into a script");
    std::string quoted = "'";
    for (const char c : text) {
        if (c == '\'') quoted += "'\\''";
        else quoted += c;
    }
    return quoted + "'";
}

}  // namespace iclab
