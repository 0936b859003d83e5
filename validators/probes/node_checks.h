// The env.* checks: the node (driver, devices, health from NVML) against the lock's target
// and the validator's own build (torch, CUDA runtime, NCCL).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "compat/catalog.h"
#include "compat/gpu_binary.h"
#include "probes/nvml_probe.h"
#include "project/lockfile.h"
#include "report/report.h"

namespace trainlock::validate {

struct BuildInfo {
  std::string flavour;   // "cpu" | "cuda" | "rocm"
  std::string torch;     // "2.11.0"
  int cuda_runtime = 0;  // 13000; 0 when not a CUDA build
  int nccl = 0;          // 22807 for 2.28.7; 0 when unknown
  // A Python engine's torch (torch.__version__, engine_probe.h) and its interpreter; "" for
  // the native engine, which is this binary's LibTorch.
  std::string engine_torch;
  std::string engine_python;
  int cudnn = 0;  // this process's cuDNN, 91300 for 9.13.0 (cudnnGetVersion); 0 when none loaded
  std::string engine_cudnn{};  // the engine's torch's cuDNN, "9.13.0"; "" when unknown
};

// What the node worker measured on every device (worker.h, role "node"), and the GPU code of
// the libraries the validator loaded (LibTorch's CUDA library), for env.arch and perf.*.
struct DeviceRuns {
  nlohmann::json devices = nlohmann::json::array();  // [{index, launch_ok, matmul_tflops,
                                                     // matmul_tflops_sustained, copy_tbps}]
  std::vector<std::pair<std::string, GpuBinaryInfo>> libraries;
};

// env.driver, env.runtime and env.health, in that order: the checks judged from NVML alone,
// needing no framework and no kernel launch, so that the validation judges them before it asks
// whether CUDA and the engine's framework can be used here (coordinator/preflight.h). Skips
// with the reason when NVML could not be used. env.runtime judges the newest CUDA runtime the
// run loads: the validator's and, for a Python engine, the one the lock pins for its torch (the
// target's `cuda`), known before that torch is imported.
std::vector<CheckResult> DriverChecks(const Lockfile& lock, const NodeProbe& node,
                                      const BuildInfo& build, const Catalog& catalog,
                                      const std::vector<std::string>& only = {});

// env.driver, env.runtime, env.arch, env.versions, env.health, env.devices, in that order;
// `devices` receives the report's device list. A check that `only` (--only) names none of is
// never judged: it is the skip "not selected (--only)".
std::vector<CheckResult> NodeChecks(const Lockfile& lock, const NodeProbe& node,
                                    const BuildInfo& build, const Catalog& catalog,
                                    const DeviceRuns& runs, nlohmann::json* devices,
                                    const std::vector<std::string>& only = {});

// LibTorch's CUDA libraries loaded into this process (libtorch_cuda*.so), by path.
std::vector<std::string> LoadedTorchCudaLibraries();

// "13.0" for 13000.
std::string CudaVersionString(int version);

// "MIG mode on GPU 0 and GPU 3: CUDA sees MIG instances, not the whole GPUs NVML lists" when
// any of the node's GPUs has MIG on, else "". env.arch and perf.* judge whole GPUs (a launch on
// each, the datasheet's speed): on MIG instances they are skipped saying this, never failed
// for the GPUs CUDA does not show or for a slice's share of the datasheet.
std::string MigNote(const NodeProbe& node);

// cudnnGetVersion()'s number as a version: 91300 -> "9.13.0" (cuDNN 9: major*10000 + minor*100
// + patch), 8907 -> "8.9.7" (cuDNN 8: major*1000 + minor*100 + patch); "" for 0.
std::string CudnnVersionString(int version);

}  // namespace trainlock::validate
