// Paper 000 §6.4's gap closed and the claims on it (see iclaa_claims.hpp).
#include "framework/icl/iclaa_claims.hpp"

#include <cstdio>

#include "framework/core/check.hpp"

namespace iclab::icl {

namespace {

const std::string kIdPrefix = "000-6.4 ";
const std::string kAboveZero = " G>0 ", kAbovePaper = " G>=paper ";

}  // namespace

std::vector<double> gap_closed_per_instance(const std::vector<double>& before, const std::vector<double>& after) {
    ICLAB_CHECK(before.size() == after.size(), "gap closed: " << before.size() << " errors before, " << after.size() << " after");
    std::vector<double> gap(before.size());
    for (std::size_t i = 0; i < before.size(); ++i) gap[i] = gap_closed(before[i], after[i]);
    return gap;
}

std::string gap_claim_row_label(const std::string& map, std::size_t features) { return map + " F=" + std::to_string(features); }

namespace {

// The two claims on the row `label`: `method` names the map in the statements ("Performer features (prf)"),
// `averaged` what each instance's error is averaged over ("the feature seeds").
std::vector<io::Claim> make_gap_claims(const std::string& experiment, const std::string& label, const std::string& method,
                                       const std::string& map, const std::string& averaged, const std::string& instance,
                                       const std::string& readme, io::ClaimPooling pooling) {
    char bar[64];
    std::snprintf(bar, sizeof bar, "%.4f", paper_gap_closed());
    io::Claim c;
    c.paper = "000";
    c.source = "§6.4 (16.56 % -> 9.17 %)";
    c.unit = "instance";
    c.metric = "per " + instance + ": G = 1 - err(" + label + ") / err(no prompt), err = relative logit error on X against M_old on "
               "[X'; X], mean over " + averaged;
    c.readme = readme;
    c.pooling = pooling;
    std::vector<io::Claim> claims;
    c.id = kIdPrefix + experiment + kAboveZero + label;
    c.kind = io::ClaimKind::qualitative;
    c.statement = "ICLAA with " + method + " brings the model without the prompt closer to the model with it "
                  "(the paper: 'the model still gains valuable context from the included bias terms')";
    c.rule = io::ClaimRule::interval_above(0.0);
    claims.push_back(c);
    c.id = kIdPrefix + experiment + kAbovePaper + label;
    c.kind = io::ClaimKind::own_check;
    c.statement = "ICLAA (" + map + ") closes at least the paper's share of the gap, 1 - 9.17/16.56 = " + std::string(bar) +
                  " (derived from the two printed errors on GPT-2; our model and prompts differ); the values of the G>0 "
                  "claim of the same row against this higher bar";
    c.rule = io::ClaimRule::interval_above(paper_gap_closed());
    claims.push_back(c);
    // Rules chosen after results had been seen (second audit of issue 45), marked with what was seen.
    // iclaa (third audit of issue 45, from git history): its G claims were pooled per prompt pair when declared (b126667),
    // and by seed means from 585e794, after 8783951's README had shown the pair-pooled verdicts; the learned row's claims
    // were declared in 585e794, after 50e6623's README had shown its G.
    if (experiment == "iclaa" && label == kLearnedValidationRow) {
        for (io::Claim& claim : claims)
            claim.provenance = "declared after the first runs (2026-11-26, 585e794): the README of 2026-11-25 (50e6623) had shown "
                               "the learned maps' G at 0.62-0.83 on the quick runs; pooled by seed means from its declaration";
    } else if (experiment == "iclaa") {
        const std::string pooled = "pooled by seed means (one value per trained model) since 2026-11-26 (585e794), was every "
                                   "prompt pair of every model as a value (b126667), after the README of 8783951 had shown the "
                                   "pair-pooled verdicts (G>0 reproduced: prf 0.0364 [0.0264, 0.0464], orf 0.0287 [0.0200, "
                                   "0.0375] at F = 4096)";
        claims[0].provenance = "chosen after the first runs (2026-11-26, 585e794): " + pooled;
        claims[1].provenance = "chosen after the first runs (2026-11-26, b126667, 585e794): declared 2026-11-25 (c7b1215) as the "
                               "band |G - 0.4463| <= 0.1, made one-sided (G above 0.4463) after the README of 2026-11-25 "
                               "(50e6623) had shown learned G 0.62-0.83 and PRF G <= 0.065; then " + pooled;
    }
    if (experiment == "iclaa_lm")
        for (io::Claim& claim : claims)
            claim.provenance = "chosen after the first runs (2026-11-29, f9eb935): issue 45, pooled by seed means (one value per "
                               "trained model), was every held-out window of every model as a value, after the quick runs";
    // A claim about trained models is judged over the models (issue 45): the instances of one model are not seeds.
    if (pooling == io::ClaimPooling::seed_means)
        for (io::Claim& claim : claims)
            claim.statement += "; judged over the trained models: one value per training seed, its mean G over the " + instance + "s";
    for (const auto& claim : claims) io::check_claim(claim);
    return claims;
}

std::string list_text(const std::vector<std::int64_t>& values) {
    std::string out;
    for (std::size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
    return out;
}

}  // namespace

std::vector<io::Claim> gap_closed_claims(const std::string& experiment, const std::string& map, std::size_t features,
                                         const std::string& instance, const std::string& readme, io::ClaimPooling pooling) {
    ICLAB_CHECK(map == "prf" || map == "orf", "gap claims are on the paper's Performer maps (prf, orf), not '" << map << "'");
    return make_gap_claims(experiment, gap_claim_row_label(map, features), "Performer features (" + map + ")", map, "the feature seeds",
                           instance, readme, pooling);
}

std::vector<io::Claim> learned_gap_closed_claims(const std::string& experiment, const std::vector<std::int64_t>& candidates,
                                                 const std::string& validation, const std::string& instance, const std::string& readme,
                                                 io::ClaimPooling pooling) {
    ICLAB_CHECK(!candidates.empty() && !validation.empty(), "learned gap claims need candidate F values and validation instances");
    const std::string method = "the learned feature map (spec §4.1) at the F picked on " + validation + " (the lowest mean relative "
                               "logit error among F = " + list_text(candidates) + "; the " + instance + "s judged here are disjoint "
                               "from them)";
    return make_gap_claims(experiment, kLearnedValidationRow, method, "learned, F picked on " + validation, "the fit seeds", instance,
                           readme, pooling);
}

std::string learned_selection_text(std::size_t picked, const std::vector<std::int64_t>& candidates, const std::vector<double>& validation_error) {
    ICLAB_CHECK(candidates.size() == validation_error.size(), "learned selection: " << candidates.size() << " F values, "
                                                                                      << validation_error.size() << " errors");
    std::string out = "F=" + std::to_string(picked) + " (mean relative logit error on the validation pairs:";
    char value[64];
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        std::snprintf(value, sizeof value, "%s F=%lld %.4f", i ? "," : "", static_cast<long long>(candidates[i]), validation_error[i]);
        out += value;
    }
    return out + ")";
}

std::string gap_claim_row(const io::Claim& claim) {
    if (claim.id.compare(0, kIdPrefix.size(), kIdPrefix) != 0) return "";
    for (const std::string& marker : {kAboveZero, kAbovePaper}) {
        const auto at = claim.id.find(marker, kIdPrefix.size());
        if (at != std::string::npos) return claim.id.substr(at + marker.size());
    }
    return "";
}

}  // namespace iclab::icl
