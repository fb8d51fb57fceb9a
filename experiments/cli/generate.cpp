#include "experiments/cli/generate.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <type_traits>

#include "experiments/cli/finite_check.hpp"
#include "experiments/cli/gpt2_commands.hpp"
#include "experiments/cli/lm_estimates.hpp"
#include "experiments/cli/lm_input.hpp"
#include "framework/io/output_path.hpp"
#include "experiments/registry.hpp"
#include "framework/core/progress.hpp"
#include "framework/core/rng.hpp"
#include "framework/core/threads.hpp"
#include "framework/io/provenance.hpp"
#include "framework/io/results_file.hpp"
#include "framework/model/transformer_decode.hpp"
#include "framework/run/lm_run.hpp"

namespace po = boost::program_options;

namespace iclab::cli {

namespace {

// The next token from logits (V): argmax (greedy, temperature 0), else a draw from softmax(logits / T) restricted to
// the top_k largest logits (0: all), by inverse CDF with one uniform from `rng`.
std::int32_t choose_token(const double* logits, std::size_t V, double temperature, std::size_t top_k, Rng& rng,
                          std::vector<std::size_t>& order, std::vector<double>& weights) {
    if (temperature <= 0.0) return static_cast<std::int32_t>(std::max_element(logits, logits + V) - logits);
    const std::size_t k = top_k == 0 ? V : std::min(top_k, V);
    order.resize(V);
    std::iota(order.begin(), order.end(), 0);
    // ties broken by the lower id, so the candidate set does not depend on the sort's implementation
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](std::size_t a, std::size_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    weights.resize(k);
    const double top = logits[order[0]];
    double total = 0.0;
    for (std::size_t i = 0; i < k; ++i) total += weights[i] = std::exp((logits[order[i]] - top) / temperature);
    double u = rng.uniform() * total;
    for (std::size_t i = 0; i < k; ++i) {
        if (u < weights[i]) return static_cast<std::int32_t>(order[i]);
        u -= weights[i];
    }
    return static_cast<std::int32_t>(order[k - 1]);  // rounding at the end of the CDF
}

// The generation of `generate` in T (float64: the historical path; float32: the run's parameters and every activation
// in float, as training runs). Logits are widened to double (exactly) before the choice and the --out file.
template <class T>
void generate_in(const GenerateOptions& options) {
    const std::string who = "iclab generate";
    check_lm_parameters_fit(options.run_dir, sizeof(T), who);  // before they are read (issue 41)
    Progress progress(who, options.quiet, nullptr, Progress::lazy);  // a stage that lasts > 3 s says so (issue 44)
    progress.stage("loading the parameters of " + options.run_dir.string());
    run::LmRun<T> run = run::load_lm_run<T>(options.run_dir, experiments::catalog(), who);
    model::Transformer<T>& model = *run.model;
    const std::size_t V = model.spec().vocab, context = model.spec().max_seq_len;
    const std::vector<std::int32_t> prompt = lm_input_tokens(options.run_dir, options.has_text ? &options.prompt_text : nullptr,
                                                             options.prompt_tokens, V, context, who,
                                                             options.has_text ? "--prompt-text" : "--prompt-tokens");
    check_generate_estimate(options, model.spec(), prompt.size());  // the decoding, and --out's logits (issue 41)
    std::unique_ptr<text::Bpe> bpe;
    if (!run.tokenizer_dir().empty()) bpe = std::make_unique<text::Bpe>(text::Bpe::load(run.tokenizer_dir()));
    // Adapters carry the fingerprint of the parameters as stored; a float64 checkpoint rounded to float is another model.
    constexpr bool fp64 = std::is_same_v<T, double>;
    ICLAB_INPUT_CHECK(fp64 || options.adapters.empty() || !run.config.has("model.dtype") ||
                          run.config.get_string("model.dtype") != "float64",
                      who << ": " << options.run_dir.string() << " holds float64 parameters (model.dtype), which --dtype float32 "
                             "rounds, so adapters converted on them do not apply: use --dtype float64");
    LmAdapters adapters;
    apply_lm_adapters(adapters, model, options.adapters, who);
    if (!options.quiet)
        for (std::size_t i = 0; i < adapters.applied.chain.size(); ++i)
            std::fprintf(stderr, "adapter %zu: %s (fingerprint %s, prompt length %zu%s%s)\n", i + 1, adapters.applied.chain[i].file.c_str(),
                         adapters.applied.chain[i].fingerprint.c_str(), adapters.applied.chain[i].prompt_length,
                         *adapters.kind() ? ", " : "", adapters.kind());

    const typename model::TransformerDecoder<T>::SoftmaxPrompt* softmax_terms = nullptr;  // fp64 terms (float: refused above)
    if constexpr (fp64) softmax_terms = adapters.softmax_terms();
    model::TransformerDecoder<T> decoder(model, softmax_terms, adapters.input_position_start());
    ICLAB_INPUT_CHECK(prompt.size() <= decoder.context_limit(),
                      who << ": the prompt of " << prompt.size() << " tokens behind the adapter's " << adapters.input_position_start()
                          << "-token prompt does not fit the model's context of " << context << " learned positions");
    // prefill once, kGeneratePrefillChunk tokens per append: an append keeps the logits of all its tokens
    progress.stage("reading the prompt of " + std::to_string(prompt.size()) + " tokens");
    for (std::size_t at = 0; at < prompt.size(); at += kGeneratePrefillChunk) {
        decoder.append(prompt.data() + at, std::min(kGeneratePrefillChunk, prompt.size() - at));
        progress.tick(std::min(at + kGeneratePrefillChunk, prompt.size()), prompt.size(), "tokens");
    }
    progress.stage("generating up to " + std::to_string(options.max_new_tokens) + " tokens");
    std::vector<std::int32_t> generated;
    std::vector<double> row(V), logits;  // the row a token is chosen from; with --out, every row (new, V)
    if (!options.out.empty()) logits.reserve(std::min(options.max_new_tokens, decoder.context_limit() - prompt.size() + 1) * V);
    Rng rng(options.seed);
    std::vector<std::size_t> order;
    std::vector<double> weights;
    // The stop token: <|endoftext|> when the run's tokenizer has one (a tokenizer without it, or a run without a
    // tokenizer, generates up to --max-new-tokens, and says so).
    const std::int32_t end_of_text = bpe != nullptr && bpe->has_end_of_text() ? bpe->end_of_text() : -1;
    if (options.stop_at_end_of_text && end_of_text < 0)
        std::fprintf(stderr, "%s: %s no <|endoftext|> token: no stop token, generating up to --max-new-tokens %zu\n", who.c_str(),
                     bpe != nullptr ? "the run's tokenizer has" : "the run has no tokenizer, so", options.max_new_tokens);
    // The sequence so far (prompt, then each token generated), to find where a non-finite forward came from.
    std::vector<std::int32_t> sequence(prompt);
    const std::string remedy = "generate with --dtype float64";
    bool hit_context = false;
    for (std::size_t step = 0; step < options.max_new_tokens; ++step) {
        const T* last = decoder.last_logits();
        if (!all_finite(last, V)) {  // never sampled from: where did the forward overflow? (finite_check.hpp)
            model.set_softmax_prompt(softmax_terms);
            model.set_learned_position_start(adapters.input_position_start());
            locate_and_refuse_non_finite(model, sequence.data(), sequence.size(), sequence.size() - 1, who,
                                         "the prompt and " + std::to_string(step) + " generated tokens", remedy);
        }
        std::copy(last, last + V, row.begin());  // widened exactly when T is float
        if (!options.out.empty()) logits.insert(logits.end(), row.begin(), row.end());  // only --out keeps them (issue 41)
        const std::int32_t next = choose_token(row.data(), V, options.temperature, options.top_k, rng, order, weights);
        generated.push_back(next);
        if (options.stop_at_end_of_text && next == end_of_text) break;
        if (step + 1 == options.max_new_tokens) break;
        if (decoder.length() == decoder.context_limit()) {
            hit_context = true;
            break;
        }
        decoder.append(&next, 1);
        sequence.push_back(next);
        progress.tick(generated.size(), options.max_new_tokens, "tokens");
    }
    progress.stage("writing the output");
    if (hit_context)
        std::fprintf(stderr, "%s: stopped after %zu new tokens: prompt and continuation reached the model's context of %zu tokens "
                             "(task.context_length)\n", who.c_str(), generated.size(), context);

    // Decoded text is written byte for byte: a NUL (GPT-2's id 188) must not cut it short, as printf's %s would.
    const auto print_text = [](const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); };
    const std::string continuation = bpe != nullptr ? bpe->decode(generated) : std::string();
    if (bpe != nullptr) {
        if (!options.quiet) {
            std::printf("prompt (%zu tokens): ", prompt.size());
            print_text(bpe->decode(prompt));
            std::printf("\n");
        }
        std::printf("%s", options.quiet ? "" : "continuation: ");
        print_text(continuation);
        std::printf("\n");
    }
    if (!options.quiet || bpe == nullptr) {
        std::printf("tokens:");
        for (const auto id : generated) std::printf(" %d", id);
        std::printf("\n");
    }
    if (!options.out.empty()) {
        const std::string dtype = fp64 ? "float64" : "float32";
        io::ResultsWriter writer(options.out, options.overwrite);
        writer.write_tensor("/prompt", prompt.data(), {prompt.size()}, {{"layout", "(M): the prompt's token ids"}});
        writer.write_tensor("/generated", generated.data(), {generated.size()}, {{"layout", "(N): the generated token ids, in order"}});
        writer.write_tensor("/logits", logits.data(), {generated.size(), V},
                            {{"layout", "(N, V): logits each generated token was chosen from, computed in " + dtype +
                                            " (--dtype), stored as float64"}});
        writer.set_attr("run_dir", std::filesystem::absolute(options.run_dir).string());
        writer.set_attr("dtype", dtype);
        std::string files;
        for (const auto& link : adapters.applied.chain) files += (files.empty() ? "" : "\n") + link.file;
        writer.set_attr("adapters", files);
        writer.set_attr("temperature", options.temperature);
        writer.set_attr("top_k", options.top_k);
        writer.set_attr("seed", options.seed);
        writer.set_attr("stopped_at_context", hit_context ? std::string("true") : std::string("false"));
        writer.set_attr("stop_token", end_of_text < 0 ? std::string("none") : "<|endoftext|> (id " + std::to_string(end_of_text) + ")");
        if (bpe != nullptr) {  // the continuation's exact bytes (NUL included), and a copy to read with NUL shown as U+2400
            writer.write_bytes("/text", continuation, {{"layout", "(bytes): the continuation decoded by the run's tokenizer, exactly"}});
            writer.set_attr("text", io::nul_as_symbol(continuation));
        }
        writer.set_attr("created", io::now_iso8601());
        io::write_provenance(writer);
        writer.commit();
        if (!options.quiet) std::printf("wrote %s\n", options.out.string().c_str());
    }
}

}  // namespace

