// What the LibTorch this validator was built against is: its version, its CUDA runtime and its
// flavour. The coordinator reports and decides on these without including the worker (which
// trains with LibTorch); only torch_build.cc includes torch and CUDA headers.
#pragma once

#include <string>

namespace trainlock::validate {

// "1.13.1" / "2.11.0": the LibTorch the validator was built against.
std::string BuiltTorchVersion();
// cudaRuntimeGetVersion() of the runtime LibTorch uses (13000 for 13.0); 0 off CUDA.
int BuiltCudaRuntimeVersion();
// "cpu", "cuda" or "rocm": how that LibTorch was built.
std::string BuiltTorchFlavour();

}  // namespace trainlock::validate
