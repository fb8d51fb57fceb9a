// Starting programs without a shell (run_process) and the one quoting function for generated scripts (shell_quote).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/core/process.hpp"

namespace iclab_test_process {  // this file's names (unity build: CMakeLists.txt)

using iclab::run_process;
using iclab::shell_quote;

TEST_CASE("run_process: an argv and no shell, with exit status, output and working folder", "[process]") {
    const auto echo = run_process({"printf", "%s|", "a b", "$(touch /nonexistent)", "`x`;y"});
    CHECK(echo.exit_status == 0);
    CHECK(echo.output == "a b|$(touch /nonexistent)|`x`;y|");  // every argument arrives as written
    CHECK(run_process({"sh", "-c", "exit 3"}).exit_status == 3);
    CHECK(run_process({"sh", "-c", "kill -TERM $$"}).exit_status == 128 + 15);
    CHECK(run_process({"iclab-no-such-program-here"}).exit_status == 127);
    CHECK(run_process({"pwd"}, "/tmp").output == "/tmp\n");
    CHECK(run_process({"sh", "-c", "echo out; echo err >&2"}).output == "out\nerr\n");
    CHECK(run_process({"sh", "-c", "head -c 100000 /dev/zero"}, "", 1000).output.size() == 1000);  // capped
}

TEST_CASE("shell_quote: what sh reads back is the text for every hostile value, and control characters are refused", "[process]") {
    const std::vector<std::string> values = {
        "plain", "", "it's", "'", "''", "a'b'c", "$(touch /tmp/iclab_quote_pwned)", "`touch /tmp/iclab_quote_pwned`",
        "x; touch /tmp/iclab_quote_pwned", "a && b || c", "\"double\"", "back\\slash", "$HOME ${HOME} $1 $@ $*",
        "*", "?", "[a-z]", "~", "!", "#comment", "a b  c", "-n", "--help", "%A_%a", "\xC3\xA9\xE4\xB8\xAD", "'$(x)'\"`y`\"",
    };
    for (const auto& value : values) {
        INFO("value: " << value);
        const auto printed = run_process({"sh", "-c", "printf %s " + shell_quote(value, "value")});
        CHECK(printed.exit_status == 0);
        CHECK(printed.output == value);
        const auto bash = run_process({"bash", "-c", "printf %s " + shell_quote(value, "value")});
        CHECK(bash.output == value);
    }
    CHECK(run_process({"test", "-e", "/tmp/iclab_quote_pwned"}).exit_status != 0);
    for (const std::string& bad : std::vector<std::string>{"a\nb", "a\rb", "tab\there", std::string("nul\0x", 5), "esc\x1b[0m", "del\x7f"}) {
        INFO("value with a control character");
        CHECK_THROWS_AS(shell_quote(bad, "output.dir"), iclab::InputError);
        CHECK(iclab::has_control_characters(bad));
    }
    CHECK_THROWS_WITH(shell_quote("a\nb", "output.dir"), Catch::StartsWith("output.dir holds a control character"));
    CHECK_FALSE(iclab::has_control_characters("\xC3\xA9 ok"));
}

}  // namespace iclab_test_process
