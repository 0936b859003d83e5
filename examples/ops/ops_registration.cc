// The sample custom-op library's schemas and autograd: trainlock_ops::fused_rmsnorm and its
// backward, registered with TORCH_LIBRARY. The device kernels register themselves per
// dispatch key in rmsnorm_cpu.cc and rmsnorm_gpu.cc; the Autograd kernel here routes the
// backward through the dispatcher, so every device's backward kernel is exercised.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace trainlock_ops {
namespace {

at::Tensor CallForward(const at::Tensor& x, const at::Tensor& weight, double eps) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("trainlock_ops::fused_rmsnorm", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, double)>();
  return op.call(x, weight, eps);
}

std::tuple<at::Tensor, at::Tensor> CallBackward(const at::Tensor& grad, const at::Tensor& x,
                                                const at::Tensor& weight, double eps) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("trainlock_ops::fused_rmsnorm_backward", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                    const at::Tensor&, double)>();
  return op.call(grad, x, weight, eps);
}

class FusedRmsNorm : public torch::autograd::Function<FusedRmsNorm> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            const at::Tensor& weight, double eps) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({x, weight});
    ctx->saved_data["eps"] = eps;
    return CallForward(x, weight, eps);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    auto [dx, dweight] =
        CallBackward(grads[0].contiguous(), saved[0], saved[1], ctx->saved_data["eps"].toDouble());
    return {dx, dweight, at::Tensor()};
  }
};

at::Tensor FusedRmsNormAutograd(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return FusedRmsNorm::apply(x, weight, eps);
}

}  // namespace
}  // namespace trainlock_ops

TORCH_LIBRARY(trainlock_ops, m) {
  // y = x * rsqrt(mean(x^2, -1) + eps) * weight over the last dimension, in x's dtype.
  m.def("fused_rmsnorm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor");
  m.def(
      "fused_rmsnorm_backward(Tensor grad, Tensor x, Tensor weight, float eps) -> (Tensor, "
      "Tensor)");
}

TORCH_LIBRARY_IMPL(trainlock_ops, Autograd, m) {
  m.impl("fused_rmsnorm", trainlock_ops::FusedRmsNormAutograd);
}
