// Rules a coin cannot pass (issue 45, framework/io/claims.hpp): a count rule is a share of the values ("2/3 of the
// seeds" is 2 of 3 and 4 of 5, never "any 2" of 5 and never decided by one seed), its text shows the share and the
// count, the share survives the /claims round trip; a count verdict on the other side of its own mean carries its
// reason in the note, and is inconclusive when the mean's whole interval is on the mean's side (except a failed rule
// for every value). The floor of `iclab claims`
// (framework/io/claims_floor.hpp): a deterministic check decides on one value, every other claim on 5.
#include <unistd.h>

#include <hdf5.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/claims_floor.hpp"
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
    // 3 of 5 (4 needed) with a positive mean whose interval reaches below 0: the count decides (see below)
    CHECK(evaluated(rule, {1, 2, 3, -1, -1}).verdict == Verdict::not_reproduced);
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

TEST_CASE("claims shares: a count verdict against its own mean carries its reason, inconclusive only when the mean's interval is firm", "[claims]") {
    const ClaimRule rule = ClaimRule::count_above(0.0, {2, 3});
    // the quick page's case: 2 of 3 seeds above 0, the mean below it, its interval reaching above 0: the count decides
    const ClaimResult against = evaluated(rule, {0.412, 1.2, -2.4});
    CHECK(against.on_side == 2);
    CHECK(against.interval.mean < 0.0);
    CHECK(against.interval.high > 0.0);
    CHECK(against.verdict == Verdict::reproduced);
    CHECK_THAT(against.note, Catch::StartsWith("2 of 3 values on the claimed side (2 needed): the count decides; their mean -0.2627 is "
                                               "not on the claimed side, but its 95 % interval [") &&
                                 Catch::EndsWith("] reaches into it"));
    // and the mirror: 1 of 3 above 0, the mean above it, its interval reaching below 0
    const ClaimResult mirror = evaluated(rule, {-0.1, -0.2, 5.0});
    CHECK(mirror.verdict == Verdict::not_reproduced);
    CHECK_THAT(mirror.note, Catch::Contains("1 of 3 values on the claimed side (2 needed): the count decides; their mean 1.567 is on the "
                                            "claimed side, but its 95 % interval [") && Catch::EndsWith("] reaches out of it"));
    // the second audit's 000-F1 'faster': 1 of 5 seeds above 0 (4 needed), the mean 0.00784 above 0 with its interval
    // [-0.0139, 0.0296] straddling: not reproduced (it read inconclusive, while the same pattern with a rule for every
    // value read not reproduced)
    const ClaimResult faster = evaluated(ClaimRule::count_above(0.0, {4, 5}), {0.0392, 0, 0, 0, 0});
    CHECK(faster.interval.mean > 0.0);
    CHECK(faster.interval.low < 0.0);
    CHECK(faster.verdict == Verdict::not_reproduced);
    CHECK_THAT(faster.note, Catch::Contains("the count decides"));
    // the mean's whole interval on the claimed side while the count fails: the mean is evidence against the count
    const ClaimResult firm = evaluated(ClaimRule::count_above(0.0, {4, 5}), {-0.01, -0.01, -0.01, -0.01, -0.01, 10.0, 10.0, 10.0, 10.0, 10.0});
    CHECK(firm.on_side == 5);
    CHECK(firm.interval.low > 0.0);
    CHECK(firm.verdict == Verdict::inconclusive);
    CHECK_THAT(firm.note, Catch::StartsWith("5 of 10 values on the claimed side (8 needed), but their mean 4.995 is, with its whole 95 % interval [") &&
                              Catch::EndsWith("]: the count and the mean disagree"));
    // and wholly off it while the count passes
    const ClaimResult firm_off = evaluated(ClaimRule::count_above(0.0, {1, 3}), {0.01, 0.01, 0.01, 0.01, -10.0, -10.0, -10.0, -10.0, -10.0});
    CHECK(firm_off.on_side == 4);
    CHECK(firm_off.interval.high < 0.0);
    CHECK(firm_off.verdict == Verdict::inconclusive);
    // count and mean agree: decided as counted, no note
    CHECK(evaluated(rule, {0.4, 1.2, -0.5}).verdict == Verdict::reproduced);
    CHECK(evaluated(rule, {0.4, 1.2, -0.5}).note.empty());
    CHECK(evaluated(rule, {-0.4, -1.2, 0.5}).verdict == Verdict::not_reproduced);
    // a band: 2 of 3 inside [0, 1], the mean outside it with its interval reaching in: the count decides
    const ClaimResult band = evaluated(ClaimRule::count_within(0.0, 1.0, {2, 3}), {0.5, 0.9, 5.0});
    CHECK(band.verdict == Verdict::reproduced);
    CHECK_THAT(band.note, Catch::Contains("the count decides"));
    // a band whose mean's interval lies wholly beyond its upper edge: off the band, inconclusive
    const ClaimResult beyond = evaluated(ClaimRule::count_within(0.0, 1.0, {1, 3}),
                                         {0.5, 0.5, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0});
    CHECK(beyond.on_side == 2);
    CHECK(beyond.interval.low > 1.0);
    CHECK(beyond.verdict == Verdict::not_reproduced);  // 2 of 18 inside, 6 needed: count and mean agree (off)
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
    // and inside it, with an interval reaching out of it: the count (0 of 3) decides, the note says so
    CHECK(evaluated(ClaimRule::count_within(0.0, 1.0, {2, 3}), {-5.0, 1.5, 4.0}).verdict == Verdict::not_reproduced);
    CHECK_THAT(evaluated(ClaimRule::count_within(0.0, 1.0, {2, 3}), {-5.0, 1.5, 4.0}).note, Catch::Contains("the count decides"));
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
    CHECK(pooled[0].verdict == Verdict::not_reproduced);  // 3 of 5 (4 needed), the positive mean's interval reaching below 0
    CHECK_THAT(pooled[0].note, Catch::Contains("3 of 5 values on the claimed side (4 needed)"));
    fs::remove_all(dir);
}

