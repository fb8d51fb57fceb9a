// Rules a coin cannot pass (issue 45, framework/io/claims.hpp): a count rule is a share of the values ("2/3 of the
// seeds" is 2 of 3 and 4 of 5, never "any 2" of 5 and never decided by one seed), its text shows the share and the
// count, the share survives the /claims round trip; a count verdict on the other side of its own mean is
// inconclusive with both numbers in its note, except a failed rule for every value.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"

namespace iclab_test_claims_shares {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab::io;

namespace {

Claim declared(ClaimRule rule) {
    Claim c;
    c.id = "share claim";
    c.paper = "003";
    c.source = "Table 3";
    c.kind = ClaimKind::qualitative;
    c.statement = "prefix < causal";
    c.metric = "ln(causal / prefix)";
    c.rule = rule;
    return c;
}

ClaimResult evaluated(ClaimRule rule, std::vector<double> values) {
    std::vector<std::int64_t> seeds;
    for (std::size_t i = 0; i < values.size(); ++i) seeds.push_back(static_cast<std::int64_t>(i));
    return evaluate_claim(declared(rule), seeds, values);
}

}  // namespace

TEST_CASE("claims shares: 2/3 of the seeds is 2 of 2 and 3, 4 of 5, 7 of 10, and never one seed", "[claims]") {
    const ClaimRule rule = ClaimRule::count_above(0.0, {2, 3});
    CHECK(rule.needed_of(1) == 2);
    CHECK(rule.needed_of(2) == 2);
    CHECK(rule.needed_of(3) == 2);
    CHECK(rule.needed_of(4) == 3);
    CHECK(rule.needed_of(5) == 4);
    CHECK(rule.needed_of(10) == 7);
    CHECK(ClaimRule::count_above(0.0).needed_of(5) == 5);  // every value
    // an absolute "2" would reproduce with 2 of 5 seeds: the share does not
    CHECK(evaluated(rule, {1, 2, -1, -1, -1}).verdict == Verdict::not_reproduced);
    CHECK(evaluated(rule, {1, 2, 3, -1, 1}).verdict == Verdict::reproduced);  // 4 of 5
    CHECK(evaluated(rule, {1, 2, 3, -1, -1}).verdict == Verdict::inconclusive);  // 3 of 5 with a positive mean: see below
    const ClaimResult one = evaluated(rule, {1});
    CHECK(one.verdict == Verdict::inconclusive);
    CHECK(one.note == "1 values, the rule needs 2");
    // the text shows the share and, given n, the count
    CHECK(rule.text() == "x > 0 in >= 2/3 of the values, at least 2");
    CHECK(rule.text(5) == "x > 0 in >= 2/3 of the values, at least 2 (here 4 of 5)");
    CHECK(ClaimRule::count_at_most(1.0).text(5) == "x <= 1 for every value");
    CHECK(ClaimRule::count_within(0.0, 1.0, {3, 3}).text() == "0 <= x <= 1 for every value");  // 3 of 3 is every value
    // Fraction::of for a configured share (gd004_fig5's verdict_fraction)
    CHECK(Fraction::of(0.8).needed == 4);
    CHECK(Fraction::of(0.8).out_of == 5);
    CHECK(Fraction::of(2.0 / 3.0).needed == 2);
    CHECK(Fraction::of(2.0 / 3.0).out_of == 3);
    CHECK(Fraction::of(1.0).needed == 0);
    CHECK_THROWS_AS(Fraction::of(0.0), iclab::Error);
    CHECK_THROWS_AS(Fraction::of(1.5), iclab::Error);
    CHECK_THROWS_AS(Fraction::of(0.123456789), iclab::Error);
    // a share that is no share is refused
    CHECK_THROWS_AS(ClaimRule::count_above(0.0, {3, 2}), iclab::Error);
    CHECK_THROWS_AS(ClaimRule::count_above(0.0, {2, 0}), iclab::Error);
}

TEST_CASE("claims shares: a count verdict against its own mean is inconclusive, with both numbers", "[claims]") {
    const ClaimRule rule = ClaimRule::count_above(0.0, {2, 3});
    // the quick page's case: 2 of 3 seeds above 0, the mean below it
    const ClaimResult against = evaluated(rule, {0.412, 1.2, -2.4});
    CHECK(against.on_side == 2);
    CHECK(against.interval.mean < 0.0);
    CHECK(against.verdict == Verdict::inconclusive);
    CHECK(against.note == "2 of 3 values on the claimed side (2 needed), but their mean -0.2627 is not: the count and the mean disagree");
    // and the mirror: 1 of 3 above 0, the mean above it
    const ClaimResult mirror = evaluated(rule, {-0.1, -0.2, 5.0});
    CHECK(mirror.verdict == Verdict::inconclusive);
    CHECK_THAT(mirror.note, Catch::Contains("1 of 3 values on the claimed side (2 needed), but their mean 1.567 is:"));
    // count and mean agree: decided as counted
    CHECK(evaluated(rule, {0.4, 1.2, -0.5}).verdict == Verdict::reproduced);
    CHECK(evaluated(rule, {-0.4, -1.2, 0.5}).verdict == Verdict::not_reproduced);
    // a band: 2 of 3 inside [0, 1] but the mean outside it
    CHECK(evaluated(ClaimRule::count_within(0.0, 1.0, {2, 3}), {0.5, 0.9, 5.0}).verdict == Verdict::inconclusive);
    // a rule for every value fails on one value beyond it, whatever the mean, and says so
    const ClaimResult every = evaluated(ClaimRule::count_at_most(1.0), {0.1, 0.2, 1.5});
    CHECK(every.verdict == Verdict::not_reproduced);
    CHECK(every.note == "2 of 3 values on the claimed side (3 needed): the rule needs every value; their mean 0.6 is on the claimed side");
    // every value on the side puts the mean there too: no disagreement possible
    CHECK(evaluated(ClaimRule::count_at_most(1.0), {0.1, 0.2, 1.0}).verdict == Verdict::reproduced);
    // interval rules decide by the interval around the mean: never against it
    CHECK(evaluated(ClaimRule::interval_above(0.0), {0.412, 1.2, -2.4}).verdict == Verdict::inconclusive);
}

TEST_CASE("claims shares: values at the rule's edge are not judged against a mean that rounding moved off it", "[claims]") {
    // 0.1 three times: the rounded mean (0.1 + 0.1 + 0.1) / 3 = 0.10000000000000002 lies above the bar 0.1
    const std::vector<double> edge{0.1, 0.1, 0.1};
    REQUIRE((edge[0] + edge[1] + edge[2]) / 3.0 > 0.1);
    // all three on the side of "x <= 0.1 in 2/3": the mean of values on a convex side is on it
    const ClaimResult on = evaluated(ClaimRule::count_at_most(0.1, {2, 3}), edge);
    CHECK(on.on_side == 3);
    CHECK(on.verdict == Verdict::reproduced);
    CHECK(on.note.empty());
    // all three off "x > 0.1 in 2/3" (a half-line): the mean is off it, whatever rounding says
    const ClaimResult off = evaluated(ClaimRule::count_above(0.1, {2, 3}), edge);
    CHECK(off.on_side == 0);
    CHECK(off.verdict == Verdict::not_reproduced);
    // off a band, values may lie on both sides of it and their mean inside: still judged by the mean
    CHECK(evaluated(ClaimRule::count_within(0.0, 1.0, {2, 3}), {-5.0, 1.5, 2.0}).verdict == Verdict::not_reproduced);
    CHECK(evaluated(ClaimRule::count_within(0.0, 1.0, {2, 3}), {-5.0, 1.5, 4.0}).verdict == Verdict::inconclusive);
}

TEST_CASE("claims shares: the share survives the /claims round trip and pooling applies it to all seeds", "[claims]") {
    std::random_device random;
    const fs::path dir = fs::temp_directory_path() / ("iclab_test_shares_" + std::to_string(::getpid()) + "_" + std::to_string(random()));
    fs::create_directories(dir);
    const Claim c = declared(ClaimRule::count_above(0.0, {2, 3}));
    std::vector<std::pair<std::string, std::vector<ClaimResult>>> runs;
    const double values[5] = {1.0, 2.0, -1.0, 0.5, -0.1};  // 3 of 5 above 0: enough for "any 2", not for 2/3 (4 of 5)
    for (int seed = 0; seed < 5; ++seed) {
        const fs::path file = dir / ("seed" + std::to_string(seed) + ".h5");
        {
            ResultsWriter w(file);
            write_claims(w, {evaluate_claim(c, {seed}, {values[seed]})});
            w.commit();
        }
        const ResultsReader reader(file);
        CHECK(reader.read_column_string("/claims/rule")[0] == "x > 0 in >= 2/3 of the values, at least 2");
        runs.push_back({file.string(), read_claims(reader)});
        CHECK(runs.back().second[0].claim.rule.needed == 2);
        CHECK(runs.back().second[0].claim.rule.out_of == 3);
        CHECK(runs.back().second[0].verdict == Verdict::inconclusive);  // one seed
    }
    const auto pooled = pool_claims(runs);
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].on_side == 3);
    CHECK(pooled[0].claim.rule.needed_of(5) == 4);
    CHECK(pooled[0].verdict == Verdict::inconclusive);  // 3 of 5 (4 needed) with a positive mean
    CHECK_THAT(pooled[0].note, Catch::Contains("3 of 5 values on the claimed side (4 needed)"));
    fs::remove_all(dir);
}

}  // namespace iclab_test_claims_shares
