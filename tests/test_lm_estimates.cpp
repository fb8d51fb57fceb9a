// Issue 41, memory: predict, generate and convert on lm runs estimate their memory and work before the work
// (experiments/cli/lm_estimates.hpp) and refuse with exit 2 what does not fit the memory available (MemAvailable, the
// cgroup, ulimit -v / -d, ICLAB_MEMORY_GIB); the estimates lie within 2x of the measured peak resident memory (the
// difference between a large and a small run of the same command, each in its own process: wait4's ru_maxrss);
// generate keeps one row of logits without --out; the experiment keys of the issue (iclaa.random_features,
// iclaa_lm's random features, gd004_figures' features and repeats) are refused against the budget.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <string>

#include "experiments/cli/lm_estimates.hpp"
#include "experiments/registry.hpp"
#include "framework/core/measure.hpp"
#include "framework/run/experiment.hpp"
#include "framework/run/finished_run.hpp"
#include "framework/run/lm_run.hpp"
#include "tests/lm_run_helpers.hpp"

namespace iclab_test_lm_estimates {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;

namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

struct Measured {
    CommandResult result;
    double peak_gib = 0;  // the process's peak resident set size
};

// `iclab <args>` as its own process (exec'd by the shell, so wait4 reports iclab's own ru_maxrss).
Measured run_measured(const std::string& args, const fs::path& scratch, const std::string& environment = "") {
    const fs::path out = scratch / "stdout.txt", err = scratch / "stderr.txt";
    const std::string command = "cd '" ICLAB_SOURCE_DIR "' && exec env " + environment + " OMP_NUM_THREADS=2 '" ICLAB_BINARY "' " + args +
                                " >'" + out.string() + "' 2>'" + err.string() + "'";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    rusage usage{};
    REQUIRE(::wait4(pid, &status, 0, &usage) == pid);
    Measured m;
    m.result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    m.result.out = read_file(out);
    m.result.err = read_file(err);
    m.peak_gib = static_cast<double>(usage.ru_maxrss) * 1024.0 / kGib;  // kilobytes on Linux
    INFO(args << "\n" << m.result.err);
    REQUIRE(m.result.status == 0);
    return m;
}

// "1,2,...": n token ids below 256 (the byte tokenizer's)
std::string token_ids(std::size_t n) {
    std::string ids;
    for (std::size_t i = 0; i < n; ++i) ids += (i ? "," : "") + std::to_string((i * 37 + 11) % 256);
    return ids;
}

// A GPT-2-shaped lm run with the real vocabulary (V 50257, float32 parameters, tied embeddings, learned positions,
// softmax), width 64, 4 heads, 2 layers, a context of 2048: logits and caches large enough to measure.
// Its byte tokenizer is removed: it cannot decode the ids a model of 50257 outputs (commands then print ids).
std::string gpt2_shaped_run(const fs::path& scratch) {
    const std::string run = train_tiny_lm_run(scratch, "task.vocab_size=50257 task.context_length=2048 model.width=64 model.heads=4");
    fs::remove_all(fs::path(run) / iclab::run::kTokenizerFolder);
    return run;
}

iclab::model::ModelSpec spec_of(const std::string& run) {
    return iclab::run::lm_model_spec(iclab::run::load_finished_run_config(run, iclab::experiments::catalog(), "test"));
}

// (estimate of large - estimate of small) / (measured peak of large - of small), the measured part tens of MB.
double ratio(double estimate_small, double estimate_large, const Measured& small, const Measured& large) {
    const double measured = large.peak_gib - small.peak_gib, estimated = estimate_large - estimate_small;
    INFO("estimated " << estimated * 1024 << " MiB, measured " << measured * 1024 << " MiB (peaks " << small.peak_gib * 1024 << " and "
                      << large.peak_gib * 1024 << " MiB)");
    REQUIRE(measured > 50.0 / 1024);
    return estimated / measured;
}

}  // namespace

