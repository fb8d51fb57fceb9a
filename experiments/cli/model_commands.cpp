// `iclab predict`, `iclab convert` and `iclab bench`: their flags, checked, handed to predict.cpp, convert.cpp and
// bench.cpp.
#include <iostream>
#include <string>
#include <vector>

#include "experiments/cli/bench.hpp"
#include "experiments/cli/command_line.hpp"
#include "experiments/cli/convert.hpp"
#include "experiments/cli/gpt2_commands.hpp"
#include "experiments/cli/predict.hpp"
#include "framework/core/check.hpp"
#include "framework/core/threads.hpp"
#include "framework/icl/iclaa.hpp"

namespace po = boost::program_options;

namespace iclab::cli {

int command_predict(const std::vector<std::string>& args) {
    po::options_description flags(
        "usage: iclab predict RUN_DIR (--text LETTERS | --text-file FILE | --tokens ID,ID,...) [options]\noptions");
    std::string text, text_file, out, tokens, dtype;
    std::int64_t top = 3;
    flags.add_options()("text", po::value<std::string>(&text), "the input letters (a-z, A-Z); lm runs: text, BPE with RUN_DIR/tokenizer")(
        "text-file", po::value<std::string>(&text_file),
        "read the input from a file: its letters (whitespace ignored); lm runs: its text as it is, BPE with RUN_DIR/tokenizer")(
        "tokens", po::value<std::string>(&tokens), "language-model (lm) runs: the input token ids, separated by commas or blanks")(
        "top", po::value<std::int64_t>(&top)->default_value(3), "predictions shown per position")(
        "dtype", po::value<std::string>(&dtype),
        "lm runs: float64 or float32, the type the model runs in (default: the run's model.dtype; with --adapter: float64)")(
        "out", po::value<std::string>(&out), "write logits (T, V), tokens and position kinds to this HDF5 file")(
        "overwrite", "replace an existing --out file")(
        "adapter", po::value<std::vector<std::string>>()->composing(),
        "apply this adapter file (iclab convert) first; repeat for a chain, in the order converted. Without "
        "--adapter the model runs with the biases of its checkpoint: that is how adapters are removed")("help,h", "this help");
    const po::variables_map vm = parse_command(args, flags, "run_dir");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    ICLAB_INPUT_CHECK(vm.count("run_dir"), "iclab predict: missing RUN_DIR\n" << kUsage);
    ICLAB_INPUT_CHECK(!text.empty() + !text_file.empty() + !tokens.empty() == 1,
                      "iclab predict: give exactly one of --text, --text-file and --tokens");
    count_flag(top, "iclab predict: --top", 0, 1 << 24);
    if (!text_file.empty()) text = read_text_file(text_file, "--text-file");
    configure_threads(0);
    PredictOptions options;
    options.run_dir = vm["run_dir"].as<std::string>();
    options.text = text;
    options.text_from_file = !text_file.empty();
    options.token_ids = parse_token_ids(tokens, "--tokens");
    options.top = static_cast<std::size_t>(top);
    ICLAB_INPUT_CHECK(dtype.empty() || dtype == "float64" || dtype == "float32",
                      "iclab predict: --dtype must be float64 or float32, got '" << dtype << "'");
    options.dtype = dtype;
    options.out = out;
    options.overwrite = vm.count("overwrite") > 0;
    if (vm.count("adapter"))
        for (const auto& adapter : vm["adapter"].as<std::vector<std::string>>()) options.adapters.emplace_back(adapter);
    predict(options);
    return 0;
}

int command_convert(const std::vector<std::string>& args) {
    po::options_description flags(
        "usage: iclab convert RUN_DIR (--prompt LETTERS | --prompt-file FILE | --prompt-text TEXT | --prompt-tokens IDS) --out ADAPTER.h5 [options]\n"
        "ICLCA (paper 000 Algorithm 1): a prompt -> adapter file\noptions");
    std::string prompt, prompt_file, prompt_text, prompt_tokens, out, method, feature_map, convention;
    std::int64_t features = 256, seed = 0, fit_steps = 600, keep_tokens = 16;
    flags.add_options()("prompt", po::value<std::string>(&prompt), "the prompt X' as letters (a-z, A-Z)")(
        "prompt-file", po::value<std::string>(&prompt_file),
        "read the prompt from a file: its letters (whitespace ignored); lm runs: its text as it is, BPE with RUN_DIR/tokenizer")(
        "prompt-text", po::value<std::string>(&prompt_text), "language-model (lm) runs: the prompt as text (BPE with RUN_DIR/tokenizer)")(
        "prompt-tokens", po::value<std::string>(&prompt_tokens), "lm runs: the prompt as token ids, separated by commas or blanks")(
        "out", po::value<std::string>(&out), "the adapter file to write (HDF5, docs/adapter_format.md)")(
        "adapter", po::value<std::vector<std::string>>()->composing(),
        "convert on top of this adapter file; repeat for a chain, in order (the new adapter records them as its base)")(
        "overwrite", "replace an existing --out file")(
        "method", po::value<std::string>(&method)->default_value("auto"),
        "auto (ICLCA for linear attention, ICLAA for softmax), iclca (exact) or iclaa (approximate, softmax models); softmax "
        "lm runs also: exact | recent | heavy (the prompt's key/value cache: all of it, or --keep-tokens of it) and hybrid "
        "(the last --keep-tokens tokens exactly, ICLAA with --feature-map for the older ones)")(
        "keep-tokens", po::value<std::int64_t>(&keep_tokens)->default_value(16),
        "recent | heavy | hybrid: K prompt tokens kept per layer and head")(
        "feature-map", po::value<std::string>(&feature_map)->default_value("prf"),
        "ICLAA: prf | orf (Performer random features, the paper's method), elu1, or learned (a two-sided exponential "
        "map fitted to the model once per conversion; much closer to the model with the prompt, experiments/iclaa)")(
        "random-features", po::value<std::int64_t>(&features)->default_value(256), "ICLAA: F features per head (elu1: F = D)")(
        "seed", po::value<std::int64_t>(&seed)->default_value(0), "ICLAA: seed of the random features or of the learned fit")(
        "rope-convention", po::value<std::string>(&convention)->default_value("rotate_then_map"),
        "ICLAA: rotate_then_map (spec: unbiased), absolute_prompt_positions or unrotated (ablations)")(
        "fit-steps", po::value<std::int64_t>(&fit_steps)->default_value(600), "ICLAA learned maps: Adam steps of the fit")(
        "help,h", "this help");
    const po::variables_map vm = parse_command(args, flags, "run_dir");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    ICLAB_INPUT_CHECK(vm.count("run_dir"), "iclab convert: missing RUN_DIR\n" << kUsage);
    ICLAB_INPUT_CHECK(features >= 2 && features <= (1 << 20), "iclab convert: --random-features must be in [2, 1048576], got " << features);
    ICLAB_INPUT_CHECK(seed >= 0, "iclab convert: --seed must be >= 0, got " << seed);
    ICLAB_INPUT_CHECK(fit_steps >= 1 && fit_steps <= (1 << 24), "iclab convert: --fit-steps must be in [1, 16777216], got " << fit_steps);
    ICLAB_INPUT_CHECK(feature_map == "prf" || feature_map == "orf" || feature_map == "elu1" || feature_map == "learned",
                      "iclab convert: --feature-map must be prf, orf, elu1 or learned, got '" << feature_map << "'");
    ICLAB_INPUT_CHECK(feature_map != "learned" || features % 2 == 0, "iclab convert: a learned map needs an even --random-features");
    icl::parse_rope_convention(convention);
    ICLAB_INPUT_CHECK(vm.count("prompt") + vm.count("prompt-file") + vm.count("prompt-text") + vm.count("prompt-tokens") == 1,
                      "iclab convert: give exactly one of --prompt, --prompt-file, --prompt-text and --prompt-tokens");
    ICLAB_INPUT_CHECK(!out.empty(), "iclab convert: missing --out ADAPTER.h5");
    if (!prompt_file.empty()) prompt = read_text_file(prompt_file, "--prompt-file");
    configure_threads(0);
    ConvertOptions options;
    options.run_dir = vm["run_dir"].as<std::string>();
    options.prompt = vm.count("prompt-text") ? prompt_text : prompt;
    options.prompt_is_tokens = vm.count("prompt-tokens") > 0;
    options.prompt_from_file = !prompt_file.empty();
    if (options.prompt_is_tokens) options.prompt_tokens = parse_token_ids(prompt_tokens, "--prompt-tokens");
    options.out = out;
    options.overwrite = vm.count("overwrite") > 0;
    if (vm.count("adapter"))
        for (const auto& adapter : vm["adapter"].as<std::vector<std::string>>()) options.adapters.emplace_back(adapter);
    options.method = method;
    options.feature_map = feature_map;
    options.features = static_cast<std::size_t>(features);
    options.seed = static_cast<std::uint64_t>(seed);
    options.rope_convention = convention;
    options.fit_steps = static_cast<std::size_t>(fit_steps);
    ICLAB_INPUT_CHECK(keep_tokens >= 1 && keep_tokens <= (1 << 24), "iclab convert: --keep-tokens must be in [1, 16777216], got " << keep_tokens);
    options.keep_tokens = static_cast<std::size_t>(keep_tokens);
    options.feature_map_given = !vm["feature-map"].defaulted();
    options.features_given = !vm["random-features"].defaulted();
    options.seed_given = !vm["seed"].defaulted();
    options.rope_convention_given = !vm["rope-convention"].defaulted();
    options.fit_steps_given = !vm["fit-steps"].defaulted();
    convert(options);
    return 0;
}

int command_bench(const std::vector<std::string>& args) {
    po::options_description flags("usage: iclab bench CONFIG [key.path=value ...] [options]\noptions");
    BenchOptions options;
    std::int64_t blas_size = 2048;
    flags.add_options()("threads", po::value<int>()->default_value(0), "compute threads (0: OMP_NUM_THREADS, else the cores not busy now)")(
        "warmup", po::value<int>(&options.warmup)->default_value(3), "untimed repetitions before each measurement")(
        "iters", po::value<int>(&options.iters)->default_value(10),
        "timed repetitions (the median is reported); 0: no timing, only --export")(
        "blas-size", po::value<std::int64_t>(&blas_size)->default_value(2048),
        "size of the square reference product (plain BLAS gemm rate)")(
        "out", po::value<std::string>(&options.out), "write the table, GEMM shapes and samples to this HDF5 file")(
        "export", po::value<std::string>(&options.export_path),
        "write parameters, tokens, logits, loss and gradients of one step to this HDF5 file "
        "(for scripts/bench/torch_reference.py --check)")(
        "overwrite", "replace existing --out / --export files")("help,h", "this help");
    const po::variables_map vm = parse_command(args, flags, "positional");
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    const std::vector<std::string> rest = positional_arguments(vm);
    ICLAB_INPUT_CHECK(!rest.empty(), "iclab bench: missing CONFIG\n" << kUsage);
    options.config_path = rest.front();
    options.overrides.assign(rest.begin() + 1, rest.end());
    for (const auto& o : options.overrides)
        ICLAB_INPUT_CHECK(o.find('=') != std::string::npos, "iclab bench: '" << o << "' is not an override of the form key.path=value");
    options.overwrite = vm.count("overwrite") > 0;
    options.blas_size = static_cast<std::size_t>(count_flag(blas_size, "iclab bench: --blas-size", 1, INT64_MAX));
    configure_threads(vm["threads"].as<int>());
    bench(options);
    return 0;
}

}  // namespace iclab::cli
