// The one compiled copy of the GEMM machinery (gemm.hpp: gemm_checked and all it calls), for float and double.
#include "framework/nn/gemm.hpp"

namespace iclab::nn::detail {

template void gemm_checked<float>(MatrixRef<float>, MatrixRef<const float>, MatrixRef<const float>, bool, bool, float,
                                  float, SmallGemm, const GemmExtras<float>*, Triangle);
template void gemm_checked<double>(MatrixRef<double>, MatrixRef<const double>, MatrixRef<const double>, bool, bool, double,
                                   double, SmallGemm, const GemmExtras<double>*, Triangle);

}  // namespace iclab::nn::detail
