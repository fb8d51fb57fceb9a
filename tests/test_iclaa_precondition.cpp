// The run-level precondition "the model learned the task" (issue 46, framework/io/precondition.hpp) through experiment
// iclaa: iclaa.precondition.min_icl_accuracy declares the bar, the run measures the ICL accuracy of the model with the
// prompt on its validation pairs and records value, bar and met (root attributes, and a log line) when a bar > 0 is
// declared (bar 0: nothing recorded, the bits of before); declaring a bar
// changes no other result; `iclab claims` leaves the runs that did not meet it out of their setting's claims and lists
// each with value and bar; bad values of the key are refused with exit 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "framework/io/claims.hpp"
#include "framework/io/precondition.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_iclaa_precondition {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab;
using namespace iclab_test;

namespace {

// A barely trained model (its ICL accuracy is low and differs between seeds), 40 validation pairs to measure it on.
const std::string kTiny =
    "train.steps=20 train.warmup_steps=5 eval.every=20 eval.sequences=16 iclaa.pairs=10 iclaa.validation_pairs=40 "
    "iclaa.batch_size=20 'iclaa.feature_maps=[learned]' 'iclaa.learned.features=[16,32]' iclaa.learned.steps=5 "
    "iclaa.learned.fit_seeds=1 iclaa.hybrid=false 'iclaa.keep_tokens=[4]' iclaa.bootstrap=0";

fs::path run_tiny(const fs::path& scratch, int seed, const std::string& bar, const std::string& name) {
    const auto result = run_iclab("run configs/quick/iclaa.yaml " + kTiny + " seed=" + std::to_string(seed) +
                                      " iclaa.precondition.min_icl_accuracy=" + bar + " output.name=" + name + " output.dir=" +
                                      scratch.string() + " --quiet",
                                  scratch);
    INFO(result.err);
    REQUIRE(result.status == 0);
    return last_line(result.out);
}

io::Precondition precondition_of(const fs::path& dir) {
    const auto p = io::read_precondition(io::ResultsReader(dir / "results.h5"));
    REQUIRE(p.has_value());
    return *p;
}

}  // namespace

TEST_CASE("iclaa precondition: recorded with a declared bar, nothing recorded at bar 0, and changes nothing else", "[iclaa][cli]") {
    Scratch scratch;
    const fs::path none = run_tiny(scratch.path, 0, "0", "bar0"), all = run_tiny(scratch.path, 0, "1", "bar1");
    // bar 0 declares nothing: the run writes what it wrote before the precondition existed (its bits unchanged)
    {
        io::ResultsReader reader(none / "results.h5");
        CHECK_FALSE(io::read_precondition(reader).has_value());
        CHECK_FALSE(reader.has_attr("/", "precondition_met"));
    }
    const io::Precondition unmet = precondition_of(all);
    CHECK(unmet.key == "iclaa.precondition.min_icl_accuracy");
    CHECK(unmet.measure == "ICL accuracy of the model with the prompt on 40 validation pairs");
    REQUIRE((unmet.value >= 0.0 && unmet.value < 1.0));  // a 20-step model: far from perfect, so bar 1 cannot be met
    CHECK(unmet.bar == 1.0);
    // a bar just at the value is met, by the same measure of the same model
    char at[32];
    std::snprintf(at, sizeof at, "%.17g", unmet.value);
    const fs::path at_value = run_tiny(scratch.path, 0, unmet.value > 0.0 ? at : "1e-300", "bar_at");
    const io::Precondition met = precondition_of(at_value);
    CHECK(met.value == unmet.value);  // the same model measured the same way
    CHECK(met.met() == (unmet.value > 0.0));
    CHECK_FALSE(unmet.met());
    io::ResultsReader with(all / "results.h5"), without(none / "results.h5");
    CHECK(with.read_attr_int64("/", "precondition_met") == 0);
    CHECK(io::ResultsReader(at_value / "results.h5").read_attr_int64("/", "precondition_met") == (unmet.value > 0.0 ? 1 : 0));
    // the bar decides nothing in the run: every table is the same
    for (const std::string column : {"/tables/iclaa/rel_error_mean", "/tables/iclaa/icl_accuracy", "/tables/learned_selection/validation_rel_error_mean"})
        CHECK(with.read_column_double(column) == without.read_column_double(column));
    // the log line
    CHECK_THAT(read_file(all / "log.txt"), Catch::Contains("precondition NOT met: " + io::precondition_text(unmet)));
    CHECK_THAT(read_file(at_value / "log.txt"), Catch::Contains(std::string(met.met() ? "precondition met: " : "precondition NOT met: ") + io::precondition_text(met)));
    CHECK_THAT(read_file(none / "log.txt"), !Catch::Contains("precondition"));
    CHECK_THAT(io::precondition_text(unmet), Catch::Contains(" < 1 (iclaa.precondition.min_icl_accuracy)"));
    // alone, the run that did not learn the task leaves its claims inconclusive, none of them "not run"
    const auto pooled = run::pool_run_claims({all});
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].runs.empty());
    REQUIRE(pooled[0].excluded.size() == 1);
    REQUIRE(pooled[0].claims.size() == 2);
    for (const io::ClaimResult& r : pooled[0].claims) {
        CHECK(r.verdict == io::Verdict::inconclusive);
        CHECK(r.values.empty());
        CHECK_THAT(r.note, Catch::StartsWith("0 of 1 seeds learned the task"));
    }
}

