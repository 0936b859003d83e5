// The compatibility knowledge base (lockfiles/compat/*.toml) as typed tables.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/version.h"
#include "compat/gpu_events.h"

namespace trainlock {

struct GpuModel {
  std::string name;
  std::vector<std::string> aliases;
  std::string vendor;          // "nvidia" | "amd"
  int compute_capability = 0;  // nvidia: 90 for sm_90
  std::string gfx;             // amd: "gfx942"
  double memory_gb = 0;
  double bf16_dense_tflops = 0;
  double fp16_dense_tflops = 0;
  double hbm_tbps = 0;
  double interconnect_gbps = 0;  // GPU-to-GPU per GPU, one direction; 0 = unknown
  double relative_cost = 0;      // per GPU-hour, A100-80GB = 1.0; 0 = unknown (gpus.toml)
  // The value NVIDIA GPU Feature Discovery gives a node's nvidia.com/gpu.product label for
  // this GPU (`trainlock fleet k8s` selects nodes by it); "" = unknown.
  std::string k8s_gpu_product;
  // The dense bf16 GEMM throughput a healthy GPU of this model sustains held at its default
  // power limit, TFLOP/s (gpus.toml says where each figure comes from); 0 = unknown, and
  // perf.matmul's sustained test is not judged (validators/probes/perf_checks.h).
  double matmul_tflops_at_power_limit = 0;
};

struct CudaDriverRequirement {
  Version cuda;
  Version linux_driver_min;
  Version minor_compat_driver_min;
};

struct TorchBuildTag {
  std::string tag;       // "cu130"
  std::string platform;  // "cuda" | "rocm" | "cpu"
  std::string version;   // "13.0" ("" for cpu)
};

// The comm.allreduce bus-bandwidth threshold for `world_size` GPUs of `gpu` in one node: 80%
// of its interconnect bandwidth at 8 GPUs, 50% at 2-7 (gpus.toml says why); 0 when unknown.
double AllReduceBusbwThreshold(const GpuModel& gpu, int world_size);

class Catalog {
 public:
  // The catalog compiled into the binary (lockfiles/compat at build time).
  static Catalog Embedded();
  // Reads the six files from `dir`; throws InputError naming the file on bad data.
  static Catalog FromDirectory(const std::filesystem::path& dir);
  // Parses one named file's text into this catalog (the name selects the table).
  void AddFile(const std::string& filename, const std::string& text, const std::string& display);

  // Looks a GPU up by name or alias (case-insensitive); a name NVML gives ("NVIDIA H100 80GB
  // HBM3", "NVIDIA A100-SXM4-80GB") is also looked up without its "NVIDIA " prefix, so every
  // reader of a device name (env.devices, perf.*, comm.*, MFU, gate, plan) finds its model.
  const GpuModel* FindGpu(std::string_view name) const;
  std::vector<std::string> GpuNames() const;
  // The driver requirement of a CUDA release: the exact update if listed, else its major.minor.
  const CudaDriverRequirement* FindCudaDriver(const Version& cuda) const;
  // Architectures (sm numbers) that `cuda` compiles for; empty when the release is unknown.
  std::vector<int> CudaArchitectures(const Version& cuda) const;
  // gfx targets supported by a ROCm release; empty when unknown.
  std::vector<std::string> RocmArchitectures(const Version& rocm) const;
  const TorchBuildTag* FindTorchTag(std::string_view tag) const;

  const std::vector<GpuModel>& gpus() const { return gpus_; }
  // What each Xid and SXid means for a node's validity (gpu-events.toml; `trainlock watch`).
  const GpuEventTable& gpu_events() const { return gpu_events_; }

 private:
  std::vector<GpuModel> gpus_;
  std::vector<CudaDriverRequirement> cuda_drivers_;
  std::vector<std::pair<Version, std::vector<int>>> cuda_archs_;
  std::vector<std::pair<Version, std::vector<std::string>>> rocm_archs_;
  std::vector<TorchBuildTag> torch_tags_;
  GpuEventTable gpu_events_;
};

}  // namespace trainlock
