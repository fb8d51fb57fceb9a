// The /claims and /claim_values tables of a results file (framework/io/claims.hpp: write_claims, read_claims): one row
// per claim with its declaration and evaluation, one row per claim and unit with its value.
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "framework/core/check.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"

namespace iclab::io {

void write_claims(ResultsWriter& w, const std::vector<ClaimResult>& claims) {
    std::vector<std::string> id, paper, source, kind, statement, metric, unit, rule, test, seeds_text, verdict, note, readme;
    std::vector<std::string> pair_key, pair_first, pair_second, pair_combine, pair_arm, pair_arms, pooling, selection, provenance;
    std::vector<double> paper_value, threshold, low, high, mean, ci_low, ci_high;
    std::vector<std::int64_t> needed, needed_out_of, n, on_side, deterministic;
    std::vector<std::string> v_id;
    std::vector<std::int64_t> v_unit;
    std::vector<double> v_value;
    std::set<std::string> seen;
    for (const ClaimResult& r : claims) {
        const Claim& c = r.claim;
        ICLAB_CHECK(seen.insert(c.id).second, "claim id " << c.id << " appears twice");
        id.push_back(c.id), paper.push_back(c.paper), source.push_back(c.source), kind.push_back(claim_kind_name(c.kind));
        statement.push_back(c.statement), metric.push_back(c.metric), unit.push_back(c.unit), rule.push_back(c.rule.text(r.values.size()));
        test.push_back(rule_test_name(c.rule.test)), threshold.push_back(c.rule.threshold), low.push_back(c.rule.low);
        high.push_back(c.rule.high), needed.push_back(static_cast<std::int64_t>(c.rule.needed)), paper_value.push_back(c.paper_value);
        needed_out_of.push_back(static_cast<std::int64_t>(c.rule.out_of));
        readme.push_back(c.readme);
        pair_key.push_back(c.pair.key), pair_first.push_back(c.pair.first), pair_second.push_back(c.pair.second);
        pair_combine.push_back(c.pair.paired() ? combine_name(c.pair.combine) : ""), pair_arm.push_back(c.pair.arm);
        pair_arms.push_back(std::accumulate(c.pair.arms.begin(), c.pair.arms.end(), std::string(),
                                            [](const std::string& a, const std::string& b) { return a.empty() ? b : a + "," + b; }));
        pooling.push_back(claim_pooling_name(c.pooling)), selection.push_back(r.selection), provenance.push_back(c.provenance);
        deterministic.push_back(c.deterministic ? 1 : 0);
        n.push_back(static_cast<std::int64_t>(r.values.size())), on_side.push_back(static_cast<std::int64_t>(r.on_side));
        mean.push_back(r.interval.mean), ci_low.push_back(r.interval.low), ci_high.push_back(r.interval.high);
        verdict.push_back(verdict_name(r.verdict)), note.push_back(r.note);
        std::string s;
        if (c.unit == "seed")
            for (std::size_t i = 0; i < r.units.size(); ++i) s += (i ? "," : "") + std::to_string(r.units[i]);
        else
            s = std::to_string(r.units.size()) + " instances";
        seeds_text.push_back(s);
        for (std::size_t i = 0; i < r.values.size(); ++i) v_id.push_back(c.id), v_unit.push_back(r.units[i]), v_value.push_back(r.values[i]);
    }
    w.write_columns("/claims",
                    {{"id", id}, {"paper", paper}, {"source", source}, {"kind", kind}, {"statement", statement}, {"metric", metric},
                     {"rule", rule}, {"unit", unit}, {"units", seeds_text}, {"n", n}, {"mean", mean}, {"ci95_low", ci_low},
                     {"ci95_high", ci_high}, {"on_claimed_side", on_side}, {"paper_value", paper_value}, {"verdict", verdict},
                     {"note", note}, {"readme", readme}, {"test", test}, {"threshold", threshold}, {"low", low}, {"high", high},
                     {"needed", needed}, {"needed_out_of", needed_out_of}, {"pair_key", pair_key}, {"pair_first", pair_first}, {"pair_second", pair_second},
                     {"pair_combine", pair_combine}, {"pair_arm", pair_arm}, {"pair_arms", pair_arms}, {"pooling", pooling}, {"selection", selection},
                     {"provenance", provenance}, {"deterministic", deterministic}},
                    {{"interval", "two-sided 95 % Student-t interval of the mean over the units (n >= 2)"},
                     {"verdicts", "reproduced: the declared rule holds; not reproduced: it fails; inconclusive: the rule cannot "
                                  "decide (interval straddles its edge, too few values, a non-finite value, a count that disagrees "
                                  "with the mean); not run: no value at all"},
                     {"needed", "count rules: needed of every needed_out_of values on the claimed side, rounded up (needed 0: "
                                "every value; needed_out_of 0: an absolute count, files before shares)"},
                     {"pairs", "pair_key set: a paired claim; this run's value is the raw value of arm pair_arm, the rule applies "
                               "to second - first (difference) or ln(second / first) (log_ratio) of one seed's two runs, or (rank_falls, arms "
                               "in pair_arms) to the exact one-sided p-value of Kendall's tau between the arms and the values of one "
                               "seed's runs"},
                     {"pooling", "how `iclab claims` pools the runs of one setting: values (all values together) or seed_means "
                                 "(one value per run: the mean of its instances, the rule over the training seeds)"},
                     {"selection", "what a score on validation data picked for the claim in this run (empty: nothing)"},
                     {"provenance", "empty: rule and bars declared before the runs; else when and why they were chosen after the first runs"},
                     {"deterministic", "1: declared an identity on every value (one value decides, no floor of 5 seeds); 0: about "
                                       "trained models or data draws"}});
    w.write_columns("/claim_values", {{"id", v_id}, {"unit", v_unit}, {"value", v_value}});
}

std::vector<ClaimResult> read_claims(const ResultsReader& reader) {
    std::vector<ClaimResult> out;
    if (!reader.has("/claims")) return out;
    const std::string file = reader.path().string();
    auto strings = [&](const char* name) { return reader.read_column_string(std::string("/claims/") + name); };
    auto doubles = [&](const char* name) { return reader.read_column_double(std::string("/claims/") + name); };
    const auto id = strings("id"), paper = strings("paper"), source = strings("source"), kind = strings("kind");
    const auto statement = strings("statement"), metric = strings("metric"), unit = strings("unit"), test = strings("test");
    const auto readme = strings("readme");
    const auto paper_value = doubles("paper_value"), threshold = doubles("threshold"), low = doubles("low"), high = doubles("high");
    const auto needed = reader.read_column_int64("/claims/needed");
    const std::size_t rows = id.size();
    // absent in files written before shares: `needed` was an absolute count there
    const auto needed_out_of = reader.has("/claims/needed_out_of") ? reader.read_column_int64("/claims/needed_out_of")
                                                                   : std::vector<std::int64_t>(rows, 0);
    // pair columns: absent in files written before paired claims (no claim is paired there)
    const bool has_pairs = reader.has("/claims/pair_key");
    const std::vector<std::string> none(rows);
    const auto pair_key = has_pairs ? strings("pair_key") : none, pair_first = has_pairs ? strings("pair_first") : none;
    const auto pair_second = has_pairs ? strings("pair_second") : none, pair_combine = has_pairs ? strings("pair_combine") : none;
    const auto pair_arm = has_pairs ? strings("pair_arm") : none;
    const auto pair_arms = reader.has("/claims/pair_arms") ? strings("pair_arms") : none;  // absent before ranked claims
    for (const auto* column : {&pair_key, &pair_first, &pair_second, &pair_combine, &pair_arm, &pair_arms})
        ICLAB_INPUT_CHECK(column->size() == rows, file << ": /claims pair columns differ in length");
    // pooling and selection: absent in files written before them (every claim pooled its values, nothing selected)
    const auto pooling = reader.has("/claims/pooling") ? strings("pooling") : std::vector<std::string>(rows, "values");
    const auto selection = reader.has("/claims/selection") ? strings("selection") : none;
    const auto provenance = reader.has("/claims/provenance") ? strings("provenance") : none;  // absent before issue 45
    ICLAB_INPUT_CHECK(provenance.size() == rows, file << ": /claims/provenance differs in length");
    // absent in files written before the declaration (issue 45): then inferred as those files' readers did, from the
    // shape (an own check counting every value, unpaired, pooled by values), which also took some checks on a data draw
    // for identities
    const bool has_deterministic = reader.has("/claims/deterministic");
    const auto deterministic = has_deterministic ? reader.read_column_int64("/claims/deterministic") : std::vector<std::int64_t>(rows, 0);
    ICLAB_INPUT_CHECK(deterministic.size() == rows, file << ": /claims/deterministic differs in length");
    ICLAB_INPUT_CHECK(pooling.size() == rows && selection.size() == rows, file << ": /claims pooling / selection columns differ in length");
    for (const auto* column : {&paper, &source, &kind, &statement, &metric, &unit, &test, &readme})
        ICLAB_INPUT_CHECK(column->size() == rows, file << ": /claims columns differ in length");
    for (const auto* column : {&paper_value, &threshold, &low, &high})
        ICLAB_INPUT_CHECK(column->size() == rows, file << ": /claims columns differ in length");
    ICLAB_INPUT_CHECK(needed.size() == rows && needed_out_of.size() == rows, file << ": /claims/needed(_out_of) differs in length");
    const auto v_id = reader.read_column_string("/claim_values/id");
    const auto v_unit = reader.read_column_int64("/claim_values/unit");
    const auto v_value = reader.read_column_double("/claim_values/value");
    ICLAB_INPUT_CHECK(v_id.size() == v_unit.size() && v_id.size() == v_value.size(), file << ": /claim_values columns differ in length");
    std::map<std::string, std::pair<std::vector<std::int64_t>, std::vector<double>>> values;
    for (std::size_t i = 0; i < v_id.size(); ++i) values[v_id[i]].first.push_back(v_unit[i]), values[v_id[i]].second.push_back(v_value[i]);
    for (std::size_t i = 0; i < rows; ++i) {
        Claim c;
        c.id = id[i], c.paper = paper[i], c.source = source[i], c.kind = claim_kind_from_name(kind[i]);
        c.statement = statement[i], c.metric = metric[i], c.unit = unit[i], c.paper_value = paper_value[i], c.readme = readme[i];
        c.provenance = provenance[i];
        ICLAB_INPUT_CHECK(needed[i] >= 0 && needed_out_of[i] >= 0 && (needed_out_of[i] == 0 || needed[i] < needed_out_of[i]),
                          file << ": /claims/needed of " << c.id << " is " << needed[i] << " of " << needed_out_of[i]);
        c.rule = {rule_test_from_name(test[i]), threshold[i], low[i], high[i], static_cast<std::size_t>(needed[i]),
                  static_cast<std::size_t>(needed_out_of[i])};
        c.pair.key = pair_key[i], c.pair.first = pair_first[i], c.pair.second = pair_second[i], c.pair.arm = pair_arm[i];
        ICLAB_INPUT_CHECK(pair_combine[i].empty() || pair_combine[i] == "difference" || pair_combine[i] == "log_ratio" ||
                              pair_combine[i] == "rank_falls",
                          file << ": /claims/pair_combine of " << c.id << " is '" << pair_combine[i] << "'");
        c.pair.combine = pair_combine[i] == "log_ratio"    ? ClaimPair::Combine::log_ratio
                         : pair_combine[i] == "rank_falls" ? ClaimPair::Combine::rank_falls
                                                           : ClaimPair::Combine::difference;
        for (std::size_t from = 0; !pair_arms[i].empty();) {  // "640,1920,6400"
            const std::size_t comma = pair_arms[i].find(',', from);
            c.pair.arms.push_back(pair_arms[i].substr(from, comma == std::string::npos ? std::string::npos : comma - from));
            if (comma == std::string::npos) break;
            from = comma + 1;
        }
        ICLAB_INPUT_CHECK(pooling[i] == "values" || pooling[i] == "seed_means",
                          file << ": /claims/pooling of " << c.id << " is '" << pooling[i] << "' (values or seed_means)");
        c.pooling = pooling[i] == "seed_means" ? ClaimPooling::seed_means : ClaimPooling::values;
        ICLAB_INPUT_CHECK(deterministic[i] == 0 || deterministic[i] == 1,
                          file << ": /claims/deterministic of " << c.id << " is " << deterministic[i] << " (0 or 1)");
        c.deterministic = has_deterministic ? deterministic[i] == 1
                                            : c.kind == ClaimKind::own_check && c.rule.counts() && c.rule.needed == 0 &&
                                                  !c.pair.paired() && c.pooling == ClaimPooling::values;
        try {
            check_claim(c);
        } catch (const Error& e) {
            ICLAB_INPUT_CHECK(false, file << ": /claims row " << i << ": " << e.what());
        }
        auto& [u, v] = values[c.id];
        out.push_back(evaluate_claim(c, u, v));
        out.back().selection = selection[i];
    }
    ICLAB_INPUT_CHECK(values.size() == rows, file << ": /claim_values names a claim /claims does not declare");
    return out;
}

}  // namespace iclab::io
