// Declared reproduction claims (framework/io/claims.hpp): t quantiles and intervals against printed tables, every
// decision rule on values that must pass, must fail and must stay undecided, declarations that must be refused, the
// /claims round trip and the pooling of seeds across runs (values, and by per-seed means).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"

namespace iclab_test_claims {  // this file's names (unity build: CMakeLists.txt)

namespace fs = std::filesystem;
using namespace iclab::io;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Claim declared(ClaimRule rule, ClaimKind kind = ClaimKind::qualitative, double paper_value = kNaN) {
    Claim c;
    c.id = "test claim";
    c.paper = "003";
    c.source = "Table 1";
    c.kind = kind;
    c.statement = "prefix beats causal";
    c.metric = "prefix MSE - causal MSE";
    c.paper_value = paper_value;
    c.rule = rule;
    return c;
}

Verdict verdict_of(ClaimRule rule, std::vector<double> values) {
    std::vector<std::int64_t> seeds;
    for (std::size_t i = 0; i < values.size(); ++i) seeds.push_back(static_cast<std::int64_t>(i));
    return evaluate_claim(declared(rule), seeds, values).verdict;
}

}  // namespace

TEST_CASE("claims: Student-t quantiles match the printed table", "[claims]") {
    // two-sided 95 % critical values, t(0.975, df), from any printed t table
    CHECK(student_t_quantile(0.975, 1) == Approx(12.7062047).epsilon(1e-7));
    CHECK(student_t_quantile(0.975, 2) == Approx(4.30265273).epsilon(1e-7));
    CHECK(student_t_quantile(0.975, 4) == Approx(2.77644511).epsilon(1e-7));
    CHECK(student_t_quantile(0.975, 9) == Approx(2.26215716).epsilon(1e-7));
    CHECK(student_t_quantile(0.975, 29) == Approx(2.04522964).epsilon(1e-7));
    CHECK(student_t_quantile(0.975, 1e7) == Approx(1.95996398).epsilon(1e-6));  // the normal limit
    CHECK(student_t_quantile(0.95, 5) == Approx(2.01504837).epsilon(1e-7));
    CHECK(student_t_quantile(0.025, 4) == Approx(-2.77644511).epsilon(1e-7));  // symmetric
    CHECK(student_t_quantile(0.5, 3) == Approx(0.0).margin(1e-9));
    CHECK_THROWS_AS(student_t_quantile(1.0, 3), iclab::Error);
}

TEST_CASE("claims: the 95 % t-interval in closed form", "[claims]") {
    // {1, 2, 3}: mean 2, s = 1, half width t(0.975, 2) / sqrt(3)
    const Interval i = t_interval95({1.0, 2.0, 3.0});
    CHECK(i.mean == Approx(2.0));
    CHECK(i.high - i.mean == Approx(4.30265273 / std::sqrt(3.0)).epsilon(1e-7));
    CHECK(i.mean - i.low == Approx(4.30265273 / std::sqrt(3.0)).epsilon(1e-7));
    const Interval one = t_interval95({5.0});
    CHECK(one.mean == 5.0);
    CHECK(std::isnan(one.low));
    CHECK(std::isnan(one.high));
    const Interval flat = t_interval95({0.25, 0.25, 0.25});
    CHECK(flat.low == Approx(0.25));
    CHECK(flat.high == Approx(0.25));
}

TEST_CASE("claims: interval rules decide, fail and stay inconclusive", "[claims]") {
    // {1, 2, 3}: interval [2 - 2.484, 2 + 2.484] = [-0.484, 4.484]
    CHECK(verdict_of(ClaimRule::interval_above(-1.0), {1, 2, 3}) == Verdict::reproduced);
    CHECK(verdict_of(ClaimRule::interval_above(0.0), {1, 2, 3}) == Verdict::inconclusive);  // straddles 0
    CHECK(verdict_of(ClaimRule::interval_above(5.0), {1, 2, 3}) == Verdict::not_reproduced);
    CHECK(verdict_of(ClaimRule::interval_below(5.0), {1, 2, 3}) == Verdict::reproduced);
    CHECK(verdict_of(ClaimRule::interval_below(-1.0), {1, 2, 3}) == Verdict::not_reproduced);
    CHECK(verdict_of(ClaimRule::interval_within(-1.0, 5.0), {1, 2, 3}) == Verdict::reproduced);
    CHECK(verdict_of(ClaimRule::interval_within(0.0, 5.0), {1, 2, 3}) == Verdict::inconclusive);
    CHECK(verdict_of(ClaimRule::interval_within(5.0, 6.0), {1, 2, 3}) == Verdict::not_reproduced);
    CHECK(verdict_of(ClaimRule::interval_above(0.0), {1}) == Verdict::inconclusive);  // no interval from one seed
    CHECK(verdict_of(ClaimRule::interval_above(0.0), {1, kNaN, 3}) == Verdict::inconclusive);
}

