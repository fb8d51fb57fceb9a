// Experiment `prompt_baking_lm`: the claims, declared before the runs (issue 43 §2), and their values per window. None
// is from a paper: this project's own hypotheses about a comparison no anchor made (kind own_check, paper "none").
// Claims about the trained models pool the per-seed means of the windows over >= 5 model seeds (ClaimPooling::
// seed_means: windows of one model are instances, not seeds); "ICLCA beats baking on every window" is one value per
// model too (its share of windows lost, 0 on every seed); only the exact methods' own errors (identities, one value
// decides) pool every window of every seed.
#include <algorithm>
#include <cmath>
#include <vector>

#include "experiments/prompt_baking_lm/prompt_baking_lm_rows.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"

namespace iclab::experiments::prompt_baking_lm_detail {

namespace {

const char* const kReadme = "experiments/prompt_baking_lm/README.md#claims";
const char* const kPaper = "none (issue 43: own hypothesis)";

// What a claim's value per window is: a difference of two rows' relative logit errors, the gap closed by one row
// (G on the relative logit error, K on the KL), a difference of two rows' gaps, one row's error, or whether the first
// row's error is not below the second's (1 or 0: iclab::not_below).
enum class Value { error_difference, not_below, gap, kl_gap, gap_difference, kl_gap_difference, error };

struct ClaimSpec {
    std::string id, statement, metric;
    io::ClaimRule rule;
    io::ClaimPooling pooling;
    Value value;
    std::string first, second;  // row labels
};

std::vector<ClaimSpec> claim_specs(bool linear, std::size_t D, const std::vector<std::string>& targets, const std::vector<std::string>& maps,
                                   std::size_t rank) {
    const auto has = [](const std::vector<std::string>& list, const char* name) { return std::find(list.begin(), list.end(), name) != list.end(); };
    const auto every = io::ClaimPooling::values, per_seed = io::ClaimPooling::seed_means;
    const std::string err = "err = relative logit error on X against M_old on [X'; X]";
    const std::string lora = lora_label(rank);
    std::vector<ClaimSpec> specs;
    if (linear) {
        specs.push_back({"bakelm-lin iclca exact", "on the linear KJV model ICLCA's biases reproduce M_old with the prompt to fp64 rounding (the machinery is right)",
                         "per window: err(iclca), " + err, io::ClaimRule::count_at_most(1e-12), every, Value::error, kIclcaLabel, ""});
        for (const char* target : {"biases", "lora"}) {
            if (!has(targets, target)) continue;
            const std::string row = target == std::string("biases") ? kBakeBiasesLabel : lora;
            // Every window of every trained model, judged one value per model (issue 45, F2 of the referee audit): the
            // windows of one model are not independent draws of the training. A model's value is its share of windows
            // where ICLCA does not win; every seed must have share 0 (a coin passes 5 of 5 seeds with 3.1 %).
            specs.push_back({"bakelm-lin exact<bake " + std::string(target),
                             "on the linear KJV model exact conversion (ICLCA) beats baking into " + std::string(target) +
                                 " at equal bytes on every window of every trained model: its relative logit error is lower",
                             "per window: 1 when err(iclca) >= err(" + row + ") (ICLCA does not win), else 0; " + err,
                             io::ClaimRule::count_at_most(0.0), per_seed, Value::not_below, kIclcaLabel, row});
            specs.push_back({"bakelm-lin G>0 bake " + std::string(target),
                             "baking into " + std::string(target) + " brings the linear KJV model without the prompt closer to the model with it (logits)",
                             "per window: G = 1 - err(" + row + ") / err(no prompt)", io::ClaimRule::interval_above(0.0), per_seed, Value::gap, row, ""});
            specs.push_back({"bakelm-lin K>0 bake " + std::string(target),
                             "baking into " + std::string(target) + " brings the linear KJV model's next-token distributions closer to the model with the prompt",
                             "per window: K = 1 - KL(" + row + ") / KL(no prompt), KL(p_ref || p) mean over X's positions",
                             io::ClaimRule::interval_above(0.0), per_seed, Value::kl_gap, row, ""});
        }
        if (has(targets, "biases") && has(targets, "lora"))
            specs.push_back({"bakelm-lin biases<lora",
                             "on the linear KJV model baking into b_KV, b_D (ICLCA's parameters) reaches a lower logit error than a LoRA on "
                             "W_Q, W_K, W_V of equal bytes",
                             "per window: err(bake biases) - err(" + lora + ")", io::ClaimRule::interval_below(0.0), per_seed,
                             Value::error_difference, kBakeBiasesLabel, lora});
        return specs;
    }
    specs.push_back({"bakelm-soft cache exact", "on the softmax KJV model the exact prompt cache reproduces M_old with the prompt to fp64 rounding (the check)",
                     "per window: err(exact cache), " + err, io::ClaimRule::count_at_most(1e-12), every, Value::error, kCacheLabel, ""});
    if (!has(targets, "lora")) return specs;
    specs.push_back({"bakelm-soft G>0 bake lora", "baking into a LoRA brings the softmax KJV model without the prompt closer to the model with it (logits)",
                     "per window: G = 1 - err(" + lora + ") / err(no prompt)", io::ClaimRule::interval_above(0.0), per_seed, Value::gap, lora, ""});
    specs.push_back({"bakelm-soft K>0 bake lora", "baking into a LoRA brings the softmax KJV model's next-token distributions closer to the model with the prompt",
                     "per window: K = 1 - KL(" + lora + ") / KL(no prompt)", io::ClaimRule::interval_above(0.0), per_seed, Value::kl_gap, lora, ""});
    for (const char* map : {"prf", "learned"}) {
        if (!has(maps, map)) continue;
        const std::string row = kernel_label(map, D);
        specs.push_back({"bakelm-soft lora>" + std::string(map),
                         "on the softmax KJV model baking (LoRA) closes more of the logit gap than ICLAA with " + std::string(map) +
                             " features at equal bytes (F = D = " + std::to_string(D) + ")",
                         "per window: G(" + lora + ") - G(" + row + ")", io::ClaimRule::interval_above(0.0), per_seed, Value::gap_difference, lora, row});
        specs.push_back({"bakelm-soft KL lora>" + std::string(map),
                         "on the softmax KJV model baking (LoRA) closes more of the KL gap than ICLAA with " + std::string(map) +
                             " features at equal bytes (F = D = " + std::to_string(D) + ")",
                         "per window: K(" + lora + ") - K(" + row + ")", io::ClaimRule::interval_above(0.0), per_seed, Value::kl_gap_difference,
                         lora, row});
    }
    return specs;
}

std::vector<ClaimSpec> specs_of(const config::Config& cfg, const ClaimSetting& setting) {
    return claim_specs(setting.linear, setting.head_dim, cfg.get_string_list("prompt_baking_lm.targets"),
                       cfg.get_string_list("prompt_baking_lm.iclaa.feature_maps"), setting.lora_rank);
}

}  // namespace

const char* kind_name(Kind kind) {
    switch (kind) {
        case Kind::before: return "before";
        case Kind::reference: return "reference";
        case Kind::iclca: return "iclca";
        case Kind::cache: return "cache";
        case Kind::kernel: return "iclaa";
        case Kind::hybrid: return "hybrid";
        case Kind::bake_biases: return "bake_biases";
        case Kind::bake_lora: return "bake_lora";
    }
    return "?";
}

std::string kernel_label(const std::string& map, std::size_t features) { return map + " F=" + std::to_string(features); }
std::string lora_label(std::size_t rank) { return "bake lora r=" + std::to_string(rank); }

std::vector<io::Claim> declare_claims(const config::Config& cfg, const ClaimSetting& setting) {
    std::vector<io::Claim> claims;
    for (const ClaimSpec& spec : specs_of(cfg, setting)) {
        io::Claim c;
        c.id = spec.id;
        c.paper = kPaper;
        c.source = "issue 43 §2 (prompt baking, Bhargava et al. 2024, as the baseline), KJV language models";
        c.kind = io::ClaimKind::own_check;
        c.statement = spec.statement;
        c.metric = spec.metric;
        c.unit = "instance";
        c.rule = spec.rule;
        c.pooling = spec.pooling;
        if (spec.value == Value::not_below)
            c.provenance = "chosen after the first runs (2026-11-30): referee audit of issue 45 (F2), the windows of every trained "
                           "model were pooled as values (40 windows of 5 models counted as 40 independent values); now one "
                           "value per trained model, its share of windows where ICLCA does not win; the quick record at "
                           "eb1e3c8 had been seen (ICLCA won all 40 windows)";
        // Deterministic (io::Claim::deterministic: one value decides): only the exact methods' own errors on every window
        // (ICLCA's biases, the exact prompt cache). "exact < bake" compares with a trained adapter: the floor of 5.
        c.deterministic = spec.value == Value::error;
        c.readme = kReadme;
        if (spec.pooling == io::ClaimPooling::seed_means)
            c.statement += "; judged over the trained models: one value per model seed, its mean over the held-out windows";
        io::check_claim(c);
        claims.push_back(c);
    }
    return claims;
}

std::vector<io::ClaimResult> evaluate_claims(const config::Config& cfg, const ClaimSetting& setting, const std::vector<io::Claim>& claims,
                                             const std::vector<Row>& rows, const std::vector<std::vector<WindowScore>>& scores) {
    const auto row_of = [&](const std::string& label) -> const std::vector<WindowScore>& {
        for (std::size_t r = 0; r < rows.size(); ++r)
            if (rows[r].label == label) return scores[r];
        throw Error("prompt_baking_lm: a claim's row '" + label + "' is missing");
    };
    const std::vector<WindowScore>& before = row_of(kBeforeLabel);
    const auto gap = [&](const std::vector<WindowScore>& s, std::size_t i) { return 1.0 - s[i].relative_error / before[i].relative_error; };
    const auto kl_gap = [&](const std::vector<WindowScore>& s, std::size_t i) { return 1.0 - s[i].kl / before[i].kl; };
    const std::vector<ClaimSpec> specs = specs_of(cfg, setting);
    std::vector<io::ClaimResult> out;
    for (const io::Claim& c : claims) {
        const auto spec = std::find_if(specs.begin(), specs.end(), [&](const ClaimSpec& s) { return s.id == c.id; });
        ICLAB_CHECK(spec != specs.end(), "prompt_baking_lm: no value for claim '" << c.id << "'");
        std::vector<std::int64_t> units;
        std::vector<double> values;
        for (std::size_t i = 0; i < before.size(); ++i) {
            const auto& a = row_of(spec->first);
            double x = 0.0;
            switch (spec->value) {
                case Value::error: x = a[i].relative_error; break;
                case Value::error_difference: x = a[i].relative_error - row_of(spec->second)[i].relative_error; break;
                case Value::not_below: x = not_below(a[i].relative_error, row_of(spec->second)[i].relative_error); break;
                case Value::gap: x = gap(a, i); break;
                case Value::kl_gap: x = kl_gap(a, i); break;
                case Value::gap_difference: x = gap(a, i) - gap(row_of(spec->second), i); break;
                case Value::kl_gap_difference: x = kl_gap(a, i) - kl_gap(row_of(spec->second), i); break;
            }
            units.push_back(static_cast<std::int64_t>(i));
            values.push_back(x);
        }
        out.push_back(io::evaluate_claim(c, units, values));
    }
    return out;
}

}  // namespace iclab::experiments::prompt_baking_lm_detail