TEST_CASE("predict, generate --out and convert on an lm run: memory estimates within 2x of the measured peak", "[estimate][lm][cli]") {
    Scratch scratch;
    const std::string run = gpt2_shaped_run(scratch.path);
    const iclab::model::ModelSpec spec = spec_of(run);
    REQUIRE(spec.vocab == 50257);

    SECTION("predict: the logits (T, V) and the (H, T, T) probabilities") {
        iclab::cli::PredictOptions options;
        options.run_dir = run;
        const auto estimate = [&](std::size_t T) { return iclab::cli::estimate_predict_lm(options, spec, 4.0, T).memory_gib; };
        const Measured small = run_measured("predict " + run + " --top 0 --tokens " + token_ids(8), scratch.path);
        const Measured large = run_measured("predict " + run + " --top 0 --tokens " + token_ids(1000), scratch.path);
        const double r = ratio(estimate(8), estimate(1000), small, large);
        CHECK(r >= 0.5);
        CHECK(r <= 2.0);
    }
    SECTION("generate --out: every step's logits in double and their file") {
        iclab::cli::GenerateOptions options;
        options.run_dir = run;
        options.out = scratch.path / "g.h5";
        const auto estimate = [&](std::size_t steps) {
            options.max_new_tokens = steps;
            return iclab::cli::estimate_generate(options, spec, 3).memory_gib;
        };
        const std::string args = "generate " + run + " --prompt-tokens 1,2,3 --no-stop --quiet --overwrite --out " + options.out.string();
        const Measured small = run_measured(args + " --max-new-tokens 5", scratch.path);
        const Measured large = run_measured(args + " --max-new-tokens 300", scratch.path);
        const double r = ratio(estimate(5), estimate(300), small, large);
        CHECK(r >= 0.5);
        CHECK(r <= 2.0);
    }
    SECTION("convert --method exact: the prompt's float64 forward and its keys and values") {
        iclab::cli::ConvertOptions options;
        options.run_dir = run;
        const auto estimate = [&](std::size_t M) {
            return iclab::cli::estimate_convert_lm(options, spec, M, iclab::cli::cache_adapter_memory_gib(spec, M)).memory_gib;
        };
        const fs::path out = scratch.path / "cache.h5";
        const std::string args = "convert " + run + " --method exact --overwrite --out " + out.string() + " --prompt-tokens ";
        const Measured small = run_measured(args + token_ids(8), scratch.path);
        const Measured large = run_measured(args + token_ids(800), scratch.path);
        const double r = ratio(estimate(8), estimate(800), small, large);
        CHECK(r >= 0.5);
        CHECK(r <= 2.0);
    }
}

TEST_CASE("generate without --out keeps one row of logits: its peak memory does not grow with the tokens generated", "[estimate][lm][cli]") {
    // Issue 41: it kept every step's logits (0.4 MB a token at V 50257) and died of std::bad_alloc.
    Scratch scratch;
    const std::string run = gpt2_shaped_run(scratch.path);
    const std::string args = "generate " + run + " --prompt-tokens 1,2,3 --no-stop --quiet --max-new-tokens ";
    const Measured few = run_measured(args + "5", scratch.path);
    const Measured many = run_measured(args + "800", scratch.path);
    // 800 rows of 50257 doubles would be 307 MiB
    INFO("peaks " << few.peak_gib * 1024 << " and " << many.peak_gib * 1024 << " MiB");
    CHECK(many.peak_gib - few.peak_gib < 20.0 / 1024);
    // and the estimate says the same: memory independent of the steps, work growing with them
    iclab::cli::GenerateOptions options;
    options.run_dir = run;
    const iclab::model::ModelSpec spec = spec_of(run);
    options.max_new_tokens = 5;
    const iclab::run::RunEstimate e5 = iclab::cli::estimate_generate(options, spec, 3);
    options.max_new_tokens = 800;
    const iclab::run::RunEstimate e800 = iclab::cli::estimate_generate(options, spec, 3);
    CHECK(e800.memory_gib - e5.memory_gib < 1.0 / 1024);
    CHECK(e800.flops > 100 * e5.flops);
    // --max-new-tokens past the context counts the steps the context allows (2048 - 3 + 1), not 2^20
    options.max_new_tokens = 1 << 20;
    options.out = scratch.path / "never.h5";
    const double capped = iclab::cli::estimate_generate(options, spec, 3).memory_gib;
    options.max_new_tokens = 2046;
    CHECK(iclab::cli::estimate_generate(options, spec, 3).memory_gib == capped);
}

