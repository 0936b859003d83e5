// The CUDA (or, in a ROCm build of LibTorch, HIP) binding of fused RMSNorm: checks the
// tensors, takes the current stream and calls the kernels of rmsnorm_kernels.cu. Registered
// for the CUDA dispatch key, which ROCm builds of PyTorch use for HIP devices too.
//
// TRAINLOCK_OPS_NO_DEVICE_RUNTIME builds it against a LibTorch without CUDA (the test suite's
// "GPU-only library" on a CPU machine): the kernel is registered for the CUDA key but refuses
// to run, so the library has no CPU kernel and a CUDA one, as a GPU-only library would.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "rmsnorm_checks.h"

#include <stdexcept>

#include "rmsnorm_kernels.h"

#if !defined(TRAINLOCK_OPS_NO_DEVICE_RUNTIME)
#if defined(USE_ROCM)
#include <c10/hip/HIPStream.h>
#else
#include <ATen/cuda/CUDAContext.h>
#endif
#endif

namespace trainlock_ops {
namespace {

#if !defined(TRAINLOCK_OPS_NO_DEVICE_RUNTIME)
Dtype KernelDtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
      return Dtype::kFloat32;
    case at::kBFloat16:
      return Dtype::kBFloat16;
    case at::kHalf:
      return Dtype::kFloat16;
    default:
      throw std::invalid_argument("fused_rmsnorm: unsupported dtype");
  }
}

void* CurrentStream() {
#if defined(USE_ROCM)
  return c10::hip::getCurrentHIPStream().stream();
#else
  return at::cuda::getCurrentCUDAStream().stream();
#endif
}

void Check(const char* error) {
  TORCH_CHECK(error == nullptr, "fused_rmsnorm kernel: ", error);
}

#endif

#if defined(TRAINLOCK_OPS_NO_DEVICE_RUNTIME)
at::Tensor ForwardGpu(const at::Tensor&, const at::Tensor&, double) {
  throw std::runtime_error("fused_rmsnorm: this build has no GPU runtime");
}
std::tuple<at::Tensor, at::Tensor> BackwardGpu(const at::Tensor&, const at::Tensor&,
                                               const at::Tensor&, double) {
  throw std::runtime_error("fused_rmsnorm: this build has no GPU runtime");
}
#else
at::Tensor ForwardGpu(const at::Tensor& x_in, const at::Tensor& weight_in, double eps) {
  CheckRmsNormInputs(x_in, weight_in);
  c10::DeviceGuard guard(x_in.device());
  at::Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
  at::Tensor y = at::empty_like(x);
  const int64_t cols = x.size(-1), rows = cols ? x.numel() / cols : 0;
  Check(RmsNormForwardGpu(x.data_ptr(), weight.data_ptr(), y.data_ptr(), rows, cols,
                          static_cast<float>(eps), KernelDtype(x), CurrentStream()));
  return y;
}

std::tuple<at::Tensor, at::Tensor> BackwardGpu(const at::Tensor& grad_in, const at::Tensor& x_in,
                                               const at::Tensor& weight_in, double eps) {
  CheckRmsNormInputs(x_in, weight_in);
  c10::DeviceGuard guard(x_in.device());
  at::Tensor grad = grad_in.contiguous(), x = x_in.contiguous(), weight = weight_in.contiguous();
  at::Tensor dx = at::empty_like(x), dweight = at::empty_like(weight);
  const int64_t cols = x.size(-1), rows = cols ? x.numel() / cols : 0;
  at::Tensor rstd = at::empty({rows}, x.options().dtype(at::kFloat));
  void* stream = CurrentStream();
  Check(RmsNormBackwardGpu(grad.data_ptr(), x.data_ptr(), weight.data_ptr(), dx.data_ptr(),
                           rstd.data_ptr<float>(), rows, cols, static_cast<float>(eps),
                           KernelDtype(x), stream));
  Check(RmsNormWeightGradGpu(grad.data_ptr(), x.data_ptr(), rstd.data_ptr<float>(),
                             dweight.data_ptr(), rows, cols, KernelDtype(x), stream));
  return {dx, dweight};
}
#endif

}  // namespace
}  // namespace trainlock_ops

TORCH_LIBRARY_IMPL(trainlock_ops, CUDA, m) {
  m.impl("fused_rmsnorm", trainlock_ops::ForwardGpu);
  m.impl("fused_rmsnorm_backward", trainlock_ops::BackwardGpu);
}
