// The `iclca_exactness` experiment (paper 000 Table 1, Theorem 4.1) end to end through the iclab binary on tiny
// sizes: the three tables and the per-pair rows are written; ICLCA is exact to rounding (fp64 <= 1e-12, fp32
// <= 1e-5, measured ~3e-7) while the prompt does change the outputs; the parameter counts follow the layout; the
// paper's number appears beside the size it names; inconsistent size lists are refused before any work. The claims
// (experiments/iclca_exactness/claims.cpp): declared per case, size and dtype from the settings alone, judged on
// the per-pair errors; a pair beyond the bar, a non-finite error or a measurement that did not run are not passes.
#include <catch2/catch.hpp>

#include <cmath>

#include "experiments/iclca_exactness/exactness.hpp"
#include "framework/icl/exactness_bars.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclca_exactness {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {
// A 1-layer width-16 model and the paper's 205K size (3 x 72, 2 heads), 3 pairs of 12 + 6 tokens each.
const std::string kTinyExactness =
    "configs/quick/iclca_exactness.yaml sizes.names=[tiny,205K] sizes.layers=[1,3] sizes.widths=[16,72] "
    "sizes.heads=[2,2] sizes.pairs=[3,3] sizes.theorem41_model_pairs=[3,2] theorem41.direct_pairs=3 "
    "task.prompt_length=12 task.input_length=6 --threads 1";

// L (12 C² + 14 C + C D) + 2 V C + 2 C: the layout of a block (LayerNorms, W_qkv, b_qkv, W_o, b_o, b_KV (H, D, D),
// b_D (H, D), MLP 4C) plus embedding, final LayerNorm and unembedding.
std::int64_t model_parameters(std::int64_t L, std::int64_t C, std::int64_t H, std::int64_t V) {
    const std::int64_t D = C / H;
    return L * (12 * C * C + 14 * C + C * D) + 2 * V * C + 2 * C;
}
}  // namespace

