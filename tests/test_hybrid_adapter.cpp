// Hybrid adapters (`iclab convert --method hybrid`, framework/icl/iclaa_adapter.hpp with keep_tokens = K > 0) and ICLAA
// adapters (`--method iclaa`) end to end on a tiny GPT-2-shaped lm run trained here (learned positions): `predict` and
// `generate` with the file give the logits of experiment iclaa_lm's in-memory hybrid / prf / orf row
// (experiments/iclaa_lm/iclaa_lm_eval.cpp add_row_terms) for the same K, map, F and seed to fp64 rounding; K = M is the exact prompt cache (the model on [X'; X] at X's positions, fp64);
// edited or damaged hybrid files are refused with exit 2 naming the field.
#include <catch2/catch.hpp>

#include <hdf5.h>

#include "experiments/iclaa_lm/iclaa_lm_eval.hpp"
#include "experiments/registry.hpp"
#include "framework/core/measure.hpp"
#include "framework/core/rng.hpp"
#include "framework/icl/feature_fit.hpp"
#include "framework/io/results_file.hpp"
#include "framework/run/lm_run.hpp"
#include "tests/lm_run_helpers.hpp"

namespace iclab_test_hybrid_adapter {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;
using namespace iclab;

namespace {

std::vector<double> read_logits(const fs::path& file) { return io::ResultsReader(file).read_tensor_double("/logits").values; }

std::vector<std::int32_t> bytes_of(const std::string& text) { return std::vector<std::int32_t>(text.begin(), text.end()); }

std::string id_list(const std::vector<std::int32_t>& ids) {
    std::string out;
    for (const auto id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
    return out;
}

// Logits (N, V) of iclaa_lm's hybrid row (recent k + the kernel with `map` F, Rng(seed)), or with keep = 0 its prf / orf
// row, on `input` behind `prompt`, X at positions M.. (iclaa_lm.input_positions = after_prompt), all in fp64 here.
std::vector<double> iclaa_lm_row_logits(model::Transformer<double>& net, const std::vector<std::int32_t>& prompt,
                                        const std::vector<std::int32_t>& input, const std::string& map, std::size_t F,
                                        std::uint64_t seed, std::size_t keep) {
    using namespace experiments::iclaa_lm_detail;
    icl::FeatureMapChoice choice;
    choice.map = map;
    choice.features = F;
    Rng rng(seed);
    const icl::SequenceSampler unused = [](std::vector<std::int32_t>&, std::size_t, Rng&) { FAIL("random maps draw no sequences"); };
    const icl::LayerHeadMaps maps = icl::build_feature_maps(net, choice, unused, net.spec().max_seq_len, rng, nullptr);
    Row row;
    row.method = keep > 0 ? Method::hybrid : map == "orf" ? Method::orf : Method::prf;
    row.size = F;
    row.keep = keep;
    row.maps = &maps;
    row.shifted = true;
    const icl::PromptKeysValues kv = icl::capture_prompt_keys_values(net, prompt.data(), 1, prompt.size());
    icl::PromptTerms terms = icl::empty_prompt_terms(net.spec().layers, net.spec().heads);
    add_row_terms(terms, 0, row, kv, 0, net.rope());
    net.set_learned_position_start(prompt.size());
    std::vector<double> logits = icl::logits_with_terms(net, terms, input.data(), 1, input.size());
    net.set_learned_position_start(0);
    return logits;
}

// Opens `file` read-write and runs `edit` on it (the HDF5 C API: attributes and datasets changed after iclab wrote them).
template <class Edit>
void edit_file(const fs::path& file, Edit edit) {
    const hid_t id = H5Fopen(file.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    REQUIRE(id >= 0);
    edit(id);
    H5Fclose(id);
}

void set_int_attribute(hid_t file, const char* name, std::int64_t value) {
    const hid_t attribute = H5Aopen(file, name, H5P_DEFAULT);
    REQUIRE(attribute >= 0);
    REQUIRE(H5Awrite(attribute, H5T_NATIVE_INT64, &value) >= 0);
    H5Aclose(attribute);
}

void add_to_value(hid_t file, const char* dataset, std::size_t index, double delta) {
    const hid_t set = H5Dopen2(file, dataset, H5P_DEFAULT);
    REQUIRE(set >= 0);
    const hid_t space = H5Dget_space(set);
    std::vector<double> values(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
    H5Sclose(space);
    REQUIRE(H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
    values.at(index) += delta;
    REQUIRE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
    H5Dclose(set);
}

}  // namespace

TEST_CASE("hybrid and ICLAA adapter files give iclaa_lm's logits, and a hybrid keeping every token gives the model with the prompt",
          "[cli][hybrid_adapter]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    const std::string prompt_text = "And the earth was without form, and void; and darkness", input_text = " was upon the face";
    const std::vector<std::int32_t> prompt = bytes_of(prompt_text), input = bytes_of(input_text);  // byte-level tokenizer
    const std::size_t M = prompt.size(), N = input.size();
    run::LmRun<double> loaded = run::load_lm_run<double>(run, experiments::catalog(), "test");
    model::Transformer<double>& net = *loaded.model;
    const std::size_t V = net.spec().vocab;

    // the model with the prompt, fp64: [X'; X] at X's positions M..M+N-1
    std::vector<std::int32_t> whole = prompt;
    whole.insert(whole.end(), input.begin(), input.end());
    net.forward(whole.data(), 1, M + N);
    const std::vector<double> with_prompt(net.logits() + M * V, net.logits() + (M + N) * V);

    struct Case {
        std::string map;
        std::size_t features, keep;
        std::uint64_t seed;
    };
    // keep 0: a pure ICLAA adapter (--method iclaa); orf: F = 20 is not a multiple of D = 8
    for (const Case& c : {Case{"prf", 64, 8, 3}, Case{"orf", 20, 5, 11}, Case{"prf", 32, M, 1}, Case{"prf", 48, 0, 2}, Case{"orf", 24, 0, 5}}) {
        const std::string name = c.map + "_" + std::to_string(c.keep);
        const fs::path adapter = scratch.path / (name + ".h5");
        const std::string method = c.keep > 0 ? "hybrid --keep-tokens " + std::to_string(c.keep) : "iclaa";
        const auto converted = run_iclab("convert " + run + " --method " + method + " --feature-map " + c.map +
                                             " --random-features " + std::to_string(c.features) + " --seed " + std::to_string(c.seed) +
                                             " --prompt-tokens " + id_list(prompt) + " --out " + adapter.string(),
                                         scratch.path);
        INFO(name << "\n" << converted.out << converted.err);
        REQUIRE(converted.status == 0);
        CHECK_THAT(converted.out, Catch::Contains("input positions       from 54"));
        const auto predicted = run_iclab("predict " + run + " --adapter " + adapter.string() + " --tokens " + id_list(input) + " --top 0 --out " +
                                             (scratch.path / (name + "_p.h5")).string(),
                                         scratch.path);
        const auto generated = run_iclab("generate " + run + " --adapter " + adapter.string() + " --prompt-tokens " + id_list(input) +
                                             " --max-new-tokens 3 --out " + (scratch.path / (name + "_g.h5")).string(),
                                         scratch.path);
        INFO(predicted.err << generated.err);
        REQUIRE(predicted.status == 0);
        REQUIRE(generated.status == 0);
        const std::vector<double> from_file = read_logits(scratch.path / (name + "_p.h5"));
        REQUIRE(from_file.size() == N * V);
        const std::vector<double> in_memory = iclaa_lm_row_logits(net, prompt, input, c.map, c.features, c.seed, c.keep);
        const double vs_iclaa_lm = relative_error(from_file.data(), in_memory);
        // generate's first logits row: the next token after the whole input
        std::vector<double> first_generated = read_logits(scratch.path / (name + "_g.h5"));
        REQUIRE(first_generated.size() >= V);
        first_generated.resize(V);
        const std::vector<double> last_in_memory(in_memory.end() - static_cast<std::ptrdiff_t>(V), in_memory.end());
        const double generate_vs_iclaa_lm = relative_error(first_generated.data(), last_in_memory);
        const double vs_prompt = relative_error(from_file.data(), with_prompt);
        WARN(name << ": predict vs iclaa_lm's row " << vs_iclaa_lm << ", generate vs iclaa_lm " << generate_vs_iclaa_lm
                  << ", vs the model with the prompt " << vs_prompt);
        CHECK(vs_iclaa_lm <= 1e-12);
        CHECK(generate_vs_iclaa_lm <= 1e-12);
        CHECK(io::ResultsReader(adapter).read_attr_int64("/", "keep_tokens") == static_cast<std::int64_t>(c.keep));
        if (c.keep == M)
            CHECK(vs_prompt <= 1e-12);  // every token kept: the exact prompt cache
        else
            CHECK(vs_prompt > 1e-6);  // the kernel approximates the older tokens
    }
}

TEST_CASE("edited or damaged hybrid adapters are refused naming the field, and hybrids are not composed", "[cli][hybrid_adapter]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    const std::string prompt = "And the earth was without form, and void; and darkness";
    const fs::path hybrid = scratch.path / "hybrid.h5";
    const auto converted = run_iclab("convert " + run + " --method hybrid --keep-tokens 6 --random-features 16 --prompt-text '" + prompt +
                                         "' --out " + hybrid.string(),
                                     scratch.path);
    INFO(converted.err);
    REQUIRE(converted.status == 0);
    const auto refused = [&](const std::string& what, auto edit, std::vector<std::string> expected) {
        const fs::path copy = scratch.path / (what + ".h5");
        fs::copy_file(hybrid, copy);
        edit_file(copy, edit);
        for (const char* command : {"predict", "generate"}) {
            const auto result = run_iclab(std::string(command) + " " + run + " --adapter " + copy.string() +
                                              (command == std::string("predict") ? " --tokens 97,98" : " --prompt-text ab --max-new-tokens 1"),
                                          scratch.path);
            INFO(what << " " << command << ": " << result.err);
            CHECK(result.status == 2);
            for (const auto& word : expected) CHECK_THAT(result.err, Catch::Contains(word));
        }
    };
    refused("cache_value", [](hid_t f) { add_to_value(f, "/iclaa/blocks.0.cache_keys", 5, 0.25); }, {"blocks.0.cache_keys"});
    refused("keep_large", [](hid_t f) { set_int_attribute(f, "keep_tokens", 60); }, {"keep_tokens = 60"});
    refused("keep_zero", [](hid_t f) { set_int_attribute(f, "keep_tokens", 0); }, {"keep_tokens 0", "datasets"});
    refused("keep_other", [](hid_t f) { set_int_attribute(f, "keep_tokens", 5); }, {"blocks.0.cache_keys", "shape"});
    refused("learned_two", [](hid_t f) { set_int_attribute(f, "learned_positions", 2); }, {"learned_positions = 2"});
    refused("learned_zero", [](hid_t f) { set_int_attribute(f, "learned_positions", 0); }, {"content_checksum"});
    refused("version", [](hid_t f) { set_int_attribute(f, "format_version", 4); }, {"format version 4"});
    refused("no_values", [](hid_t f) { REQUIRE(H5Ldelete(f, "/iclaa/blocks.1.cache_values", H5P_DEFAULT) >= 0); }, {"datasets", "per layer"});

    // refusals at conversion: K beyond the prompt, a learned map, composition onto a hybrid
    const auto too_many = run_iclab("convert " + run + " --method hybrid --keep-tokens 55 --prompt-text '" + prompt + "' --out " +
                                        (scratch.path / "k.h5").string(), scratch.path);
    CHECK(too_many.status == 2);
    CHECK_THAT(too_many.err, Catch::Contains("--keep-tokens 55"));
    const auto learned = run_iclab("convert " + run + " --method hybrid --feature-map learned --prompt-text '" + prompt + "' --out " +
                                       (scratch.path / "l.h5").string(), scratch.path);
    CHECK(learned.status == 2);
    CHECK_THAT(learned.err, Catch::Contains("--feature-map learned"));
    const auto composed = run_iclab("convert " + run + " --method hybrid --adapter " + hybrid.string() + " --prompt-text x --out " +
                                        (scratch.path / "c.h5").string(), scratch.path);
    CHECK(composed.status == 2);
    CHECK_THAT(composed.err, Catch::Contains("not composed"));
    CHECK_FALSE(fs::exists(scratch.path / "k.h5"));
    // --method auto on a softmax lm run: ICLAA (prf, F 256), as on induction-head runs; an unknown method is named
    const auto automatic = run_iclab("convert " + run + " --prompt-text '" + prompt + "' --out " + (scratch.path / "auto.h5").string(), scratch.path);
    INFO(automatic.err);
    CHECK(automatic.status == 0);
    CHECK_THAT(automatic.out, Catch::Contains("ICLAA") && Catch::Contains("prf, F 256"));
    const auto unknown = run_iclab("convert " + run + " --method cache --prompt-text '" + prompt + "' --out " + (scratch.path / "u.h5").string(), scratch.path);
    CHECK(unknown.status == 2);
    CHECK_THAT(unknown.err, Catch::Contains("--method must be") && Catch::Contains("'cache'"));
}

}  // namespace iclab_test_hybrid_adapter
