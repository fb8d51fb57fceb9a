#include "framework/io/output_path.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "framework/core/check.hpp"

namespace iclab::io {

namespace fs = std::filesystem;

void check_output_file(const fs::path& path, bool overwrite, const std::string& flag) {
    ICLAB_INPUT_CHECK(!path.empty() && path.filename() != "." && path.filename() != "..",
                      flag << " needs a file name, got '" << path.string() << "'");
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (fs::exists(status)) {
        ICLAB_INPUT_CHECK(!fs::is_directory(status), flag << " " << path.string() << " is a directory, not a file");
        ICLAB_INPUT_CHECK(fs::is_regular_file(status), flag << " " << path.string() << " exists and is not a regular file");
        ICLAB_INPUT_CHECK(overwrite, flag << " " << path.string() << " already exists (--overwrite replaces it)");
    }
    const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    const fs::file_status folder_status = fs::status(folder, error);
    ICLAB_INPUT_CHECK(fs::exists(folder_status), "the folder " << folder.string() << " of " << flag << " " << path.string() << " does not exist");
    ICLAB_INPUT_CHECK(fs::is_directory(folder_status),
                      flag << " " << path.string() << ": " << folder.string() << " is not a folder");
    // Whether a file can be created there is only known by creating one: a probe of a name nobody uses, removed at once.
    std::random_device entropy;
    const fs::path probe = folder / (".iclab_probe." + std::to_string(::getpid()) + "." + std::to_string(entropy()));
    const int descriptor = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    const int failure = errno;
    if (descriptor >= 0) {
        ::close(descriptor);
        ::unlink(probe.c_str());
    }
    ICLAB_INPUT_CHECK(descriptor >= 0, flag << " " << path.string() << ": cannot create a file in " << folder.string() << " ("
                                            << std::strerror(failure) << ")");
}

bool same_output_file(const fs::path& a, const fs::path& b) {
    std::error_code error_a, error_b;
    const fs::path canonical_a = fs::weakly_canonical(fs::absolute(a), error_a);
    const fs::path canonical_b = fs::weakly_canonical(fs::absolute(b), error_b);
    if (error_a || error_b) return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal();
    return canonical_a == canonical_b;
}

}  // namespace iclab::io