TEST_CASE("iclaa precondition: iclab claims leaves out exactly the seed below the bar and lists it with the reason", "[iclaa][cli]") {
    Scratch scratch;
    // three seeds at bar 1 give each seed's value (bar 0 records none); the bar then goes between the lowest and the
    // next; the same seeds without a precondition are the reference pooling
    std::vector<fs::path> free;
    std::vector<double> value;
    for (int seed = 0; seed < 3; ++seed) {
        value.push_back(precondition_of(run_tiny(scratch.path, seed, "1", "probe" + std::to_string(seed))).value);
        free.push_back(run_tiny(scratch.path, seed, "0", "free" + std::to_string(seed)));
    }
    std::vector<double> sorted = value;
    std::sort(sorted.begin(), sorted.end());
    INFO("the seeds' ICL accuracies " << value[0] << ", " << value[1] << ", " << value[2] << " must have one lowest");
    REQUIRE(sorted[0] < sorted[1]);
    const int low = static_cast<int>(std::min_element(value.begin(), value.end()) - value.begin());
    char bar[32];
    std::snprintf(bar, sizeof bar, "%.17g", (sorted[0] + sorted[1]) / 2);
    std::vector<fs::path> dirs;
    for (int seed = 0; seed < 3; ++seed) dirs.push_back(run_tiny(scratch.path, seed, bar, "bar" + std::to_string(seed)));
    for (int seed = 0; seed < 3; ++seed) CHECK(precondition_of(dirs[seed]).met() == (seed != low));

    const auto pooled = run::pool_run_claims(dirs);
    REQUIRE(pooled.size() == 1);
    REQUIRE(pooled[0].excluded.size() == 1);
    CHECK(pooled[0].excluded[0].seed == low);
    CHECK(pooled[0].excluded[0].dir == dirs[low]);
    CHECK(pooled[0].excluded[0].reason == io::precondition_text(precondition_of(dirs[low])));
    CHECK(pooled[0].runs.size() == 2);
    // the claims of the two seeds left equal those of the two seeds' runs without a bar, pooled alone
    std::vector<fs::path> kept;
    for (int seed = 0; seed < 3; ++seed)
        if (seed != low) kept.push_back(free[seed]);
    const auto alone = run::pool_run_claims(kept);
    REQUIRE(alone.size() == 1);
    REQUIRE(pooled[0].claims.size() == alone[0].claims.size());
    const std::string listed = "seed " + std::to_string(low) + ": " + pooled[0].excluded[0].reason;
    for (std::size_t i = 0; i < alone[0].claims.size(); ++i) {
        const io::ClaimResult &r = pooled[0].claims[i], &a = alone[0].claims[i];
        CHECK(r.claim.id == a.claim.id);
        CHECK(r.units == a.units);
        CHECK(r.values == a.values);
        CHECK(r.verdict == a.verdict);
        CHECK(r.excluded == listed);
        CHECK(std::find(r.units.begin(), r.units.end(), low) == r.units.end());
    }
    // the command: the setting's line counts it, a line names the seed and its reason, the CSV's column `excluded`
    const fs::path csv = scratch.path / "claims.csv";
    const auto claims = run_iclab("claims " + dirs[0].string() + " " + dirs[1].string() + " " + dirs[2].string() + " --out " + csv.string(),
                                  scratch.path);
    INFO(claims.err);
    REQUIRE(claims.status == 0);
    CHECK_THAT(claims.out, Catch::Contains("(iclaa, 2 runs, 1 excluded)"));
    CHECK_THAT(claims.out, Catch::Contains("excluded        seed " + std::to_string(low) + " (" + dirs[low].string() + "): " +
                                           pooled[0].excluded[0].reason));
    const std::string table = read_file(csv);
    CHECK_THAT(table, Catch::Contains(",excluded") && Catch::Contains(listed));
}

TEST_CASE("iclaa precondition: bad values of iclaa.precondition.min_icl_accuracy exit 2 naming it", "[iclaa][cli]") {
    Scratch scratch;
    const std::string out = " output.dir=" + scratch.path.string() + " --quiet";
    for (const std::string bad : {"-0.1", "1.01", "abc", "nan"}) {
        const auto result = run_iclab("run configs/quick/iclaa.yaml iclaa.precondition.min_icl_accuracy=" + bad + out, scratch.path);
        INFO(bad << ": " << result.err);
        CHECK(result.status == 2);
        CHECK_THAT(result.err, Catch::Contains("iclaa.precondition.min_icl_accuracy"));
    }
    // it is measured on the validation pairs: a bar without them is refused
    const auto no_pairs = run_iclab("run configs/quick/iclaa.yaml 'iclaa.feature_maps=[prf]' iclaa.validation_pairs=0 "
                                    "iclaa.precondition.min_icl_accuracy=0.9" + out,
                                    scratch.path);
    CHECK(no_pairs.status == 2);
    CHECK_THAT(no_pairs.err, Catch::Contains("iclaa.precondition.min_icl_accuracy") && Catch::Contains("iclaa.validation_pairs"));
    CHECK(count_entries(scratch.path) <= 2);  // stdout.txt and stderr.txt only
}

}  // namespace iclab_test_iclaa_precondition