TEST_CASE("predict, generate and convert on an lm run refuse work beyond the memory available, with the estimate and what to lower",
          "[estimate][lm][cli]") {
    Scratch scratch;
    const std::string run = gpt2_shaped_run(scratch.path);
    const fs::path out = scratch.path / "out.h5";
    const std::string budget = "ICLAB_MEMORY_GIB=0.2";
    const auto refused = [&](const CommandResult& result, std::vector<std::string> needles) {
        INFO(result.err);
        CHECK(result.status == 2);
        needles.insert(needles.end(), {"needs about", "0.2 GiB available (ICLAB_MEMORY_GIB)"});
        for (const auto& needle : needles) CHECK_THAT(result.err, Catch::Contains(needle));
        CHECK(!fs::exists(out));
    };
    // predict: 2000 tokens hold 2000 x 50257 float logits (383 MiB), the 25,000 ids about 14 GiB
    refused(run_iclab("predict " + run + " --top 1 --tokens " + token_ids(2000), scratch.path, budget), {"iclab predict", "--tokens"});
    refused(run_iclab("predict " + run + " --top 1 --out " + out.string() + " --tokens " + token_ids(2000), scratch.path, budget),
            {"--tokens", "leave out --out"});
    // generate --max-new-tokens 1048576 --out: the context's 2046 steps of 50257 doubles, and their file
    refused(run_iclab("generate " + run + " --prompt-tokens 1,2,3 --max-new-tokens 1048576 --out " + out.string(), scratch.path, budget),
            {"iclab generate", "--max-new-tokens", "leave out --out"});
    // convert: the prompt's float64 forward over 2000 tokens
    refused(run_iclab("convert " + run + " --method exact --out " + out.string() + " --prompt-tokens " + token_ids(2000), scratch.path, budget),
            {"iclab convert", "the prompt's length"});
    // the same commands within the budget run
    const auto small = run_iclab("predict " + run + " --top 1 --tokens " + token_ids(20), scratch.path, budget);
    INFO(small.err);
    CHECK(small.status == 0);
}

TEST_CASE("convert --random-features 1048576 on an lm run is refused under ulimit -v, naming the limit", "[estimate][lm][cli][iclaa]") {
    // Issue 41: under a 4 GiB address-space limit it printed its 4.17 GiB estimate and went on (MemAvailable was larger).
    Scratch scratch;
    const std::string run = gpt2_shaped_run(scratch.path);
    const fs::path out = scratch.path / "iclaa.h5";
    // 2 layers x 4 heads x (w and b_KV: 2 F D + 2 F) doubles = 2.1 GiB of adapter, held twice while written
    const auto result = run_iclab("convert " + run + " --method iclaa --random-features 1048576 --prompt-tokens 1,2,3,4 --out " + out.string(),
                                  scratch.path, "ulimit -v 3145728 &&");
    INFO(result.err);
    CHECK(result.status == 2);
    CHECK_THAT(result.err, Catch::Contains("GiB available (ulimit -v)") && Catch::Contains("lower --random-features"));
    CHECK(!fs::exists(out));
}

TEST_CASE("experiment keys of issue 41 are refused against the memory budget: iclaa and iclaa_lm random features, gd004_figures features",
          "[estimate]") {
    Scratch scratch;
    const auto iclaa = run_iclab("run configs/quick/iclaa.yaml iclaa.random_features=[1048576] iclaa.claim_features=1048576 --dry-run",
                                 scratch.path, "ICLAB_MEMORY_GIB=4");
    INFO(iclaa.err);
    CHECK(iclaa.status == 2);
    CHECK_THAT(iclaa.err, Catch::Contains("needs about") && Catch::Contains("4 GiB available (ICLAB_MEMORY_GIB)") &&
                              Catch::Contains("lower iclaa.random_features"));
    // iclaa_lm: every prf / orf row's map is held for the run (4 rows of 2^20 features here)
    write_byte_tokenizer(scratch.path / "tok");
    std::ofstream(scratch.path / "train.txt") << "In the beginning God created the heaven and the earth.\n";
    std::ofstream(scratch.path / "heldout.txt") << "And God said, Let there be light: and there was light.\n";
    const fs::path tokens = scratch.path / "tokens.h5";
    REQUIRE(run_iclab("tokenize --tokenizer " + (scratch.path / "tok").string() + " --out " + tokens.string() + " --train " +
                          (scratch.path / "train.txt").string() + " --heldout " + (scratch.path / "heldout.txt").string(),
                      scratch.path)
                .status == 0);
    const auto lm = run_iclab("run configs/quick/iclaa_lm.yaml data.tokens=" + tokens.string() + " data.tokenizer=" + (scratch.path / "tok").string() +
                                  " iclaa_lm.random_features=[1048576] iclaa_lm.claim_features=1048576 --dry-run",
                              scratch.path, "ICLAB_MEMORY_GIB=4");
    INFO(lm.err);
    CHECK(lm.status == 2);
    CHECK_THAT(lm.err, Catch::Contains("needs about") && Catch::Contains("lower iclaa_lm.random_features"));
    const std::string figures = "run configs/quick/gd004_figures.yaml figures.features=[1048576] figures.repeats=100000 --dry-run";
    const auto refused = run_iclab(figures, scratch.path, "ICLAB_MEMORY_GIB=0.5");
    INFO(refused.err);
    CHECK(refused.status == 2);
    CHECK_THAT(refused.err, Catch::Contains("lower figures.features") && Catch::Contains("figures.repeats"));
    // with the memory it needs, the estimate of its time is printed (measured 1.1-1.7 us per feature and cell): about
    // 6 days, more work than iclab starts in one run (kMaxRunFlops), refused naming it
    const auto planned = run_iclab(figures, scratch.path, "ICLAB_MEMORY_GIB=2");
    INFO(planned.err);
    CHECK(planned.status == 2);
    CHECK_THAT(planned.out + planned.err, Catch::Contains("days") && Catch::Contains("iclab refuses runs of more than"));
}

