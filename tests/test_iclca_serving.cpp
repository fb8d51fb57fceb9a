// The `iclca_serving` experiment (paper 000 §7) end to end through the iclab binary on a small model: its two
// claims are declared with their kinds and rules, and judged on the measured columns of /tables/serving (the
// values stored are the relative errors and speedups themselves, not verdicts); a float64 model is held to the
// fp64 bar. The speedup's verdict depends on the machine's load and is not asserted.
#include <algorithm>
#include <catch2/catch.hpp>

#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclca_serving {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

TEST_CASE("iclca_serving: claims on the adapter's logits and its speed, on the measured rows", "[iclca_serving][cli][claims]") {
    using iclab::io::ClaimKind;
    for (const std::string dtype : {"float32", "float64"}) {
        INFO(dtype);
        Scratch scratch;
        const auto result = run_iclab("run configs/paper/iclca_serving.yaml task.prompt_lengths=[24,40] task.input_lengths=[8] "
                                      "task.repeats=1 model.layers=2 model.width=32 model.heads=2 model.dtype=" + dtype +
                                          " --threads 1 output.dir=" + scratch.path.string(), scratch.path);
        INFO(result.err);
        REQUIRE(result.status == 0);
        iclab::io::ResultsReader reader((fs::path(last_line(result.out)) / "results.h5").string());
        const auto error = reader.read_column_double("/tables/serving/relative_logit_error");
        const auto speedup = reader.read_column_double("/tables/serving/speedup");
        const auto claims = iclab::io::read_claims(reader);
        REQUIRE(claims.size() == 2);
        const std::string tag = dtype == "float64" ? "fp64" : "fp32";
        CHECK(claims[0].claim.id == "000-7 serving " + tag + ": adapter answers as the prompt");
        CHECK(claims[0].claim.kind == ClaimKind::own_check);
        CHECK(claims[0].claim.rule.test == iclab::io::ClaimRule::Test::count_at_most);
        CHECK(claims[0].claim.rule.threshold == (dtype == "float64" ? 1e-12 : 1e-5));
        CHECK(claims[0].values == error);
        CHECK(claims[0].units == std::vector<std::int64_t>{0, 1});
        CHECK(claims[0].verdict == iclab::io::Verdict::reproduced);
        CHECK(claims[1].claim.id == "000-7 serving " + tag + ": adapter is faster");
        CHECK(claims[1].claim.kind == ClaimKind::qualitative);
        CHECK(claims[1].claim.rule.test == iclab::io::ClaimRule::Test::count_above);
        CHECK(claims[1].claim.rule.threshold == 1.0);
        // one value per run, its smallest speedup, pooled one per seed (third audit of issue 45: the rows of one run were
        // pooled as if seeds; `iclab claims` judges it over the seeds' runs)
        CHECK(claims[1].claim.pooling == iclab::io::ClaimPooling::seed_means);
        CHECK(claims[1].values == std::vector<double>{*std::min_element(speedup.begin(), speedup.end())});
        CHECK(claims[1].verdict != iclab::io::Verdict::inconclusive);  // a finite timing decides the run, one way or the other
    }
}

}  // namespace iclab_test_iclca_serving
