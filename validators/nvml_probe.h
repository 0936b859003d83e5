// Node probes through NVML, loaded with dlopen so one validator binary runs on nodes without
// an NVIDIA driver (every probe then reports why it could not run).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainlock::validate {

struct GpuProbe {
  unsigned index = 0;
  std::string name, uuid;
  uint64_t memory_total_bytes = 0, memory_used_bytes = 0;
  int cc_major = 0, cc_minor = 0;
  std::optional<bool> ecc_enabled;
  std::optional<uint64_t> ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
  std::optional<bool> retired_pages_pending;
  std::optional<unsigned> remapped_rows_uncorrectable;
  std::optional<bool> remap_pending, remap_failed;
  std::optional<unsigned> temperature_c;
  std::optional<unsigned> power_mw, power_limit_mw;
  std::optional<unsigned> sm_clock_mhz, sm_clock_max_mhz, mem_clock_mhz;
  std::optional<uint64_t> throttle_reasons;  // NVML clocks-event reason bits
  std::optional<unsigned> pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
  std::optional<bool> persistence, mig;
};

struct NodeProbe {
  bool nvml_loaded = false;
  std::string unavailable_reason;  // why NVML could not be used ("" when it could)
  std::string driver_version;      // "580.159.04"
  int cuda_driver_version = 0;     // 13000 for CUDA 13.0
  std::vector<GpuProbe> gpus;
};

NodeProbe ProbeNode();

// ncclGetVersion() of the NCCL this process has loaded (LibTorch's), e.g. 22807; 0 if none.
int LoadedNcclVersion();

// Reasons a clock is being held down that point at a problem (hardware slowdown, thermal or
// power-brake), as text; "" when none.
std::string HarmfulThrottleReasons(uint64_t bits);

}  // namespace trainlock::validate
