// Paper 000 Table 2: one pair's scores and the claims (table2.hpp).
#include "experiments/iclca_induction/table2.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/exactness_bars.hpp"

namespace iclab::experiments::iclca_table2 {

PairScores score_pair(const tasks::PromptPair& pair, const double* const logits[kRows], std::size_t N, std::size_t V) {
    PairScores s;
    for (std::size_t t = 0; t < N; ++t) {
        std::size_t best[kRows];
        for (int m = 0; m < kRows; ++m) {
            best[m] = argmax_of(logits[m] + t * V, V);
            s.undefined[m] += best[m] == V;
        }
        s.argmax_agreement += best[kNewNoIcl] == best[kOldIcl] && best[kOldIcl] != V;
        const bool scored = pair.kinds[t] == tasks::PositionKind::first_trigger, repeat = pair.kinds[t] == tasks::PositionKind::icl;
        s.scored += scored;
        s.repeats += repeat;
        for (int m = 0; m < kRows; ++m) {
            const bool correct = static_cast<std::int32_t>(best[m]) == pair.targets[t];  // never for best = V (no token)
            s.correct[m] += scored && correct;
            s.repeat_correct[m] += repeat && correct;
        }
    }
    s.relative_logit_error = relative_error(logits[kNewNoIcl], logits[kOldIcl], N * V);
    return s;
}

double accuracy(std::int64_t correct, std::int64_t positions, std::int64_t undefined) {
    return positions > 0 && undefined == 0 ? static_cast<double>(correct) / static_cast<double>(positions) : std::nan("");
}

std::vector<io::ClaimResult> claims(const std::vector<double>& accuracy, const std::vector<PairScores>& scores, std::int64_t seed) {
    ICLAB_CHECK(accuracy.size() == kRows, "Table 2 claims: " << accuracy.size() << " accuracies for " << kRows << " rows");
    // The 95 % t-interval over the training seeds pooled by `iclab claims` (one run alone is inconclusive):
    //  - M_old with ICL: the printed 99.95 % within 2 points (1000 pairs: binomial noise ~1 point);
    //  - M_old without ICL: below a bar half-way between chance (1/47) and the printed ICL accuracy, so that a model
    //    with ICL fails it (a band around chance, as before, held for any model without ICL and could not fail);
    //  - M_new without ICL: equals M_old with ICL by ICLCA's identity (Theorem 4.1), so it is not a second accuracy
    //    but the conversion's exactness on every pair. Equal correct counts per pair, the rule before, passed two NaN
    //    models and two models right on different positions (issue 45, second audit).
    const char* const kRuleDate = "chosen after the first runs (2026-11-29): issue 45, ";
    const double chance = 1.0 / 47.0, no_icl_bar = (chance + kPaperAccuracy[kOldIcl]) / 2.0;
    const double exact_bar = icl::kIclcaExactBarFp64;
    std::vector<io::ClaimResult> out;
    for (int m = 0; m < kRows; ++m) {
        io::Claim c;
        c.id = std::string("000-T2 ") + kRowNames[m];
        c.paper = "000";
        c.source = "Table 2";
        c.metric = "accuracy on the committed trigger positions of the evaluation pairs";
        c.readme = "experiments/iclca_induction/README.md#claims-and-the-printed-numbers";
        if (m == kOldIcl) {
            c.kind = io::ClaimKind::printed_number;
            c.statement = std::string("in-context accuracy of ") + kRowNames[m] + " on " + kRowInputs[m];
            c.paper_value = kPaperAccuracy[m];
            c.rule = io::ClaimRule::interval_within(kPaperAccuracy[m] - 0.02, kPaperAccuracy[m] + 0.02);
            c.provenance = "chosen after the first runs (2026-11-23): the +-2-point band was the raw table's paper band from "
                           "dfce7cd (2026-11-23), written when runs of this experiment existed; declared as this claim on "
                           "2026-11-25 (5690b95)";
        } else if (m == kOldNoIcl) {
            char text[400];
            std::snprintf(text, sizeof text,
                          "M_old without the prompt (input X) shows no in-context learning: accuracy below %.4f, half-way "
                          "between chance (1/47 = %.4f) and the printed ICL accuracy 0.9995, so a model with ICL fails; the "
                          "paper prints 2.23 %% (Table 2)", no_icl_bar, chance);
            c.kind = io::ClaimKind::qualitative;
            c.statement = text;
            c.rule = io::ClaimRule::interval_below(no_icl_bar);
            c.provenance = std::string(kRuleDate) + "the band [0.0023, 0.0423] around chance could not fail";
        } else {
            char text[400];
            std::snprintf(text, sizeof text,
                          "M_new without the prompt gives the logits of M_old with it on every evaluation pair (ICLCA is exact, "
                          "Theorem 4.1; float64: relative logit error <= %.0e, rounding only), so it scores as M_old with the "
                          "prompt: the paper prints 99.95 %% for both, one number, judged once in '000-T2 M_old, ICL'", exact_bar);
            c.kind = io::ClaimKind::own_check;
            c.source = "Table 2, Theorem 4.1, Algorithm 1";
            c.statement = text;
            c.metric = "per evaluation pair: ||M_new(X) - M_old([X'; X])|| / ||M_old([X'; X])|| over X's logits, float64";
            c.unit = "instance";
            c.rule = io::ClaimRule::count_at_most(exact_bar);
            c.deterministic = true;  // Theorem 4.1 on every pair: one value decides
            c.provenance = std::string(kRuleDate) + "second audit: the identity judged by the conversion's exactness per pair; "
                           "equal correct counts per pair, the rule before, passed two NaN models and two models right on "
                           "different positions";
            std::vector<std::int64_t> units;
            std::vector<double> errors;
            for (std::size_t p = 0; p < scores.size(); ++p) {
                units.push_back(static_cast<std::int64_t>(p));
                errors.push_back(scores[p].relative_logit_error);
            }
            out.push_back(io::evaluate_claim(c, units, errors));
            continue;
        }
        out.push_back(io::evaluate_claim(c, {seed}, {accuracy[static_cast<std::size_t>(m)]}));
    }
    return out;
}

}  // namespace iclab::experiments::iclca_table2
