#include "framework/io/output_path.hpp"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE, RENAME_EXCHANGE (glibc >= 2.28)
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <random>

#include "framework/core/check.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::io {

namespace fs = std::filesystem;

namespace {

// Room left in a name for the staging suffix ".<name>.iclab-staging.<pid>.<random>" (NAME_MAX is 255 bytes).
constexpr std::size_t kMaxOutputName = 200;
constexpr std::size_t kMaxOutputPath = PATH_MAX - 64;

// The resolved form of a path that may not exist: the real path of its existing part, the rest appended.
fs::path resolved(const fs::path& path) {
    std::error_code error;
    const fs::path absolute = fs::absolute(path, error);
    if (error) return path.lexically_normal();
    const fs::path real = fs::weakly_canonical(absolute, error);
    return error ? absolute.lexically_normal() : real;
}

std::string kind_name(OutputKind kind) { return kind == OutputKind::file ? "file" : "folder"; }

bool has_control_character(const std::string& text) {
    return std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// An HDF5 file whose root iclab wrote: provenance (iclab_version) or an iclab format attribute. Read through the
// checked reader: a crafted file at an output path is refused, never trusted.
bool iclab_hdf5(const fs::path& path) {
    std::error_code error;
    if (!fs::is_regular_file(fs::symlink_status(path, error))) return false;
    char signature[8] = {};
    {
        std::ifstream file(path, std::ios::binary);
        if (!file.read(signature, sizeof signature)) return false;
    }
    if (std::memcmp(signature, "\x89HDF\r\n\x1a\n", sizeof signature) != 0) return false;
    try {
        const ResultsReader reader(path);
        if (reader.has_attr("/", "iclab_version")) return true;
        return reader.has_attr("/", "format") && reader.read_attr_string("/", "format").rfind("iclab", 0) == 0;
    } catch (const std::exception&) {
        return false;
    }
}

// A CSV whose header line is one iclab writes: collect's runs and curves ("run_dir,..."), claims ("setting,experiment,runs,...").
bool iclab_csv(const fs::path& path) {
    std::ifstream file(path, std::ios::binary);
    std::string header;
    if (!std::getline(file, header)) return false;
    return header == "run_dir" || header.rfind("run_dir,", 0) == 0 || header.rfind("setting,experiment,runs,", 0) == 0;
}

void probe_writable(const fs::path& folder, const fs::path& shown, const std::string& flag) {
    // Whether a file can be created there is only known by creating one: a probe of a name nobody uses, removed at once.
    const fs::path probe = staging_name(folder / "probe", "probe");
    const int descriptor = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    const int failure = errno;
    if (descriptor >= 0) {
        ::close(descriptor);
        ::unlink(probe.c_str());
    }
    ICLAB_INPUT_CHECK(descriptor >= 0, flag << " " << shown.string() << ": cannot create a file in " << folder.string() << " ("
                                            << std::strerror(failure) << ")");
}

}  // namespace

bool path_within(const fs::path& inner, const fs::path& outer) {
    auto o = outer.begin();
    auto i = inner.begin();
    for (; o != outer.end(); ++o, ++i) {
        if (o->empty() && std::next(o) == outer.end()) break;  // a trailing separator
        if (i == inner.end() || *i != *o) return false;
    }
    return true;
}

fs::path staging_name(const fs::path& target, const std::string& tag) {
    static std::mt19937_64 names{std::random_device{}()};
    return target.parent_path() / ("." + target.filename().string() + ".iclab-" + tag + "." + std::to_string(::getpid()) + "." +
                                   std::to_string(names() % 1000000000000ULL));
}

OutputTarget check_output(const fs::path& requested, OutputKind kind, bool overwrite, const std::string& flag,
                          const std::vector<fs::path>& inputs) {
    std::string text = requested.string();
    ICLAB_INPUT_CHECK(!text.empty(), flag << " needs a " << kind_name(kind) << " name, got ''");
    ICLAB_INPUT_CHECK(!has_control_character(text), flag << ": the path contains a control character (refused)");
    ICLAB_INPUT_CHECK(text.size() <= kMaxOutputPath, flag << ": the path is " << text.size() << " bytes long (at most " << kMaxOutputPath << ")");
    while (text.size() > 1 && text.back() == '/') text.pop_back();  // "RUN/" names RUN
    std::error_code error;
    fs::path absolute = fs::absolute(fs::path(text), error);
    ICLAB_INPUT_CHECK(!error, flag << " " << requested.string() << ": " << error.message());
    fs::path name = absolute.filename();
    fs::path parent = absolute.parent_path();
    if (name.empty() || name == "." || name == "..") {
        // "." or "x/..": the folder it names, resolved whole.
        const fs::path whole = fs::canonical(absolute, error);
        ICLAB_INPUT_CHECK(!error, flag << " " << requested.string() << ": " << error.message());
        name = whole.filename(), parent = whole.parent_path();
        ICLAB_INPUT_CHECK(!name.empty(), flag << " " << requested.string() << " is the root folder");
    }
    ICLAB_INPUT_CHECK(name.string().size() <= kMaxOutputName,
                      flag << ": the name " << name.string().substr(0, 40) << "... is " << name.string().size() << " bytes long (at most "
                           << kMaxOutputName << ")");
    const fs::path parent_real = fs::canonical(parent, error);
    ICLAB_INPUT_CHECK(!error, "the folder " << parent.string() << " of " << flag << " " << requested.string() << " does not exist ("
                                            << error.message() << ")");
    ICLAB_INPUT_CHECK(fs::is_directory(parent_real), flag << " " << requested.string() << ": " << parent.string() << " is not a folder");
    OutputTarget target;
    target.path = parent_real / name;
    target.kind = kind;
    target.flag = flag;
    const std::string shown = requested.string() + (target.path.string() == requested.string() ? "" : " (" + target.path.string() + ")");

    // Never the working directory, one of its parents, an input, inside an input or around one.
    const fs::path cwd = resolved(fs::current_path(error));
    ICLAB_INPUT_CHECK(error || !path_within(cwd, target.path),
                      flag << " " << shown << " is the working directory or one of its parents: refused");
    for (const fs::path& input : inputs) {
        if (input.empty()) continue;
        const fs::path in = resolved(input);
        ICLAB_INPUT_CHECK(in != target.path, flag << " " << shown << " is an input of the command (" << input.string() << "): refused");
        ICLAB_INPUT_CHECK(!path_within(target.path, in),
                          flag << " " << shown << " lies inside an input of the command (" << input.string() << "): refused");
        ICLAB_INPUT_CHECK(!path_within(in, target.path),
                          flag << " " << shown << " contains an input of the command (" << input.string() << "): refused");
    }

    const fs::file_status status = fs::symlink_status(target.path, error);
    if (fs::exists(status)) {
        ICLAB_INPUT_CHECK(!fs::is_symlink(status), flag << " " << shown << " is a symbolic link: iclab does not write through links "
                                                           "(give the path it points to)");
        if (kind == OutputKind::file) {
            ICLAB_INPUT_CHECK(!fs::is_directory(status), flag << " " << shown << " is a directory, not a file");
            ICLAB_INPUT_CHECK(fs::is_regular_file(status), flag << " " << shown << " exists and is not a regular file");
        } else {
            ICLAB_INPUT_CHECK(fs::is_directory(status), flag << " " << shown << " exists and is not a folder");
        }
        ICLAB_INPUT_CHECK(overwrite, flag << " " << shown << " already exists (--overwrite replaces it)");
        ICLAB_INPUT_CHECK(written_by_iclab(target.path),
                          flag << " " << shown << " exists and was not written by iclab: --overwrite replaces only iclab's own "
                               << (kind == OutputKind::file ? "files (iclab HDF5 or CSV)" : "folders (carrying " + std::string(kOutputMarker) + ")")
                               << "; move or remove it yourself");
        target.replaces = true;
    }
    probe_writable(parent_real, requested, flag);
    return target;
}

void check_output_file(const fs::path& path, bool overwrite, const std::string& flag, const std::vector<fs::path>& inputs) {
    (void)check_output(path, OutputKind::file, overwrite, flag, inputs);
}

bool same_output_file(const fs::path& a, const fs::path& b) { return resolved(a) == resolved(b); }

bool written_by_iclab(const fs::path& path) {
    std::error_code error;
    const fs::file_status status = fs::symlink_status(path, error);
    if (fs::is_regular_file(status)) return iclab_hdf5(path) || iclab_csv(path);
    if (!fs::is_directory(status)) return false;
    if (fs::is_regular_file(fs::symlink_status(path / kOutputMarker, error))) return true;
    // A run folder written before the marker existed.
    return fs::is_regular_file(fs::symlink_status(path / "config.yaml", error)) &&
           (iclab_hdf5(path / "results.h5") || iclab_hdf5(path / "checkpoint.h5"));
}

void write_output_marker(const fs::path& folder, const std::string& what) {
    std::ofstream marker(folder / kOutputMarker, std::ios::binary | std::ios::trunc);
    marker << "written by iclab " << iclab_version() << " (" << git_commit() << "): " << what << "\n"
           << "--overwrite may replace this folder; iclab replaces no folder without this file.\n";
    ICLAB_CHECK(marker.good(), "cannot write " << (folder / kOutputMarker).string());
}

void replace_folder(const fs::path& fresh, const fs::path& target, bool may_replace) {
    if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) return;
    int failure = errno;
    if (failure == EINVAL || failure == ENOSYS) {  // a file system without renameat2's flags
        std::error_code error;
        if (!fs::exists(fs::symlink_status(target, error))) {
            ICLAB_CHECK(::rename(fresh.c_str(), target.c_str()) == 0, "cannot rename " << fresh.string() << " to " << target.string() << ": "
                                                                                        << std::strerror(errno));
            return;
        }
        failure = EEXIST;
    }
    ICLAB_CHECK(failure == EEXIST || failure == ENOTEMPTY,
                "cannot rename " << fresh.string() << " to " << target.string() << ": " << std::strerror(failure));
    ICLAB_INPUT_CHECK(may_replace, target.string() << " appeared while writing: refusing to replace it");
    // The target exists: exchange the two atomically, then remove the old one (now under the fresh name) last.
    if (::renameat2(AT_FDCWD, fresh.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
        std::error_code ignored;
        fs::remove_all(fresh, ignored);
        return;
    }
    // No exchange on this file system: the old folder aside, the new one in, the old one removed; put back on failure.
    const fs::path aside = staging_name(target, "old");
    ICLAB_CHECK(::rename(target.c_str(), aside.c_str()) == 0, "cannot move " << target.string() << " aside: " << std::strerror(errno));
    if (::rename(fresh.c_str(), target.c_str()) != 0) {
        failure = errno;
        (void)::rename(aside.c_str(), target.c_str());
        ICLAB_CHECK(false, "cannot rename " << fresh.string() << " to " << target.string() << ": " << std::strerror(failure)
                                            << " (the old folder is back in place)");
    }
    std::error_code ignored;
    fs::remove_all(aside, ignored);
}

StagedFolder::StagedFolder(const OutputTarget& target, const std::string& what) : target_(target) {
    ICLAB_CHECK(target.kind == OutputKind::folder, "StagedFolder: " << target.path.string() << " is a file output");
    staging_ = staging_name(target.path, "staging");
    std::error_code error;
    ICLAB_CHECK(fs::create_directory(staging_, error) && !error,
                "cannot create " << staging_.string() << (error ? ": " + error.message() : ": it exists"));
    write_output_marker(staging_, what);
}

StagedFolder::~StagedFolder() {
    if (committed_) return;
    std::error_code ignored;
    fs::remove_all(staging_, ignored);  // created by this object, exclusively
}

void StagedFolder::commit() {
    if (target_.replaces)
        ICLAB_INPUT_CHECK(written_by_iclab(target_.path), target_.flag << " " << target_.path.string()
                                                                       << " changed while writing and is no longer iclab's: refusing to replace it");
    replace_folder(staging_, target_.path, target_.replaces);
    committed_ = true;
}

}  // namespace iclab::io
