// framework/core/progress.hpp (issue 44): a command's long stage says what it is doing on stderr, a short one prints
// nothing (lazy), an experiment's stages always print (eager), --quiet prints nothing, and a loop reports at most every
// interval. stderr is captured into a file for each case; waits poll for the line rather than assume a schedule, so
// the cases hold on a loaded machine.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "framework/core/progress.hpp"

namespace iclab_test_progress {  // this file's names (unity build: CMakeLists.txt)

namespace {

// stderr goes to a file while this lives.
class StderrCapture {
public:
    StderrCapture() : path_(std::filesystem::temp_directory_path() / ("iclab_progress_" + std::to_string(::getpid()) + ".txt")) {
        std::fflush(stderr);
        saved_ = ::dup(2);
        const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        REQUIRE(fd >= 0);
        ::dup2(fd, 2);
        ::close(fd);
    }
    ~StderrCapture() {
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
        std::filesystem::remove(path_);
    }
    std::string text() const {
        std::fflush(stderr);
        std::ifstream in(path_);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
    // Polls until the text contains `what` (true) or `seconds` pass (false).
    bool wait_for(const std::string& what, double seconds) const {
        const auto start = std::chrono::steady_clock::now();
        while (text().find(what) == std::string::npos) {
            if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > seconds) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return true;
    }

private:
    std::filesystem::path path_;
    int saved_ = -1;
};

}  // namespace

TEST_CASE("progress: a lazy stage is announced once it lasts, a short one never, and quiet prints nothing", "[progress]") {
    {
        StderrCapture capture;
        {
            iclab::Progress progress("iclab test", false, nullptr, iclab::Progress::lazy, 5.0, 0.05);
            progress.stage("loading the parameters");
            CHECK(capture.wait_for("iclab test: loading the parameters (", 60.0));
            CHECK(capture.text().find("s so far)") != std::string::npos);
        }
        const std::string text = capture.text();
        CHECK(text.find("loading the parameters") == text.rfind("loading the parameters"));  // announced once
    }
    {
        StderrCapture capture;
        {
            iclab::Progress progress("iclab test", false, nullptr, iclab::Progress::lazy, 5.0, 30.0);
            progress.stage("a short stage");
            progress.stage("");  // done before it lasted 30 s
            std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the watcher wakes at least once
        }
        CHECK(capture.text().empty());
    }
    {
        StderrCapture capture;
        std::ostringstream log;
        {
            iclab::Progress progress("iclab test", true, &log, iclab::Progress::lazy, 0.0, 0.0);
            progress.stage("a stage");
            progress.tick(1, 2, "tokens");
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
        }
        CHECK(capture.text().empty());
        CHECK(log.str().find("iclab test: a stage (at ") == 0);  // the log still records the stage
    }
}

TEST_CASE("progress: eager stages print when they start, and a loop reports at most every interval", "[progress]") {
    StderrCapture capture;
    {
        iclab::Progress progress("iclaa_lm", false, nullptr, iclab::Progress::eager, 3600.0);
        progress.stage("scoring 4 rows on 20 held-out windows");
        CHECK(capture.text().find("iclaa_lm: scoring 4 rows on 20 held-out windows (at ") == 0);
        for (std::size_t done = 1; done <= 20; ++done) progress.tick(done, 20, "windows");  // within one interval
        CHECK(capture.text().find("of 20 windows") == std::string::npos);
    }
    {
        iclab::Progress progress("iclab generate", false, nullptr, iclab::Progress::eager, 0.0);
        progress.stage("generating");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        progress.tick(3, 12, "tokens");
        const std::string text = capture.text();
        CHECK(text.find("iclab generate: generating: 3 of 12 tokens (") != std::string::npos);
        CHECK(text.find(" per s, about ") != std::string::npos);
    }
}

}  // namespace iclab_test_progress
