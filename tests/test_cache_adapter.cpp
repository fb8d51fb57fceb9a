// Prompt-cache adapters (framework/icl/cache_adapter.hpp, `iclab convert --method exact|recent|heavy`) end to end on a
// tiny GPT-2-shaped lm run (learned positions, tied embeddings) trained here: `generate` with the exact-cache adapter
// gives the same tokens and the same logits (<= 1e-12, fp64) as `generate` with the prompt; a truncated cache does
// not reproduce the logits; damaged files, a wrong model and composition are refused (exit 2, naming the field).
#include <catch2/catch.hpp>

#include <hdf5.h>

#include "framework/core/measure.hpp"
#include "framework/io/results_file.hpp"
#include "tests/lm_run_helpers.hpp"

namespace iclab_test_cache_adapter {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

std::vector<double> read_logits(const fs::path& file) { return iclab::io::ResultsReader(file).read_tensor_double("/logits").values; }

}  // namespace

TEST_CASE("generate with an exact prompt-cache adapter equals generate with the prompt (learned positions)", "[cli][cache_adapter]") {
    Scratch scratch;
    const std::string run = train_tiny_lm_run(scratch.path);
    const std::string prompt = "And the earth was without form, and void; and darkness", input = " was upon";
    const fs::path exact = scratch.path / "exact.h5", recent = scratch.path / "recent.h5";
    const auto converted = run_iclab("convert " + run + " --method exact --prompt-text '" + prompt + "' --out " + exact.string(), scratch.path);
    INFO(converted.err);
    REQUIRE(converted.status == 0);
    CHECK_THAT(converted.out, Catch::Contains("input positions       from 54"));
    REQUIRE(run_iclab("convert " + run + " --method recent --keep-tokens 8 --prompt-text '" + prompt + "' --out " + recent.string(), scratch.path).status == 0);

    const auto with_prompt = run_iclab("generate " + run + " --prompt-text '" + prompt + input + "' --max-new-tokens 12 --out " +
                                           (scratch.path / "g_prompt.h5").string(), scratch.path);
    const auto with_exact = run_iclab("generate " + run + " --adapter " + exact.string() + " --prompt-text '" + input +
                                          "' --max-new-tokens 12 --out " + (scratch.path / "g_exact.h5").string(), scratch.path);
    const auto with_recent = run_iclab("generate " + run + " --adapter " + recent.string() + " --prompt-text '" + input +
                                           "' --max-new-tokens 12 --out " + (scratch.path / "g_recent.h5").string(), scratch.path);
    INFO(with_prompt.err << with_exact.err << with_recent.err);
    REQUIRE(with_prompt.status == 0);
    REQUIRE(with_exact.status == 0);
    REQUIRE(with_recent.status == 0);
    const iclab::io::ResultsReader a(scratch.path / "g_prompt.h5"), b(scratch.path / "g_exact.h5");
    CHECK(a.read_int32("/generated").values == b.read_int32("/generated").values);
    const std::vector<double> reference = read_logits(scratch.path / "g_prompt.h5");
    CHECK(iclab::relative_error(read_logits(scratch.path / "g_exact.h5").data(), reference) <= 1e-12);
    CHECK(iclab::relative_error(read_logits(scratch.path / "g_recent.h5").data(), reference) > 1e-6);  // truncated: not exact

    // refusals: composition, a damaged file, a file edited after writing, another model, keep >= M, the induction runs
    const auto composed = run_iclab("convert " + run + " --method exact --adapter " + exact.string() + " --prompt-text x --out " +
                                        (scratch.path / "c.h5").string(), scratch.path);
    CHECK(composed.status == 2);
    CHECK_THAT(composed.err, Catch::Contains("not composed"));
    // a value changed after writing (the content checksum), and an unrelated HDF5 file
    const fs::path edited = scratch.path / "edited.h5";
    fs::copy_file(exact, edited);
    {
        const hid_t file = H5Fopen(edited.string().c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        REQUIRE(file >= 0);
        const hid_t set = H5Dopen2(file, "/cache/blocks.1.values", H5P_DEFAULT);
        REQUIRE(set >= 0);
        std::vector<double> values(2 * 54 * 8);  // (H, K, D)
        REQUIRE(H5Dread(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
        values[17] += 0.25;
        REQUIRE(H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
        H5Dclose(set);
        H5Fclose(file);
    }
    const auto damaged = run_iclab("generate " + run + " --adapter " + edited.string() + " --prompt-text x", scratch.path);
    CHECK(damaged.status == 2);
    CHECK_THAT(damaged.err, Catch::Contains("checksum") && Catch::Contains("blocks.1.values"));
    const auto not_adapter = run_iclab("generate " + run + " --adapter " + (scratch.path / "g_prompt.h5").string() + " --prompt-text x", scratch.path);
    CHECK(not_adapter.status == 2);
    const auto too_many = run_iclab("convert " + run + " --method heavy --keep-tokens 54 --prompt-text '" + prompt + "' --out " +
                                        (scratch.path / "k.h5").string(), scratch.path);
    CHECK(too_many.status == 2);
    CHECK_THAT(too_many.err, Catch::Contains("--keep-tokens"));
    // the context counts the adapter's prompt: 54 + 43 > 96 learned positions
    const auto too_long = run_iclab("generate " + run + " --adapter " + exact.string() + " --prompt-text '" + std::string(43, 'a') +
                                        "' --max-new-tokens 1", scratch.path);
    CHECK(too_long.status == 2);
    CHECK_THAT(too_long.err, Catch::Contains("learned positions"));
    std::string ids = "97";
    for (int i = 1; i < 43; ++i) ids += ",97";
    const auto predict_long = run_iclab("predict " + run + " --adapter " + exact.string() + " --tokens " + ids, scratch.path);
    CHECK(predict_long.status == 2);
    CHECK_THAT(predict_long.err, Catch::Contains("learned positions"));
}

}  // namespace iclab_test_cache_adapter
