// Differences between the LibTorch versions the validator builds against: Debian's 1.13 (CI,
// CPU) and torch 2.x (the GPU machine, images). Every version guard lives here.
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#include <string>

namespace trainlock::validate {

#if TORCH_VERSION_MAJOR >= 2
inline constexpr bool kHasSdpa = true;  // at::scaled_dot_product_attention is public from 2.0
#else
inline constexpr bool kHasSdpa = false;
#endif

inline std::string TorchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// Causal attention over [batch, heads, seq, head_dim] tensors; k and v may have fewer heads
// than q (grouped-query attention, q's heads a multiple of theirs). torch 2.x uses the fused
// scaled_dot_product_attention, from 2.5 with the kv heads shared inside the kernel as
// transformers does (no repeated copy of k and v, nor its reduction in the backward);
// before, and on 1.13 (matmul, mask and softmax), k and v are repeated first.
torch::Tensor CausalAttention(const torch::Tensor& q, const torch::Tensor& k,
                              const torch::Tensor& v);

// Enables or disables autocast for CUDA with the given dtype (the API changed in 2.4).
void SetCudaAutocast(bool enabled, at::ScalarType dtype);
// Whether CUDA autocast is on in this thread, and its dtype (what SetCudaAutocast set).
bool CudaAutocastEnabled();
at::ScalarType CudaAutocastDtype();

// One AdamW step (decoupled weight decay) through torch's fused CUDA kernel, one launch for
// every parameter, as torch.optim.AdamW(fused=True) takes it; `step` is the step number after
// this update (1 for the first). Returns false, having done nothing, where the kernel does not
// exist (torch 1.x, or tensors off CUDA): the caller takes the multi-tensor path instead.
bool FusedAdamWStep(const std::vector<torch::Tensor>& params,
                    const std::vector<torch::Tensor>& grads,
                    const std::vector<torch::Tensor>& exp_avgs,
                    const std::vector<torch::Tensor>& exp_avg_sqs, double step, double lr,
                    double beta1, double beta2, double weight_decay, double eps);

}  // namespace trainlock::validate