TEST_CASE("claims: count rules are sign counts over seeds", "[claims]") {
    const auto two_of_three = ClaimRule::count_below(0.0, {2, 3});
    CHECK(verdict_of(two_of_three, {-1, -2, 1}) == Verdict::reproduced);
    CHECK(verdict_of(two_of_three, {-1, 2, 3}) == Verdict::not_reproduced);
    CHECK(verdict_of(two_of_three, {0, 0, 0}) == Verdict::not_reproduced);  // strict: a tie is not a win
    CHECK(verdict_of(two_of_three, {-1}) == Verdict::inconclusive);       // one seed cannot give 2
    CHECK(verdict_of(ClaimRule::count_above(100.0), {101, 140}) == Verdict::reproduced);
    CHECK(verdict_of(ClaimRule::count_above(100.0), {97, 140}) == Verdict::not_reproduced);  // "more than 100": 97 fails
    CHECK(verdict_of(ClaimRule::count_at_most(1.0), {0.5, 1.0}) == Verdict::reproduced);
    CHECK(verdict_of(ClaimRule::count_at_most(1.0), {0.5, 1.0 + 1e-12}) == Verdict::not_reproduced);
    CHECK(verdict_of(ClaimRule::count_within(1.6, 1.6), {1.6}) == Verdict::reproduced);
    CHECK(verdict_of(ClaimRule::count_within(1.6, 1.6), {0.8}) == Verdict::not_reproduced);
    CHECK(verdict_of(ClaimRule::count_within(0.0, 1.0, {2, 3}), {0.5, 1.2, 0.7}) == Verdict::reproduced);
    const ClaimResult r = evaluate_claim(declared(two_of_three), {0, 1, 2}, {-1, 2, -3});
    CHECK(r.on_side == 2);
    CHECK(r.interval.mean == Approx(-2.0 / 3.0));
    CHECK(two_of_three.text() == "x < 0 in >= 2/3 of the values, at least 2");
    CHECK(two_of_three.text(5) == "x < 0 in >= 2/3 of the values, at least 2 (here 4 of 5)");
}

TEST_CASE("claims: declarations that break the rules are refused", "[claims]") {
    // a printed-number claim needs the printed number; other kinds must not carry one
    CHECK_THROWS_AS(check_claim(declared(ClaimRule::interval_within(0, 1), ClaimKind::printed_number)), iclab::Error);
    CHECK_NOTHROW(check_claim(declared(ClaimRule::interval_within(0, 1), ClaimKind::printed_number, 0.5)));
    CHECK_THROWS_AS(check_claim(declared(ClaimRule::count_above(0, {2, 3}), ClaimKind::qualitative, 1.0)), iclab::Error);
    CHECK_THROWS_AS(check_claim(declared(ClaimRule::count_above(0, {2, 3}), ClaimKind::own_check, 0.0)), iclab::Error);
    CHECK_THROWS_AS(check_claim(declared(ClaimRule::interval_within(1, 0))), iclab::Error);
    CHECK_THROWS_AS(check_claim(declared(ClaimRule::count_above(kNaN, {2, 3}))), iclab::Error);
    Claim unnamed = declared(ClaimRule::count_above(0, {2, 3}));
    unnamed.source.clear();
    CHECK_THROWS_AS(check_claim(unnamed), iclab::Error);
}