namespace floor_helpers {

Claim claim_of(const std::string& id, ClaimKind kind, ClaimRule rule, const std::string& unit = "seed") {
    Claim c;
    c.id = id, c.paper = "003", c.source = "Table 1", c.kind = kind, c.unit = unit;
    c.statement = "a statement", c.metric = "x of one unit", c.rule = rule;
    if (kind == ClaimKind::printed_number) c.paper_value = 1.0;
    return c;
}

// One run per value, each with its seed (unit i) and its value: pooled as `iclab claims` pools one setting.
ClaimResult pooled(const Claim& c, const std::vector<double>& values) {
    std::vector<std::pair<std::string, std::vector<ClaimResult>>> runs;
    for (std::size_t i = 0; i < values.size(); ++i)
        runs.push_back({"run" + std::to_string(i), {evaluate_claim(c, {static_cast<std::int64_t>(i)}, {values[i]})}});
    auto out = pool_claims(runs);
    REQUIRE(out.size() == 1);
    return out[0];
}

}  // namespace floor_helpers

using namespace floor_helpers;

TEST_CASE("claims floor: a declared identity decides on one value, every other claim needs 5 values", "[claims]") {
    Claim exact = claim_of("exact", ClaimKind::own_check, ClaimRule::count_at_most(1e-12), "instance");
    // the shape alone decides nothing (issue 45): an own check over every value on a data draw (a convergence within L
    // layers, a conditioning) keeps the floor
    CHECK_FALSE(deterministic_check(exact));
    CHECK(min_values(exact) == kMinValues);
    exact.deterministic = true;
    CHECK_NOTHROW(check_claim(exact));
    CHECK(deterministic_check(exact));
    CHECK(min_values(exact) == 1);
    Claim over_seeds = claim_of("identity over seeds", ClaimKind::own_check, ClaimRule::count_within(0.0, 1e-12));
    over_seeds.deterministic = true;
    CHECK(min_values(over_seeds) == 1);
    // a share, an interval, a qualitative or printed claim: about trained models, data draws or timings
    CHECK(min_values(claim_of("share", ClaimKind::own_check, ClaimRule::count_at_most(1e-12, {2, 3}))) == kMinValues);
    CHECK(min_values(claim_of("interval", ClaimKind::own_check, ClaimRule::interval_above(0.0))) == kMinValues);
    CHECK(min_values(claim_of("qualitative", ClaimKind::qualitative, ClaimRule::count_above(0.0))) == kMinValues);
    CHECK(min_values(claim_of("printed", ClaimKind::printed_number, ClaimRule::count_within(1.0, 1.0))) == kMinValues);
    // none of them can be declared deterministic: check_claim refuses a rule one value cannot decide
    for (Claim c : {claim_of("share", ClaimKind::own_check, ClaimRule::count_at_most(1e-12, {2, 3})),
                    claim_of("interval", ClaimKind::own_check, ClaimRule::interval_above(0.0)),
                    claim_of("qualitative", ClaimKind::qualitative, ClaimRule::count_above(0.0))}) {
        c.deterministic = true;
        CHECK_THROWS_WITH(check_claim(c), Catch::Contains("a deterministic claim (one value decides)"));
    }
    // per-seed means of a trained model's instances, and a comparison of two trained arms
    Claim means = exact;
    means.pooling = ClaimPooling::seed_means;
    CHECK_THROWS_WITH(check_claim(means), Catch::Contains("a deterministic claim"));
    Claim paired = claim_of("paired", ClaimKind::own_check, ClaimRule::count_above(0.0));
    paired.pair.key = "model.mask", paired.pair.first = "prefix", paired.pair.second = "causal";
    CHECK_FALSE(deterministic_check(paired));
    CHECK(kMinValues == 5);  // 5 of 5 by a fair coin: 3.1 %
}