void generate(const GenerateOptions& options) {
    if (!options.out.empty()) {  // the output policy (framework/io/output_path.hpp): never an input, nor inside one
        std::vector<std::filesystem::path> inputs{options.run_dir};
        inputs.insert(inputs.end(), options.adapters.begin(), options.adapters.end());
        io::check_output_file(options.out, options.overwrite, "iclab generate --out", inputs);
    }
    ICLAB_INPUT_CHECK(std::isfinite(options.temperature) && options.temperature >= 0.0,
                      "iclab generate: --temperature must be >= 0 (0: greedy), got " << options.temperature);
    ICLAB_INPUT_CHECK(options.dtype == "float64" || options.dtype == "float32",
                      "iclab generate: --dtype must be float64 or float32, got '" << options.dtype << "'");
    if (options.dtype == "float32")
        generate_in<float>(options);
    else
        generate_in<double>(options);
}

int command_generate(const std::vector<std::string>& args) {
    po::options_description flags(
        "usage: iclab generate RUN_DIR (--prompt-text TEXT | --prompt-tokens ID,ID,...) [--dtype float64|float32] [options]\n"
        "  greedy continuation of the prompt by an lm run (incremental decoding); --temperature > 0 samples\noptions");
    GenerateOptions options;
    std::string text, tokens, out;
    long long seed = 0, max_new = 50, top_k = 0;
    flags.add_options()("prompt-text", po::value<std::string>(&text), "the prompt as text (BPE with RUN_DIR/tokenizer)")(
        "prompt-tokens", po::value<std::string>(&tokens), "the prompt as token ids, separated by commas or blanks")(
        "adapter", po::value<std::vector<std::string>>()->composing(),
        "apply this adapter (iclab convert) first; repeat for an ICLCA chain, in the order converted")(
        "max-new-tokens", po::value<long long>(&max_new)->default_value(50), "tokens to generate at most")(
        "temperature", po::value<double>(&options.temperature)->default_value(0.0), "0: greedy; > 0: sample softmax(logits / T)")(
        "top-k", po::value<long long>(&top_k)->default_value(0), "sample among the k most likely tokens only (0: all)")(
        "seed", po::value<long long>(&seed)->default_value(0), "of the sampling generator")(
        "no-stop", "do not stop at <|endoftext|>")(
        "dtype", po::value<std::string>(&options.dtype)->default_value("float64"),
        "float64 or float32: the precision of parameters and decoding (float32 as training; ICLCA adapters only)")(
        "out", po::value<std::string>(&out), "write /prompt, /generated and the /logits (N, V, stored as float64) to this HDF5 file")(
        "overwrite", "replace an existing --out")("quiet", "print the continuation only")("help,h", "this help");
    po::options_description hidden;
    hidden.add_options()("run_dir", po::value<std::string>(), "");
    po::options_description all;
    all.add(flags).add(hidden);
    po::positional_options_description positional;
    positional.add("run_dir", 1);
    po::variables_map vm;
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    po::notify(vm);
    if (vm.count("help")) {
        std::cout << flags;
        return 0;
    }
    ICLAB_INPUT_CHECK(vm.count("run_dir"), "iclab generate: missing RUN_DIR");
    ICLAB_INPUT_CHECK(vm.count("prompt-text") + vm.count("prompt-tokens") == 1,
                      "iclab generate: give exactly one of --prompt-text and --prompt-tokens");
    ICLAB_INPUT_CHECK(max_new >= 1 && max_new <= (1 << 20), "iclab generate: --max-new-tokens must be in [1, 1048576], got " << max_new);
    ICLAB_INPUT_CHECK(top_k >= 0, "iclab generate: --top-k must be >= 0, got " << top_k);
    ICLAB_INPUT_CHECK(seed >= 0, "iclab generate: --seed must be >= 0, got " << seed);
    configure_threads(0);
    options.run_dir = vm["run_dir"].as<std::string>();
    options.has_text = vm.count("prompt-text") > 0;
    options.prompt_text = text;
    if (!options.has_text) options.prompt_tokens = parse_token_ids(tokens, "--prompt-tokens");
    if (vm.count("adapter"))
        for (const auto& adapter : vm["adapter"].as<std::vector<std::string>>()) options.adapters.emplace_back(adapter);
    options.max_new_tokens = static_cast<std::size_t>(max_new);
    options.top_k = static_cast<std::size_t>(top_k);
    options.seed = static_cast<std::uint64_t>(seed);
    options.stop_at_end_of_text = vm.count("no-stop") == 0;
    options.out = out;
    options.overwrite = vm.count("overwrite") > 0;
    options.quiet = vm.count("quiet") > 0;
    generate(options);
    return 0;
}

}  // namespace iclab::cli
