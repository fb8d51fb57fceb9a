// Experiment `decay_attention` (issue 43 part 1, docs/decay.md; beyond the papers): the quick induction-head model
// trained with decayed linear attention (model.decay) over a grid of γ, one complete induction_head sub-run per γ in
// <run folder>/runs/gamma_<γ>/ (framework/run/sub_runs.hpp). On each trained model, in float64:
//   /tables/accuracy   ICL accuracy on held-out sequences, and the exactness of the decayed ICLCA (Theorem D.1)
//   /tables/distance   ICL accuracy against the distance from a repeated trigger back to its previous occurrence
//   /tables/influence  per position t of X, ‖logits(M_new, X)_t − logits(M_old, X)_t‖ / ‖logits(M_old, X)_t‖: how
//                      the adapter's influence (the prompt's) decays along X
//   /tables/serving    per prompt length M, the decoder's time per token of X with the adapter and after prefilling
//                      the prompt, and the state it keeps (bytes): an adapter stays O(1) per token with decay
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

#include "experiments/decay_attention/claims.hpp"
#include "framework/core/check.hpp"
#include "framework/core/measure.hpp"
#include "framework/icl/iclca.hpp"
#include "framework/io/claims.hpp"
#include "framework/model/transformer_decode.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/induction_training.hpp"
#include "framework/run/sub_runs.hpp"

