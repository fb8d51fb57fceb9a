// Experiment `prefix_vs_causal` (paper 003 Part B) end to end through the iclab binary: a prefix and a causal run of
// one seed share the test set (paired: identical zero-predictor MSE on every set), the table holds the test set, its
// first sequences, the training pool and the fewer-ICE sets, and the test row equals the training service's final
// evaluation.
#include <catch2/catch.hpp>

#include <cmath>

#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_prefix_vs_causal {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {
const std::string kTiny =
    "configs/quick/prefix_vs_causal.yaml task.x_dim=3 task.examples=6 task.queries=3 task.pool_sequences=200 "
    "model.layers=2 model.width=16 train.steps=60 train.batch_size=16 eval.every=30 eval.sequences=96 "
    "prefix_vs_causal.first_sequences=32 prefix_vs_causal.pool_eval_sequences=50 'prefix_vs_causal.test_examples=[3, 5]' --quiet";

struct Table {
    std::vector<std::string> set;
    std::vector<double> query_mse, zero_mse, error_pct;
};

Table read_table(const fs::path& run_dir) {
    iclab::io::ResultsReader reader((run_dir / "results.h5").string());
    Table t;
    t.set = reader.read_column_string("/tables/prefix_vs_causal/set");
    t.query_mse = reader.read_column_double("/tables/prefix_vs_causal/query_mse");
    t.zero_mse = reader.read_column_double("/tables/prefix_vs_causal/zero_predictor_mse");
    t.error_pct = reader.read_column_double("/tables/prefix_vs_causal/error_pct");
    CHECK(reader.read_attr_double("/", "test_query_mse") == Approx(t.query_mse[0]));
    // fp64 evaluation of the fp32-trained weights on the service's own test set: its fp32 final evaluation
    CHECK(reader.read_attr_double("/", "final_query_mse") == Approx(t.query_mse[0]).epsilon(1e-3));
    return t;
}
}  // namespace

TEST_CASE("prefix_vs_causal: paired prefix and causal runs and every evaluation set", "[prefix_vs_causal][cli]") {
    Scratch scratch;
    std::vector<Table> tables;
    for (const char* mask : {"prefix", "causal"}) {
        for (const char* kind : {"linear", "classification"}) {
            const auto result = run_iclab(std::string("run ") + kTiny + " model.mask=" + mask + " task.kind=" + kind +
                                              " output.dir=" + scratch.path.string(), scratch.path);
            INFO(result.err);
            REQUIRE(result.status == 0);
            tables.push_back(read_table(last_line(result.out)));
        }
    }
    const std::vector<std::string> sets{"test", "test_first32", "train_pool", "test_k3", "test_k5"};
    for (const auto& t : tables) REQUIRE(t.set == sets);
    for (std::size_t i = 0; i < sets.size(); ++i) {
        // the same sequences for both masks: the zero predictor's error is identical, the models' are not
        CHECK(tables[0].zero_mse[i] == tables[2].zero_mse[i]);
        CHECK(tables[1].zero_mse[i] == tables[3].zero_mse[i]);
        CHECK(tables[0].query_mse[i] != tables[2].query_mse[i]);
        CHECK(std::isnan(tables[0].error_pct[i]));  // regression: no classification error
        CHECK(tables[1].error_pct[i] >= 0.0);
        CHECK(tables[1].error_pct[i] <= 100.0);
    }
    CHECK(tables[0].zero_mse[0] != tables[0].zero_mse[1]);  // 32 of 96 sequences: another mean

    // The paired claims (experiments/prefix_vs_causal/claims.hpp): each run declares one arm (inconclusive alone);
    // pooled, the prefix and causal runs of a task form one setting and each claim's value is computed from the two
    // tables: ln(causal / prefix) of the query MSE (LR), causal - prefix error in points (MC).
    std::vector<fs::path> dirs;
    for (const auto& entry : fs::recursive_directory_iterator(scratch.path))
        if (entry.path().filename() == "results.h5") dirs.push_back(entry.path().parent_path());
    REQUIRE(dirs.size() == 4);
    for (const auto& dir : dirs) {
        const auto own = iclab::io::read_claims(iclab::io::ResultsReader((dir / "results.h5").string()));
        // Tables 1 and 3 (one claim), Tables 4-6 at k = 3 and k = 5, errors vs k, Table 7 permuted vs unpermuted
        REQUIRE(own.size() == 5);
        for (const auto& r : own) CHECK(r.verdict == iclab::io::Verdict::inconclusive);
    }
    const auto pooled = iclab::run::pool_run_claims(dirs);
    REQUIRE(pooled.size() == 2);  // LR and MC; the mask is the arm, not the setting
    for (const auto& p : pooled) {
        REQUIRE(p.runs.size() == 2);
        const bool mc = p.claims[0].claim.id.find("MC") != std::string::npos;
        const Table& prefix = tables[mc ? 1 : 0];
        const Table& causal = tables[mc ? 3 : 2];
        std::vector<std::string> ids;
        for (const auto& r : p.claims) ids.push_back(r.claim.id);
        REQUIRE(ids.size() == 7);  // and each mask's errors-vs-k and permuted-vs-unpermuted claims (tests/test_prefix_vs_causal_claims.cpp)
        ids.resize(3);
        const std::string task = mc ? "MC" : "LR";
        CHECK(ids == std::vector<std::string>{"003-T1 " + task + " SL-L2: " + (mc ? "gap >= 1 point" : "ratio >= 1.5"),
                                              "003-T4-6 " + task + " SL-L2 k=3: prefix < causal",
                                              "003-T4-6 " + task + " SL-L2 k=5: prefix < causal"});
        CHECK(p.claims[0].claim.source == "Tables 1 and 3");  // Table 1's rows are Table 3's: one claim
        CHECK(p.claims[1].claim.source == "Table 4");  // k = d <-> the paper's 16 of 40
        CHECK(p.claims[2].claim.source == "Tables 4-6");  // k = 5/3 d: no printed cell
        for (std::size_t c = 0; c < 3; ++c) {
            const std::size_t set = c == 0 ? 0 : c + 2;  // test, test_k3, test_k5
            const double expected = mc ? causal.error_pct[set] - prefix.error_pct[set] : std::log(causal.query_mse[set] / prefix.query_mse[set]);
            REQUIRE(p.claims[c].values.size() == 1);
            CHECK(p.claims[c].values[0] == Approx(expected).epsilon(1e-12));
            CHECK(p.claims[c].units == std::vector<std::int64_t>{0});
            CHECK(p.claims[c].verdict == iclab::io::Verdict::inconclusive);  // one seed: no t-interval
            CHECK_THAT(p.claims[c].note, Catch::Contains("one value: no interval"));
        }
    }
}

