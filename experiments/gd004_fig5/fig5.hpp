#pragma once
// Experiment-internal (gd004_fig5, paper 004 Fig. 5; specs/gd_duals.md §9): one seed's shared draws, the batch-1
// SGD training of the single Performer layer (nn::attention_004_*), and the per-claim summary.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/config/config.hpp"
#include "framework/io/claims.hpp"
#include "framework/io/results_file.hpp"
#include "framework/nn/attention_004.hpp"

namespace iclab::experiments::fig5 {

// Everything a seed fixes for all its variants (paired comparison): task W, init, ω, training and test data.
struct SeedData {
    std::int64_t seed = 0;
    bool per_sequence = false;            // task.w_mode: a fresh W per sequence (the caveat's control)
    std::vector<double> task_w;           // (d_x) the one task (fixed mode)
    std::vector<double> init;             // attention_004_layout: w_qkv, G_1, G_2, G_2b ~ U(±bound)
    std::vector<double> random;           // (C, R) ω ~ N(0, I), fixed
    std::vector<double> train_h, test_h;  // (B, T, C) tokens, query [x; 0] last
    std::vector<double> test_zeroed_h;    // test tokens with the context y's set to 0 (ICL dependence, spec §4)
    std::vector<double> train_y, test_y;  // (B) query targets
};

struct DataSettings {
    std::size_t examples = 15, train_sequences = 1024, test_sequences = 1024, features = 1200;
    bool per_sequence = false;
    double init_bound = 0.0;  // U(±bound); 0: 1/√C
};
// Streams of Rng(seed): 1 task W, 2 init, 3 ω, 4 training data, 5 test data, 6 epoch order (train.shuffle).
SeedData make_seed_data(std::int64_t seed, const DataSettings& settings);

// One training run: a variant of one seed.
struct RunSpec {
    std::string table;        // "reg", "aug", "neg", "reg_eq14", "reg_per_sequence"
    std::string label;        // "alpha=-0.5", "g1+g2", "k=3,beta=0.1", ...
    double alpha = 0.0;       // reg
    std::string aug = "none"; // aug
    std::int64_t k = 0;       // neg (0: the β = 0 baseline)
    double beta = 0.0;
    bool baseline = false;    // α = 0, none, β = 0: the paired reference of its table
    nn::Attention004Variant variant;
    double lr = 0.0;
    std::size_t seed_index = 0, data_index = 0;  // into the seed list and the SeedData list
};

struct RunCurves {
    std::vector<double> train_loss, test_mse;  // (E) epoch mean of (ŷ − y)² over its steps; test MSE after the epoch
    double test_mse_ctx_zeroed = 0.0;          // after the last epoch
    double zero_loss = 0.0;                    // the zero predictor's loss on the training set, mean y² (the untrained scale)
    double seconds = 0.0;
    std::size_t steps = 0;
};

struct TrainSettings {
    std::size_t epochs = 50;
    bool shuffle = false;
    bool fp64 = false;
    std::int64_t perturb_init_ulps = 0;  // train.perturb_init_ulps: the init moved by that many ulps (framework/train/perturb.hpp)
};
RunCurves train_run(const SeedData& data, const RunSpec& spec, const TrainSettings& settings, std::size_t features);

// Per-run metrics (spec §9): final train loss, AUC of log10 train loss over epochs 1..E (trapezoid), the early
// AUC over the first max(1, E/10) epochs, and epochs to reach 1.1× the paired baseline's final loss (inf: never).
struct RunMetrics {
    double final_loss = 0, final_test = 0, auc = 0, early_auc = 0, epochs_to_target = 0;
    double zero_loss = 0;  // RunCurves::zero_loss
};
RunMetrics run_metrics(const RunCurves& run, const RunCurves& baseline);

// Writes /tables/004_fig5_<table> (curves), /tables/004_fig5_<table>_summary (per variant and claim: mean/std,
// verdict by the seed-sign rule with the paired differences) and rows of /tables/004_fig5_runs; returns the
// summary lines for stdout. Each claim of a table of the reading of record ("reg", "aug", "neg"; summary.cpp) is
// appended to `claims` as a declared qualitative claim (the same seed-sign rule over the per-seed paired differences;
// framework/io/claims.hpp); the controls' rows ("reg_eq14", "reg_per_sequence") are reported with that rule's verdict
// in their summary table and are no claims.
std::string write_table(io::ResultsWriter& writer, const std::string& table, const std::vector<RunSpec>& specs,
                        const std::vector<RunCurves>& curves, const std::vector<std::int64_t>& seeds, double verdict_fraction,
                        std::vector<io::ClaimResult>& claims);
void write_runs_table(io::ResultsWriter& writer, const std::vector<RunSpec>& specs, const std::vector<RunCurves>& curves,
                      const std::vector<std::int64_t>& seeds);

}  // namespace iclab::experiments::fig5
