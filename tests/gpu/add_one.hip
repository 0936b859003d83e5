// A minimal HIP kernel library: the inspector tests build it for gfx90a.
#include <hip/hip_runtime.h>
__global__ void add_one(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}
extern "C" void launch(float* x, int n) {
  hipLaunchKernelGGL(add_one, dim3((n + 255) / 256), dim3(256), 0, 0, x, n);
}
