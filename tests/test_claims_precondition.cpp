// Run-level preconditions in pooling (issue 46, framework/io/precondition.hpp, run::pool_run_claims): hand-made runs of
// one setting, seeds 0-3, one per seed; a run whose recorded precondition is not met gives no value to any claim of its
// setting and is listed with its reason; fewer values left than a rule needs is inconclusive with "<n> of <m> seeds
// learned the task"; a run that records no precondition pools as before; a recorded `met` that contradicts value and bar
// is refused.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/precondition.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"

namespace iclab_test_claims_precondition {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab::io;

namespace {

Claim claim_of(const std::string& id, ClaimRule rule) {
    Claim c;
    c.id = id, c.paper = "000", c.source = "§6.4", c.kind = ClaimKind::qualitative;
    c.statement = "G > 0", c.metric = "G of one test pair", c.unit = "instance", c.pooling = ClaimPooling::seed_means;
    c.rule = rule;
    return c;
}

struct Scratch {
    fs::path path = fs::temp_directory_path() / ("iclab_claims_precondition_" + std::to_string(::getpid()));
    Scratch() { fs::remove_all(path), fs::create_directories(path); }
    ~Scratch() { fs::remove_all(path); }
};

// One run of seed `seed`: both claims with two instances around `g`, and the precondition (value, bar) unless bar < 0.
// met_recorded >= 0: written over precondition_met (a file whose `met` contradicts its value and bar).
fs::path write_run(const fs::path& root, int seed, double g, double value, double bar, std::int64_t met_recorded = -1) {
    const fs::path dir = root / ("seed" + std::to_string(seed));
    fs::create_directories(dir);
    ResultsWriter w(dir / "results.h5");
    w.set_attr("experiment", "iclaa");
    w.set_attr("config_source", "configs/paper/iclaa.yaml");
    w.set_attr("config", "experiment: iclaa\nseed: " + std::to_string(seed) + "\n");
    write_claims(w, {evaluate_claim(claim_of("interval", ClaimRule::interval_above(0.0)), {0, 1}, {g - 0.01, g + 0.01}),
                     evaluate_claim(claim_of("count", ClaimRule::count_above(0.0, {2, 3})), {0, 1}, {g - 0.01, g + 0.01})});
    if (bar >= 0) {
        Precondition p;
        p.key = "x.precondition.min_accuracy", p.measure = "accuracy", p.value = value, p.bar = bar;
        write_precondition(w, p);
        if (met_recorded >= 0) w.set_attr("precondition_met", met_recorded);
    }
    w.commit();
    return dir;
}

}  // namespace

TEST_CASE("preconditions: a run below its bar is left out of its setting's claims and listed with its reason", "[claims]") {
    Scratch scratch;
    // seed 1 did not learn the task (0.4 < 0.9); seed 3 records no precondition and pools as a run that met it
    const std::vector<fs::path> dirs = {write_run(scratch.path, 0, 0.10, 0.95, 0.9), write_run(scratch.path, 1, -5.0, 0.4, 0.9),
                                        write_run(scratch.path, 2, 0.12, 0.99, 0.9), write_run(scratch.path, 3, 0.11, 0.0, -1)};
    const auto pooled = iclab::run::pool_run_claims(dirs);
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].runs == std::vector<fs::path>{dirs[0], dirs[2], dirs[3]});
    REQUIRE(pooled[0].excluded.size() == 1);
    CHECK(pooled[0].excluded[0].seed == 1);
    CHECK(pooled[0].excluded[0].dir == dirs[1]);
    CHECK(pooled[0].excluded[0].reason == "accuracy 0.4 < 0.9 (x.precondition.min_accuracy)");
    REQUIRE(pooled[0].claims.size() == 2);
    for (const ClaimResult& r : pooled[0].claims) {
        CHECK(r.units == std::vector<std::int64_t>{0, 2, 3});
        CHECK(r.verdict == Verdict::reproduced);  // seed 1's G of -5 would have made both inconclusive or worse
        CHECK(r.excluded == "seed 1: accuracy 0.4 < 0.9 (x.precondition.min_accuracy)");
        CHECK(r.note.empty());
    }
    const auto table = iclab::run::claims_table(pooled);
    CHECK(std::get<std::string>(table.cell(0, "excluded")) == pooled[0].claims[0].excluded);
    // without any precondition recorded, nothing is excluded and the column is empty
    const auto plain = iclab::run::claims_table(iclab::run::pool_run_claims({dirs[3]}));
    CHECK(std::get<std::string>(plain.cell(0, "excluded")).empty());
}

TEST_CASE("preconditions: fewer seeds left than the rule needs is inconclusive, n of m seeds learned the task", "[claims]") {
    Scratch scratch;
    const std::vector<fs::path> dirs = {write_run(scratch.path, 0, 0.10, 0.95, 0.9), write_run(scratch.path, 1, 0.10, 0.5, 0.9),
                                        write_run(scratch.path, 2, 0.12, 0.6, 0.9)};
    const auto pooled = iclab::run::pool_run_claims(dirs);
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].excluded.size() == 2);
    REQUIRE(pooled[0].claims.size() == 2);
    // an interval needs 2 values, "2/3 of the values" at least 2: one seed left decides neither
    for (const ClaimResult& r : pooled[0].claims) {
        CHECK(r.verdict == Verdict::inconclusive);
        CHECK(r.values.size() == 1);
        CHECK(r.note == "1 of 3 seeds learned the task (1 value left, the rule needs 2)");
        CHECK(r.excluded == "seed 1: accuracy 0.5 < 0.9 (x.precondition.min_accuracy); seed 2: accuracy 0.6 < 0.9 (x.precondition.min_accuracy)");
    }
}

TEST_CASE("preconditions: a recorded met that contradicts value and bar is refused", "[claims]") {
    Scratch scratch;
    const fs::path dir = write_run(scratch.path, 0, 0.1, 0.4, 0.9, 1);
    CHECK_THROWS_AS(read_precondition(ResultsReader(dir / "results.h5")), iclab::InputError);
    CHECK_THROWS_AS(iclab::run::pool_run_claims({dir}), iclab::InputError);
    CHECK(read_precondition(ResultsReader(write_run(scratch.path / "ok", 0, 0.1, 0.4, 0.9, 0) / "results.h5"))->met() == false);
}

}  // namespace iclab_test_claims_precondition
