// Argument checks shared by the CPU and GPU bindings of fused RMSNorm.
#pragma once

#include <ATen/ATen.h>

namespace trainlock_ops {

inline void CheckRmsNormInputs(const at::Tensor& x, const at::Tensor& weight) {
  TORCH_CHECK(x.dim() >= 1 && weight.dim() == 1 && weight.size(0) == x.size(-1),
              "fused_rmsnorm: weight must be 1-D with x's last dimension (", x.size(-1), ")");
  TORCH_CHECK(x.scalar_type() == weight.scalar_type(), "fused_rmsnorm: x and weight dtypes differ");
  TORCH_CHECK(x.device() == weight.device(),
              "fused_rmsnorm: x and weight are on different devices");
}

}  // namespace trainlock_ops
