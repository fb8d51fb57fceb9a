#pragma once
// Seeded, portable random numbers. Every random draw in iclab comes from an Rng.
// xoshiro256** (Blackman & Vigna) seeded through splitmix64. We implement the distributions
// ourselves because std:: distributions differ between standard libraries: the same seed must
// give the same numbers on every build.
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace iclab {

class Rng {
public:
    explicit Rng(std::uint64_t seed = 0) { reseed(seed); }

    void reseed(std::uint64_t seed) {
        std::uint64_t x = seed;
        for (auto& s : state_) s = splitmix64(x);
        has_spare_normal_ = false;
        spare_normal_ = 0.0;
    }

    // An independent generator for a named sub-stream (e.g. data vs init vs eval).
    Rng derive(std::uint64_t stream) const {
        std::uint64_t x = state_[0] ^ (stream * 0x9E3779B97F4A7C15ULL) ^ 0xD1B54A32D192ED03ULL;
        return Rng(splitmix64(x) ^ state_[3]);
    }

    std::uint64_t next_u64() {
        const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
        const std::uint64_t t = state_[1] << 17;
        state_[2] ^= state_[0];
        state_[3] ^= state_[1];
        state_[1] ^= state_[2];
        state_[0] ^= state_[3];
        state_[2] ^= t;
        state_[3] = rotl(state_[3], 45);
        return result;
    }

    // Uniform double in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

    // Uniform integer in [0, n), unbiased (Lemire's multiply-and-reject).
    std::uint64_t uniform_int(std::uint64_t n) {
        if (n == 0) return 0;
        unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * n;
        std::uint64_t low = static_cast<std::uint64_t>(m);
        if (low < n) {
            const std::uint64_t threshold = (0 - n) % n;
            while (low < threshold) {
                m = static_cast<unsigned __int128>(next_u64()) * n;
                low = static_cast<std::uint64_t>(m);
            }
        }
        return static_cast<std::uint64_t>(m >> 64);
    }

    // Standard normal draw (Box-Muller, the spare value is kept so draws come in pairs).
    double normal() {
        if (has_spare_normal_) {
            has_spare_normal_ = false;
            return spare_normal_;
        }
        double u1 = uniform();
        while (u1 <= 0.0) u1 = uniform();
        const double u2 = uniform();
        const double radius = std::sqrt(-2.0 * std::log(u1));
        const double angle = 2.0 * M_PI * u2;
        spare_normal_ = radius * std::sin(angle);
        has_spare_normal_ = true;
        return radius * std::cos(angle);
    }

    double normal(double mean, double stddev) { return mean + stddev * normal(); }

    // Full state, for checkpoints (resume must continue the same stream).
    struct State {
        std::array<std::uint64_t, 4> words;
        bool has_spare_normal;
        double spare_normal;
    };
    State state() const { return {state_, has_spare_normal_, spare_normal_}; }
    void set_state(const State& s) {
        state_ = s.words;
        has_spare_normal_ = s.has_spare_normal;
        spare_normal_ = s.spare_normal;
    }

private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    static std::uint64_t splitmix64(std::uint64_t& x) {
        std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }

    std::array<std::uint64_t, 4> state_{};
    bool has_spare_normal_ = false;
    double spare_normal_ = 0.0;
};

// Fisher-Yates shuffle drawing from rng: items.size() - 1 calls of uniform_int, from the back (std::shuffle's draws
// differ between standard libraries).
template <class T>
void shuffle_with(std::vector<T>& items, Rng& rng) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[rng.uniform_int(i)]);
}

}  // namespace iclab
