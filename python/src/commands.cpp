// The CLI's commands as functions of iclab._iclab: each fills the command's own options struct and calls the same
// function `iclab <command>` calls (experiments/cli/), so that validation, messages and results are the CLI's. Those that
// write a file (predict --out, convert --out, generate --out, claims --out) are read back by python/iclab/__init__.py.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/cli/convert.hpp"
#include "experiments/cli/generate.hpp"
#include "experiments/cli/gpt2_commands.hpp"
#include "experiments/cli/inspect.hpp"
#include "experiments/cli/predict.hpp"
#include "experiments/cli/run_command.hpp"
#include "experiments/cli/tokenize.hpp"
#include "experiments/registry.hpp"
#include "framework/core/check.hpp"
#include "framework/core/interrupt.hpp"
#include "framework/core/threads.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/run_folder.hpp"
#include "framework/tasks/induction_head.hpp"
#include "framework/text/bpe.hpp"
#include "python/src/call.hpp"

namespace iclab::python {

namespace fs = std::filesystem;

namespace {

// What `iclab run` prints when a run stops early, as the message of the KeyboardInterrupt it becomes.
std::string stop_message(const run::RunOutcome& outcome) {
    return "iclab: stopped after step " + std::to_string(outcome.steps_done) + " of " + std::to_string(outcome.steps_total) + " (" +
           signal_name(interrupt_signal()) + "); continue with: iclab.run(resume=\"" + outcome.run_dir.string() + "\")";
}

// `iclab run CONFIG overrides` (config non-empty) or `iclab run --resume RUN_DIR`; returns the run folder. An
// interrupted run (SIGINT, SIGTERM, SIGHUP: the trainer's checkpoint is written) raises KeyboardInterrupt.
fs::path run_config(const std::string& config_path, const std::vector<std::string>& overrides, const fs::path& resume_dir, int threads,
                    bool overwrite, bool quiet, std::int64_t stop_after) {
    run::RunOptions options;
    options.quiet = quiet;
    options.overwrite = overwrite;
    ICLAB_INPUT_CHECK(stop_after >= 0, "iclab run: --stop-after must be >= 0, got " << stop_after);
    options.stop_after = static_cast<std::size_t>(stop_after);
    ICLAB_INPUT_CHECK(threads >= 0 && threads <= 1024, "iclab run: --threads must be from 0 to 1024, got " << threads);
    const run::RunOutcome outcome = without_gil([&] {
        config::Config cfg;
        if (!resume_dir.empty()) {  // as `iclab run --resume`: the run's own config, no overrides
            ICLAB_INPUT_CHECK(config_path.empty() && overrides.empty(),
                              "iclab run --resume takes no CONFIG or overrides: the run continues with "
                                  << (resume_dir / "config.yaml").string() << " as it started");
            ICLAB_INPUT_CHECK(!overwrite, "iclab run --resume: --overwrite does not apply (the run folder is continued)");
            options.resume_dir = resume_dir;
            cfg = run::load_resume_config(resume_dir, experiments::catalog()).config;
        } else {
            cfg = cli::load_run_config(config_path, overrides, "iclab run");
        }
        return cli::run_loaded_config(cfg, options, threads);
    });
    if (interrupt_requested()) {
        const std::string message = stop_message(outcome);
        clear_interrupt();  // the next call starts afresh
        raise_keyboard_interrupt(message);
    }
    return outcome.run_dir;
}

// The resolved, validated config of a finished run, as YAML (its experiment's schema; an edited copy is refused).
std::string finished_run_config(const fs::path& run_dir) {
    return without_gil([&] { return run::load_finished_run_config(run_dir, experiments::catalog(), "iclab.load").to_yaml(); });
}

void predict_file(const fs::path& run_dir, const std::string& text, const std::vector<int>& tokens, const std::vector<fs::path>& adapters,
                  const std::string& dtype, const fs::path& out, std::size_t top, bool verbose) {
    cli::PredictOptions options;
    options.run_dir = run_dir;
    options.text = text;
    options.token_ids = tokens;
    ICLAB_INPUT_CHECK(text.empty() != tokens.empty(), "iclab predict: give exactly one of --text, --text-file and --tokens");
    ICLAB_INPUT_CHECK(dtype.empty() || dtype == "float64" || dtype == "float32",
                      "iclab predict: --dtype must be float64 or float32, got '" << dtype << "'");
    options.dtype = dtype;
    options.adapters = adapters;
    options.out = out;
    options.overwrite = true;  // a file of __init__.py's own temporary folder
    options.top = top;
    without_gil([&] {
        SilencedStdout silence(!verbose);
        configure_threads(0);
        cli::predict(options);
    });
}

// keyword arguments of iclab.Model.convert, as `iclab convert`'s flags (None: not given)
void convert_file(const fs::path& run_dir, const py::object& prompt, const std::vector<fs::path>& adapters, const fs::path& out,
                  bool overwrite, const std::string& method, const py::object& feature_map, const py::object& features, const py::object& seed,
                  const py::object& rope_convention, const py::object& fit_steps, std::int64_t keep_tokens, bool verbose) {
    cli::ConvertOptions options;
    options.run_dir = run_dir;
    if (py::isinstance<py::str>(prompt)) {
        options.prompt = prompt.cast<std::string>();
    } else {
        options.prompt_is_tokens = true;
        options.prompt_tokens = prompt.cast<std::vector<int>>();
    }
    options.adapters = adapters;
    options.out = out;
    options.overwrite = overwrite;
    options.method = method;
    options.feature_map_given = !feature_map.is_none();
    options.features_given = !features.is_none();
    options.seed_given = !seed.is_none();
    options.rope_convention_given = !rope_convention.is_none();
    options.fit_steps_given = !fit_steps.is_none();
    if (options.feature_map_given) options.feature_map = feature_map.cast<std::string>();
    if (options.rope_convention_given) options.rope_convention = rope_convention.cast<std::string>();
    // the range checks of command_convert (model_commands.cpp)
    const std::int64_t f = options.features_given ? features.cast<std::int64_t>() : 256;
    const std::int64_t s = options.seed_given ? seed.cast<std::int64_t>() : 0;
    const std::int64_t steps = options.fit_steps_given ? fit_steps.cast<std::int64_t>() : 600;
    ICLAB_INPUT_CHECK(f >= 2 && f <= (1 << 20), "iclab convert: --random-features must be in [2, 1048576], got " << f);
    ICLAB_INPUT_CHECK(s >= 0, "iclab convert: --seed must be >= 0, got " << s);
    ICLAB_INPUT_CHECK(steps >= 1 && steps <= (1 << 24), "iclab convert: --fit-steps must be in [1, 16777216], got " << steps);
    const std::string& map = options.feature_map;
    ICLAB_INPUT_CHECK(map == "prf" || map == "orf" || map == "elu1" || map == "learned",
                      "iclab convert: --feature-map must be prf, orf, elu1 or learned, got '" << map << "'");
    ICLAB_INPUT_CHECK(map != "learned" || f % 2 == 0, "iclab convert: a learned map needs an even --random-features");
    icl::parse_rope_convention(options.rope_convention);
    ICLAB_INPUT_CHECK(keep_tokens >= 1 && keep_tokens <= (1 << 24), "iclab convert: --keep-tokens must be in [1, 16777216], got " << keep_tokens);
    options.features = static_cast<std::size_t>(f);
    options.seed = static_cast<std::uint64_t>(s);
    options.fit_steps = static_cast<std::size_t>(steps);
    options.keep_tokens = static_cast<std::size_t>(keep_tokens);
    without_gil([&] {
        SilencedStdout silence(!verbose);
        configure_threads(0);
        cli::convert(options);
    });
}

void generate_file(const fs::path& run_dir, const py::object& prompt, const std::vector<fs::path>& adapters, std::int64_t max_new_tokens,
                   double temperature, std::int64_t top_k, std::int64_t seed, bool stop, const std::string& dtype, const fs::path& out,
                   bool verbose) {
    // the checks of command_generate (generate.cpp)
    ICLAB_INPUT_CHECK(max_new_tokens >= 1 && max_new_tokens <= (1 << 20),
                      "iclab generate: --max-new-tokens must be in [1, 1048576], got " << max_new_tokens);
    ICLAB_INPUT_CHECK(top_k >= 0, "iclab generate: --top-k must be >= 0, got " << top_k);
    ICLAB_INPUT_CHECK(seed >= 0, "iclab generate: --seed must be >= 0, got " << seed);
    cli::GenerateOptions options;
    options.run_dir = run_dir;
    options.has_text = py::isinstance<py::str>(prompt);
    if (options.has_text) options.prompt_text = prompt.cast<std::string>();
    else options.prompt_tokens = prompt.cast<std::vector<int>>();
    options.adapters = adapters;
    options.max_new_tokens = static_cast<std::size_t>(max_new_tokens);
    options.temperature = temperature;
    options.top_k = static_cast<std::size_t>(top_k);
    options.seed = static_cast<std::uint64_t>(seed);
    options.stop_at_end_of_text = stop;
    options.dtype = dtype;
    options.out = out;
    options.overwrite = true;  // a file of __init__.py's own temporary folder
    options.quiet = true;
    without_gil([&] {
        SilencedStdout silence(!verbose);
        configure_threads(0);
        cli::generate(options);
    });
}

void claims_csv(const std::vector<fs::path>& dirs, const fs::path& out, bool verbose) {
    without_gil([&] {
        SilencedStdout silence(!verbose);
        cli::claims(dirs, out, true);
    });
}

// A command that takes argv: import, export, tokenize (the same parsing as the command line).
int command(const std::string& name, const std::vector<std::string>& args, bool verbose) {
    return without_gil([&] {
        SilencedStdout silence(!verbose);
        if (name == "import") return cli::command_import(args);
        if (name == "export") return cli::command_export(args);
        if (name == "tokenize") return cli::command_tokenize(args);
        throw InputError("iclab: unknown command '" + name + "'");
    });
}

class Tokenizer {
public:
    explicit Tokenizer(const fs::path& dir) : bpe_(without_gil([&] { return text::Bpe::load(dir); })) {}
    py::array_t<std::int32_t> encode(const std::string& text) const {
        const std::vector<std::int32_t> ids = without_gil([&] { return bpe_.encode(text); });
        return py::array_t<std::int32_t>(static_cast<py::ssize_t>(ids.size()), ids.data());
    }
    py::bytes decode(const std::vector<std::int32_t>& ids) const {
        for (std::size_t i = 0; i < ids.size(); ++i)
            ICLAB_INPUT_CHECK(ids[i] >= 0 && static_cast<std::size_t>(ids[i]) < bpe_.vocab_size(),
                              "iclab tokenize: id " << ids[i] << " at position " << i << " is outside the vocabulary of " << bpe_.vocab_size());
        return py::bytes(bpe_.decode(ids));
    }
    std::size_t vocab_size() const { return bpe_.vocab_size(); }
    std::int64_t end_of_text() const { return bpe_.has_end_of_text() ? bpe_.end_of_text() : -1; }

private:
    text::Bpe bpe_;
};

}  // namespace

void bind_commands(py::module_& m) {
    m.def("run_config", &run_config, py::arg("config"), py::arg("overrides"), py::arg("resume"), py::arg("threads"), py::arg("overwrite"),
          py::arg("quiet"), py::arg("stop_after"));
    m.def("finished_run_config", &finished_run_config, py::arg("run_dir"));
    m.def("predict_file", &predict_file, py::arg("run_dir"), py::arg("text"), py::arg("tokens"), py::arg("adapters"), py::arg("dtype"),
          py::arg("out"), py::arg("top"), py::arg("verbose"));
    m.def("convert_file", &convert_file, py::arg("run_dir"), py::arg("prompt"), py::arg("adapters"), py::arg("out"), py::arg("overwrite"),
          py::arg("method"), py::arg("feature_map"), py::arg("features"), py::arg("seed"), py::arg("rope_convention"), py::arg("fit_steps"),
          py::arg("keep_tokens"), py::arg("verbose"));
    m.def("generate_file", &generate_file, py::arg("run_dir"), py::arg("prompt"), py::arg("adapters"), py::arg("max_new_tokens"),
          py::arg("temperature"), py::arg("top_k"), py::arg("seed"), py::arg("stop"), py::arg("dtype"), py::arg("out"), py::arg("verbose"));
    m.def("claims_csv", &claims_csv, py::arg("dirs"), py::arg("out"), py::arg("verbose"));
    m.def("command", &command, py::arg("name"), py::arg("args"), py::arg("verbose"));
    m.def("encode_letters", [](const std::string& letters) {
        const std::vector<int> ids = tasks::encode_letters(letters);
        return std::vector<std::int32_t>(ids.begin(), ids.end());
    });
    m.def("decode_letters", [](const std::vector<int>& ids) {
        for (const int id : ids)
            ICLAB_INPUT_CHECK(id >= 0 && id < tasks::kInductionVocab, "iclab: token " << id << " is not a letter id (0-51)");
        return tasks::decode_tokens(ids);
    });
    py::class_<Tokenizer>(m, "Tokenizer")
        .def(py::init<const fs::path&>(), py::arg("dir"))
        .def("encode", &Tokenizer::encode, py::arg("text"))
        .def("decode_bytes", &Tokenizer::decode, py::arg("ids"))
        .def_property_readonly("vocab_size", &Tokenizer::vocab_size)
        .def_property_readonly("end_of_text", &Tokenizer::end_of_text);
}

}  // namespace iclab::python
