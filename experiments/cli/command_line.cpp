// The usage text, flag parsing and letter files of the `iclab` subcommands (command_line.hpp).
#include "experiments/cli/command_line.hpp"

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "framework/core/check.hpp"

namespace po = boost::program_options;

namespace iclab::cli {

const char* const kUsage =
    "usage:\n"
    "  iclab run CONFIG [key.path=value ...] [--print-config] [--dry-run] [--quiet] [--overwrite] [--threads N] [--stop-after STEP] [--help-config]\n"
    "  iclab run -m CONFIG key=a,b other=i:j ... [--jobs N] [--threads T] [--launcher local|slurm] [--name NAME] [--dry-run]\n"
    "  iclab sweep SWEEP.yaml [--jobs N] [--threads T] [--launcher local|slurm] [--partition P] [--time T] [--cpus C] [--dry-run]\n"
    "  iclab run --resume RUN_DIR [--quiet] [--threads N] [--stop-after STEP] [--dry-run] [--print-config]\n"
    "  iclab list\n"
    "  iclab collect DIR... --out runs.csv|runs.h5 [--overwrite]\n"
    "  iclab claims DIR... [--out claims.csv] [--overwrite]\n"
    "  iclab show RUN_DIR\n"
    "  iclab predict RUN_DIR (--text LETTERS | --text-file FILE | --tokens ID,ID,...) [--adapter A.h5 ...] [--top K] [--out FILE.h5] [--overwrite]\n"
    "  iclab generate RUN_DIR (--prompt-text TEXT | --prompt-tokens ID,ID,...) [--adapter A.h5 ...] [--max-new-tokens N]\n"
    "                 [--temperature T] [--top-k K] [--seed S] [--dtype float64|float32] [--out FILE.h5]\n"
    "  iclab import gpt2 DIR --out RUN_DIR [--overwrite]\n"
    "  iclab export RUN_DIR --format safetensors --out DIR [--overwrite]\n"
    "  iclab convert RUN_DIR (--prompt LETTERS | --prompt-file FILE) --out ADAPTER.h5 [--adapter BASE.h5 ...] [--overwrite]\n"
    "                [--method auto|iclca|iclaa|exact|recent|heavy|hybrid] [--keep-tokens K] [--feature-map prf|orf|elu1|learned] [--random-features F] [--seed S]\n"
    "  iclab bench CONFIG [key.path=value ...] [--threads N] [--warmup K] [--iters K] [--out FILE.h5] [--export FILE.h5] [--overwrite]\n"
    "  iclab tokenize --tokenizer DIR (--text TEXT | --text-file FILE | --ids \"ID ...\" | --ids-file FILE)\n"
    "  iclab tokenize --tokenizer DIR --out tokens.h5 --train FILE... --heldout FILE... [--document-separator LINE] [--overwrite]\n"
    "  iclab version   (also --version: the commit it was built from, compiler, vector set, OpenBLAS core)\n"
    "  iclab help\n";

po::variables_map parse_command(const std::vector<std::string>& args, const po::options_description& flags,
                                const std::string& positional_name) {
    po::options_description hidden;
    if (positional_name == "run_dir") hidden.add_options()("run_dir", po::value<std::string>(), "");
    else hidden.add_options()("positional", po::value<std::vector<std::string>>()->multitoken(), "");
    po::options_description all;
    all.add(flags).add(hidden);
    po::positional_options_description positional;
    positional.add(positional_name.c_str(), positional_name == "run_dir" ? 1 : -1);
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
    return vm;
}

std::vector<std::string> positional_arguments(const po::variables_map& vm) {
    return vm.count("positional") ? vm["positional"].as<std::vector<std::string>>() : std::vector<std::string>{};
}

// A text or prompt file: a regular file of at most kMaxTextFile bytes (never a device, FIFO or folder, which could be
// read forever or mean something else), read as it is: which run reads it decides whether whitespace matters.
constexpr std::uintmax_t kMaxTextFile = 1 << 20;

std::string read_text_file(const std::string& path, const char* flag) {
    std::error_code error;
    const std::filesystem::file_status status = std::filesystem::status(path, error);
    ICLAB_INPUT_CHECK(std::filesystem::exists(status), flag << " " << path << " does not exist");
    ICLAB_INPUT_CHECK(!std::filesystem::is_directory(status), flag << " " << path << " is a directory, not a file");
    ICLAB_INPUT_CHECK(std::filesystem::is_regular_file(status), flag << " " << path << " is not a regular file");
    const std::uintmax_t size = std::filesystem::file_size(path, error);
    ICLAB_INPUT_CHECK(!error && size <= kMaxTextFile, flag << " " << path << " has " << size << " bytes, more than the " << kMaxTextFile << " read");
    std::ifstream file(path, std::ios::binary);
    ICLAB_INPUT_CHECK(file.good(), "cannot read " << flag << " " << path);
    std::string text;
    for (char c; text.size() <= kMaxTextFile && file.get(c);) text += c;
    ICLAB_INPUT_CHECK(text.size() <= kMaxTextFile, flag << " " << path << " grew past " << kMaxTextFile << " bytes while it was read");
    return text;
}

std::string drop_whitespace(const std::string& text) {
    std::string letters;
    for (const char c : text)
        if (!std::isspace(static_cast<unsigned char>(c))) letters += c;
    return letters;
}

std::int64_t count_flag(std::int64_t value, const char* flag, std::int64_t min, std::int64_t max) {
    ICLAB_INPUT_CHECK(value >= min && value <= max, flag << " must be from " << min << " to " << max << ", got " << value);
    return value;
}

}  // namespace iclab::cli
