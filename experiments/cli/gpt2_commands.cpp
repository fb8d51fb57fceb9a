#include "experiments/cli/gpt2_commands.hpp"

#include <boost/program_options.hpp>

#include <cctype>
#include <iostream>
#include <limits>

#include "experiments/registry.hpp"
#include "framework/core/check.hpp"
#include "framework/run/gpt2_checkpoint.hpp"

namespace po = boost::program_options;

namespace iclab::cli {

namespace {

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& flags, int positionals) {
    po::options_description hidden;
    hidden.add_options()("positional", po::value<std::vector<std::string>>()->multitoken(), "");
    po::options_description all;
    all.add(flags).add(hidden);
    po::positional_options_description positional;
    positional.add("positional", positionals);
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
    return vm;
}

std::vector<std::string> positionals_of(const po::variables_map& vm) {
    return vm.count("positional") ? vm["positional"].as<std::vector<std::string>>() : std::vector<std::string>{};
}

}  // namespace

std::vector<int> parse_token_ids(const std::string& text, const std::string& flag) {
    std::vector<int> ids;
    std::size_t i = 0;
    while (i < text.size()) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (std::isspace(c) || c == ',') {
            ++i;
            continue;
        }
        ICLAB_INPUT_CHECK(std::isdigit(c), flag << ": '" << text[i] << "' at character " << i + 1 << " is not part of a token id (ids are "
                                                << "non-negative integers separated by commas or blanks)");
        long long value = 0;
        for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
            value = value * 10 + (text[i] - '0');
            ICLAB_INPUT_CHECK(value <= std::numeric_limits<int>::max(), flag << ": token id too large at character " << i + 1);
        }
        ids.push_back(static_cast<int>(value));
    }
    return ids;
}

int command_import(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab import gpt2 DIR --out RUN_DIR [--overwrite] [--quiet]\n"
                                  "  DIR: a Hugging Face GPT-2 folder (config.json, model.safetensors, optional vocab.json + "
                                  "merges.txt or encoder.json + vocab.bpe)\noptions");
    std::string out;
    flags.add_options()("out", po::value<std::string>(&out), "the run folder to write (an lm run: predict, export read it)")(
        "overwrite", "replace an existing RUN_DIR")("quiet", "print nothing on success")("help,h", "this help");
    const po::variables_map vm = parse(args, flags, 2);
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const auto positional = positionals_of(vm);
    ICLAB_INPUT_CHECK(positional.size() == 2 && positional[0] == "gpt2",
                      "iclab import: usage: iclab import gpt2 DIR --out RUN_DIR (gpt2 is the one format imported)");
    ICLAB_INPUT_CHECK(!out.empty(), "iclab import gpt2: missing --out RUN_DIR");
    run::import_gpt2(positional[1], out, experiments::catalog(), vm.count("overwrite") > 0, vm.count("quiet") > 0);
    return 0;
}

int command_export(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab export RUN_DIR --format safetensors --out DIR [--overwrite] [--quiet]\n"
                                  "  writes DIR/config.json + DIR/model.safetensors with Hugging Face GPT-2 names (and the run's "
                                  "tokenizer files)\noptions");
    std::string out, format;
    flags.add_options()("format", po::value<std::string>(&format), "safetensors (the one format)")(
        "out", po::value<std::string>(&out), "the folder to write")("overwrite", "replace an existing DIR")(
        "quiet", "print nothing on success")("help,h", "this help");
    const po::variables_map vm = parse(args, flags, 1);
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const auto positional = positionals_of(vm);
    ICLAB_INPUT_CHECK(positional.size() == 1, "iclab export: missing RUN_DIR (usage: iclab export RUN_DIR --format safetensors --out DIR)");
    ICLAB_INPUT_CHECK(format == "safetensors", "iclab export: --format must be safetensors, got '" << format << "'");
    ICLAB_INPUT_CHECK(!out.empty(), "iclab export: missing --out DIR");
    run::export_gpt2(positional[0], out, experiments::catalog(), vm.count("overwrite") > 0, vm.count("quiet") > 0);
    return 0;
}

}  // namespace iclab::cli
