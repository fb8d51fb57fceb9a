// The sweep launcher's ETA (framework/workflow/launch.hpp sweep_eta_seconds) on hand-computed cases: a sweep whose jobs
// differ 100x in work, where the mean job time so far misjudges the rest (issue 21: "1 h 38 min after job 3 of a
// 33-min profile"), and the fallback without estimates.
#include <catch2/catch.hpp>

#include "framework/workflow/launch.hpp"

namespace iclab_test_sweep_eta {  // this file's names (unity build: CMakeLists.txt)

using iclab::run::EtaInput;
using iclab::run::sweep_eta_seconds;

TEST_CASE("sweep ETA: weighted by each job's estimated work", "[sweep][eta]") {
    // Finished: a 100-unit job in 100 s and a 1-unit job in 1 s -> 1 s per unit. Queued: 9 one-unit jobs, one job at a
    // time: 9 s. The mean job time (50.5 s) would say 9 x 50.5 = 454.5 s, 50x too long.
    EtaInput in;
    in.done_seconds = {100.0, 1.0};
    in.done_flops = {100e9, 1e9};
    in.queued_flops = std::vector<double>(9, 1e9);
    in.jobs = 1;
    CHECK(sweep_eta_seconds(in) == Approx(9.0));
    // Two at a time: the work left is shared by two workers.
    in.jobs = 2;
    CHECK(sweep_eta_seconds(in) == Approx(4.5));
    // A running 50-unit job 20 s in: 30 s of it left; with one queued 1-unit job and two workers: (30 + 9) / 2.
    in.running_flops = {50e9};
    in.running_elapsed = {20.0};
    CHECK(sweep_eta_seconds(in) == Approx((30.0 + 9.0) / 2.0));
    // A running job past its estimate adds nothing (not a negative time).
    in.running_elapsed = {80.0};
    CHECK(sweep_eta_seconds(in) == Approx(9.0 / 2.0));
    // One job left and two workers: it runs on one of them.
    EtaInput last;
    last.done_seconds = {10.0};
    last.done_flops = {1e9};
    last.queued_flops = {3e9};
    last.jobs = 2;
    CHECK(sweep_eta_seconds(last) == Approx(30.0));
}

TEST_CASE("sweep ETA: without estimates, the mean job time, and zero when nothing is left", "[sweep][eta]") {
    EtaInput in;
    in.done_seconds = {100.0, 1.0};
    in.done_flops = {0.0, 0.0};  // a plan read back from disk has no estimates
    in.queued_flops = {0.0, 0.0, 0.0};
    in.jobs = 2;
    CHECK(sweep_eta_seconds(in) == Approx(50.5 * 2.0));  // ceil(3 / 2) rounds of the mean job
    in.queued_flops.clear();
    CHECK(sweep_eta_seconds(in) == 0.0);
    EtaInput none;
    none.queued_flops = {1e9};
    CHECK(sweep_eta_seconds(none) == 0.0);  // nothing measured yet
}

}  // namespace iclab_test_sweep_eta
