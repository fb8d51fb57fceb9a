// What the reproduction report reads from `iclab claims --out` (framework/workflow/claims_pool.hpp claims_table): a claim
// with no value at all is "not run", not "inconclusive"; a paired claim whose other arm never ran is not run; the
// table carries the rule's test and the per-seed values (3 significant digits), none for a claim over instances.
#include <catch2/catch.hpp>
#include <string>
#include <variant>
#include <vector>

#include "framework/io/claims.hpp"
#include "framework/workflow/claims_pool.hpp"

namespace iclab_test_claims_table {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab::io;

namespace {

Claim sign_claim() {
    Claim c;
    c.id = "sign";
    c.paper = "003";
    c.source = "Table 1";
    c.kind = ClaimKind::qualitative;
    c.statement = "causal worse than prefix";
    c.metric = "ln(causal / prefix) of the test MSE";
    c.rule = ClaimRule::count_above(0.0, {2, 3});
    return c;
}

std::string text_of(const iclab::run::WideTable& t, std::size_t row, const std::string& column) {
    return std::get<std::string>(t.cell(row, column));
}

}  // namespace

TEST_CASE("claims: no value at all is not run, fewer than needed is inconclusive", "[claims]") {
    const ClaimResult none = evaluate_claim(sign_claim(), {}, {});
    CHECK(none.verdict == Verdict::not_run);
    CHECK(std::string(verdict_name(none.verdict)) == "not run");
    CHECK(evaluate_claim(sign_claim(), {0}, {1.0}).verdict == Verdict::inconclusive);  // one seed of a 2-of-n rule
    // a paired claim whose causal arm ran for no seed: every prefix value is left out, nothing is measured
    Claim arm = sign_claim();
    arm.pair.key = "model.mask", arm.pair.first = "prefix", arm.pair.second = "causal", arm.pair.arm = "prefix";
    arm.pair.combine = ClaimPair::Combine::log_ratio;
    const auto pooled = pool_claims({{"p0", {evaluate_claim(arm, {0}, {0.5})}}, {"p1", {evaluate_claim(arm, {1}, {0.7})}}});
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].values.empty());
    CHECK(pooled[0].verdict == Verdict::not_run);
    CHECK_THAT(pooled[0].note, Catch::Contains("left out: seed 0 (prefix), 1 (prefix)"));
    // one arm alone with no value is not run either (not "one arm of a paired claim")
    CHECK(evaluate_claim(arm, {}, {}).verdict == Verdict::not_run);
}

TEST_CASE("claims: the claims table lists the rule's test and the per-seed values", "[claims]") {
    iclab::run::PooledClaims p;
    p.setting = "configs/quick/x.yaml", p.experiment = "x";
    // 2 of 3 seeds on the claimed side, the mean negative (the case a reader must be able to check)
    p.claims.push_back(evaluate_claim(sign_claim(), {0, 1, 2}, {0.41234, 1.2, -2.4}));
    Claim instances = sign_claim();
    instances.id = "exact", instances.unit = "instance", instances.rule = ClaimRule::count_at_most(1e-5);
    instances.pooling = iclab::io::ClaimPooling::instances;
    p.claims.push_back(evaluate_claim(instances, {0, 1, 2}, {1e-7, 2e-7, 3e-7}));
    p.claims.push_back(evaluate_claim(sign_claim(), {}, {}));
    const auto t = iclab::run::claims_table({p});
    REQUIRE(t.rows() == 3);
    CHECK(text_of(t, 0, "values") == "0.412, 1.2, -2.4");
    CHECK(text_of(t, 0, "units") == "0,1,2");
    CHECK(text_of(t, 0, "test") == "count_above");
    CHECK(std::get<double>(t.cell(0, "on_claimed_side")) == 2.0);
    CHECK(std::get<double>(t.cell(0, "n")) == 3.0);
    // ... is reproduced by the count (2 of 3 above 0) against the mean (-0.26), whose interval reaches above 0, and the
    // note says so
    CHECK(text_of(t, 0, "verdict") == "reproduced");
    CHECK_THAT(text_of(t, 0, "note"), Catch::Contains("2 of 3 values on the claimed side") && Catch::Contains("the count decides"));
    CHECK(text_of(t, 0, "rule") == "x > 0 in >= 2/3 of the values, at least 2 (here 2 of 3)");
    CHECK(text_of(t, 1, "values").empty());  // over instances: the count only
    CHECK(text_of(t, 1, "units") == "3 instances");
    CHECK(text_of(t, 1, "test") == "count_at_most");
    CHECK(text_of(t, 2, "verdict") == "not run");
    CHECK(text_of(t, 2, "values").empty());
}

TEST_CASE("claims: the claims table's values digest is equal only for bit-equal values, distinct_values counts ties", "[claims]") {
    iclab::run::PooledClaims p;
    p.setting = "configs/quick/x.yaml", p.experiment = "x";
    p.claims.push_back(evaluate_claim(sign_claim(), {0, 1, 2}, {1.95366, 0.5, 0.25}));
    p.claims.push_back(evaluate_claim(sign_claim(), {0, 1, 2}, {1.95251, 0.5, 0.25}));  // equal at 3 digits ("1.95"), not in bits
    p.claims.push_back(evaluate_claim(sign_claim(), {0, 1, 2}, {1.95366, 0.5, 0.25}));  // equal in bits
    p.claims.push_back(evaluate_claim(sign_claim(), {1, 2, 3}, {1.95366, 0.5, 0.25}));  // other seeds
    p.claims.push_back(evaluate_claim(sign_claim(), {0, 1, 2}, {0.0, 0.0, 1.0}));
    const auto t = iclab::run::claims_table({p});
    REQUIRE(t.rows() == 5);
    CHECK(text_of(t, 0, "values") == text_of(t, 1, "values"));
    CHECK(text_of(t, 0, "values_digest").size() == 16);
    CHECK(text_of(t, 0, "values_digest") != text_of(t, 1, "values_digest"));
    CHECK(text_of(t, 0, "values_digest") == text_of(t, 2, "values_digest"));
    CHECK(text_of(t, 0, "values_digest") != text_of(t, 3, "values_digest"));
    CHECK(std::get<double>(t.cell(0, "distinct_values")) == 3.0);
    CHECK(std::get<double>(t.cell(4, "distinct_values")) == 2.0);  // a tie
}

}  // namespace iclab_test_claims_table
