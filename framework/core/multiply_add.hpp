#pragma once
// a·b + c rounded as the target fixes it: once (std::fma) where it has FMA instructions, twice where it has none (there
// the compiler cannot contract either). Never left to -ffp-contract: the compiler may contract one inlined copy of a
// loop and not another, and then the same product gave other bits when inlined into the attention than through
// gemm.hpp's cells (found on this CPU with the epilogue's alpha·acc + beta·y). Used where bits must not depend on the
// build: the blocked GEMM kernel (framework/nn/small_gemm.hpp) and the dense solver (framework/core/dense_linalg.cpp).
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