TEST_CASE("claims: /claims round trip and pooling seeds across runs", "[claims]") {
    std::random_device random;
    const fs::path dir = fs::temp_directory_path() / ("iclab_test_claims_" + std::to_string(::getpid()) + "_" + std::to_string(random()));
    fs::create_directories(dir);
    Claim printed = declared(ClaimRule::interval_within(0.4, 0.6), ClaimKind::printed_number, 0.5);
    printed.id = "printed";
    auto write_run = [&](const std::string& name, std::vector<std::int64_t> seeds, std::vector<double> values, Claim first) {
        ResultsWriter w(dir / name);
        write_claims(w, {evaluate_claim(first, seeds, values),
                         evaluate_claim(printed, seeds, std::vector<double>(values.size(), 0.5))});
        w.commit();
        return std::vector<ClaimResult>(read_claims(ResultsReader(dir / name)));
    };
    const Claim sign = declared(ClaimRule::count_below(0.0, {2, 3}));
    const auto seed0 = write_run("seed0.h5", {0}, {-1.0}, sign);
    REQUIRE(seed0.size() == 2);
    CHECK(seed0[0].claim.id == "test claim");
    CHECK(seed0[0].claim.rule.text() == sign.rule.text());
    CHECK(seed0[0].verdict == Verdict::inconclusive);  // one seed of a 2-of-n rule
    CHECK(seed0[1].claim.paper_value == 0.5);
    CHECK(seed0[1].claim.kind == ClaimKind::printed_number);
    const auto seed1 = write_run("seed1.h5", {1}, {2.0}, sign);
    const auto seed2 = write_run("seed2.h5", {2}, {-3.0}, sign);
    const auto pooled = pool_claims({{"seed0", seed0}, {"seed1", seed1}, {"seed2", seed2}});
    REQUIRE(pooled.size() == 2);
    CHECK(pooled[0].values.size() == 3);
    CHECK(pooled[0].on_side == 2);
    CHECK(pooled[0].verdict == Verdict::reproduced);    // 2 of 3 seeds
    CHECK(pooled[1].verdict == Verdict::reproduced);    // interval [0.5, 0.5] inside the band
    // the same seed twice (e.g. a fallback run pooled with the declared one) is refused, naming both runs
    CHECK_THROWS_WITH(pool_claims({{"seed0", seed0}, {"again", seed0}}), Catch::Contains("seed 0 is in both seed0 and again"));
    // a claim declared differently in two runs is refused
    Claim other = sign;
    other.rule = ClaimRule::count_below(0.0, {3, 4});
    const auto changed = write_run("changed.h5", {3}, {-1.0}, other);
    CHECK_THROWS_WITH(pool_claims({{"seed0", seed0}, {"changed", changed}}), Catch::Contains("declared differently"));
    // a results file with a claim id twice is not written
    {
        ResultsWriter w(dir / "twice.h5");
        CHECK_THROWS_AS(write_claims(w, {seed0[0], seed0[0]}), iclab::Error);
    }
    fs::remove_all(dir);
}

TEST_CASE("claims: paired claims pool the two arms of each seed", "[claims]") {
    Claim c = declared(ClaimRule::count_above(0.0, {2, 3}));
    c.pair.key = "model.mask", c.pair.first = "prefix", c.pair.second = "causal";
    c.pair.combine = ClaimPair::Combine::log_ratio;
    auto arm = [&](const std::string& name, std::int64_t seed, double value) {
        Claim a = c;
        a.pair.arm = name;
        return std::vector<ClaimResult>{evaluate_claim(a, {seed}, {value})};
    };
    const auto alone = arm("prefix", 0, 1.0);
    CHECK(alone[0].verdict == Verdict::inconclusive);  // a raw arm value is no evidence either way
    CHECK_THAT(alone[0].note, Catch::Contains("pairs it with the causal run"));
    // seeds 0, 1, 2: causal/prefix = 4, 0.5, 2 -> ln = 1.386, -0.693, 0.693: 2 of 3 above 0
    const auto pooled = pool_claims({{"p0", arm("prefix", 0, 0.25)}, {"c0", arm("causal", 0, 1.0)}, {"p1", arm("prefix", 1, 2.0)},
                                     {"c1", arm("causal", 1, 1.0)}, {"c2", arm("causal", 2, 3.0)}, {"p2", arm("prefix", 2, 1.5)}});
    REQUIRE(pooled.size() == 1);
    CHECK(pooled[0].claim.pair.arm.empty());
    CHECK(pooled[0].units == std::vector<std::int64_t>{0, 1, 2});
    REQUIRE(pooled[0].values.size() == 3);
    CHECK(pooled[0].values[0] == Approx(std::log(4.0)));
    CHECK(pooled[0].values[1] == Approx(std::log(0.5)));
    CHECK(pooled[0].values[2] == Approx(std::log(2.0)));
    CHECK(pooled[0].on_side == 2);
    CHECK(pooled[0].verdict == Verdict::reproduced);
    // the same rule with seed 2 reversed: 1 of 3, not reproduced
    const auto reversed = pool_claims({{"p0", arm("prefix", 0, 0.25)}, {"c0", arm("causal", 0, 1.0)}, {"p1", arm("prefix", 1, 2.0)},
                                       {"c1", arm("causal", 1, 1.0)}, {"c2", arm("causal", 2, 1.5)}, {"p2", arm("prefix", 2, 3.0)}});
    CHECK(reversed[0].verdict == Verdict::not_reproduced);
    // difference: causal - prefix
    Claim d = c;
    d.pair.combine = ClaimPair::Combine::difference;
    d.pair.arm = "prefix";
    Claim e = d;
    e.pair.arm = "causal";
    const auto diff = pool_claims({{"p", {evaluate_claim(d, {0}, {24.0})}}, {"c", {evaluate_claim(e, {0}, {27.5})}}});
    CHECK(diff[0].values == std::vector<double>{3.5});
    // a seed with one arm only is left out and named
    const auto partial = pool_claims({{"p0", arm("prefix", 0, 0.25)}, {"c0", arm("causal", 0, 1.0)}, {"p1", arm("prefix", 1, 2.0)}});
    CHECK(partial[0].values.size() == 1);
    CHECK(partial[0].verdict == Verdict::inconclusive);
    CHECK_THAT(partial[0].note, Catch::Contains("left out: seed 1 (prefix)"));
    // the same seed and arm twice is refused; a pair declared on another key is refused
    CHECK_THROWS_WITH(pool_claims({{"a", arm("prefix", 0, 1.0)}, {"b", arm("prefix", 0, 1.0)}}), Catch::Contains("seed 0 (prefix) is in both a and b"));
    Claim other = c;
    other.pair.key = "model.attention", other.pair.arm = "causal";
    CHECK_THROWS_WITH(pool_claims({{"a", arm("prefix", 0, 1.0)}, {"b", {evaluate_claim(other, {0}, {1.0})}}}), Catch::Contains("declared differently"));
    // declarations: an arm that is neither, arms without a key
    Claim bad = c;
    bad.pair.arm = "full";
    CHECK_THROWS_AS(check_claim(bad), iclab::Error);
    Claim keyless = declared(ClaimRule::count_above(0.0, {2, 3}));
    keyless.pair.arm = "prefix";
    CHECK_THROWS_AS(check_claim(keyless), iclab::Error);
}

