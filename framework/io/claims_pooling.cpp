// Pooling declared claims over runs: seeds, per-seed means, paired and ranked arms (framework/io/claims.hpp pool_claims).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>

#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/rank_test.hpp"

namespace iclab::io {

namespace {

constexpr double kPoolingNaN = std::numeric_limits<double>::quiet_NaN();

std::string joined_parts(const std::vector<std::string>& parts, const char* separator) {
    std::string out;
    for (const std::string& part : parts) out += (out.empty() ? "" : separator) + part;
    return out;
}

}  // namespace

namespace {

// A ranked claim (ClaimPair::Combine::rank_falls) over its units: per unit with every arm, the exact one-sided p of
// Kendall's tau between the arm values and the runs' values (rank_test.hpp); the note lists each unit's tau and the
// units left out with the arms they miss.
ClaimResult pool_ranked(const Claim& claim, const std::map<std::int64_t, std::map<std::string, double>>& by_unit) {
    std::vector<std::int64_t> units;
    std::vector<double> p_values;
    std::string taus, missing;
    char text[64];
    for (const auto& [unit, by_arm] : by_unit) {
        std::vector<double> x, y;
        std::vector<std::string> absent;
        bool finite = true;
        for (const std::string& a : claim.pair.arms) {
            const auto found = by_arm.find(a);
            if (found == by_arm.end()) {
                absent.push_back(a);
                continue;
            }
            x.push_back(std::strtod(a.c_str(), nullptr)), y.push_back(found->second), finite = finite && std::isfinite(found->second);
        }
        if (!absent.empty()) {
            missing += (missing.empty() ? "" : "; ") + std::to_string(unit) + " (no " + claim.pair.key + " = " + joined_parts(absent, ", ") + ")";
            continue;
        }
        units.push_back(unit);
        if (!finite) {
            p_values.push_back(kPoolingNaN);  // evaluate_claim: inconclusive, "a non-finite value"
            continue;
        }
        const KendallTest t = kendall_falls(x, y);
        p_values.push_back(t.p);
        std::snprintf(text, sizeof text, "%s%lld: %.2f", taus.empty() ? "" : ", ", static_cast<long long>(unit), t.tau);
        taus += text;
    }
    ClaimResult r = evaluate_claim(claim, units, p_values);
    if (!taus.empty()) r.note += (r.note.empty() ? "" : "; ") + std::string("Kendall's tau per seed: ") + taus;
    if (!missing.empty()) r.note += (r.note.empty() ? "" : "; ") + std::string("left out (an arm missing): seed ") + missing;
    return r;
}

}  // namespace

std::string leave_one_out_text(const ClaimResult& result) {
    const std::size_t n = result.values.size();
    if (result.claim.unit != "seed" || n < 3 || result.units.size() != n) return "";
    // The rule's n - 1 form: a share's count on n - 1 values without the share's own minimum ("x in >= 5/6 of the
    // values, at least 5" asks 4 of 4 without one of 5 seeds, not 5 of 4). The minimum keeps a coin from deciding the
    // full set; on n - 1 values it would make every drop inconclusive, and "fragile" would say the rule, not the data.
    // Neither is the floor of `iclab claims` (claims_floor.hpp) applied to the subsets: it judges the full set.
    Claim reduced = result.claim;
    if (reduced.rule.counts() && reduced.rule.out_of > 0) {
        const std::size_t m = n - 1;
        reduced.rule.needed = std::max<std::size_t>(1, (m * result.claim.rule.needed + result.claim.rule.out_of - 1) / result.claim.rule.out_of);
        reduced.rule.out_of = 0;  // an absolute count of the m values
    }
    std::string flips;
    for (std::size_t drop = 0; drop < n; ++drop) {
        std::vector<std::int64_t> units;
        std::vector<double> values;
        for (std::size_t i = 0; i < n; ++i)
            if (i != drop) units.push_back(result.units[i]), values.push_back(result.values[i]);
        // the same declaration (pair.arm empty: the values are the combined ones), the rule's n - 1 form
        const Verdict verdict = evaluate_claim(reduced, units, values).verdict;
        if (verdict != result.verdict)
            flips += (flips.empty() ? "" : "; ") + ("without seed " + std::to_string(result.units[drop]) + " \u2192 " + verdict_name(verdict));
    }
    return flips.empty() ? "holds" : "fragile: " + flips;
}

std::vector<ClaimResult> pool_claims(const std::vector<std::pair<std::string, std::vector<ClaimResult>>>& runs,
                                     const std::vector<std::int64_t>& run_seeds) {
    ICLAB_CHECK(run_seeds.empty() || run_seeds.size() == runs.size(), "pool_claims: " << run_seeds.size() << " seeds for " << runs.size() << " runs");
    std::vector<std::string> order;
    std::map<std::string, Claim> declared;
    std::map<std::string, std::string> first_run;
    std::map<std::string, std::map<std::pair<std::int64_t, std::string>, std::string>> unit_run;  // (unit, arm) -> run
    std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<double>>> values;
    std::map<std::string, std::map<std::int64_t, std::map<std::string, double>>> arms;  // paired: unit -> arm -> value
    std::map<std::string, std::string> selections;  // seed_means: "seed 0: ...; seed 1: ..."
    for (std::size_t k = 0; k < runs.size(); ++k)
        for (const ClaimResult& r : runs[k].second) {
            const std::string& run = runs[k].first;
            const Claim& c = r.claim;
            auto found = declared.find(c.id);
            if (found == declared.end()) {
                declared[c.id] = c, first_run[c.id] = run, order.push_back(c.id);
            } else {
                const Claim& d = found->second;
                const bool same = d.paper == c.paper && d.source == c.source && d.kind == c.kind && d.statement == c.statement &&
                                  d.metric == c.metric && d.unit == c.unit && d.rule.text() == c.rule.text() &&
                                  (d.paper_value == c.paper_value || (std::isnan(d.paper_value) && std::isnan(c.paper_value))) &&
                                  d.pair.key == c.pair.key && d.pair.first == c.pair.first && d.pair.second == c.pair.second &&
                                  d.pair.combine == c.pair.combine && d.pair.arms == c.pair.arms && d.pooling == c.pooling && d.provenance == c.provenance &&
                                  d.deterministic == c.deterministic;
                ICLAB_INPUT_CHECK(same, "claim '" << c.id << "' is declared differently in " << first_run[c.id] << " and " << run);
            }
            ICLAB_INPUT_CHECK(!c.pair.paired() || !c.pair.arm.empty(), "claim '" << c.id << "' in " << run << " is paired already");
            if (c.pooling == ClaimPooling::seed_means) {  // the run's training seed is the unit, the mean of its instances the value
                const std::int64_t seed = run_seeds.empty() ? static_cast<std::int64_t>(k) : run_seeds[k];
                auto [it, fresh] = unit_run[c.id].emplace(std::make_pair(seed, std::string()), run);
                ICLAB_INPUT_CHECK(fresh, "claim '" << c.id << "': seed " << seed << " is in both " << it->second << " and " << run
                                                   << " (pool runs of one setting only)");
                values[c.id].first.push_back(seed), values[c.id].second.push_back(t_interval95(r.values).mean);
                if (!r.selection.empty())
                    selections[c.id] += (selections[c.id].empty() ? "" : "; ") + ("seed " + std::to_string(seed) + ": " + r.selection);
                continue;
            }
            for (std::size_t i = 0; i < r.values.size(); ++i) {
                auto [it, fresh] = unit_run[c.id].emplace(std::make_pair(r.units[i], c.pair.arm), run);
                ICLAB_INPUT_CHECK(fresh || c.unit != "seed", "claim '" << c.id << "': seed " << r.units[i]
                                                                        << (c.pair.arm.empty() ? "" : " (" + (c.pair.ranked() ? c.pair.key + " = " : "") + c.pair.arm + ")") << " is in both "
                                                                        << it->second << " and " << run << " (pool runs of one setting only)");
                if (c.pair.paired())
                    arms[c.id][r.units[i]][c.pair.arm] = r.values[i];
                else
                    values[c.id].first.push_back(r.units[i]), values[c.id].second.push_back(r.values[i]);
            }
        }
    std::vector<ClaimResult> out;
    for (const auto& id : order) {
        Claim claim = declared[id];
        if (claim.pooling == ClaimPooling::seed_means) {
            claim.unit = "seed", claim.pooling = ClaimPooling::values;  // the pooled values are the per-seed means
            claim.metric = "per training seed: the mean over its instances of [" + claim.metric + "]";
            out.push_back(evaluate_claim(claim, values[id].first, values[id].second));
            out.back().selection = selections[id];
            continue;
        }
        if (!claim.pair.paired()) {
            out.push_back(evaluate_claim(claim, values[id].first, values[id].second));
            continue;
        }
        claim.pair.arm.clear();
        if (claim.pair.ranked()) {
            out.push_back(pool_ranked(claim, arms[id]));
            continue;
        }
        std::vector<std::int64_t> units;
        std::vector<double> paired;
        std::string alone;
        for (const auto& [unit, by_arm] : arms[id]) {
            const auto a = by_arm.find(claim.pair.first), b = by_arm.find(claim.pair.second);
            if (a != by_arm.end() && b != by_arm.end()) {
                units.push_back(unit), paired.push_back(claim.pair.combined(a->second, b->second));
            } else {
                alone += (alone.empty() ? "" : ", ") + std::to_string(unit) + " (" + by_arm.begin()->first + ")";
            }
        }
        ClaimResult r = evaluate_claim(claim, units, paired);
        if (!alone.empty()) r.note += (r.note.empty() ? "" : "; ") + std::string("one arm only, left out: seed ") + alone;
        out.push_back(r);
    }
    for (ClaimResult& r : out) r.leave_one_out = leave_one_out_text(r);
    return out;
}

}  // namespace iclab::io
