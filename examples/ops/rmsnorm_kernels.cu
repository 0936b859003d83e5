// CUDA and HIP kernels of fused RMSNorm; see rmsnorm_kernels.h. hipcc compiles this file
// unchanged (-x hip): the two runtimes share the kernel language, only the headers and the
// stream and error types differ.
#include "rmsnorm_kernels.h"

#include <type_traits>

#if defined(__HIPCC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
using GpuStream = hipStream_t;
static const char* LastError() {
  hipError_t e = hipGetLastError();
  return e == hipSuccess ? nullptr : hipGetErrorString(e);
}
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
using GpuStream = cudaStream_t;
static const char* LastError() {
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}
#endif

namespace trainlock_ops {
namespace {

constexpr int kThreads = 256;

struct Bf16 {
  unsigned short bits;
};

__device__ float Load(const float* p) {
  return *p;
}
__device__ float Load(const __half* p) {
  return __half2float(*p);
}
__device__ float Load(const Bf16* p) {
  return __uint_as_float(static_cast<unsigned>(p->bits) << 16);
}

__device__ void Store(float* p, float v) {
  *p = v;
}
__device__ void Store(__half* p, float v) {
  *p = __float2half_rn(v);
}
__device__ void Store(Bf16* p, float v) {
  unsigned bits = __float_as_uint(v);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    p->bits = 0x7fc0;  // NaN stays NaN
  } else {
    p->bits = static_cast<unsigned short>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
}

// Sum of `v` over the block, returned to every thread; fixed order, so deterministic.
__device__ float BlockSum(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  float total = shared[0];
  __syncthreads();
  return total;
}

template <typename T>
__global__ void Forward(const T* x, const T* w, T* y, int64_t cols, float eps) {
  __shared__ float shared[kThreads];
  const T* row = x + blockIdx.x * cols;
  float sum = 0;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) sum += Load(row + j) * Load(row + j);
  const float rstd = rsqrtf(BlockSum(sum, shared) / static_cast<float>(cols) + eps);
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    float v = Load(row + j) * rstd * Load(w + j);
#if defined(TRAINLOCK_OPS_WRONG_KERNEL)
    v *= 1.01f;  // the deliberately wrong variant the tolerance check must catch
#endif
    Store(y + blockIdx.x * cols + j, v);
  }
}

template <typename T>
__global__ void Backward(const T* dy, const T* x, const T* w, T* dx, float* rstd_out, int64_t cols,
                         float eps) {
  __shared__ float shared[kThreads];
  const int64_t base = blockIdx.x * cols;
  float sum = 0, dot = 0;
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    const float xv = Load(x + base + j);
    sum += xv * xv;
    dot += Load(w + j) * Load(dy + base + j) * xv;
  }
  const float rstd = rsqrtf(BlockSum(sum, shared) / static_cast<float>(cols) + eps);
  dot = BlockSum(dot, shared);
  if (threadIdx.x == 0) rstd_out[blockIdx.x] = rstd;
  const float scale = rstd * rstd * rstd * dot / static_cast<float>(cols);
  for (int64_t j = threadIdx.x; j < cols; j += kThreads) {
    Store(dx + base + j, rstd * Load(w + j) * Load(dy + base + j) - Load(x + base + j) * scale);
  }
}

template <typename T>
__global__ void WeightGrad(const T* dy, const T* x, const float* rstd, T* dw, int64_t rows,
                           int64_t cols) {
  const int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (j >= cols) return;
  float sum = 0;
  for (int64_t r = 0; r < rows; ++r)
    sum += Load(dy + r * cols + j) * Load(x + r * cols + j) * rstd[r];
  Store(dw + j, sum);
}

// Calls `launch` with the element type that `dtype` names.
template <typename Launch>
const char* WithType(Dtype dtype, Launch launch) {
  switch (dtype) {
    case Dtype::kFloat32:
      launch(static_cast<float*>(nullptr));
      break;
    case Dtype::kBFloat16:
      launch(static_cast<Bf16*>(nullptr));
      break;
    case Dtype::kFloat16:
      launch(static_cast<__half*>(nullptr));
      break;
  }
  return LastError();
}

}  // namespace

const char* RmsNormForwardGpu(const void* x, const void* weight, void* y, int64_t rows,
                              int64_t cols, float eps, Dtype dtype, void* stream) {
  if (rows == 0) return nullptr;
  return WithType(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    Forward<T><<<rows, kThreads, 0, static_cast<GpuStream>(stream)>>>(
        static_cast<const T*>(x), static_cast<const T*>(weight), static_cast<T*>(y), cols, eps);
  });
}

const char* RmsNormBackwardGpu(const void* dy, const void* x, const void* weight, void* dx,
                               float* rstd, int64_t rows, int64_t cols, float eps, Dtype dtype,
                               void* stream) {
  if (rows == 0) return nullptr;
  return WithType(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    Backward<T><<<rows, kThreads, 0, static_cast<GpuStream>(stream)>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<const T*>(weight),
        static_cast<T*>(dx), rstd, cols, eps);
  });
}

const char* RmsNormWeightGradGpu(const void* dy, const void* x, const float* rstd, void* dweight,
                                 int64_t rows, int64_t cols, Dtype dtype, void* stream) {
  if (cols == 0) return nullptr;
  const int64_t blocks = (cols + kThreads - 1) / kThreads;
  return WithType(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    WeightGrad<T><<<blocks, kThreads, 0, static_cast<GpuStream>(stream)>>>(
        static_cast<const T*>(dy), static_cast<const T*>(x), rstd, static_cast<T*>(dweight), rows,
        cols);
  });
}

}  // namespace trainlock_ops