TEST_CASE("claims floor: the declaration survives the /claims round trip, and files before it are read by their shape", "[claims]") {
    const fs::path dir = fs::temp_directory_path() / ("iclab_claims_det_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    Claim identity = claim_of("identity", ClaimKind::own_check, ClaimRule::count_at_most(1e-12), "instance");
    identity.deterministic = true;
    const Claim draw = claim_of("draw", ClaimKind::own_check, ClaimRule::count_at_most(1e-8));  // same shape, a draw
    {
        ResultsWriter w(dir / "results.h5");
        write_claims(w, {evaluate_claim(identity, {0, 1}, {1e-15, 2e-15}), evaluate_claim(draw, {0}, {1e-9})});
        w.commit();
    }
    const auto back = read_claims(ResultsReader(dir / "results.h5"));
    REQUIRE(back.size() == 2);
    CHECK(back[0].claim.deterministic);
    CHECK_FALSE(back[1].claim.deterministic);
    CHECK(ResultsReader(dir / "results.h5").read_column_int64("/claims/deterministic") == std::vector<std::int64_t>{1, 0});
    // a file written before the declaration (no /claims/deterministic): both read as its readers did, by the shape
    {
        const hid_t file = H5Fopen((dir / "results.h5").c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
        REQUIRE(file >= 0);
        CHECK(H5Ldelete(file, "/claims/deterministic", H5P_DEFAULT) >= 0);
        H5Fclose(file);
    }
    const auto old = read_claims(ResultsReader(dir / "results.h5"));
    REQUIRE(old.size() == 2);
    CHECK(old[0].claim.deterministic);
    CHECK(old[1].claim.deterministic);
    fs::remove_all(dir);
}

TEST_CASE("claims floor: a trained claim on fewer than 5 seeds is inconclusive with the rule's verdict in the note", "[claims]") {
    const Claim trained = claim_of("trained", ClaimKind::qualitative, ClaimRule::count_above(0.0));
    ClaimResult three = pooled(trained, {0.5, 0.7, 0.9});
    CHECK(three.verdict == Verdict::reproduced);  // the rule alone: 3 of 3 (a fair coin: 12.5 %)
    CHECK(min_values(trained) == 5);
    CHECK(three.leave_one_out == "holds");
    three.rounding = "depends on rounding: not reproduced at +1 ulp";  // as run::pool_run_claims sets it from a twin
    require_min_values(three, min_values(trained));
    CHECK(three.verdict == Verdict::inconclusive);
    CHECK(three.note == "needs >= 5 seeds, has 3 (on them the rule says reproduced)");
    CHECK(three.leave_one_out.empty());  // dropping a seed of too few says nothing
    CHECK(three.rounding.empty());
    CHECK(three.values.size() == 3);     // the values are kept and shown

    ClaimResult one = pooled(trained, {-0.5});
    CHECK(one.verdict == Verdict::not_reproduced);
    require_min_values(one, min_values(trained));
    CHECK(one.verdict == Verdict::inconclusive);
    CHECK(one.note == "needs >= 5 seeds, has 1 (on them the rule says not reproduced)");

    // an interval that already straddles keeps its reason after the floor's
    ClaimResult straddles = pooled(claim_of("interval", ClaimKind::qualitative, ClaimRule::interval_above(0.0)), {-1.0, 2.0, 0.5});
    require_min_values(straddles, min_values(straddles.claim));
    CHECK(straddles.verdict == Verdict::inconclusive);
    CHECK(straddles.note == "needs >= 5 seeds, has 3; the interval straddles the rule's edge");

    // 5 seeds: the rule decides, untouched
    ClaimResult five = pooled(trained, {0.5, 0.7, 0.9, 0.2, 0.3});
    require_min_values(five, min_values(trained));
    CHECK(five.verdict == Verdict::reproduced);
    CHECK(five.note.empty());
    CHECK(five.leave_one_out == "holds");

    // nothing measured stays "not run"
    ClaimResult none = evaluate_claim(trained, {}, {});
    require_min_values(none, 5);
    CHECK(none.verdict == Verdict::not_run);
}

TEST_CASE("claims floor: one value decides a deterministic check, not a timing over 2 instances", "[claims]") {
    Claim identity = claim_of("exact", ClaimKind::own_check, ClaimRule::count_at_most(1e-12), "instance");
    identity.deterministic = true;
    ClaimResult exact = pooled(identity, {3e-16});
    CHECK(min_values(exact.claim) == 1);
    require_min_values(exact, min_values(exact.claim));
    CHECK(exact.verdict == Verdict::reproduced);
    CHECK(exact.note.empty());
    ClaimResult wrong = pooled(identity, {0.3});
    require_min_values(wrong, min_values(wrong.claim));
    CHECK(wrong.verdict == Verdict::not_reproduced);  // one wrong value fails an identity

    ClaimResult timing = pooled(claim_of("faster", ClaimKind::qualitative, ClaimRule::count_above(1.0), "instance"), {9.0, 10.0});
    CHECK(timing.verdict == Verdict::reproduced);
    require_min_values(timing, min_values(timing.claim));
    CHECK(timing.verdict == Verdict::inconclusive);
    CHECK(timing.note == "needs >= 5 values, has 2 (on them the rule says reproduced)");
}

TEST_CASE("claims floor: a seed_means claim's floor is its declaration's, which pooling rewrites to seeds", "[claims]") {
    // an own check for every value on a trained model's instances, pooled by per-seed means: the pooled claim reads
    // "unit seed, pooling values"; its floor is the declaration's, which travels with it
    Claim means = claim_of("means", ClaimKind::own_check, ClaimRule::count_above(0.0), "instance");
    means.pooling = ClaimPooling::seed_means;
    std::vector<std::pair<std::string, std::vector<ClaimResult>>> runs;
    for (std::int64_t seed = 0; seed < 2; ++seed) runs.push_back({"run" + std::to_string(seed), {evaluate_claim(means, {0, 1}, {0.4, 0.6})}});
    auto out = pool_claims(runs, {10, 11});
    REQUIRE(out.size() == 1);
    CHECK(out[0].claim.unit == "seed");
    CHECK_FALSE(deterministic_check(out[0].claim));  // declared, so the rewrite cannot make it look deterministic
    CHECK(min_values(means) == 5);                   // the declaration's floor
    CHECK(out[0].verdict == Verdict::reproduced);
    require_min_values(out[0], min_values(means));
    CHECK(out[0].verdict == Verdict::inconclusive);
    CHECK(out[0].note == "needs >= 5 seeds, has 2 (on them the rule says reproduced)");
}

}  // namespace iclab_test_claims_shares