namespace iclab::experiments {

using namespace iclab::run;
using decay_claims::accuracy;
using decay_claims::kReachFrom;
using decay_claims::kNearBelow;

// This file's own names, apart from those of the files compiled with it (the unity build, CMakeLists.txt).
namespace decay_attention_cpp {


namespace {

// Sub-streams of `seed` (1-3 are the sub-runs' initialization, data and evaluation set).
constexpr std::uint64_t kSequenceStream = 5, kPairStream = 6;

std::string gamma_text(double gamma) {
    std::ostringstream text;
    text << gamma;
    return text.str();
}

void declare_keys(config::Schema& schema) {
    schema.add_float_list("decay_attention.gammas", {1.0, 0.99, 0.9, 0.5}, 1e-6, 1.0,
                          "the decays gamma trained (model.decay of each sub-run; 1 = no decay)")
        .add_int("decay_attention.sequences", 256, 1, 1 << 20, "held-out sequences for the accuracy against distance")
        .add_int_list("decay_attention.distance_edges", {1, 3, 6, 12, 24, 48, 96}, 1, 1 << 20,
                      "bucket edges of the distance back to a trigger's previous occurrence: [e_k, e_{k+1})")
        .add_int("decay_attention.pairs", 64, 1, 1 << 20, "(X', X) pairs for the adapter influence and the exactness")
        .add_int("decay_attention.prompt_length", 24, 2, 1 << 16, "M: prompt tokens X' (chain design)")
        .add_int("decay_attention.input_length", 32, 1, 1 << 16, "N: input tokens X")
        .add_int_list("decay_attention.serving_prompt_lengths", {12, 32}, 1, 1 << 16,
                      "prompt lengths of the serving rows (each with input_length tokens decoded after it)")
        .add_rule([](const config::Config& cfg) {
            if (!cfg.is_default("model.decay"))
                cfg.fail({"model.decay"}, "decay_attention sets model.decay per sub-run (decay_attention.gammas); leave it unset");
            const auto T = cfg.get_int("task.seq_len"), N = cfg.get_int("decay_attention.input_length");
            const auto K2 = static_cast<std::int64_t>(2 * cfg.get_string_list("task.triggers").size());
            auto lengths = cfg.get_int_list("decay_attention.serving_prompt_lengths");
            lengths.push_back(cfg.get_int("decay_attention.prompt_length"));
            for (auto M : lengths)
                if (M < K2)
                    cfg.fail({"decay_attention.prompt_length", "decay_attention.serving_prompt_lengths", "task.triggers"},
                             "a prompt of " + std::to_string(M) + " tokens cannot show the " + std::to_string(K2 / 2) +
                                 " triggers with their successors (at least " + std::to_string(K2) + ")");
            for (auto M : cfg.get_int_list("decay_attention.serving_prompt_lengths"))
                if (M + N > T)
                    cfg.fail({"decay_attention.serving_prompt_lengths", "decay_attention.input_length", "task.seq_len"},
                             "a serving prompt of " + std::to_string(M) + " tokens and an input of " + std::to_string(N) +
                                 " exceed task.seq_len = " + std::to_string(T));
            if (cfg.get_int("decay_attention.prompt_length") + N > T)
                cfg.fail({"decay_attention.prompt_length", "decay_attention.input_length", "task.seq_len"},
                         "decay_attention.prompt_length + decay_attention.input_length exceed task.seq_len");
            const auto edges = cfg.get_int_list("decay_attention.distance_edges");
            if (edges.size() < 2 || !std::is_sorted(edges.begin(), edges.end()) ||
                std::adjacent_find(edges.begin(), edges.end()) != edges.end())
                cfg.fail({"decay_attention.distance_edges"}, "decay_attention.distance_edges: at least two strictly increasing edges");
        });
}

double row_norm(const double* z, std::size_t V) {
    double s = 0.0;
    for (std::size_t v = 0; v < V; ++v) s += z[v] * z[v];
    return std::sqrt(s);
}

// Accuracy at ICL positions (a repeated trigger) by the distance back to the trigger's previous occurrence. A position
// whose logits hold a NaN has no prediction (argmax_of): it counts in `undefined`, and an accuracy over positions with
// one is NaN (decay_claims::accuracy), so no claim on it passes (issue 45: a NaN model predicted token 0, scored ~0
// and passed "cannot read far back").
struct DistanceCounts {
    std::vector<std::int64_t> positions, correct, undefined;  // per bucket
    std::int64_t all_positions = 0, all_correct = 0, all_undefined = 0;
};

DistanceCounts accuracy_by_distance(model::Transformer<double>& net, const tasks::InductionHeadSpec& task, std::size_t count,
                                    const std::vector<std::int64_t>& edges, Rng rng) {
    DistanceCounts d;
    d.positions.assign(edges.size() - 1, 0);
    d.correct.assign(edges.size() - 1, 0);
    d.undefined.assign(edges.size() - 1, 0);
    const std::size_t V = net.spec().vocab, chunk = 32;
    for (std::size_t done = 0; done < count; done += chunk) {
        const std::size_t B = std::min(chunk, count - done), T = static_cast<std::size_t>(task.seq_len);
        tasks::TokenBatch batch;
        tasks::sample_induction_batch(batch, static_cast<int>(B), task, rng);
        net.forward(batch.inputs.data(), B, T);
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t t = 0; t < T; ++t) {
                if (batch.kinds(b, t) != static_cast<std::uint8_t>(tasks::PositionKind::icl)) continue;
                std::size_t s = t;
                while (s-- > 0 && batch.inputs(b, s) != batch.inputs(b, t)) {
                }
                const auto distance = static_cast<std::int64_t>(t - s);
                const std::size_t predicted = argmax_of(net.logits() + (b * T + t) * V, V);
                const bool hit = predicted == static_cast<std::size_t>(batch.targets(b, t)), none = predicted == V;
                ++d.all_positions;
                d.all_correct += hit;
                d.all_undefined += none;
                for (std::size_t k = 0; k + 1 < edges.size(); ++k)
                    if (distance >= edges[k] && distance < edges[k + 1]) {
                        ++d.positions[k];
                        d.correct[k] += hit;
                        d.undefined[k] += none;
                    }
            }
    }
    return d;
}

// µs per token of decoding `input` token by token after `prefix` (prefilled) on the model as it is: the mean over the
// tokens, the fastest of 5 repetitions (a shared machine's load only ever adds time).
double decode_us_per_token(const model::Transformer<double>& net, const std::vector<std::int32_t>& prefix,
                           const std::vector<std::int32_t>& input) {
    double best = std::numeric_limits<double>::infinity();
    for (int repetition = 0; repetition < 5; ++repetition) {
        model::TransformerDecoder<double> decoder(net);
        if (!prefix.empty()) decoder.append(prefix.data(), prefix.size());
        const auto start = std::chrono::steady_clock::now();
        for (std::size_t t = 0; t < input.size(); ++t) decoder.append(input.data() + t, 1);
        const std::chrono::duration<double, std::micro> elapsed = std::chrono::steady_clock::now() - start;
        best = std::min(best, elapsed.count() / static_cast<double>(input.size()));
    }
    return best;
}

RunOutcome run_decay_attention(const RunContext& context) {
    const config::Config& cfg = context.config;
    const std::vector<double> gammas = cfg.get_float_list("decay_attention.gammas");
    const auto edges = cfg.get_int_list("decay_attention.distance_edges");
    const auto M = static_cast<std::size_t>(cfg.get_int("decay_attention.prompt_length"));
    const auto N = static_cast<std::size_t>(cfg.get_int("decay_attention.input_length"));
    const auto pairs = static_cast<std::size_t>(cfg.get_int("decay_attention.pairs"));
    RunFolder run(cfg, context.options);
    std::vector<SubRunSpec> specs;
    for (double gamma : gammas) specs.push_back({"gamma_" + gamma_text(gamma), {"model.decay=" + gamma_text(gamma)}});
    SubRuns sub_runs(context, run, "induction_head", specs);

    std::vector<double> acc_gamma, acc_icl, acc_error, acc_bias_share;
    std::vector<double> dist_gamma, dist_lo, dist_hi, dist_acc;
    std::vector<std::int64_t> dist_positions;
    std::vector<double> infl_gamma, infl_change;
    std::vector<std::int64_t> infl_position;
    std::vector<double> serve_gamma, serve_us_adapter, serve_us_prompt;
    std::vector<std::int64_t> serve_m, serve_state_bytes;
    std::vector<io::ClaimResult> claims;
    for (std::size_t i = 0; i < gammas.size(); ++i) {
        const RunOutcome outcome = sub_runs.run(i);
        if (!outcome.completed) return {run.path(), false, outcome.steps_done, outcome.steps_total};
        InductionRun loaded = load_induction_run(sub_runs.dir(i), context.catalog, M + N, "decay_attention");
        model::Transformer<double>& net = *loaded.model;
        const std::size_t V = net.spec().vocab;
        // accuracy against distance (the same held-out sequences for every γ)
        const DistanceCounts d = accuracy_by_distance(net, loaded.task, static_cast<std::size_t>(cfg.get_int("decay_attention.sequences")),
                                                      edges, context.stream(kSequenceStream));
        for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
            dist_gamma.push_back(gammas[i]);
            dist_lo.push_back(static_cast<double>(edges[k]));
            dist_hi.push_back(static_cast<double>(edges[k + 1]));
            dist_positions.push_back(d.positions[k]);
            dist_acc.push_back(accuracy(d.correct[k], d.positions[k], d.undefined[k]));
        }
        // the adapter's influence along X and the exactness (converted vs prompted), over the same pairs
        Rng pair_rng = context.stream(kPairStream);
        const icl::AttentionBiases<double> original = icl::read_biases(net);
        decay_claims::GammaMeasured measured;
        measured.gamma = gammas[i], measured.gamma_text = gamma_text(gammas[i]), measured.seed = cfg.get_int("seed");
        std::vector<double> change(N, 0.0);
        for (std::size_t p = 0; p < pairs; ++p) {
            const tasks::PromptPair pair = tasks::sample_prompt_pair(loaded.task, tasks::PromptDesign::chain, M, N, pair_rng);
            const auto with_prompt = icl::logits_with_prompt(net, pair.prompt.data(), M, pair.input.data(), N);
            const auto converted = icl::converted_logits(net, pair.prompt.data(), M, pair.input.data(), N, original);
            net.forward(pair.input.data(), 1, N);
            const std::vector<double> plain(net.logits(), net.logits() + N * V);
            double diff = 0.0, norm = 0.0, first_change = 0.0, last_change = 0.0;
            for (std::size_t t = 0; t < N; ++t) {
                std::vector<double> delta(V);
                for (std::size_t v = 0; v < V; ++v) delta[v] = converted[t * V + v] - plain[t * V + v];
                const double relative = row_norm(delta.data(), V) / row_norm(plain.data() + t * V, V);
                change[t] += relative / static_cast<double>(pairs);
                if (t == 0) first_change = relative;
                if (t + 1 == N) last_change = relative;
                for (std::size_t v = 0; v < V; ++v) {
                    diff += (converted[t * V + v] - with_prompt[t * V + v]) * (converted[t * V + v] - with_prompt[t * V + v]);
                    norm += with_prompt[t * V + v] * with_prompt[t * V + v];
                }
            }
            measured.pair_errors.push_back(std::sqrt(diff / norm));
            measured.pair_fades.push_back(decay_claims::fade_indicator(last_change / first_change));
        }
        for (std::size_t t = 0; t < N; ++t) {
            infl_gamma.push_back(gammas[i]);
            infl_position.push_back(static_cast<std::int64_t>(t));
            infl_change.push_back(change[t]);
        }
        {  // decay-reach's values: the accuracy far (distances >= kReachFrom) and near (< kNearBelow); then the claims of this γ
            std::int64_t positions = 0, correct = 0, undefined = 0, near_positions = 0, near_correct = 0, near_undefined = 0;
            for (std::size_t k = 0; k + 1 < edges.size(); ++k) {
                if (edges[k] >= kReachFrom) {
                    positions += d.positions[k];
                    correct += d.correct[k];
                    undefined += d.undefined[k];
                }
                if (edges[k + 1] <= kNearBelow) {
                    near_positions += d.positions[k];
                    near_correct += d.correct[k];
                    near_undefined += d.undefined[k];
                }
            }
            measured.reach_accuracy = accuracy(correct, positions, undefined);
            measured.near_accuracy = accuracy(near_correct, near_positions, near_undefined);
            for (io::ClaimResult& claim : decay_claims::gamma_claims(measured)) claims.push_back(std::move(claim));
        }
        acc_gamma.push_back(gammas[i]);
        acc_icl.push_back(accuracy(d.all_correct, d.all_positions, d.all_undefined));
        acc_error.push_back(max_of(measured.pair_errors));  // NaN-keeping: std::max from 0 dropped a NaN error (issue 45)
        acc_bias_share.push_back(change[N - 1] / max_or_nan(change[0], 1e-300));
        // serving: per prompt length, µs per token of X with the adapter vs after prefilling the prompt
        for (auto m : cfg.get_int_list("decay_attention.serving_prompt_lengths")) {
            const tasks::PromptPair pair =
                tasks::sample_prompt_pair(loaded.task, tasks::PromptDesign::chain, static_cast<std::size_t>(m), N, pair_rng);
            const double prompt_us = decode_us_per_token(net, pair.prompt, pair.input);
            icl::write_biases(net, icl::iclca_convert(net, pair.prompt.data(), pair.prompt.size()));
            const double adapter_us = decode_us_per_token(net, {}, pair.input);
            icl::write_biases(net, original);
            const model::ModelSpec& s = net.spec();
            serve_gamma.push_back(gammas[i]);
            serve_m.push_back(m);
            serve_state_bytes.push_back(static_cast<std::int64_t>(s.layers * s.heads * (s.feature_dim() * s.head_dim() + s.feature_dim()) * 8));
            serve_us_adapter.push_back(adapter_us);
            serve_us_prompt.push_back(prompt_us);
        }
    }
    io::ResultsWriter& w = run.results();
    io::write_claims(w, claims);
    w.write_columns("/tables/accuracy", {{"gamma", acc_gamma}, {"icl_accuracy", acc_icl},
                                         {"max_relative_logit_error", acc_error},
                                         {"influence_last_over_first", acc_bias_share}});
    w.write_columns("/tables/distance", {{"gamma", dist_gamma}, {"distance_from", dist_lo}, {"distance_below", dist_hi},
                                         {"positions", dist_positions}, {"icl_accuracy", dist_acc}});
    w.write_columns("/tables/influence", {{"gamma", infl_gamma}, {"position", infl_position}, {"relative_change", infl_change}});
    w.write_columns("/tables/serving", {{"gamma", serve_gamma}, {"prompt_length", serve_m}, {"state_bytes", serve_state_bytes},
                                        {"us_per_token_adapter", serve_us_adapter}, {"us_per_token_prompt", serve_us_prompt}});
    {  // the tables on stdout
        std::printf("\ndecayed attention (docs/decay.md): per gamma\n  %-6s %12s %22s %26s\n", "gamma", "ICL acc.",
                    "conversion rel. error", "influence at t=N-1 / t=0");
        for (std::size_t i = 0; i < acc_gamma.size(); ++i)
            std::printf("  %-6g %12.4f %22.3g %26.4f\n", acc_gamma[i], acc_icl[i], acc_error[i], acc_bias_share[i]);
        std::printf("\n  ICL accuracy by distance back to the previous occurrence\n  %-6s", "gamma");
        for (std::size_t k = 0; k + 1 < edges.size(); ++k)
            std::printf(" %9s", ("[" + std::to_string(edges[k]) + "," + std::to_string(edges[k + 1]) + ")").c_str());
        for (std::size_t r = 0; r < dist_acc.size(); ++r) {
            if (r % (edges.size() - 1) == 0) std::printf("\n  %-6g", dist_gamma[r]);
            std::printf(" %9.3f", dist_acc[r]);
        }
        std::printf("\n\n  serving: %-6s %6s %12s %16s %16s\n", "gamma", "M", "state bytes", "us/token adapter", "us/token prompt");
        for (std::size_t r = 0; r < serve_gamma.size(); ++r)
            std::printf("           %-6g %6lld %12lld %16.1f %16.1f\n", serve_gamma[r], static_cast<long long>(serve_m[r]),
                        static_cast<long long>(serve_state_bytes[r]), serve_us_adapter[r], serve_us_prompt[r]);
    }
    run.commit();
    std::filesystem::remove(run.checkpoint_path());  // the parent's marker has done its job; the sub-runs keep theirs
    return {run.path(), true, gammas.size(), gammas.size()};
}

}  // namespace
}  // namespace decay_attention_cpp

Experiment decay_attention() {
    using namespace decay_attention_cpp;
    return {"decay_attention",
            "the induction-head model with decayed linear attention over a grid of gamma: ICL accuracy, how far back it "
            "reads, how an adapter's influence decays along X, serving cost (issue 43, docs/decay.md)",
            {KeyGroup::output, KeyGroup::induction_task, KeyGroup::model, KeyGroup::train},
            declare_keys,
            run_decay_attention,
            [](const config::Config& cfg) {  // one training per gamma, one after the other
                RunEstimate e = estimate_training(cfg);
                const double gammas = static_cast<double>(cfg.get_float_list("decay_attention.gammas").size());
                e.flops *= gammas;
                e.gemm_flops *= gammas;  // ctest estimates: counted GEMM work within 2x of this
                return e;
            }};
}

}  // namespace iclab::experiments