TEST_CASE("claims: paired claims survive the /claims round trip", "[claims]") {
    std::random_device random;
    const fs::path dir = fs::temp_directory_path() / ("iclab_test_pairs_" + std::to_string(::getpid()) + "_" + std::to_string(random()));
    fs::create_directories(dir);
    Claim c = declared(ClaimRule::count_above(0.0, {2, 3}));
    c.pair.key = "model.mask", c.pair.first = "prefix", c.pair.second = "causal", c.pair.arm = "causal";
    c.pair.combine = ClaimPair::Combine::log_ratio;
    Claim plain = declared(ClaimRule::count_above(0.0, {1, 2}));
    plain.id = "unpaired";
    {
        ResultsWriter w(dir / "run.h5");
        write_claims(w, {evaluate_claim(c, {2}, {0.5}), evaluate_claim(plain, {2}, {1.0})});
        w.commit();
    }
    const auto back = read_claims(ResultsReader(dir / "run.h5"));
    REQUIRE(back.size() == 2);
    CHECK(back[0].claim.pair.key == "model.mask");
    CHECK(back[0].claim.pair.first == "prefix");
    CHECK(back[0].claim.pair.second == "causal");
    CHECK(back[0].claim.pair.arm == "causal");
    CHECK(back[0].claim.pair.combine == ClaimPair::Combine::log_ratio);
    CHECK(back[0].verdict == Verdict::inconclusive);
    CHECK_FALSE(back[1].claim.pair.paired());
    CHECK(back[1].verdict == Verdict::reproduced);
    fs::remove_all(dir);
}

