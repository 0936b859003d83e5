// The validator's LibTorch build; see torch_build.h.
#include "support/torch_build.h"

#include "support/torch_compat.h"

#if defined(TRAINLOCK_WITH_CUDA)
#include <cuda_runtime_api.h>
#endif

namespace trainlock::validate {

std::string BuiltTorchVersion() {
  return TorchVersion();
}

int BuiltCudaRuntimeVersion() {
  int version = 0;
#if defined(TRAINLOCK_WITH_CUDA)
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) version = 0;
#endif
  return version;
}

std::string BuiltTorchFlavour() {
#if defined(TRAINLOCK_WITH_ROCM)
  return "rocm";
#elif defined(TRAINLOCK_WITH_CUDA)
  return "cuda";
#else
  return "cpu";
#endif
}

}  // namespace trainlock::validate
