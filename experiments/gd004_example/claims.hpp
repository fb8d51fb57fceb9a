#pragma once
// Internal to the gd004_example experiment: the paper's printed example, the §7 variant duals run on the trained
// weights, and the reproduction claims of a run (claims.cpp), declared from the config before training.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/io/claims.hpp"

namespace iclab::experiments::gd004_example_claims {

// Paper 004 §5.2 (N = 15) and App. A.4 (N = 31): the example's label and the layer's prediction, as printed.
struct PaperExample {
    std::size_t demos;
    double y_true, y_tf;
};
inline constexpr PaperExample kPaper[] = {{15, -0.5927, -0.6490}, {31, 0.2767, 0.2915}};

// The §7 variant duals on the trained weights (spec gd_duals §7), fp64, with the spec's bar: 1e-12 for the single
// full-batch step of the regularized Eq. 14, 1e-11 for the N·N_CL sequential steps of the negatives (Eq. 17-18).
struct VariantSpec {
    const char* name;
    const char* variant;  // "reg" or "neg"
    double alpha;         // reg
    bool renorm;          // neg
    double bar;
};
inline constexpr VariantSpec kVariants[] = {{"reg alpha=0.01", "reg", 0.01, false, 1e-12},
                                            {"reg alpha=0.1", "reg", 0.1, false, 1e-12},
                                            {"neg k=3 beta=0.1 none", "neg", 0.0, false, 1e-11},
                                            {"neg k=3 beta=0.1 uniform", "neg", 0.0, true, 1e-11}};

// The floor every negative control must reach (spec gd_duals §3.5: a wrong dual differs by at least this much).
inline constexpr double kControlFloor = 1e-4;
// The claim that judges the regularized variants' identity at N = kFig10Demos: gd004_figures' Figure 10 claim (bar
// 1e-11), which trains the same layer at that size in both profiles (T = 16; fourth audit of issue 45: one identity on
// one model is one claim). At another N the variants' own claims judge it (bar 1e-12).
inline constexpr std::size_t kFig10Demos = 15;
inline constexpr const char* kRegJudgedBy = "004-F10 N_CL 1 full batch = Eq. 14 (gd004_figures, the same trained layer)";

// Theorem 1's bars on the trained layer (spec gd_duals §2: N·N_CL sequential steps): fp64 1e-11, fp32 1e-5.
inline constexpr double kBarFp64 = 1e-11, kBarFp32 = 1e-5;

// What one run measured: per dual sequence (unit `instance`) and per run (unit `seed`).
struct Measured {
    std::vector<double> err64, model_vs_cl64, err32, epochs64, epochs32;  // per dual sequence
    std::vector<double> control64;  // per dual sequence: the smaller of Theorem 1's two negative controls (fp64)
    std::vector<std::vector<double>> variant_err;                         // per kVariants entry, per dual sequence
    // per kVariants entry: the negative control (the base model's dual against the variant) on the sequences where it
    // can fail, and those sequences' indices
    std::vector<std::vector<double>> variant_control;
    std::vector<std::vector<std::int64_t>> variant_control_units;
    double median_abs_err = 0.0, median_abs_y = 0.0;                      // over the test sequences
};

enum class Value { err64, model_vs_cl64, err32, epochs64, epochs32, control64, variant, variant_control, reg_control, relative_error,
                   error_scale };
struct DeclaredClaim {
    io::Claim claim;
    Value value = Value::err64;
    std::size_t variant = 0;  // Value::variant, variant_control: index into kVariants
};

// The ids of a variant's identity claim and of the regularized variants' shared control claim.
std::string variant_claim_id(std::size_t variant, std::size_t N);
std::string reg_control_id(std::size_t N);

// N = task.examples.
std::vector<DeclaredClaim> declare_claims(std::size_t N);
// The claims on the measured values; `seed` is the unit of the per-run claims.
std::vector<io::ClaimResult> evaluate_claims(const std::vector<DeclaredClaim>& claims, const Measured& measured, std::int64_t seed);

}  // namespace iclab::experiments::gd004_example_claims
