// Issue 44: linear attention's features of q and k (the elu+1 map of rows read in place from qkv, then RoPE) as
// framework/nn/attention_kernels.hpp's head_features runs them, at the quick model's shape, in three forms alternating:
//   A  before: RoPE from the double table, converted per pair and call (rope.hpp before issue 44), no prefetch
//   B  RopeTable::rotate<float> (its float copy of the table)
//   C  B and the rows 8 ahead prefetched (head_features now)
// and checks that B and C give A's bits. Thread CPU time per call (min / median of 7 rounds of 20 calls; before each
// call qkv is rewritten, as the QKV product does, and 16 MB are written elsewhere, as the rest of a step does).
//   g++ -std=c++17 -O3 -march=x86-64-v3 -ffp-contract=off -fno-trapping-math -I. scripts/bench/head_features_ab.cpp \
//       -o /tmp/head_features_ab && /tmp/head_features_ab
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "framework/nn/rope.hpp"
#include "framework/nn/vector_math.hpp"

namespace {
using iclab::multiply_add;
constexpr std::size_t kB = 64, kT = 64, kH = 2, kD = 32, kC = kH * kD, kBase = 10000;

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// rope.hpp's rotate<float> before issue 44: the double table, converted per pair
struct DoubleRope {
    std::vector<double> cos_, sin_;
    DoubleRope() {
        const std::size_t pairs = kD / 2;
        for (std::size_t m = 0; m < kT; ++m)
            for (std::size_t p = 0; p < pairs; ++p) {
                const double theta = std::pow(double(kBase), -2.0 * static_cast<double>(p) / static_cast<double>(kD));
                cos_.push_back(std::cos(static_cast<double>(m) * theta));
                sin_.push_back(std::sin(static_cast<double>(m) * theta));
            }
    }
    void rotate(float* out, const float* in, std::size_t position) const {
        const std::size_t pairs = kD / 2;
        const double* c = cos_.data() + position * pairs;
        const double* s = sin_.data() + position * pairs;
        const double sign = 1.0;
        for (std::size_t p = 0; p < pairs; ++p) {
            const float x0 = in[2 * p], x1 = in[2 * p + 1];
            const float cs = static_cast<float>(c[p]), sn = static_cast<float>(sign * s[p]);
            out[2 * p] = multiply_add(cs, x0, -(sn * x1));
            out[2 * p + 1] = multiply_add(sn, x0, cs * x1);
        }
    }
};

template <int Form>
void features(float* phi, float* rot, const float* qkv, const DoubleRope& old_rope, const iclab::nn::RopeTable& rope) {
    for (std::size_t bh = 0; bh < kB * kH; ++bh)
        for (std::size_t part = 0; part < 2; ++part) {  // q, then k
            const float* x = qkv + (bh / kH) * kT * 3 * kC + (bh % kH) * kD + part * kC;
            float* ph = phi + (bh * 2 + part) * kT * kD;
            float* ro = rot + (bh * 2 + part) * kT * kD;
            for (std::size_t t = 0; t < kT; ++t) {
                if (Form == 2 && t + 8 < kT) {
                    const float* ahead = x + (t + 8) * 3 * kC;
                    for (std::size_t d = 0; d < kD; d += 16) __builtin_prefetch(ahead + d);
                    __builtin_prefetch(ahead + kD - 1);
                }
                const float* row = x + t * 3 * kC;
                for (std::size_t d = 0; d < kD; ++d)
                    ph[t * kD + d] = row[d] > 0.0f ? row[d] + 1.0f : iclab::nn::exp_elementwise(row[d]);
            }
            for (std::size_t t = 0; t < kT; ++t) {
                if (Form == 0)
                    old_rope.rotate(ro + t * kD, ph + t * kD, t);
                else
                    rope.rotate(ro + t * kD, ph + t * kD, t, false);
            }
        }
}
}  // namespace

int main() {
    const DoubleRope old_rope;
    const iclab::nn::RopeTable rope(kT, kD, double(kBase));
    std::vector<float> source(kB * kT * 3 * kC), qkv(source.size()), elsewhere(4u << 20);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : source) x = normal(rng);
    std::vector<float> phi[3], rot[3];
    std::vector<double> ms[3];
    for (int form = 0; form < 3; ++form) {
        phi[form].resize(kB * kH * 2 * kT * kD);
        rot[form].resize(phi[form].size());
    }
    for (int round = 0; round < 7; ++round)
        for (int form = 0; form < 3; ++form) {
            double total = 0.0;
            for (int call = 0; call < 20; ++call) {
                std::fill(elsewhere.begin(), elsewhere.end(), float(call));
                std::copy(source.begin(), source.end(), qkv.begin());
                const double start = cpu_seconds();
                if (form == 0) features<0>(phi[0].data(), rot[0].data(), qkv.data(), old_rope, rope);
                if (form == 1) features<1>(phi[1].data(), rot[1].data(), qkv.data(), old_rope, rope);
                if (form == 2) features<2>(phi[2].data(), rot[2].data(), qkv.data(), old_rope, rope);
                total += cpu_seconds() - start;
            }
            ms[form].push_back(total / 20 * 1e3);
        }
    const char* names[3] = {"A before", "B float RoPE table", "C B + prefetch 8 rows"};
    int status = 0;
    for (int form = 0; form < 3; ++form) {
        std::sort(ms[form].begin(), ms[form].end());
        const bool same = std::memcmp(phi[form].data(), phi[0].data(), phi[0].size() * sizeof(float)) == 0 &&
                          std::memcmp(rot[form].data(), rot[0].data(), rot[0].size() * sizeof(float)) == 0;
        status |= same ? 0 : 1;
        std::printf("%-24s CPU ms per call: min %.3f median %.3f; bits %s\n", names[form], ms[form].front(), ms[form][3],
                    same ? "equal to A" : "DIFFER from A");
    }
    return status;
}
