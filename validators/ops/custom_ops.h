// The ops worker's side of ops.custom (worker role "ops"): loads each custom-op library of
// the ops spec into this process, checks its ops' schemas, their kernels for the device's
// dispatch key and the library's GPU code against the device, then smoke-tests every op
// against its reference (forward and gradients within tolerance, time per call). Each
// problem is a failure of a named kind with a remedy; the coordinator (ops_check.h) turns
// the result into the ops.custom check.
#pragma once

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <vector>

#include "ops/ops_spec.h"

namespace trainlock::validate {

// What the device can run, for the architecture stage: CUDA compute capability (90 for 9.0)
// and the driver's CUDA version; zeros on the CPU.
struct OpsDevice {
  torch::Device device = torch::kCPU;
  int sm = 0;
  int driver_cuda = 0;
};

OpsDevice DescribeOpsDevice(torch::Device device);

// Each library of the ops spec (ops_spec.h: what the coordinator resolved from the lock)
// checked on `device`:
// {"device": ..., "libraries": [{library, path, failures: [{kind, op, message, remedy}],
//   code: {...}, ops: [{op, kernel_keys, smoke: [...]}]}]}
nlohmann::json RunCustomOps(const std::vector<OpsLibrary>& libraries, const OpsDevice& device);

}  // namespace trainlock::validate
