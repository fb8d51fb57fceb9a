#include "framework/run/lm_run.hpp"

#include "framework/core/check.hpp"
#include "framework/io/results_file.hpp"
#include "framework/checkpoint/checkpoint_io.hpp"
#include "framework/run/config_keys.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/run_folder.hpp"

namespace iclab::run {

void add_lm_task_keys(config::Schema& schema) {
    schema.add_int("task.vocab_size", 50257, 2, 1 << 24, "vocabulary V of the token model (GPT-2's BPE: 50257, <|endoftext|> = 50256)")
        .add_int("task.context_length", 1024, 1, 1 << 20,
                 "the model's context T_max: learned position embeddings (T_max, C), the longest sequence it reads (GPT-2: 1024)");
}

model::ModelSpec lm_model_spec(const config::Config& cfg) {
    model::ModelSpec spec = model_spec_from_config(cfg, static_cast<std::size_t>(cfg.get_int("task.vocab_size")),
                                                   static_cast<std::size_t>(cfg.get_int("task.context_length")));
    spec.input = model::ModelSpec::Input::tokens;
    return spec;
}

void check_fits_context(std::size_t tokens, const model::ModelSpec& spec, const std::string& who) {
    const bool learned = spec.positions == model::ModelSpec::Positions::learned;
    ICLAB_INPUT_CHECK(tokens <= spec.max_seq_len,
                      who << ": " << tokens << " tokens do not fit this model's context of " << spec.max_seq_len
                          << (learned ? " (learned positions, task.context_length)" : " (task.context_length)")
                          << "; give at most " << spec.max_seq_len << " tokens");
}

template <class T>
std::filesystem::path LmRun<T>::tokenizer_dir() const {
    const auto folder = dir / kTokenizerFolder;
    return std::filesystem::is_directory(folder) ? folder : std::filesystem::path();
}

template <class T>
LmRun<T> load_lm_run(const std::filesystem::path& run_dir, const Catalog& catalog, const std::string& who,
                     typename model::Transformer<T>::Mode mode) {
    LmRun<T> run;
    run.dir = run_dir;
    run.config = load_finished_run_config(run_dir, catalog, who);
    ICLAB_INPUT_CHECK(run.config.has("task.vocab_size") && run.config.has("task.context_length") && run.config.has("model.attention"),
                      who << ": " << run_dir.string() << " is a " << run.config.get_string("experiment")
                          << " run, not a language model (experiment lm: iclab import gpt2 makes one)");
    io::ResultsReader reader(run_dir / kResultsFile);
    ICLAB_INPUT_CHECK(reader.has("/checkpoint"), who << ": " << (run_dir / kResultsFile).string()
                                                     << " holds no parameters (output.checkpoint was false)");
    run.model = std::make_unique<model::Transformer<T>>(lm_model_spec(run.config), mode);
    read_checkpoint(reader, *run.model);
    return run;
}

template struct LmRun<float>;
template struct LmRun<double>;
template LmRun<float> load_lm_run<float>(const std::filesystem::path&, const Catalog&, const std::string&,
                                         model::Transformer<float>::Mode);
template LmRun<double> load_lm_run<double>(const std::filesystem::path&, const Catalog&, const std::string&,
                                           model::Transformer<double>::Mode);

}  // namespace iclab::run
