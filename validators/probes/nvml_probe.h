// Node probes through NVML, loaded with dlopen so one validator binary runs on nodes without
// an NVIDIA driver (every probe then reports why it could not run).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace trainlock {
class NvmlLibrary;  // base/nvml_library.h
}

namespace trainlock::validate {

// One GPU as NVML reports it. A field NVML could not report is empty: when the device does not
// support it (NVML_ERROR_NOT_SUPPORTED, e.g. retired pages on a GPU that remaps rows) its name is
// in `not_supported`; otherwise (an error, a missing entry point) it is unknown, and env.health
// reports it as such instead of counting it as healthy.
struct GpuProbe {
  unsigned index = 0;
  std::string name, uuid;
  std::string pci;  // "0000:3b:00", as the kernel log and `trainlock watch` name the GPU
  uint64_t memory_total_bytes = 0, memory_used_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  std::optional<bool> ecc_enabled;
  std::optional<uint64_t> ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
  std::optional<uint64_t> ecc_corrected_volatile, ecc_corrected_aggregate;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned> remapped_rows_uncorrectable, remapped_rows_correctable;
  std::optional<bool> remap_pending, remap_failed;
  // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain
  // and reset (nvmlDeviceGpuRecoveryAction_t); the watch's baseline.
  std::optional<unsigned> recovery_action;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> temperature_slowdown_c;  // where the GPU starts to slow itself down
  std::optional<unsigned> power_mw, power_limit_mw;
  std::optional<unsigned> sm_clock_mhz, sm_clock_max_mhz, mem_clock_mhz;
  std::optional<uint64_t> throttle_reasons;  // NVML clocks-event reason bits
  // pcie_gen_max: the most this GPU and this system's slot can train to; pcie_gen_gpu_max: the
  // GPU's own maximum. The current generation drops while a GPU idles, so it is reported only.
  std::optional<unsigned> pcie_gen, pcie_gen_max, pcie_gen_gpu_max, pcie_width, pcie_width_max;
  std::optional<bool> persistence, mig;
  std::vector<std::string> not_supported;  // fields this device does not have (see above)
};

// A GPU NVML counts but could not open (nvmlDeviceGetHandleByIndex_v2 failed): its index and
// NVML's status (nvmlReturn_t). env.health judges it (UnopenedGpuFault): never left out unseen.
struct UnopenedGpu {
  unsigned index = 0;
  int nvml_status = 0;
};

// What an unopened GPU's status says: "" for NVML_ERROR_NO_PERMISSION (a device cgroup gives
// this process other GPUs: Slurm's ConstrainDevices; not this process's GPU), the fault that takes
// the GPU out of service for GPU_IS_LOST, INSUFFICIENT_POWER, IRQ_ISSUE, CORRUPTED_INFOROM and
// RESET_REQUIRED ("fault: ..."), else "unknown: NVML status N".
std::string UnopenedGpuFault(int nvml_status);

struct NodeProbe {
  bool nvml_loaded = false;
  std::string unavailable_reason;  // why NVML could not be used ("" when it could)
  std::string driver_version;      // "580.159.04"
  int cuda_driver_version = 0;     // 13000 for CUDA 13.0
  int count_status = 0;            // nvmlDeviceGetCount_v2's status: not 0, the count is unknown
  std::vector<GpuProbe> gpus;
  std::vector<UnopenedGpu> unopened;
  // GPUs NVML lists that this process cannot see (CUDA_VISIBLE_DEVICES): not judged here, only
  // named in env.devices (visible_gpus.h).
  std::vector<GpuProbe> hidden;
};

NodeProbe ProbeNode();

// A GPU's readings at one instant (gpu_telemetry.h samples them); a reading NVML could not give
// is empty.
struct GpuReading {
  std::optional<unsigned> power_mw, temperature_c, sm_clock_mhz, utilization_pct;
  std::optional<uint64_t> clocks_event_reasons;  // NVML clocks-event (throttle) reason bits
};

// One GPU of an NvmlSession.
struct NvmlGpu {
  unsigned index = 0;
  std::string uuid;
  void* handle = nullptr;                          // nvmlDevice_t, valid while its session lives
  std::optional<unsigned> power_limit_mw;          // enforced (nvmlDeviceGetEnforcedPowerLimit)
  std::optional<unsigned> default_power_limit_mw;  // nvmlDeviceGetPowerManagementDefaultLimit
  std::string name;                                // "NVIDIA H200"
  std::optional<unsigned> max_sm_clock_mhz;        // nvmlDeviceGetMaxClockInfo(NVML_CLOCK_SM)
};

// NVML loaded and initialised once for repeated readings, unlike ProbeNode's one-shot probe:
// the telemetry sampler reads through one session from its own thread (NVML is thread-safe).
class NvmlSession {
 public:
  NvmlSession();
  ~NvmlSession();
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  // Why NVML cannot be used ("" when it can): then there are no GPUs.
  const std::string& unavailable_reason() const { return unavailable_reason_; }
  const std::vector<NvmlGpu>& gpus() const { return gpus_; }
  GpuReading Read(const NvmlGpu& gpu) const;

 private:
  std::unique_ptr<NvmlLibrary> nvml_;
  std::string unavailable_reason_;
  std::vector<NvmlGpu> gpus_;
};

// ncclGetVersion() of the NCCL this process has loaded (LibTorch's), e.g. 22807; 0 if none.
int LoadedNcclVersion();

// cudnnGetVersion() of the cuDNN this process has loaded (LibTorch's CUDA library links it),
// e.g. 91300 for 9.13.0; 0 if none is loaded.
int LoadedCudnnVersion();

}  // namespace trainlock::validate
