#include "framework/text/tokenizer_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "framework/core/check.hpp"
#include "framework/io/output_path.hpp"
#include "framework/text/bpe.hpp"

namespace iclab::text {

namespace fs = std::filesystem;

namespace {

std::string read_untrusted(const fs::path& dir, const std::string& name, const std::string& who) {
    const fs::path path = dir / name;
    std::error_code error;
    // A link is followed only when it stays in the folder (a file of the folder under another name).
    if (fs::is_symlink(fs::symlink_status(path, error))) {
        const fs::path real = fs::canonical(path, error), folder = fs::canonical(dir);
        ICLAB_INPUT_CHECK(!error, who << ": " << path.string() << " is a symbolic link that cannot be followed (" << error.message() << ")");
        ICLAB_INPUT_CHECK(io::path_within(real, folder), who << ": " << path.string() << " is a symbolic link out of its folder (to "
                                                    << real.string() << "): refused");
    }
    const int descriptor = ::open(fs::canonical(path, error).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    ICLAB_INPUT_CHECK(!error && descriptor >= 0, who << ": " << path.string() << ": cannot open (" << (error ? error.message() : std::strerror(errno)) << ")");
    struct stat info {};
    const bool regular = ::fstat(descriptor, &info) == 0 && S_ISREG(info.st_mode);
    const bool fits = regular && static_cast<std::size_t>(info.st_size) <= kMaxTokenizerFileBytes;
    std::string bytes;
    if (fits) {
        bytes.resize(static_cast<std::size_t>(info.st_size));
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t got = ::read(descriptor, bytes.data() + done, bytes.size() - done);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            done += static_cast<std::size_t>(got);
        }
        bytes.resize(done);
    }
    ::close(descriptor);
    ICLAB_INPUT_CHECK(regular, who << ": " << path.string() << " is not a regular file");
    ICLAB_INPUT_CHECK(fits, who << ": " << path.string() << " is " << info.st_size << " bytes, more than the tokenizer loader's limit of "
                                << kMaxTokenizerFileBytes);
    ICLAB_INPUT_CHECK(bytes.size() == static_cast<std::size_t>(info.st_size), who << ": " << path.string() << ": short read");
    return bytes;
}

}  // namespace

std::vector<std::string> tokenizer_file_names(const fs::path& dir, const std::string& who) {
    std::error_code error;
    const auto has = [&](const char* name) { return fs::exists(fs::symlink_status(dir / name, error)); };
    const bool hf_vocab = has("vocab.json"), hf_merges = has("merges.txt");
    const bool ai_vocab = has("encoder.json"), ai_merges = has("vocab.bpe");
    ICLAB_INPUT_CHECK(hf_vocab == hf_merges, who << ": " << dir.string() << " has " << (hf_vocab ? "vocab.json without merges.txt" : "merges.txt without vocab.json"));
    ICLAB_INPUT_CHECK(ai_vocab == ai_merges, who << ": " << dir.string() << " has " << (ai_vocab ? "encoder.json without vocab.bpe" : "vocab.bpe without encoder.json"));
    ICLAB_INPUT_CHECK(!(hf_vocab && ai_vocab), who << ": " << dir.string()
                                                   << " has both vocab.json + merges.txt and encoder.json + vocab.bpe: keep one pair");
    if (hf_vocab) return {"vocab.json", "merges.txt"};
    if (ai_vocab) return {"encoder.json", "vocab.bpe"};
    return {};
}

std::vector<TokenizerFile> read_tokenizer_files(const fs::path& dir, const std::string& who) {
    std::vector<TokenizerFile> files;
    for (const std::string& name : tokenizer_file_names(dir, who)) files.push_back({name, read_untrusted(dir, name, who)});
    if (files.empty()) return files;
    // Parsed as the run will parse it: a file the loader would refuse later is refused now, before it is copied.
    (void)Bpe::from_text(files[0].bytes, (dir / files[0].name).string(), files[1].bytes, (dir / files[1].name).string());
    return files;
}

void write_tokenizer_files(const std::vector<TokenizerFile>& files, const fs::path& folder) {
    if (files.empty()) return;
    fs::create_directories(folder);
    for (const TokenizerFile& file : files) {
        std::ofstream out(folder / file.name, std::ios::binary | std::ios::trunc);
        out.write(file.bytes.data(), static_cast<std::streamsize>(file.bytes.size()));
        ICLAB_CHECK(out.good(), "cannot write " << (folder / file.name).string());
    }
}

}  // namespace iclab::text
