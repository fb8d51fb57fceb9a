#pragma once
// a·b + c rounded as the target fixes it: once (std::fma) where it has FMA instructions (every x86-64 build iclab supports,
// x86-64-v3 and up), twice where it has none. The project compiles with -ffp-contract=off (CMakeLists.txt): a fused
// multiply-add is meant exactly where this is written (the GEMM kernel small_gemm.hpp, the attention kernels'
// axpy/dot/combine_rows, the float exp's polynomial in vector_math.hpp, dense_linalg.cpp); left to contraction, GCC fused
// or not per -march/-mtune, and per inlined copy of a loop (docs/configs.md, "Bits across builds").
#include <cmath>

namespace iclab {

template <class T>
inline T multiply_add(T a, T b, T c) {
#if defined(__FMA__)
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

}  // namespace iclab
