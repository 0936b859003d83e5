// Device kernels of the sample op library, behind a plain C++ interface (no LibTorch) so
// that one source compiles with nvcc for CUDA and with hipcc for ROCm. Rows are contiguous
// vectors of `cols` elements; every kernel accumulates in fp32. Each function returns
// nullptr on success or the runtime's error string.
#pragma once

#include <cstdint>

namespace trainlock_ops {

enum class Dtype { kFloat32, kBFloat16, kFloat16 };

// y = x * rsqrt(mean(x^2) + eps) * weight, per row.
const char* RmsNormForwardGpu(const void* x, const void* weight, void* y, int64_t rows,
                              int64_t cols, float eps, Dtype dtype, void* stream);

// dx per row, and rstd[row] (fp32) for the weight gradient.
const char* RmsNormBackwardGpu(const void* dy, const void* x, const void* weight, void* dx,
                               float* rstd, int64_t rows, int64_t cols, float eps, Dtype dtype,
                               void* stream);

// dweight[col] = sum over rows of dy * x * rstd (one thread per column: deterministic).
const char* RmsNormWeightGradGpu(const void* dy, const void* x, const float* rstd, void* dweight,
                                 int64_t rows, int64_t cols, Dtype dtype, void* stream);

}  // namespace trainlock_ops
