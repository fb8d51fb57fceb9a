#pragma once
// The bars iclab holds ICLCA's exact conversion to (paper 000 Theorem 4.1, Algorithm 1): the relative error of the
// converted model's outputs against the model with the prompt, per (prompt, input) pair. The paper states the
// identity exactly and prints no bar; these are iclab's, as tests/test_iclca_exactness.cpp has asserted them since
// the experiment was written (measured: fp64 4e-16 to 3e-15, fp32 2e-7 to 1.5e-6 up to 1.98B parameters).
namespace iclab::icl {

constexpr double kIclcaExactBarFp64 = 1e-12;  // a few thousand ε = 2.2e-16: rounding only
constexpr double kIclcaExactBarFp32 = 1e-5;   // ~80 ε = 1.2e-7: rounding only, with room for depth and width

inline double iclca_exact_bar(bool fp64) { return fp64 ? kIclcaExactBarFp64 : kIclcaExactBarFp32; }

}  // namespace iclab::icl
