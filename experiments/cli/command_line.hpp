#pragma once
// What the `iclab` subcommands share (main.cpp, model_commands.cpp): the usage text, flag parsing and letter files.
// Exit statuses: ICLAB_INPUT_CHECK failures are bad input (2), see main.cpp.
#include <boost/program_options.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace iclab::cli {

extern const char* const kUsage;

// Parses a subcommand's flags; its positional arguments go to `positional_name`: "positional" (any number,
// positional_arguments) or "run_dir" (one).
boost::program_options::variables_map parse_command(const std::vector<std::string>& args,
                                                    const boost::program_options::options_description& flags,
                                                    const std::string& positional_name);
std::vector<std::string> positional_arguments(const boost::program_options::variables_map& vm);
// A text or prompt file as it is (a regular file of at most 1 MiB): language-model runs encode it with their
// tokenizer, whitespace included; induction-head runs read its letters (drop_whitespace).
std::string read_text_file(const std::string& path, const char* flag);
std::string drop_whitespace(const std::string& text);
// A count or size flag, read as a signed number and checked here: Boost reads "-1" into a std::size_t as 2^64 - 1.
// InputError naming the flag and the range unless min <= value <= max.
std::int64_t count_flag(std::int64_t value, const char* flag, std::int64_t min, std::int64_t max);

// The commands on a trained model or a config's model (model_commands.cpp).
int command_predict(const std::vector<std::string>& args);
int command_convert(const std::vector<std::string>& args);
int command_bench(const std::vector<std::string>& args);

}  // namespace iclab::cli
