#pragma once
// The output-path policy (docs/cli.md, "Where iclab writes"): one place that decides whether a command may write a
// path, used by every command that writes (run, import, export, convert, predict, generate, claims, collect, bench,
// tokenize, sweep). Checked before any work, so a refused output costs nothing and writes nothing:
//   - the path is resolved first: the real path of its parent, trailing slashes, '.' and '..';
//   - refused (InputError, exit 2) when it is, contains or lies inside an input of the command, the working directory
//     or one of its parents; when its parent is missing, not a folder or not writable; when its name is too long; when
//     it is a symbolic link or a special file;
//   - an existing output is replaced only with --overwrite, and only when iclab wrote it (a file with iclab's
//     attributes, a folder carrying iclab's marker), never an arbitrary file or folder;
//   - replacing is atomic: the new output is written beside under a name of its own, renamed over, the old removed
//     last; a failure leaves the old output as it was, and iclab never deletes what it did not create.
#include <filesystem>
#include <string>
#include <vector>

namespace iclab::io {

enum class OutputKind { file, folder };

// An output path that passed the policy.
struct OutputTarget {
    std::filesystem::path path;  // resolved: the real path of the parent folder + the name
    OutputKind kind = OutputKind::file;
    bool replaces = false;       // an earlier output of iclab's is there and --overwrite was given
    std::string flag;            // "iclab convert --out", for messages
};

// Resolves `requested` and checks it against the policy above; `inputs` are what the command reads (files or
// folders; missing ones are compared by their resolved path). Throws InputError naming `flag` and the path.
OutputTarget check_output(const std::filesystem::path& requested, OutputKind kind, bool overwrite, const std::string& flag,
                          const std::vector<std::filesystem::path>& inputs = {});

// The file form, for writers that take the path they were given: check_output(path, file, ...).
void check_output_file(const std::filesystem::path& path, bool overwrite, const std::string& flag,
                       const std::vector<std::filesystem::path>& inputs = {});

// True when `inner` is `outer` or lies below it, compared component by component (both resolved by the caller).
bool path_within(const std::filesystem::path& inner, const std::filesystem::path& outer);

// True when the two paths name the same file (after resolving '.', '..' and symbolic links of the existing parts).
bool same_output_file(const std::filesystem::path& a, const std::filesystem::path& b);

// Whether `path` is something iclab wrote and --overwrite may replace: an HDF5 file whose root carries iclab's
// provenance (iclab_version) or an iclab format attribute; a CSV whose header is one iclab writes (collect's runs and
// curves, claims); a folder holding iclab's marker file (kOutputMarker), or a run folder written before the marker
// existed (config.yaml beside an iclab results.h5 or checkpoint.h5).
bool written_by_iclab(const std::filesystem::path& path);

// The marker file iclab puts in every folder it makes (run folders, imported runs, exports, sweeps); its text says
// what made the folder.
inline const char* kOutputMarker = ".iclab_output";
void write_output_marker(const std::filesystem::path& folder, const std::string& what);

// A folder output built beside its target (".<name>.iclab-staging.<pid>.<random>", created exclusively) and put in
// place by commit(): renamed to the target when there is none, else exchanged with it atomically and the old one
// removed last. Destroyed without commit(), it removes only its own staging folder.
class StagedFolder {
public:
    StagedFolder(const OutputTarget& target, const std::string& what);
    ~StagedFolder();
    StagedFolder(const StagedFolder&) = delete;
    StagedFolder& operator=(const StagedFolder&) = delete;
    const std::filesystem::path& path() const { return staging_; }
    void commit();

private:
    OutputTarget target_;
    std::filesystem::path staging_;
    bool committed_ = false;
};

// A name beside `target` that nobody uses: ".<name>.iclab-<tag>.<pid>.<random>".
std::filesystem::path staging_name(const std::filesystem::path& target, const std::string& tag);

// Puts the folder `fresh` in place of the folder `target`: a rename when there is none; when there is one and
// `may_replace`, an atomic exchange and the old one removed last (InputError without `may_replace`). Throws leaving
// `target` as it was when the exchange fails.
void replace_folder(const std::filesystem::path& fresh, const std::filesystem::path& target, bool may_replace);

}  // namespace iclab::io
