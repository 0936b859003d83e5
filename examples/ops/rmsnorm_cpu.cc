// CPU kernels of fused RMSNorm: plain loops accumulating in fp32 (as the GPU kernels do),
// registered for the CPU dispatch key.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "rmsnorm_checks.h"

#include <cmath>
#include <vector>

namespace trainlock_ops {
namespace {

template <typename T>
void Forward(const T* x, const T* w, T* y, int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * cols;
    float sum = 0;
    for (int64_t j = 0; j < cols; ++j)
      sum += static_cast<float>(row[j]) * static_cast<float>(row[j]);
    const float rstd = 1.0f / std::sqrt(sum / static_cast<float>(cols) + eps);
    for (int64_t j = 0; j < cols; ++j) {
      float v = static_cast<float>(row[j]) * rstd * static_cast<float>(w[j]);
#if defined(TRAINLOCK_OPS_WRONG_KERNEL)
      v *= 1.01f;  // the deliberately wrong variant the tolerance check must catch
#endif
      y[r * cols + j] = static_cast<T>(v);
    }
  }
}

template <typename T>
void Backward(const T* dy, const T* x, const T* w, T* dx, T* dw, int64_t rows, int64_t cols,
              float eps) {
  std::vector<float> dw_sum(static_cast<size_t>(cols), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * cols;
    float sum = 0, dot = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const float xv = static_cast<float>(x[base + j]);
      sum += xv * xv;
      dot += static_cast<float>(w[j]) * static_cast<float>(dy[base + j]) * xv;
    }
    const float rstd = 1.0f / std::sqrt(sum / static_cast<float>(cols) + eps);
    const float scale = rstd * rstd * rstd * dot / static_cast<float>(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const float xv = static_cast<float>(x[base + j]), g = static_cast<float>(dy[base + j]);
      dx[base + j] = static_cast<T>(rstd * static_cast<float>(w[j]) * g - xv * scale);
      dw_sum[static_cast<size_t>(j)] += g * xv * rstd;
    }
  }
  for (int64_t j = 0; j < cols; ++j) dw[j] = static_cast<T>(dw_sum[static_cast<size_t>(j)]);
}

at::Tensor ForwardCpu(const at::Tensor& x_in, const at::Tensor& weight_in, double eps) {
  CheckRmsNormInputs(x_in, weight_in);
  at::Tensor x = x_in.contiguous(), weight = weight_in.contiguous();
  at::Tensor y = at::empty_like(x);
  const int64_t cols = x.size(-1), rows = cols ? x.numel() / cols : 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "fused_rmsnorm", [&] {
    Forward(x.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), rows, cols,
            static_cast<float>(eps));
  });
  return y;
}

std::tuple<at::Tensor, at::Tensor> BackwardCpu(const at::Tensor& grad_in, const at::Tensor& x_in,
                                               const at::Tensor& weight_in, double eps) {
  CheckRmsNormInputs(x_in, weight_in);
  at::Tensor grad = grad_in.contiguous(), x = x_in.contiguous(), weight = weight_in.contiguous();
  at::Tensor dx = at::empty_like(x), dweight = at::empty_like(weight);
  const int64_t cols = x.size(-1), rows = cols ? x.numel() / cols : 0;
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kBFloat16, at::kHalf, x.scalar_type(), "fused_rmsnorm_bw", [&] {
        Backward(grad.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), weight.data_ptr<scalar_t>(),
                 dx.data_ptr<scalar_t>(), dweight.data_ptr<scalar_t>(), rows, cols,
                 static_cast<float>(eps));
      });
  return {dx, dweight};
}

}  // namespace
}  // namespace trainlock_ops

TORCH_LIBRARY_IMPL(trainlock_ops, CPU, m) {
  m.impl("fused_rmsnorm", trainlock_ops::ForwardCpu);
  m.impl("fused_rmsnorm_backward", trainlock_ops::BackwardCpu);
}
