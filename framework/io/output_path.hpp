#pragma once
// Output files named on the command line (predict --out, convert --out, bench --out/--export, collect --out) are
// checked before any work: a run of minutes must not end in "cannot write", and a refused output leaves nothing behind.
#include <filesystem>
#include <string>

namespace iclab::io {

// InputError (exit 2) naming `flag` and the path when `path` cannot become a new file there: empty; an existing
// directory or other non-regular file (a device, /proc entry, a FIFO); an existing file without `overwrite`; a parent
// that is missing or not a directory; a folder where no file can be created (tried with a probe file, created
// exclusively and removed at once — /proc, read-only mounts, no permission).
void check_output_file(const std::filesystem::path& path, bool overwrite, const std::string& flag);

// True when the two paths name the same file (after resolving '.', '..' and symbolic links of the existing parts).
bool same_output_file(const std::filesystem::path& a, const std::filesystem::path& b);

}  // namespace iclab::io
