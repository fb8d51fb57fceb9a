// The reproduction claims of the gd004_example experiment (claims.hpp): paper 004 §5.2 / App. A.4 on the trained layer.
#include "experiments/gd004_example/claims.hpp"

#include <cmath>
#include <cstdio>

#include "framework/core/check.hpp"

namespace iclab::experiments::gd004_example_claims {

namespace {

const char* const kReadme = "experiments/gd004_example/README.md#claims";
constexpr double kPaperFactor = 3.0;  // the paper's one example against our median: the same scale
// Both claims over training seeds (per seed a continuous median) were a count of >= 2/3 of the seeds, which passes a
// fair coin 19 % of the time over 5 seeds; they are now judged as the other experiments' continuous claims are.
const char* const kAfterAudit =
    "chosen after the first runs (2026-11-29): third audit of issue 45, '>= 2/3 of the seeds' passes a fair coin 19 % of "
    "the time over 5 seeds; now the 95 % t-interval of the seed mean (one-sided: false pass 2.5 %; the band: at most "
    "2.5 % for a true value outside it); the quick runs at 746b4fb had been seen (both verdicts as now)";

const char* const kControlsDeclared =
    "declared after the first runs (2026-12-01): fourth audit of issue 45, the negative controls had been judged only "
    "inside /tables/004_variants_trained's verdict, with the spec's floor 1e-4 (unchanged); the quick runs at eb1e3c8 "
    "had been seen (every control above it, the smallest 1.4e-3)";

std::string number(double x, const char* format = "%.4g") {
    char text[32];
    std::snprintf(text, sizeof text, format, x);
    return text;
}

}  // namespace

std::string variant_claim_id(std::size_t v, std::size_t N) {
    return "004-7 " + std::string(kVariants[v].name) + " N=" + std::to_string(N) + " trained fp64: dual exact";
}
std::string reg_control_id(std::size_t N) { return "004-7 reg N=" + std::to_string(N) + " trained fp64 control: a wrong regularized dual is caught"; }

std::vector<DeclaredClaim> declare_claims(std::size_t N) {
    const std::string n = "N=" + std::to_string(N), tag = "004-5.2 " + n + " ";
    std::vector<DeclaredClaim> out;
    auto exact = [&](Value value, const std::string& id, const std::string& source, const std::string& statement,
                     const std::string& metric, double bar, std::size_t variant = 0) {
        DeclaredClaim d;
        d.value = value, d.variant = variant;
        io::Claim& c = d.claim;
        c.id = id, c.paper = "004", c.source = source, c.kind = io::ClaimKind::own_check, c.unit = "instance";
        c.statement = statement + " (<= " + number(bar, "%.0e") + " on every test sequence)";
        c.metric = "per test sequence of the trained task: " + metric;
        c.rule = io::ClaimRule::count_at_most(bar);
        c.deterministic = true;  // an identity on every test sequence: one value decides
        c.readme = kReadme;
        out.push_back(d);
    };
    const std::string thm = "§5.2 ('GD-CL matches exactly'), Theorem 1";
    exact(Value::err64, tag + "fp64: y_CL = y_TF", thm,
          "after N N_CL steps of batch-1 SGD on the contrastive loss, the reference model's output equals the trained layer's, fp64",
          "relative error of W^(S) phi(q) against the attention output (whole vector)", kBarFp64);
    exact(Value::model_vs_cl64, tag + "fp64: model forward = y_CL", thm,
          "the trained model's own forward pass predicts y_CL, fp64", "|y_CL - y_model| / max(1, |y_model|)", kBarFp64);
    exact(Value::err32, tag + "fp32: y_CL = y_TF", thm, "the same identity in fp32",
          "relative error of W^(S) phi(q) against the attention output, fp32", kBarFp32);
    exact(Value::epochs64, tag + "fp64: linear between epochs", "Fig. 3 (left), spec gd_duals §3.3.2",
          "the GD-CL trajectory is linear in the epoch at the epoch boundaries, fp64", "largest deviation over the epoch boundaries",
          kBarFp64);
    exact(Value::epochs32, tag + "fp32: linear between epochs", "Fig. 3 (left), spec gd_duals §3.3.2",
          "the same in fp32", "largest deviation over the epoch boundaries, fp32", kBarFp32);
    // Each identity's negative control is one claim of its own (fourth audit of issue 45: the controls were judged only
    // inside the raw table's verdict), shared by the checks on the same sequences.
    auto control = [&](Value value, const std::string& id, const std::string& statement, const std::string& metric, std::size_t variant) {
        exact(value, id, "spec gd_duals §3.5 (negative control)", statement, metric, kControlFloor, variant);
        io::Claim& c = out.back().claim;
        c.statement = "negative control: " + statement + " (> " + number(kControlFloor, "%.0e") + " on every test sequence where it can fail)";
        c.rule = io::ClaimRule::count_above(kControlFloor);
        c.provenance = kControlsDeclared;
    };
    control(Value::control64, tag + "fp64 control: a wrong dual is caught",
            "the fp64 identities above can fail: the dual with D over keys 1..N only, and with W_0 := 0 (skipped where "
            "a_N+1 |v_N+1| < 1e-3), differs from the layer's output (shared by the fp64 identity, model-forward and "
            "epoch checks)",
            "min over the two controls of their relative error against the attention output", 0);
    // The regularized variants (one full-batch step of Eq. 14): at N = kFig10Demos gd004_figures' Figure 10 judges that
    // identity on the same trained layer (kRegJudgedBy; fourth audit of issue 45: one identity on one model is one
    // claim), so only their negative control is a claim here; at another N no other claim covers the layer.
    const bool reg_elsewhere = N == kFig10Demos;
    for (std::size_t v = 0; v < std::size(kVariants); ++v)
        if (std::string(kVariants[v].variant) == "reg" && !reg_elsewhere)
            exact(Value::variant, variant_claim_id(v, N), "§7 Eq. 14",
                  std::string("the dual of the regularized attention variant (") + kVariants[v].name +
                      ") matches it on the trained weights, fp64",
                  "relative error of the variant's dual against the variant's attention output", kVariants[v].bar, v);
    control(Value::reg_control, reg_control_id(N),
            "the regularized duals can fail: the base model's dual differs from the regularized attention's output (every "
            "alpha of /tables/004_variants_trained, on the sequences where alpha a_N+1 |v_N+1| >= 1e-3)",
            "relative error of the base model's dual against the regularized attention output", 0);
    for (std::size_t v = 0; v < std::size(kVariants); ++v) {
        if (std::string(kVariants[v].variant) == "reg") continue;
        const std::string id = variant_claim_id(v, N);
        exact(Value::variant, id, "§7 Eq. 17-18",
              std::string("the dual of the negative-sample attention variant (") + kVariants[v].name +
                  ") matches it on the trained weights, fp64",
              "relative error of the variant's dual against the variant's attention output", kVariants[v].bar, v);
        control(Value::variant_control, id + " control",
                std::string("the check above can fail: the base model's dual differs from the variant's output (") + kVariants[v].name + ")",
                "relative error of the base model's dual against the variant's attention output", v);
    }

    // Per training seed: the layer's accuracy (the paper: "the predictions ... are very close to the ground truth").
    DeclaredClaim d;
    io::Claim& c = d.claim;
    c.paper = "004", c.unit = "seed", c.readme = kReadme;
    d.value = Value::relative_error;
    c.id = tag + "layer predicts the label";
    c.source = "§5.2 / App. A.4 ('very close to the ground truth values')";
    c.kind = io::ClaimKind::qualitative;
    c.statement = "the trained layer predicts the query's label better than the zero predictor (the direction of the paper's "
                  "'very close'; the scale is the next claim), on the mean over the training seeds (95 % t-interval)";
    c.metric = "median |y_TF - y| / median |y| over the test sequences of one training seed";
    c.rule = io::ClaimRule::interval_below(1.0);
    c.provenance = kAfterAudit;
    out.push_back(d);
    for (const PaperExample& p : kPaper) {
        if (p.demos != N) continue;
        const double scale = std::abs(p.y_tf - p.y_true);
        d.value = Value::error_scale;
        c.id = tag + "error scale of the paper's example";
        c.source = std::string(N == 15 ? "§5.2" : "App. A.4") + " (y = " + number(p.y_true) + ", y_TF = " + number(p.y_tf) + ")";
        c.kind = io::ClaimKind::own_check;
        c.statement = "the layer's median |y_TF - y| is within a factor 3 of the paper's one example, |" + number(p.y_tf) + " - (" +
                      number(p.y_true) + ")| = " + number(scale) + " (derived from the two printed values; their draw, our median), "
                      "on the mean over the training seeds (95 % t-interval inside the band)";
        c.metric = "median |y_TF - y| over the test sequences of one training seed";
        c.rule = io::ClaimRule::interval_within(scale / kPaperFactor, scale * kPaperFactor);
        c.provenance = kAfterAudit;
        out.push_back(d);
    }
    for (const auto& claim : out) io::check_claim(claim.claim);
    return out;
}

std::vector<io::ClaimResult> evaluate_claims(const std::vector<DeclaredClaim>& claims, const Measured& m, std::int64_t seed) {
    std::vector<io::ClaimResult> out;
    for (const DeclaredClaim& d : claims) {
        if (d.value == Value::relative_error || d.value == Value::error_scale) {
            const double x = d.value == Value::error_scale ? m.median_abs_err : m.median_abs_err / m.median_abs_y;
            out.push_back(io::evaluate_claim(d.claim, {seed}, {x}));
            continue;
        }
        ICLAB_CHECK(d.value != Value::variant || d.variant < m.variant_err.size(), "claim " << d.claim.id << " names no variant");
        if (d.value == Value::reg_control) {  // every regularized variant's control, one unit per (variant, sequence)
            std::vector<std::int64_t> units;
            std::vector<double> values;
            for (std::size_t v = 0; v < std::size(kVariants) && v < m.variant_control.size(); ++v)
                if (std::string(kVariants[v].variant) == "reg")
                    for (std::size_t i = 0; i < m.variant_control[v].size(); ++i) {
                        units.push_back(static_cast<std::int64_t>(units.size()));
                        values.push_back(m.variant_control[v][i]);
                    }
            out.push_back(io::evaluate_claim(d.claim, units, values));
            continue;
        }
        if (d.value == Value::variant_control) {
            ICLAB_CHECK(d.variant < m.variant_control.size() && d.variant < m.variant_control_units.size(),
                        "claim " << d.claim.id << " names no variant control");
            out.push_back(io::evaluate_claim(d.claim, m.variant_control_units[d.variant], m.variant_control[d.variant]));
            continue;
        }
        const std::vector<double>& values = d.value == Value::err64           ? m.err64
                                            : d.value == Value::model_vs_cl64 ? m.model_vs_cl64
                                            : d.value == Value::err32         ? m.err32
                                            : d.value == Value::epochs64      ? m.epochs64
                                            : d.value == Value::epochs32      ? m.epochs32
                                            : d.value == Value::control64     ? m.control64
                                                                              : m.variant_err[d.variant];
        std::vector<std::int64_t> units;
        for (std::size_t b = 0; b < values.size(); ++b) units.push_back(static_cast<std::int64_t>(b));
        out.push_back(io::evaluate_claim(d.claim, units, values));
    }
    return out;
}

}  // namespace iclab::experiments::gd004_example_claims
