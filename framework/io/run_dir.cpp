#include "framework/io/run_dir.hpp"

#include <system_error>

#include "framework/core/check.hpp"
#include "framework/io/output_path.hpp"

namespace iclab::io {

std::string sanitize_run_name(const std::string& name) {
    std::string out = name.substr(0, max_run_name_length);
    for (char& character : out) {
        const bool allowed = (character >= 'A' && character <= 'Z') || (character >= 'a' && character <= 'z') ||
                             (character >= '0' && character <= '9') ||
                             std::string("._=,+-").find(character) != std::string::npos;
        if (!allowed) character = '_';
    }
    if (out.empty()) return "run";
    if (out[0] == '.' || out[0] == '-') out[0] = '_';
    return out;
}

std::filesystem::path make_run_dir(const std::filesystem::path& results_root, const std::string& name,
                                   bool overwrite, bool* existed) {
    if (existed != nullptr) *existed = false;
    std::error_code error;
    std::filesystem::create_directories(results_root, error);
    // Bad input, not a failure of iclab's (the config rule on output.dir catches most of it before this point).
    ICLAB_INPUT_CHECK(!error, "output.dir: cannot create the results folder " << results_root.string() << ": " << error.message());
    const std::string base = sanitize_run_name(name);

    // A bound on the suffix only to turn a runaway loop (e.g. a file system that reports every name
    // as existing) into an error.
    constexpr int max_suffix = 100000;
    for (int suffix = 1; suffix <= max_suffix; ++suffix) {
        const std::filesystem::path candidate =
            results_root / (suffix == 1 ? base : base + "-" + std::to_string(suffix));
        // create_directory returns true only to the caller that created it: that is the claim.
        if (std::filesystem::create_directory(candidate, error)) {
            write_output_marker(candidate, "a run folder (iclab run)");
            return candidate;
        }
        // Not created: either the name is taken (libstdc++ reports an existing non-folder as an
        // error, an existing folder as none) or the file system refused.
        std::error_code status_error;
        const std::filesystem::file_status status = std::filesystem::status(candidate, status_error);
        ICLAB_CHECK(std::filesystem::exists(status),
                    "cannot create run folder " << candidate.string() << ": " << error.message());
        if (overwrite) {
            ICLAB_CHECK(std::filesystem::is_directory(status), candidate.string() << " exists and is not a folder");
            if (existed != nullptr) *existed = true;
            return candidate;
        }
    }
    ICLAB_CHECK(false, "no free run folder name for " << base << " under " << results_root.string());
    return {};  // not reached: ICLAB_CHECK(false) throws
}

}  // namespace iclab::io