TEST_CASE("iclca_exactness: converted models match the prompted ones to rounding, in fp32 and fp64", "[iclca_exactness][cli]") {
    Scratch scratch;
    const auto result = run_iclab("run " + kTinyExactness + " output.dir=" + scratch.path.string(), scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    CHECK_THAT(result.out, Catch::Contains("paper 000 Table 1") && Catch::Contains("Theorem 4.1") && Catch::Contains("paper"));
    const fs::path run_dir = last_line(result.out);
    iclab::io::ResultsReader reader((run_dir / "results.h5").string());
    std::size_t expected_pair_rows = 0;
    for (const std::string table : {"table1", "theorem41", "theorem41_model"}) {
        INFO(table);
        const std::string g = "/tables/" + table + "/";
        REQUIRE(reader.has(g + "mean_rel_error_fp32"));
        const auto names = reader.read_column_string(g + "size");
        REQUIRE(names == std::vector<std::string>{"tiny", "205K"});
        const auto pairs = reader.read_column_int64(g + "pairs");
        const auto parameters = reader.read_column_int64(g + "parameters");
        for (const std::string column : {"mean_rel_error_fp32", "max_rel_error_fp32", "mean_rel_error_fp64", "max_rel_error_fp64",
                                         "prompt_effect", "fp32_vs_fp64", "wall_s_fp32", "peak_rss_gib_fp64"}) {
            INFO(column);
            for (double value : reader.read_column_double(g + column)) CHECK(std::isfinite(value));
        }
        const auto mean32 = reader.read_column_double(g + "mean_rel_error_fp32"), max32 = reader.read_column_double(g + "max_rel_error_fp32");
        const auto mean64 = reader.read_column_double(g + "mean_rel_error_fp64"), max64 = reader.read_column_double(g + "max_rel_error_fp64");
        const auto effect = reader.read_column_double(g + "prompt_effect"), rounding = reader.read_column_double(g + "fp32_vs_fp64");
        for (std::size_t i = 0; i < names.size(); ++i) {
            INFO(names[i]);
            CHECK(max64[i] <= 1e-12);
            CHECK(mean64[i] <= max64[i]);
            CHECK(max32[i] <= 1e-5);
            CHECK(mean32[i] <= max32[i]);
            CHECK(max32[i] > 1e-9);  // fp32 really ran in single precision
            CHECK(rounding[i] > 1e-9);
            CHECK(rounding[i] < 1e-5);
            // Without the prompt (or its conversion) the outputs differ by far more than the conversion's error, so
            // exactness is not vacuous (the effect is smallest, ~2e-3, in the 1-layer identity-feature model at init 0.02).
            CHECK(effect[i] > 1e-3);
            CHECK(effect[i] > 1e3 * max32[i]);
            expected_pair_rows += 2 * static_cast<std::size_t>(pairs[i]);
        }
        if (table == "theorem41") {
            CHECK(parameters == std::vector<std::int64_t>{3 * 16 * 16 + 16 * 8, 3 * 72 * 72 + 72 * 36});  // W_qkv and b
            CHECK(pairs == std::vector<std::int64_t>{3, 3});
        } else {
            CHECK(parameters == std::vector<std::int64_t>{model_parameters(1, 16, 2, 52), model_parameters(3, 72, 2, 52)});
            CHECK(parameters[1] == 205056);
            CHECK(pairs == (table == "table1" ? std::vector<std::int64_t>{3, 3} : std::vector<std::int64_t>{3, 2}));
        }
        const auto paper = reader.read_column_double(g + "paper_rel_error");
        CHECK(std::isnan(paper[0]));  // no paper number for a size the paper does not have
        if (table == "table1") CHECK(paper[1] == 2.9e-7);  // paper 000 Table 1, 205K
        else CHECK(std::isnan(paper[1]));
        CHECK_FALSE(reader.has_attr("/tables/" + table, "paper_bands"));  // judged by the declared claims only
    }
    CHECK(reader.read_column_string("/pairs/case").size() == expected_pair_rows);
    CHECK(reader.read_attr_int64("/", "prompt_length") == 12);
    CHECK(reader.read_attr_double("/", "peak_rss_gib") > 0.0);
    // the claims: 2 sizes x 3 cases x 2 dtypes own checks, one printed number (205K, the size the paper has)
    const auto claims = iclab::io::read_claims(reader);
    REQUIRE(claims.size() == 13);
    std::size_t printed = 0;
    for (const auto& r : claims) {
        INFO(r.claim.id);
        CHECK(r.claim.unit == "instance");
        CHECK(r.values.size() == (r.claim.id.find("model 205K") != std::string::npos ? 2u : 3u));
        if (r.claim.kind == iclab::io::ClaimKind::printed_number) {
            ++printed;
            CHECK(r.claim.id == "000-T1 205K fp32: mean error as printed");
            CHECK(r.claim.paper_value == 2.9e-7);
            CHECK(r.claim.rule.low == Approx(2.9e-7 / 3));
            CHECK(r.claim.rule.high == Approx(2.9e-7 * 3));
            continue;
        }
        CHECK(r.claim.kind == iclab::io::ClaimKind::own_check);
        CHECK(std::isnan(r.claim.paper_value));
        CHECK(r.claim.rule.threshold == (r.claim.id.find("fp64") != std::string::npos ? 1e-12 : 1e-5));
        CHECK(r.verdict == iclab::io::Verdict::reproduced);
    }
    CHECK(printed == 1);
}

TEST_CASE("iclca_exactness claims: declared from the settings, judged on every pair", "[iclca_exactness][claims]") {
    namespace ex = iclab::experiments::exactness;
    using iclab::io::Verdict;
    ex::Settings s;
    s.dtypes = {"float32", "float64"};
    s.direct_pairs = 2;
    s.sizes = {{"205K", 3, 72, 2, 3, 0}};  // no Theorem 4.1 model pairs: no claim on it
    const auto claims = ex::declare_claims(s, {2.9e-7});
    std::vector<std::string> ids;
    for (const auto& d : claims) ids.push_back(d.claim.id);
    CHECK(ids == std::vector<std::string>{"000-T1 205K fp32: ICLCA exact", "000-T1 205K fp32: mean error as printed",
                                          "000-T1 205K fp64: ICLCA exact", "000-Thm4.1 layer 205K fp32: Eq. 10 holds",
                                          "000-Thm4.1 layer 205K fp64: Eq. 10 holds"});
    CHECK(ex::declare_claims(s, {std::nan("")}).size() == 4);  // no printed number for a size the paper lacks
    // measured errors: Table 1 fp32 every pair beyond the bar, fp64 a NaN; Theorem 4.1 fp32 one pair of three beyond
    // (one at the bar counts as within), fp64 not run
    std::vector<std::vector<ex::Row>> tables(3, std::vector<ex::Row>(1));
    const double bar32 = iclab::icl::kIclcaExactBarFp32, bar64 = iclab::icl::kIclcaExactBarFp64;
    tables[0][0].fp32.ran = true, tables[0][0].fp32.errors = {2.0 * bar32, 2.1 * bar32, 1.9 * bar32};
    tables[0][0].fp64.ran = true, tables[0][0].fp64.errors = {bar64, std::nan(""), 1e-16};
    tables[1][0].fp32.ran = true, tables[1][0].fp32.errors = {bar32, 1e-7, 1.5 * bar32};
    tables[1][0].fp64.note = "not run: needs 15 GiB, 3 GiB available";
    const auto r = ex::evaluate_claims(claims, tables);
    REQUIRE(r.size() == 5);
    CHECK(r[0].verdict == Verdict::not_reproduced);  // ~2e-5 > 1e-5
    CHECK(r[0].on_side == 0);
    CHECK(r[1].verdict == Verdict::not_reproduced);  // interval of the mean around 2e-5, above the band [9.7e-8, 8.7e-7]
    CHECK(r[2].verdict == Verdict::inconclusive);    // a non-finite error is no pass
    CHECK(r[3].verdict == Verdict::not_reproduced);  // 1.5e-5 on one pair of three
    CHECK(r[3].on_side == 2);
    CHECK(r[4].verdict == Verdict::not_run);         // no value at all
    CHECK_THAT(r[4].note, Catch::Contains("not run"));
    CHECK(r[3].units == std::vector<std::int64_t>{0, 1, 2});
    tables[1][0].fp32.errors.pop_back();
    CHECK(ex::evaluate_claims(claims, tables)[3].verdict == Verdict::reproduced);  // the same pairs without the third
}

TEST_CASE("iclca_exactness refuses inconsistent size lists before any work", "[iclca_exactness][cli]") {
    Scratch scratch;
    const auto lengths = run_iclab("run " + kTinyExactness + " sizes.layers=[1] output.dir=" + scratch.path.string(), scratch.path);
    CHECK(lengths.status == 2);
    CHECK_THAT(lengths.err, Catch::Contains("sizes.layers") && Catch::Contains("one per size"));
    const auto odd = run_iclab("run " + kTinyExactness + " sizes.widths=[18,72] sizes.heads=[2,2] output.dir=" + scratch.path.string(),
                               scratch.path);
    CHECK(odd.status == 2);
    CHECK_THAT(odd.err, Catch::Contains("even head width"));
    CHECK(count_entries(scratch.path) == 2);  // the captured stdout and stderr: no run folder
}

}  // namespace iclab_test_iclca_exactness
