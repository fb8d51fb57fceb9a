// Provenance of a claim's rule (issue 45, framework/io/claims.hpp Claim::provenance): empty when the rule and its bars
// were declared before the runs, else "chosen after the first runs (date): reason". It survives the /claims round
// trip, files written before it read back empty, the runs pooled into one claim must agree on it, and the claims
// table carries it as its last column. The declarations changed with it judge a NaN as inconclusive, never reproduced.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/icl/iclaa_claims.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/workflow/claims_pool.hpp"

namespace iclab_test_claims_provenance {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab::io;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Claim declared(const std::string& provenance) {
    Claim c;
    c.id = "003-F6 LR SL-L2 prefix: test error falls with the pool";
    c.paper = "003";
    c.source = "Figure 6";
    c.kind = ClaimKind::qualitative;
    c.statement = "errors fall with the pool";
    c.metric = "Kendall p-value";
    c.rule = ClaimRule::count_at_most(0.05, {2, 3});
    c.provenance = provenance;
    return c;
}

fs::path scratch_file(const std::string& stem) {
    std::random_device random;
    return fs::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + "_" + std::to_string(random()) + ".h5");
}

}  // namespace

TEST_CASE("claims: provenance round-trips through /claims, pooling and the claims table", "[claims]") {
    const std::string after = "chosen after the first runs (2026-11-26): the rank rule, after it failed 4 of 6 curves";
    const std::vector<ClaimResult> run0{evaluate_claim(declared(after), {0}, {0.01}), evaluate_claim(declared(""), {0}, {0.01})};
    std::vector<ClaimResult> fixed = run0;
    fixed[1].claim.id = "declared before";
    const fs::path file = scratch_file("iclab_test_provenance");
    {
        ResultsWriter w(file);
        write_claims(w, fixed);
        w.commit();
    }
    const auto back = read_claims(ResultsReader(file));
    fs::remove(file);
    REQUIRE(back.size() == 2);
    CHECK(back[0].claim.provenance == after);
    CHECK(back[1].claim.provenance.empty());
    // pooled with a second seed's run: kept; a run that declares the same id with another provenance is refused
    const std::vector<ClaimResult> run1{evaluate_claim(declared(after), {1}, {0.02})};
    const auto pooled = pool_claims({{"seed0", {back[0]}}, {"seed1", run1}});
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].claim.provenance == after);
    CHECK(pooled[0].values.size() == 2);
    const std::vector<ClaimResult> before{evaluate_claim(declared(""), {1}, {0.02})};
    CHECK_THROWS_WITH(pool_claims({{"seed0", {back[0]}}, {"seed1", before}}), Catch::Contains("declared differently"));
    // the claims table: provenance is its last column
    iclab::run::PooledClaims p;
    p.setting = "configs/quick/x.yaml", p.experiment = "x", p.claims = pooled;
    const auto table = iclab::run::claims_table({p});
    REQUIRE(table.rows() == 1);
    CHECK(table.columns().back() == "provenance");
    CHECK(std::get<std::string>(table.cell(0, "provenance")) == after);
}

TEST_CASE("claims: a file without the provenance column reads back empty provenance", "[claims]") {
    const fs::path with = scratch_file("iclab_test_with_provenance"), without = scratch_file("iclab_test_no_provenance");
    {
        ResultsWriter w(with);
        write_claims(w, {evaluate_claim(declared("chosen after the first runs (2026-11-29): x"), {0}, {0.01})});
        w.commit();
    }
    {  // the same /claims without the column, as files before issue 45 were written
        ResultsReader r(with);
        std::vector<Column> claims, values;
        for (const std::string& name : r.list("/claims"))
            if (name != "provenance") claims.push_back(r.read_column("/claims/" + name));
        for (const std::string& name : r.list("/claim_values")) values.push_back(r.read_column("/claim_values/" + name));
        ResultsWriter w(without);
        w.write_columns("/claims", claims);
        w.write_columns("/claim_values", values);
        w.commit();
    }
    const auto back = read_claims(ResultsReader(without));
    fs::remove(with);
    fs::remove(without);
    REQUIRE(back.size() == 1);
    CHECK(back[0].claim.provenance.empty());
    CHECK(back[0].claim.id == declared("").id);
}

TEST_CASE("claims: a NaN in a value of the iclaa_lm G claims or a provenance-marked rule is never reproduced", "[claims]") {
    // G claims pooled by seed means (issue 45): a NaN window makes the run's claim inconclusive
    for (const Claim& c : iclab::icl::gap_closed_claims("iclaa_lm", "prf", 256, "held-out window", "experiments/iclaa_lm/README.md",
                                                       ClaimPooling::seed_means)) {
        INFO(c.id);
        CHECK(c.pooling == ClaimPooling::seed_means);
        CHECK_THAT(c.statement, Catch::Contains("judged over the trained models"));
        CHECK(evaluate_claim(c, {0, 1, 2}, {0.6, kNaN, 0.7}).verdict == Verdict::inconclusive);
    }
    const ClaimResult r = evaluate_claim(declared("chosen after the first runs (2026-11-26): x"), {0, 1, 2}, {0.01, kNaN, 0.02});
    CHECK(r.verdict == Verdict::inconclusive);
}

}  // namespace iclab_test_claims_provenance
