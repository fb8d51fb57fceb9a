// A corpus of bad configs over every experiment (issue 20: "refuse at validation, not after work"): each is run through
// the real `iclab run` and must exit 2 with a one-line message naming the key, without crashing, hanging (a timeout
// kills it) or creating anything: no run folder, no output folder, no file in the scratch folder.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/cli_helpers.hpp"

namespace iclab_test_bad_configs {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

struct BadConfig {
    std::string config;     // relative to the repository root
    std::string overrides;  // shell words, as typed
    std::string key;        // the message must name it
};

// Validation takes well under a second; a run that started working would be killed here (exit status 137).
constexpr const char* kTimeout = "timeout -s KILL 120 env";

std::string a_patterns(std::size_t count) { return std::string(count, 'A'); }

const std::vector<BadConfig> kCorpus = {
    // gd_duals: the free-form lists are parsed at validation
    {"configs/quick/gd_duals.yaml", "'alg1_002.patterns=[\"\"]'", "alg1_002.patterns"},
    {"configs/quick/gd_duals.yaml", "'alg1_002.patterns=[AXB]'", "alg1_002.patterns"},
    {"configs/quick/gd_duals.yaml", "'alg1_002.patterns=[FF]'", "alg1_002.patterns"},
    {"configs/quick/gd_duals.yaml", "'alg1_002.patterns=[a]'", "alg1_002.patterns"},
    {"configs/quick/gd_duals.yaml", "'alg1_002.patterns=[" + a_patterns(65) + "]'", "alg1_002.patterns"},
    {"configs/quick/gd_duals.yaml", "'alg1_002.patterns=[]'", "alg1_002.patterns"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.feature_maps=[prf0]'", "thm1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.feature_maps=[prf]'", "thm1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.feature_maps=[prf99999999999999999999999]'", "thm1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.feature_maps=[bogus]'", "thm1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.feature_maps=[prf-5]'", "thm1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.feature_maps=[prf65537]'", "thm1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.feature_maps=[softmax]'", "thm1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'alg1_002.feature_maps=[softmax]'", "alg1_002.feature_maps"},
    {"configs/quick/gd_duals.yaml", "'thm1_004.kernels=[prf1.5]'", "thm1_004.kernels"},
    {"configs/quick/gd_duals.yaml", "'thm1_004.kernels=[\"prf 12\"]'", "thm1_004.kernels"},
    {"configs/quick/gd_duals.yaml", "'thm1_004.kernels=[]'", "thm1_004.kernels"},
    {"configs/quick/gd_duals.yaml", "'alg1_002.heads=[3]'", "alg1_002.heads"},
    {"configs/quick/gd_duals.yaml", "'thm1_002.widths=[]'", "thm1_002.widths"},
    {"configs/quick/gd_duals.yaml", "'gd_duals.dtypes=[]'", "gd_duals.dtypes"},
    {"configs/quick/gd_duals.yaml", "'vo_construct.etas=[]'", "vo_construct.etas"},
    {"configs/quick/gd_duals.yaml",
     "alg1_002.width=4096 'alg1_002.feature_maps=[prf65536]' 'alg1_002.patterns=[" + a_patterns(64) + "]'", "alg1_002.width"},
    // iclaa_lm (paper 000 §6.4 on language models)
    {"configs/quick/iclaa_lm.yaml", "'iclaa_lm.keep_tokens=[64]'", "iclaa_lm.keep_tokens"},
    {"configs/quick/iclaa_lm.yaml", "'iclaa_lm.learned.features=[15]'", "iclaa_lm.learned.features"},
    {"configs/quick/iclaa_lm.yaml", "iclaa_lm.claim_features=100", "iclaa_lm.claim_features"},
    {"configs/quick/iclaa_lm.yaml", "iclaa_lm.input_positions=middle", "iclaa_lm.input_positions"},
    {"configs/quick/iclaa_lm.yaml", "iclaa_lm.generation.input_tokens=40", "iclaa_lm.generation.input_tokens"},
    {"configs/quick/iclaa_lm.yaml", "iclaa_lm.learned.split_max=96", "iclaa_lm.learned.split_max"},
    {"configs/quick/iclaa_lm.yaml", "'data.tokens=\"\"'", "data.tokens"},
    {"configs/quick/iclaa_lm.yaml", "source.run_dir=/nonexistent/run", "source.run_dir"},
    {"configs/quick/iclaa_lm.yaml", "model.attention=linear", "model.attention"},
    {"configs/quick/iclaa_lm.yaml", "'iclaa_lm.feature_maps=[elu2]'", "iclaa_lm.feature_maps"},
    // gd004_figures, gd004_example, gd004_fig5
    {"configs/quick/gd004_figures.yaml", "'figures.features=[]'", "figures.features"},
    {"configs/quick/gd004_figures.yaml", "'figures.fig10_epochs=[]'", "figures.fig10_epochs"},
    {"configs/quick/gd004_figures.yaml", "'figures.fig10_alphas=[]'", "figures.fig10_alphas"},
    {"configs/quick/gd004_figures.yaml", "task.w_mode=per_sequence", "task.w_mode"},
    {"configs/quick/gd004_example.yaml", "task.w_mode=per_sequence", "task.w_mode"},
    {"configs/quick/gd004_fig5.yaml", "'fig5.alphas=[]'", "fig5.alphas"},
    {"configs/quick/gd004_fig5.yaml", "'fig5.parts=[]' 'fig5.controls=[]'", "fig5.parts"},
    {"configs/quick/gd004_fig5.yaml", "'fig5.betas=[]'", "fig5.betas"},
    // iclaa
    {"configs/quick/iclaa.yaml", "'iclaa.feature_maps=[]'", "iclaa.feature_maps"},
    {"configs/quick/iclaa.yaml", "'iclaa.keep_tokens=[2, 32]'", "iclaa.keep_tokens"},
    {"configs/quick/iclaa.yaml", "'iclaa.random_features=[]'", "iclaa.random_features"},
    {"configs/quick/iclaa.yaml", "'iclaa.learned.features=[]'", "iclaa.learned.features"},
    {"configs/quick/iclaa.yaml", "'iclaa.keep_tokens=[]'", "iclaa.keep_tokens"},
    {"configs/quick/iclaa.yaml", "iclaa.claim_features=100", "iclaa.claim_features"},
    // softmax attention refuses linearized attention's keys by name (issue 22)
    {"configs/quick/iclaa.yaml", "model.feature_map=performer", "model.feature_map"},
    {"configs/quick/iclaa.yaml", "model.normalizer=none", "model.normalizer"},
    {"configs/quick/iclaa.yaml", "model.random_features=128", "model.random_features"},
    {"configs/quick/iclaa.yaml", "model.normalizer_eps=0.001", "model.normalizer_eps"},
    {"configs/quick/iclaa.yaml", "model.performer_input_scale=1", "model.performer_input_scale"},
    {"configs/quick/iclaa.yaml", "model.orthogonal_features=true", "model.orthogonal_features"},
    {"configs/quick/iclaa.yaml", "model.unnormalized_scale=2", "model.unnormalized_scale"},
    {"configs/quick/iclaa.yaml", "model.attention_bias_d=nonnegative", "model.attention_bias_d"},
    // lsa_gd
    {"configs/quick/lsa_gd.yaml", "'lsa.eta_sweep=[]'", "lsa.eta_sweep"},
    {"configs/quick/lsa_gd.yaml", "'stationary.mus=[]'", "stationary.mus"},
    {"configs/quick/lsa_gd.yaml", "stationary.step=301", "stationary.step"},
    {"configs/quick/lsa_gd.yaml", "rates.rate_layer=501", "rates.rate_layer"},
    {"configs/quick/lsa_gd.yaml", "lsa.eta_sweep_replicates=2", "lsa.eta_sweep_replicates"},
    {"configs/quick/lsa_gd.yaml", "rates.deep_queries=201", "rates.deep_queries"},
    {"configs/quick/lsa_gd.yaml", "task.sequences=100000 task.queries=100000 lsa.layers=10000", "task.sequences"},
    // prefix_vs_causal and its probes
    {"configs/quick/prefix_vs_causal.yaml", "prefix_vs_causal.profile=../../etc", "prefix_vs_causal.profile"},
    {"configs/quick/prefix_vs_causal.yaml", "prefix_vs_causal.profile=/tmp/x", "prefix_vs_causal.profile"},
    {"configs/quick/prefix_vs_causal.yaml", "prefix_vs_causal.first_sequences=257", "prefix_vs_causal.first_sequences"},
    {"configs/quick/prefix_vs_causal.yaml", "prefix_vs_causal.pool_eval_sequences=1601", "prefix_vs_causal.pool_eval_sequences"},
    {"configs/quick/prefix_vs_causal.yaml", "'prefix_vs_causal.test_examples=[11]'", "prefix_vs_causal.test_examples"},
    {"configs/quick/prefix_vs_causal_probes.yaml", "", "source.run_dir"},
    {"configs/quick/prefix_vs_causal_probes.yaml", "source.run_dir=/nonexistent/run", "source.run_dir"},
    // vo_trained: one linear self-attention layer
    {"configs/quick/vo_trained.yaml", "model.attention=softmax model.feature_map=elu1 model.normalizer=kernel model.unnormalized_scale=0",
     "model.attention"},
    {"configs/quick/vo_trained.yaml", "model.feature_map=elu1 model.normalizer=kernel", "model.feature_map"},
    {"configs/quick/vo_trained.yaml", "model.query_self=true", "model.query_self"},
    {"configs/quick/vo_trained.yaml", "model.layernorm=true", "model.layernorm"},
    // induction-head models: masks, empty lists, memory and work
    {"configs/quick/induction_head.yaml", "model.mask=prefix", "model.mask"},
    {"configs/quick/induction_head.yaml", "model.mask=full", "model.mask"},
    {"configs/quick/induction_head.yaml", "model.isolate_queries=true", "model.isolate_queries"},
    {"configs/quick/induction_head.yaml", "'task.triggers=[]'", "task.triggers"},
    {"configs/quick/induction_head.yaml", "model.width=4096 model.layers=256", "model.width"},
    {"configs/quick/induction_head.yaml", "train.steps=100000000 train.batch_size=1024", "train.steps"},
    // model.decay (docs/decay.md): gamma in (0, 1], none or learned, 1 or model.heads values, causal linear attention
    {"configs/quick/induction_head.yaml", "model.decay=1.5", "model.decay"},
    {"configs/quick/induction_head.yaml", "model.decay=0", "model.decay"},
    {"configs/quick/induction_head.yaml", "model.decay=fast", "model.decay"},
    {"configs/quick/induction_head.yaml", "'model.decay=[0.9, 0.9, 0.9]'", "model.decay"},
    {"configs/quick/induction_head.yaml", "model.decay=learned model.attention=softmax", "model.decay"},
    {"configs/quick/bias_training.yaml", "'bias_training.seeds=[]'", "bias_training.seeds"},
    {"configs/quick/bias_training.yaml", "'bias_training.variants=[]'", "bias_training.variants"},
    {"configs/quick/bias_training.yaml", "'bias_training.thresholds=[]'", "bias_training.thresholds"},
    {"configs/quick/iclca_induction.yaml", "iclca.prompt_length=1000", "iclca.prompt_length"},
    // regression-task models and the forward / serving / exactness experiments
    {"configs/quick/regression.yaml", "task.examples=60000", "model.width"},
    {"configs/quick/regression.yaml", "model.attention=softmax model.feature_map=relu", "model.feature_map"},
    {"configs/paper/iclca_serving.yaml", "'task.prompt_lengths=[]'", "task.prompt_lengths"},
    {"configs/paper/iclca_serving.yaml", "'task.prompt_lengths=[1048576]'", "task.prompt_lengths"},
    {"configs/paper/forward_1.98b.yaml", "task.seq_len=1048576", "model.width"},
    {"configs/quick/iclca_exactness.yaml", "'task.dtypes=[]'", "task.dtypes"},
    {"configs/quick/iclca_exactness.yaml", "'sizes.names=[]'", "sizes.names"},
    {"configs/quick/iclca_exactness.yaml", "'sizes.widths=[72]'", "sizes.widths"},
    // override grammar: sweep values need -m
    {"configs/quick/induction_head.yaml", "seed=0:2", "iclab run -m"},
    {"configs/quick/induction_head.yaml", "model.layers=1,2", "iclab run -m"},
    {"configs/quick/gd_duals.yaml", "seed=-1", "seed"},
};

void check_refused(const std::string& command, const Scratch& scratch, const std::string& key) {
    const auto before = count_entries(scratch.path);
    const CommandResult result = run_iclab(command, scratch.path, kTimeout);
    INFO("iclab " << command << "\nstderr: " << result.err);
    CHECK(result.status == 2);
    CHECK_THAT(result.err, Catch::Contains(key));
    std::string err = result.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    CHECK(!err.empty());
    CHECK(err.find('\n') == std::string::npos);  // one line
    CHECK(err.find("check failed") == std::string::npos);
    CHECK(result.out.empty());
    // stdout.txt and stderr.txt are the harness's; nothing else may appear
    CHECK(count_entries(scratch.path) <= before + 2);
    CHECK(!fs::exists(scratch.path / "out"));
}

}  // namespace

TEST_CASE("bad configs of every experiment are refused at validation: exit 2, the key named, nothing created",
          "[cli][bad_configs]") {
    REQUIRE(kCorpus.size() >= 60);
    for (const BadConfig& bad : kCorpus) {
        Scratch scratch;
        check_refused("run " + bad.config + " " + bad.overrides + " output.dir=" + (scratch.path / "out").string(), scratch, bad.key);
    }
}

TEST_CASE("a config path that is a symlink loop and an output.dir in the way are input errors (exit 2)", "[cli][bad_configs]") {
    Scratch scratch;
    const fs::path loop = scratch.path / "loop.yaml", other = scratch.path / "other.yaml";
    fs::create_symlink(other, loop);
    fs::create_symlink(loop, other);
    check_refused("run " + loop.string() + " output.dir=" + (scratch.path / "out").string(), scratch, loop.string());

    { std::ofstream(scratch.path / "file") << "x\n"; }
    check_refused("run configs/quick/induction_head.yaml output.dir=" + (scratch.path / "file").string(), scratch, "output.dir");
    check_refused("run configs/quick/induction_head.yaml output.dir=" + (scratch.path / "file" / "sub").string(), scratch, "output.dir");
    check_refused("run configs/quick/induction_head.yaml 'output.dir=\"\"'", scratch, "output.dir");
}

TEST_CASE("a long run prints its estimate: --dry-run states memory and work", "[cli][bad_configs]") {
    Scratch scratch;
    // 2^20 random features x 10^4 repeats: fits in memory, but most of a day of work (issue 41: measured 1.1-1.7 us per
    // feature and cell); the estimate says so before it starts.
    const CommandResult result = run_iclab("run configs/quick/gd004_figures.yaml 'figures.features=[1048576]' figures.repeats=10000 "
                                           "--dry-run output.dir=" + (scratch.path / "out").string(),
                                           scratch.path, kTimeout);
    INFO(result.err);
    REQUIRE(result.status == 0);
    CHECK_THAT(result.out, Catch::Contains("estimated about") && Catch::Contains("FLOP") && Catch::Contains(" at 50 GFLOP/s"));
    CHECK(!fs::exists(scratch.path / "out"));
    // x 10^5 repeats: about 6 days, past the limit of work iclab starts (kMaxRunFlops): refused, naming the keys
    const CommandResult refused = run_iclab("run configs/quick/gd004_figures.yaml 'figures.features=[1048576]' figures.repeats=100000 "
                                            "--dry-run output.dir=" + (scratch.path / "out").string(),
                                            scratch.path, kTimeout);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("iclab refuses runs of more than") && Catch::Contains("days"));
    CHECK(!fs::exists(scratch.path / "out"));
}

}  // namespace iclab_test_bad_configs
