// The reference implementations; see op_references.h.
#include "ops/op_references.h"

#include <map>
#include <stdexcept>

namespace trainlock::validate {
namespace {

const torch::Tensor& TensorArg(const std::vector<c10::IValue>& args, size_t i, const char* ref) {
  if (i >= args.size() || !args[i].isTensor()) {
    throw SmokeProblem(std::string("reference ") + ref + ": argument " + std::to_string(i) +
                       " must be a tensor");
  }
  return args[i].toTensor();
}

double ScalarArg(const std::vector<c10::IValue>& args, size_t i, double fallback) {
  if (i < args.size() && args[i].isDouble()) return args[i].toDouble();
  return fallback;
}

// rmsnorm(x, weight, eps = 1e-6): x * rsqrt(mean(x^2, -1) + eps) * weight.
std::vector<torch::Tensor> RmsNorm(const std::vector<c10::IValue>& args) {
  const torch::Tensor& x = TensorArg(args, 0, "rmsnorm");
  const torch::Tensor& weight = TensorArg(args, 1, "rmsnorm");
  const double eps = ScalarArg(args, 2, 1e-6);
  torch::Tensor xf = x.to(torch::kFloat32);
  torch::Tensor y =
      xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight.to(torch::kFloat32);
  return {y.to(x.scalar_type())};
}

// bias_gelu(x, bias): gelu(x + bias), the exact (erf) form.
std::vector<torch::Tensor> BiasGelu(const std::vector<c10::IValue>& args) {
  const torch::Tensor& x = TensorArg(args, 0, "bias_gelu");
  const torch::Tensor& bias = TensorArg(args, 1, "bias_gelu");
  torch::Tensor y = torch::gelu(x.to(torch::kFloat32) + bias.to(torch::kFloat32));
  return {y.to(x.scalar_type())};
}

const std::map<std::string, OpReference>& References() {
  static const std::map<std::string, OpReference> references = {
      {"bias_gelu", BiasGelu},
      {"rmsnorm", RmsNorm},
  };
  return references;
}

}  // namespace

const OpReference* FindOpReference(const std::string& name) {
  auto it = References().find(name);
  return it == References().end() ? nullptr : &it->second;
}

std::vector<std::string> OpReferenceNames() {
  std::vector<std::string> names;
  for (const auto& [name, reference] : References()) names.push_back(name);
  return names;
}

}  // namespace trainlock::validate