TEST_CASE("gd004_figures: the memory estimate of the Performer sweep is within 2x of the measured peak", "[estimate]") {
    Scratch scratch;
    const auto& catalog = iclab::experiments::catalog();
    const std::string config = std::string(ICLAB_SOURCE_DIR) + "/configs/quick/gd004_figures.yaml";
    const std::vector<std::string> common = {"figures.repeats=2", "figures.fig10=false", "train.steps=256", "train.checkpoint_every=256",
                                             "eval.every=256", "log.every=256", "output.dir=" + (scratch.path / "runs").string()};
    const auto estimate = [&](const std::string& features) {
        std::vector<std::string> overrides = common;
        overrides.push_back("figures.features=" + features);
        const iclab::config::Config cfg = catalog.load_config(config, overrides);
        return catalog.find("gd004_figures").estimate(cfg).memory_gib;
    };
    std::string args = "run " + config + " --quiet";
    for (const auto& o : common) args += " " + o;
    const Measured small = run_measured(args + " figures.features=[3,6]", scratch.path);
    const Measured large = run_measured(args + " figures.features=[3,262144]", scratch.path);
    const double r = ratio(estimate("[3,6]"), estimate("[3,262144]"), small, large);
    CHECK(r >= 0.5);
    CHECK(r <= 2.0);
}

TEST_CASE("available memory: ICLAB_MEMORY_GIB and ulimit -v lower it and are named", "[estimate]") {
    SECTION("ICLAB_MEMORY_GIB") {
        ::setenv("ICLAB_MEMORY_GIB", "0.25", 1);
        const iclab::AvailableMemory memory = iclab::available_memory();
        const std::string described = iclab::describe_available_memory();
        ::setenv("ICLAB_MEMORY_GIB", "lots", 1);
        CHECK_THROWS_AS(iclab::available_memory_gib(), iclab::InputError);
        ::setenv("ICLAB_MEMORY_GIB", "0", 1);
        CHECK_THROWS_AS(iclab::available_memory_gib(), iclab::InputError);
        ::unsetenv("ICLAB_MEMORY_GIB");
        CHECK(memory.gib == 0.25);
        CHECK(std::string(memory.source) == "ICLAB_MEMORY_GIB");
        CHECK(described == "0.25 GiB available (ICLAB_MEMORY_GIB)");
        CHECK(iclab::available_memory_gib() > 0.0);
    }
    SECTION("ulimit -v, in a child process") {
        int pipe_ends[2];
        REQUIRE(::pipe(pipe_ends) == 0);
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            // 256 MiB above what the process maps now
            const double mapped = iclab::current_rss_gib();  // touches /proc; VmSize read below through available_memory
            std::ifstream status("/proc/self/status");
            std::string line;
            double vm_kb = 0;
            while (std::getline(status, line))
                if (line.rfind("VmSize:", 0) == 0) vm_kb = std::stod(line.substr(7));
            rlimit limit{};
            ::getrlimit(RLIMIT_AS, &limit);
            limit.rlim_cur = static_cast<rlim_t>(vm_kb * 1024.0 + 256.0 * 1024 * 1024);
            const bool set = ::setrlimit(RLIMIT_AS, &limit) == 0;
            const iclab::AvailableMemory memory = iclab::available_memory();
            const bool ok = set && mapped > 0 && std::string(memory.source) == "ulimit -v" && memory.gib > 0.2 && memory.gib <= 0.25;
            const char verdict = ok ? 'y' : 'n';
            (void)!::write(pipe_ends[1], &verdict, 1);
            ::_exit(0);
        }
        ::close(pipe_ends[1]);
        char verdict = 0;
        CHECK(::read(pipe_ends[0], &verdict, 1) == 1);
        ::close(pipe_ends[0]);
        int status = 0;
        ::waitpid(pid, &status, 0);
        CHECK(verdict == 'y');
    }
}

}  // namespace iclab_test_lm_estimates