TEST_CASE("claims: seed_means pooling judges the model seeds' mean instance values, not the instances", "[claims]") {
    Claim c = declared(ClaimRule::interval_above(0.0));
    c.unit = "instance";
    c.pooling = ClaimPooling::seed_means;
    CHECK_NOTHROW(check_claim(c));
    // three model seeds: per-seed means 0.5, 0.3, 0.1 over 4 instances each
    auto run = [&](std::vector<double> values, const std::string& selection) {
        ClaimResult r = evaluate_claim(c, {0, 1, 2, 3}, values);
        r.selection = selection;
        return std::vector<ClaimResult>{r};
    };
    const auto a = run({0.4, 0.6, 0.5, 0.5}, "F=32"), b = run({0.2, 0.4, 0.3, 0.3}, "F=32"), d = run({0.0, 0.2, 0.1, 0.1}, "F=64");
    CHECK(a[0].verdict == Verdict::reproduced);  // one run alone: the interval over its instances
    const auto pooled = pool_claims({{"s7", a}, {"s8", b}, {"s9", d}}, {7, 8, 9});
    REQUIRE(pooled.size() == 1);
    const ClaimResult& p = pooled[0];
    CHECK(p.claim.unit == "seed");
    CHECK(p.units == std::vector<std::int64_t>{7, 8, 9});
    REQUIRE(p.values.size() == 3);
    CHECK(p.values[0] == Approx(0.5));
    CHECK(p.values[1] == Approx(0.3));
    CHECK(p.values[2] == Approx(0.1));
    CHECK(p.on_side == 3);  // the per-seed sign count
    // the interval over the three seed means: 0.3 ± t(0.975, 2) · 0.2/√3 = 0.3 ± 0.4968, straddles 0
    CHECK(p.interval.mean == Approx(0.3));
    CHECK(p.interval.high - p.interval.mean == Approx(4.30265273 * 0.2 / std::sqrt(3.0)).epsilon(1e-6));
    CHECK(p.verdict == Verdict::inconclusive);
    // control: the same twelve values pooled as instances (declared instances pooling) give a narrow interval and
    // "reproduced"; undeclared (values pooling) a claim on instances that one value does not decide is refused
    Claim flat = c;
    flat.pooling = ClaimPooling::values;
    CHECK_THROWS_WITH(check_claim(flat), Catch::Contains("would count one run's instances as seeds"));
    flat.pooling = ClaimPooling::instances;
    const auto as_instances = pool_claims({{"s7", {evaluate_claim(flat, {0, 1, 2, 3}, {0.4, 0.6, 0.5, 0.5})}},
                                           {"s8", {evaluate_claim(flat, {0, 1, 2, 3}, {0.2, 0.4, 0.3, 0.3})}},
                                           {"s9", {evaluate_claim(flat, {0, 1, 2, 3}, {0.0, 0.2, 0.1, 0.1})}}});
    CHECK(as_instances[0].values.size() == 12);
    CHECK(as_instances[0].verdict == Verdict::reproduced);
    CHECK_THAT(as_instances[0].claim.metric, Catch::StartsWith("per instance, every instance of every run a value (pooling declared 'instances'"));
    flat.deterministic = true;  // an identity decided by one value pools by values; instances pooling is refused for it
    CHECK_THROWS_AS(check_claim(flat), iclab::Error);
    flat.pooling = ClaimPooling::values;
    flat.kind = iclab::io::ClaimKind::own_check, flat.rule = ClaimRule::count_at_most(1e-12);
    CHECK_NOTHROW(check_claim(flat));
    flat = c;
    flat.pooling = ClaimPooling::instances;
    CHECK_THAT(p.claim.metric, Catch::StartsWith("per training seed: the mean over its instances of [prefix MSE - causal MSE]"));
    CHECK(p.selection == "seed 7: F=32; seed 8: F=32; seed 9: F=64");
    // without seeds, the runs' indices are the units
    CHECK(pool_claims({{"x", a}, {"y", b}})[0].units == std::vector<std::int64_t>{0, 1});
    // a seed twice is refused; a declaration pooled otherwise in one run is refused; seed_means on seed units is refused
    CHECK_THROWS_WITH(pool_claims({{"s7", a}, {"again", b}}, {7, 7}), Catch::Contains("seed 7 is in both s7 and again"));
    CHECK_THROWS_WITH(pool_claims({{"s7", a}, {"flat", {evaluate_claim(flat, {0}, {1.0})}}}, {7, 8}), Catch::Contains("declared differently"));
    Claim on_seeds = c;
    on_seeds.unit = "seed";
    CHECK_THROWS_AS(check_claim(on_seeds), iclab::Error);
    // /claims round trip keeps the pooling and the selection
    std::random_device random;
    const fs::path file = fs::temp_directory_path() / ("iclab_test_pooling_" + std::to_string(::getpid()) + "_" + std::to_string(random()) + ".h5");
    {
        ResultsWriter w(file);
        write_claims(w, a);
        w.commit();
    }
    const auto back = read_claims(ResultsReader(file));
    REQUIRE(back.size() == 1);
    CHECK(back[0].claim.pooling == ClaimPooling::seed_means);
    CHECK(back[0].selection == "F=32");
    CHECK(back[0].values == a[0].values);
    fs::remove(file);
}

}  // namespace iclab_test_claims
