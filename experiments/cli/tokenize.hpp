#pragma once
// `iclab tokenize`: GPT-2 byte-level BPE from the command line (framework/text/bpe.hpp, docs/text.md): encode a
// text, decode ids, write a token file for language-model training, and the batch modes the reference test uses.
#include <string>
#include <vector>

namespace iclab::cli {

// Parses the arguments after "tokenize" and runs the command; returns the exit status (errors throw).
int command_tokenize(const std::vector<std::string>& args);

}  // namespace iclab::cli
