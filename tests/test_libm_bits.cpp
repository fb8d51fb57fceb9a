// Which implementation gives the transcendental functions their bits, pinned (docs/configs.md, "Bits across builds").
// iclab calls the C library's libm for exp, log, pow, sin, cos (initialization's Box-Muller draws, the RoPE table, fp64
// feature maps and GELU, softmax, the cosine schedule, AdamW's bias corrections), expm1, log1p, lgamma, log10 (reports
// and p-values) and, in float, expf and logf (fp32 softmax and losses); the fp32 elu+1 and GELU exponential is iclab's
// own nn::exp_vectorizable. With Debian 12's glibc 2.36 the double functions come in variants that glibc picks when the
// program starts (ifunc, sysdeps/x86_64/fpu/multiarch/ifunc-fma.h and ifunc-fma4.h): the `_fma` builds (compiled with
// -mfma -mavx2) on every CPU with AVX2 and FMA, which is every CPU iclab supports; the SSE2 builds elsewhere. The two
// round differently in ~1e-3 of the inputs. Which -march iclab itself was built for does not enter (the variant is chosen
// by the CPU), so results are bit-identical across builds and across AVX2+FMA CPUs as long as the glibc is the same.
//
// The table holds inputs and the bit patterns glibc 2.36's FMA variants gave for them, computed once on 2026-11-29 (Intel
// Xeon, AVX-512) and committed; most rows are inputs where the SSE2 variant differs (its bits in the comment: found by
// running the same inputs under GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA, which makes glibc pick the SSE2 variants;
// this test fails there). A failure means another libm (another glibc version, another C library, a CPU without AVX2+FMA):
// results will not re-run bit for bit. Regenerate the table for a new toolchain with ICLAB_PRINT_LIBM_BITS=1 (prints every
// row with this machine's bits), and say so in docs/configs.md: every published number then needs a re-run.
// expf and logf (every float compared): the two variants of expf differ on exactly two of the 2^32 floats, both rows here;
// logf's on none, so its rows pin the implementation only. exp_vectorizable's rows are inputs where its fused
// multiply-adds matter (an unfused build gives the bits in the comment).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "framework/nn/vector_math.hpp"

