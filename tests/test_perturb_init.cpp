// train.perturb_init_ulps (framework/train/perturb.hpp, issue 45 "Robustness shown"): every trained parameter moves by
// exactly that many ulps of its working precision after initialization, frozen ones keep their bits, and the key at 0
// is the run without it, bit for bit. Observed through a run of one step at learning rate 0 (plain SGD: p - 0·g = p),
// whose final checkpoint holds the initial parameters.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "framework/core/rng.hpp"
#include "framework/io/results_file.hpp"
#include "framework/model/parameters.hpp"
#include "framework/train/perturb.hpp"
#include "tests/cli_helpers.hpp"

namespace iclab_test_perturb_init {  // this file's names (unity build: CMakeLists.txt)

using namespace iclab_test;
using iclab::io::ResultsReader;

namespace {

// One step of the quick induction-head model (b_KV, b_D frozen at 0: model.attention_bias_trainable false) that
// changes nothing: its checkpoint is the initialization.
const std::string kInitOnly =
    "configs/quick/induction_head.yaml train.steps=1 eval.every=1 task.seq_len=16 eval.sequences=8 train.batch_size=4 "
    "train.optimizer=sgd train.schedule=constant train.lr=0 --quiet --threads 1";

fs::path run_dir(const std::string& extra, const Scratch& scratch, const std::string& name) {
    const auto result = run_iclab("run " + kInitOnly + " " + extra + " output.name=" + name + " output.dir=" + scratch.path.string(), scratch.path);
    INFO(result.err);
    REQUIRE(result.status == 0);
    return last_line(result.out);
}

}  // namespace

TEST_CASE("perturb_init_ulps moves each value by exactly that many ulps, its direction from its own stream", "[perturb][claims]") {
    std::vector<double> x = {0.0, 1.0, -2.5, 1e-300, std::numeric_limits<double>::max()};
    const std::vector<double> before = x;
    iclab::Rng directions = iclab::Rng(7).derive(iclab::train::kPerturbStream);
    iclab::Rng replay = directions;
    iclab::train::perturb_values_by_ulps(x.data(), x.size(), 2, directions);
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double towards = (replay.next_u64() & 1U) ? std::numeric_limits<double>::max() : std::numeric_limits<double>::lowest();
        CHECK(x[i] == std::nextafter(std::nextafter(before[i], towards), towards));
    }
    // fp32: the ulp of float, not of double
    std::vector<float> f = {1.0f, 3.0f};
    iclab::Rng up_or_down(3);
    iclab::train::perturb_values_by_ulps(f.data(), f.size(), 1, up_or_down);
    CHECK(std::fabs(f[0] - 1.0f) >= std::numeric_limits<float>::epsilon() / 2);
    CHECK(std::fabs(f[0] - 1.0f) <= std::numeric_limits<float>::epsilon());
    // frozen tensors keep their bits; 0 ulps draws nothing and moves nothing
    iclab::model::ParameterLayout layout;
    layout.add("w", {3}, true, true, "(3)");
    layout.add("frozen", {2}, false, false, "(2)");
    std::vector<float> params = {0.5f, -0.25f, 2.0f, 0.125f, 4.0f};
    iclab::train::perturb_parameters_by_ulps(params, layout, 0, 1);
    CHECK(params == std::vector<float>{0.5f, -0.25f, 2.0f, 0.125f, 4.0f});
    iclab::train::perturb_parameters_by_ulps(params, layout, 1, 1);
    CHECK(params[3] == 0.125f);
    CHECK(params[4] == 4.0f);
    CHECK(params[0] != 0.5f);
}

TEST_CASE("train.perturb_init_ulps=1 moves every trained initial parameter by 1 ulp, =0 is the default bit for bit", "[perturb][cli]") {
    Scratch scratch;
    const ResultsReader plain(run_dir("", scratch, "plain") / "results.h5");
    const ResultsReader zero(run_dir("train.perturb_init_ulps=0", scratch, "zero") / "results.h5");
    const ResultsReader one(run_dir("train.perturb_init_ulps=1", scratch, "one") / "results.h5");
    const auto names = plain.list("/checkpoint");
    REQUIRE(names.size() > 4);
    std::size_t up = 0, down = 0, frozen = 0;
    for (const auto& name : names) {
        INFO(name);
        const std::string path = "/checkpoint/" + name;
        const auto a = plain.read_tensor_float(path), b = zero.read_tensor_float(path), c = one.read_tensor_float(path);
        REQUIRE(a.values.size() == c.values.size());
        CHECK(std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0);
        const bool trainable = plain.read_attr_string(path, "trainable") == "true";
        for (std::size_t i = 0; i < a.values.size(); ++i) {
            if (!trainable) {
                frozen += c.values[i] == a.values[i];
                CHECK(c.values[i] == a.values[i]);
                continue;
            }
            const float above = std::nextafter(a.values[i], std::numeric_limits<float>::max());
            const float below = std::nextafter(a.values[i], std::numeric_limits<float>::lowest());
            up += c.values[i] == above, down += c.values[i] == below;
            CHECK((c.values[i] == above || c.values[i] == below));
        }
    }
    CHECK(frozen > 0);           // b_KV, b_D: not trained, not moved
    CHECK(up > 100);             // both directions, about half each
    CHECK(down > 100);
}

}  // namespace iclab_test_perturb_init
