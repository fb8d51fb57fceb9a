#pragma once
// `iclab import gpt2 DIR --out RUN_DIR` and `iclab export RUN_DIR --format safetensors --out DIR` (docs/gpt2.md):
// command-line parsing; the work is framework/run/gpt2_checkpoint.hpp.
#include <string>
#include <vector>

namespace iclab::cli {

int command_import(const std::vector<std::string>& args);
int command_export(const std::vector<std::string>& args);

// "464, 2068,318" -> ids; InputError naming `flag` on anything but non-negative integers below 2^31.
std::vector<int> parse_token_ids(const std::string& text, const std::string& flag);

}  // namespace iclab::cli