namespace iclab_test_libm_bits {  // this file's names (unity build: CMakeLists.txt)

namespace {

struct DoubleRow {
    const char* function;
    double x, y;  // y: pow's exponent
    std::uint64_t bits;
};

// glibc 2.36 (Debian 12, libc6 2.36-9), x86-64, the FMA variants
const DoubleRow kDoubleRows[] = {
    {"exp", 0x1.4a22a5c32f9f2p+4, 0, 0x41cb3e1670298c15u},  // SSE2 variant: 0x41cb3e1670298c14
    {"exp", 0x1.d98d3db286cp+2, 0, 0x40998b00d66fc72fu},  // SSE2 variant: 0x40998b00d66fc72e
    {"exp", -0x1.24f87e02db38cp+4, 0, 0x3e47f8e33c3a1681u},  // SSE2 variant: 0x3e47f8e33c3a1682
    {"exp", 0x1.dcbf3eac50b2ep+4, 0, 0x429fb98a89000561u},  // SSE2 variant: 0x429fb98a89000560
    {"exp", -0x1p-1, 0, 0x3fe368b2fc6f960au},
    {"exp", 0x1.8p+1, 0, 0x403415e5bf6fb106u},
    {"exp", -0x1.4p+3, 0, 0x3f07cd79b5647c9bu},
    {"log", 0x1.6df55c3bad9c1p-1, 0, 0xbfd57dd3a434ef16u},  // SSE2 variant: 0xbfd57dd3a434ef17
    {"log", 0x1.ce164251bc5a7p-1, 0, 0xbfba42210a1fea9fu},  // SSE2 variant: 0xbfba42210a1feaa0
    {"log", 0x1.d1cfadca2352ep-1, 0, 0xbfb8340b369bfe0fu},  // SSE2 variant: 0xbfb8340b369bfe10
    {"log", 0x1.7277c2e1177eap-1, 0, 0xbfd4b52ccf4f4652u},  // SSE2 variant: 0xbfd4b52ccf4f4651
    {"log", 0x1.3333333333333p-2, 0, 0xbff34378fcbda721u},
    {"log", 0x1.fffffffffffffp-1, 0, 0xbca0000000000000u},
    {"pow", 0x1.1f02b50590cbbp+13, -0x1.26c8c43f775a2p+0, 0x3efca6c4f66e4b45u},  // SSE2 variant: 0x3efca6c4f66e4b46
    {"pow", 0x1.6b96e9e1b9f8bp+12, 0x1.3232d825d909cp+1, 0x41ce35ca74091615u},  // SSE2 variant: 0x41ce35ca74091616
    {"pow", 0x1.1622e5b671ed2p+10, 0x1.8dbea329470e8p+0, 0x40ea67f46b5883dbu},  // SSE2 variant: 0x40ea67f46b5883da
    {"pow", 0x1.6d11af1ef0867p+11, 0x1.deed45b7c26p-7, 0x3ff1faac3c21dd73u},  // SSE2 variant: 0x3ff1faac3c21dd72
    {"pow", 0x1.388p+13, -0x1.c71c71c71c71cp-2, 0x3f9114d3522608c7u},
    {"pow", 0x1.ccccccccccccdp-1, 0x1.9p+6, 0x3efbda056ed49410u},
    {"pow", 0x1.2p+5, -0x1p-2, 0x3fda20bd700c2c3eu},
    {"sin", 0x1.50303dbc96a5ep+10, 0, 0x3fc36537fb6161c9u},  // SSE2 variant: 0x3fc36537fb6161ca
    {"sin", 0x1.61aca0d632aa1p-3, 0, 0x3fc5feb455d8d82cu},  // SSE2 variant: 0x3fc5feb455d8d82d
    {"sin", 0x1.d9d3cea753804p+1, 0, 0xbfe100c0905a0386u},  // SSE2 variant: 0xbfe100c0905a0387
    {"sin", 0x1.3167f81ea060ap+0, 0, 0x3fedbe46b3ae0e19u},  // SSE2 variant: 0x3fedbe46b3ae0e18
    {"sin", 0x1.2p+4, 0, 0xbfe8081668131e26u},
    {"cos", 0x1.3cff49a903e43p+7, 0, 0x3fc35bc0e43c5144u},  // SSE2 variant: 0x3fc35bc0e43c5143
    {"cos", 0x1.e8db5abdbd633p+10, 0, 0x3fcb2f61e5cb2024u},  // SSE2 variant: 0x3fcb2f61e5cb2025
    {"cos", 0x1.2ecb2a4c85a6ap+0, 0, 0x3fd836d1f63d6f42u},  // SSE2 variant: 0x3fd836d1f63d6f43
    {"cos", 0x1.2e77287b28f62p+10, 0, 0xbfee130f1224052eu},  // SSE2 variant: 0xbfee130f1224052f
    {"cos", 0x1.2p+4, 0, 0x3fe52150815d2470u},
    {"expm1", -0x1.35bd3f5bc12bp-2, 0, 0xbfd0b47eb3670093u},  // SSE2 variant: 0xbfd0b47eb3670092
    {"expm1", 0x1.9e156d00716ap-3, 0, 0x3fccaea4d7926155u},  // SSE2 variant: 0x3fccaea4d7926156
    {"expm1", 0x1.bfbb69714ad48p-2, 0, 0x3fe18cb2d19d2c02u},  // SSE2 variant: 0x3fe18cb2d19d2c03
    {"expm1", -0x1.38614175dee9p-2, 0, 0xbfd0d3ad588d7df7u},  // SSE2 variant: 0xbfd0d3ad588d7df6
    {"expm1", 0x1p-10, 0, 0x3f5002002aad5577u},
    {"log1p", 0x1.c3887e303d47cp+0, 0, 0x3ff04405c7c59f08u},  // SSE2 variant: 0x3ff04405c7c59f07
    {"log1p", -0x1.415017e1f96cap-2, 0, 0xbfd8198f57fabe50u},  // SSE2 variant: 0xbfd8198f57fabe4f
    {"log1p", 0x1.bbb761e231c04p-3, 0, 0x3fc91a119fafbcd3u},  // SSE2 variant: 0x3fc91a119fafbcd2
    {"log1p", -0x1.1845295f2a2b8p-2, 0, 0xbfd477811430d9a5u},  // SSE2 variant: 0xbfd477811430d9a6
    {"log1p", -0x1.999999999999ap-4, 0, 0xbfbaf8e8210a415eu},
    {"lgamma", 0x1.43f774a638fb3p+6, 0, 0x40711a2f23bd16b1u},  // SSE2 variant: 0x40711a2f23bd16b2
    {"lgamma", 0x1.704222b2dc64fp+4, 0, 0x404842bf374c0527u},  // SSE2 variant: 0x404842bf374c0525
    {"lgamma", 0x1.5bdc2feca7b8dp+7, 0, 0x40868d3d2b20d23cu},  // SSE2 variant: 0x40868d3d2b20d23a
    {"lgamma", 0x1.4p+2, 0, 0x40096ca77c922cf9u},
    {"log10", 0x1.c08f0e13a8bb4p+8, 0, 0x400536ed158748f7u},  // SSE2 variant: 0x400536ed158748f8
    {"log10", 0x1.388p+13, 0, 0x4010000000000000u},
    {"tanh", 0x1.e39b3f8f49p-4, 0, 0x3fbe15f29e423005u},  // SSE2 variant: 0x3fbe15f29e423006
    {"tanh", -0x1.3b96b26a7138p-3, 0, 0xbfc391d3d2682334u},  // SSE2 variant: 0xbfc391d3d2682333
    {"tanh", -0x1.5344af0c5198p-3, 0, 0xbfc5032d19bc2a9eu},  // SSE2 variant: 0xbfc5032d19bc2a9f
    {"tanh", 0x1.01889e73342p-3, 0, 0x3fc002f4c531f394u},  // SSE2 variant: 0x3fc002f4c531f395
    {"tanh", 0x1.8p-1, 0, 0x3fe45323e552f228u},
    {"erf", 0x1.56d97d5b4d784p+0, 0, 0x3fee2303af3218f9u},  // SSE2 variant: 0x3fee2303af3218f8
    {"erf", 0x1p-1, 0, 0x3fe0a7ef5c18edd2u},
};

struct FloatRow {
    const char* function;
    float x;
    std::uint32_t bits;
};

const FloatRow kFloatRows[] = {
    {"expf", -0x1p-1f, 0x3f1b4598u},
    {"expf", 0x1.8p+0f, 0x408f69ffu},
    {"expf", -0x1.48p+3f, 0x38144cd4u},
    {"expf", 0x1.4p+4f, 0x4de75844u},
    {"expf", 0x1.6b2c4ep-3f, 0x3f98d5d6u},
    {"expf", -0x1.3f8a2p+4f, 0x3111c6dbu},
    {"expf", 0x1.04845ep+5f, 0x56fc9f1cu},   // SSE2 variant: 0x56fc9f1b
    {"expf", -0x1.f8cbb2p+5f, 0x11fa2993u},  // SSE2 variant: 0x11fa2992
    {"logf", 0x1.333334p-2f, 0xbf9a1bc8u},
    {"logf", 0x1.0c6f7ap-20f, 0xc15d0c55u},
    {"logf", 0x1.ap+5f, 0x407ce12du},
    {"logf", 0x1.fffffep-1f, 0xb3800000u},
    {"logf", 0x1.8p+7f, 0x40a83d67u},
    // iclab's own float exponential (framework/nn/vector_math.hpp): its multiply-adds fused (iclab::multiply_add)
    {"exp_vectorizable", 0x1.f6d9eep-4f, 0x3f90b82au},    // unfused: 0x3f90b82b
    {"exp_vectorizable", 0x1.cbf1cp+0f, 0x40c0f157u},     // unfused: 0x40c0f158
    {"exp_vectorizable", -0x1.8e6d56p-3f, 0x3f52bdddu},   // unfused: 0x3f52bddc
    {"exp_vectorizable", -0x1.02c31p+0f, 0x3eba5543u},    // unfused: 0x3eba5544
    {"exp_vectorizable", -0x1.9d2fe4p+3f, 0x3625a031u},   // unfused: 0x3625a030
};

// The inputs pass through volatile memory: with a constant argument GCC would evaluate the call itself at compile time
// (with MPFR, correctly rounded), and the test would compare the compiler against the table instead of libm.
double call(const std::string& f, double x_in, double y_in) {
    volatile double vx = x_in, vy = y_in;
    const double x = vx, y = vy;
    if (f == "exp") return std::exp(x);
    if (f == "log") return std::log(x);
    if (f == "pow") return std::pow(x, y);
    if (f == "sin") return std::sin(x);
    if (f == "cos") return std::cos(x);
    if (f == "expm1") return std::expm1(x);
    if (f == "log1p") return std::log1p(x);
    if (f == "lgamma") return std::lgamma(x);
    if (f == "log10") return std::log10(x);
    if (f == "tanh") return std::tanh(x);
    if (f == "erf") return std::erf(x);
    FAIL("no function " << f);
    return 0.0;
}

float call(const std::string& f, float x_in) {
    volatile float vx = x_in;
    const float x = vx;
    if (f == "expf") return std::exp(x);
    if (f == "logf") return std::log(x);
    if (f == "exp_vectorizable") return iclab::nn::exp_vectorizable(x);
    FAIL("no function " << f);
    return 0.0f;
}

template <class Bits, class T>
Bits bits_of(T value) {
    Bits b;
    std::memcpy(&b, &value, sizeof b);
    return b;
}

bool print_table() { return std::getenv("ICLAB_PRINT_LIBM_BITS") != nullptr; }

}  // namespace

TEST_CASE("libm's double functions give the bits of glibc 2.36's FMA variants", "[libm][bits]") {
    std::size_t differing = 0;
    for (const DoubleRow& row : kDoubleRows) {
        const auto got = bits_of<std::uint64_t>(call(row.function, row.x, row.y));
        if (print_table())
            std::printf("    {\"%s\", %a, %a, 0x%016llxu},\n", row.function, row.x, row.y, static_cast<unsigned long long>(got));
        INFO(row.function << "(" << row.x << (std::string(row.function) == "pow" ? ", " + std::to_string(row.y) : "")
                          << "): got 0x" << std::hex << got << ", pinned 0x" << row.bits);
        CHECK(got == row.bits);
        differing += got != row.bits;
    }
    INFO(differing << " of " << std::size(kDoubleRows) << " rows differ");
    CHECK(differing == 0);
}

TEST_CASE("expf, logf and exp_vectorizable give their pinned bits", "[libm][bits][vector_math]") {
    for (const FloatRow& row : kFloatRows) {
        const auto got = bits_of<std::uint32_t>(call(row.function, row.x));
        if (print_table()) std::printf("    {\"%s\", %af, 0x%08xu},\n", row.function, row.x, static_cast<unsigned>(got));
        INFO(row.function << "(" << row.x << "): got 0x" << std::hex << got << ", pinned 0x" << row.bits);
        CHECK(got == row.bits);
    }
}

}  // namespace iclab_test_libm_bits
