#pragma once
// Run folders: <results_root>/<name>/ holds one run (results.h5 and whatever else the run writes).
#include <filesystem>
#include <string>

namespace iclab::io {

// Maximum length of a sanitized run name, leaving room for a "-N" suffix within the usual
// 255-byte limit on one file name.
constexpr size_t max_run_name_length = 120;

// Maps a free-form name to a safe folder name: characters outside [A-Za-z0-9._=,+-] become '_',
// a leading '.' or '-' becomes '_' (no hidden folders, no ".."/".", nothing a shell reads as an
// option), the result is cut to max_run_name_length bytes, and an empty name becomes "run".
std::string sanitize_run_name(const std::string& name);

// Creates and returns the folder for one run under results_root (created if missing).
//   overwrite == false: claims <name>, else <name>-2, <name>-3, ... — the first that did not exist.
//     Any existing folder counts as taken, whether it holds a completed results.h5 or is left over
//     from an interrupted run: an old run is never touched, and a partial one stays for inspection.
//   overwrite == true: returns <name> if it exists, with *existed = true (the caller builds the new run beside it
//     and replaces it at commit: framework/run/run_folder.cpp).
// Race-safe: a folder is claimed by create_directory returning true, so two processes starting the
// same run at once get different folders; a claimed folder gets iclab's marker (output_path.hpp). Throws
// iclab::Error on file-system failures.
std::filesystem::path make_run_dir(const std::filesystem::path& results_root, const std::string& name,
                                   bool overwrite, bool* existed = nullptr);

}  // namespace iclab::io