TEST_CASE("prefix_vs_causal_probes: one least-squares probe per depth of a finished run", "[prefix_vs_causal][cli]") {
    Scratch scratch;
    const auto trained = run_iclab("run " + kTiny + " output.dir=" + scratch.path.string(), scratch.path);
    INFO(trained.err);
    REQUIRE(trained.status == 0);
    const fs::path run_dir = last_line(trained.out);
    const Table table = read_table(run_dir);
    const auto probes = run_iclab("run configs/quick/prefix_vs_causal_probes.yaml source.run_dir='\"" + run_dir.string() +
                                      "\"' output.dir=" + (scratch.path / "probes").string() + " --quiet", scratch.path);
    INFO(probes.err);
    REQUIRE(probes.status == 0);
    iclab::io::ResultsReader reader((fs::path(last_line(probes.out)) / "results.h5").string());
    const auto depth = reader.read_column_double("/tables/probes/depth");
    const auto mse = reader.read_column_double("/tables/probes/query_mse");
    REQUIRE(depth.size() == 3);  // model.layers = 2: the read-in, after block 1, after block 2
    // Depth 0 holds [x; 0] + positions: with w ~ N(0, I) no linear map beats predicting 0 by much.
    CHECK(mse[0] == Approx(table.zero_mse[0]).epsilon(0.15));
    // The last depth is what the trained read-out sees: its least-squares probe does about as well as the read-out.
    CHECK(mse[2] < 1.25 * table.query_mse[0]);
    CHECK(mse[2] < mse[0]);
    const auto wrong = run_iclab("run configs/quick/prefix_vs_causal_probes.yaml source.run_dir=" + scratch.path.string() +
                                     " output.dir=" + (scratch.path / "probes").string(), scratch.path);
    CHECK(wrong.status == 2);
    CHECK_THAT(wrong.err, Catch::Contains("source.run_dir"));
}

TEST_CASE("prefix_vs_causal: a pool smaller than the batch and too many test examples are refused", "[prefix_vs_causal][cli]") {
    Scratch scratch;
    const auto pool = run_iclab("run " + kTiny + " task.pool_sequences=8 output.dir=" + scratch.path.string(), scratch.path);
    CHECK(pool.status == 2);
    CHECK_THAT(pool.err, Catch::Contains("task.pool_sequences"));
    const auto longer = run_iclab("run " + kTiny + " 'prefix_vs_causal.test_examples=[9]' output.dir=" + scratch.path.string(), scratch.path);
    CHECK(longer.status != 0);
    CHECK_THAT(longer.err, Catch::Contains("test_examples"));
}

TEST_CASE("prefix_vs_causal: train.permute_examples trains on shuffled ICEs, reproducibly, and tests unpermuted",
          "[prefix_vs_causal][cli][permute]") {
    Scratch scratch;
    std::vector<Table> tables;
    for (const char* permute : {"none", "per_step", "per_step", "per_sequence"}) {
        const fs::path dir = scratch.path / (std::string(permute) + std::to_string(tables.size()));
        const auto result = run_iclab(std::string("run ") + kTiny + " model.mask=causal train.permute_examples=" + permute +
                                          " output.dir=" + dir.string(), scratch.path);
        INFO(result.err);
        REQUIRE(result.status == 0);
        tables.push_back(read_table(last_line(result.out)));
    }
    for (std::size_t i = 0; i < tables[0].set.size(); ++i) {
        CHECK(tables[0].zero_mse[i] == tables[1].zero_mse[i]);    // the same test sets, unpermuted
        CHECK(tables[1].query_mse[i] == tables[2].query_mse[i]);  // the same seed: the same shuffles, the same model
        CHECK(tables[0].query_mse[i] != tables[1].query_mse[i]);  // shuffled training data: another model
        CHECK(tables[1].query_mse[i] != tables[3].query_mse[i]);  // one order per sequence: other shuffles
    }
}

}  // namespace iclab_test_prefix_vs_causal
