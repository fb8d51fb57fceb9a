#pragma once
// Untrusted HDF5 files (issue 20). HDF5 1.10 (Debian's libhdf5) can crash or loop forever on a damaged file (the
// adapter fuzzer found an endless loop in H5HG_read and a SEGV in H5G__dense_get_name_by_idx), and iclab cannot patch
// it. So iclab never lets the in-process HDF5 library read a file before it is known to be safe:
//   1. the file is read once into memory (FileImage): what is checked is exactly what is read, whatever happens to the
//      file afterwards;
//   2. a child process (fork) opens that image with the same reader code and reads every group, link, attribute and
//      dataset (ResultsReader::read_everything), under RLIMIT_CPU, RLIMIT_AS and a wall-clock timeout;
//   3. only when the child finished does ResultsReader open the same bytes in this process (HDF5's core driver over
//      the image, not copied).
// A crash, a signal or a timeout of the child is an InputError (exit 2) "FILE: damaged HDF5 file (the HDF5 library
// crashed / did not finish reading it)". Every ResultsReader goes through this: adapters, results files of show,
// collect, resume, claims, report, probe sources, token files. docs/adapter_format.md, docs/testing.md.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <vector>

namespace iclab::io {

// The bytes of one file, read once.
struct FileImage {
    std::filesystem::path path;        // for messages
    std::vector<unsigned char> bytes;  // the whole file
};

// Reads a regular file into memory: InputError (exit 2) when it is missing, not a regular file (a folder, a FIFO,
// /dev/zero), empty, larger than half the memory available, or changes size while it is read.
std::shared_ptr<const FileImage> read_file_image(const std::filesystem::path& path);

// Limits of the child that reads an untrusted image. CPU seconds grow with the file (base + per GiB); the wall-clock
// limit, a multiple of the CPU limit, is generous: it only catches a child that is blocked or starved of CPU (exit 1,
// not the file's fault); a child that loops is stopped by RLIMIT_CPU. memory_gib = 0: the child's address space is capped at
// its size when forked + 2 GiB + 4 x the file (not under AddressSanitizer, which reserves terabytes of address space).
struct Hdf5CheckLimits {
    double cpu_seconds = 5.0;
    double cpu_seconds_per_gib = 20.0;
    double wall_factor = 20.0;
    double wall_extra_seconds = 60.0;
};

// Checks an image in a child process (see above); returns when the in-process HDF5 may read it. Throws InputError
// naming the file when the child crashed, was stopped by its CPU or memory limit, or refused the file (a soft or
// external link, a file that is not HDF5: the child's own message); iclab::Error (exit 1) when the check itself could
// not run, was interrupted from outside, or passed its wall-clock limit. Images of at most 16 MiB that were checked before (byte for byte, 64 MiB remembered in all) are not
// checked again.
void check_hdf5_image(const std::shared_ptr<const FileImage>& image);

// read_file_image + check_hdf5_image.
std::shared_ptr<const FileImage> read_checked_hdf5_image(const std::filesystem::path& path);

// For the fuzz target and tests: the limits used from now on (the defaults above otherwise), and whether checked
// images are remembered.
void set_hdf5_check_limits(const Hdf5CheckLimits& limits, bool remember_checked = true);

// For the fuzz target only (a fork per input costs ~100 ms under ASan): the check reads the image in this process, so a
// crash or hang inside HDF5 happens here, where libFuzzer records it; scripts/fuzz.sh then replays every such input
// through the real, forked check, which must end it in an InputError. Never set by iclab itself.
void set_hdf5_check_in_process(bool in_process);

}  // namespace iclab::io
