// What the watch reads of a GPU's memory health through NVML at its interval (row remapping, ECC
// counts, the GPU recovery action), the same readings as the node's last passing report keeps
// them (env.health's metrics.devices), and what a reading shows against the one before it: the
// conditions of the event table's [[nvml]] entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compat/gpu_events.h"

namespace trainlock {

class NvmlLibrary;

struct GpuHealthReading {
  unsigned index = 0;
  std::string pci;    // "0000:3b:00"; "" when unknown
  bool lost = false;  // NVML answered NVML_ERROR_GPU_IS_LOST
  std::optional<uint64_t> ecc_uncorrected_volatile, ecc_uncorrected_aggregate;
  std::optional<uint64_t> ecc_corrected_volatile, ecc_corrected_aggregate;
  std::optional<uint64_t> remapped_rows_uncorrectable, remapped_rows_correctable;
  std::optional<bool> remap_pending, remap_failed;
  std::optional<uint64_t> recovery_action;  // nvmlDeviceGpuRecoveryAction_t
};

// Reads GPU `index` (nvmlDeviceGetRemappedRows, nvmlDeviceGetTotalEccErrors,
// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION); a value NVML cannot give stays empty.
GpuHealthReading ReadGpuHealth(const NvmlLibrary& nvml, unsigned index, void* device);

// A device of env.health's metrics.devices read back as a reading (the fields it has).
GpuHealthReading GpuHealthFromMetrics(const nlohmann::json& device);

// One condition a reading shows, with the numbers that show it.
struct GpuHealthFinding {
  NvmlCondition condition = NvmlCondition::kRemapFailed;
  std::string detail;  // "remapped rows: failure occurred (the passing report: none)"
};

// What `now` shows against `before` (the passing report's reading, then the last one taken): a
// count above it, a condition it did not have, a recovery action other than it. Without a
// `before` (no baseline) only what is bad in itself: a failed or pending remap, uncorrected
// volatile ECC errors, a recovery action other than none, a lost GPU.
std::vector<GpuHealthFinding> CompareGpuHealth(const GpuHealthReading& now,
                                               const GpuHealthReading* before);

// `before` updated with what `now` read (a value NVML could not give keeps the older one).
GpuHealthReading MergeGpuHealth(const GpuHealthReading& before, const GpuHealthReading& now);

// "GPU 0 0000:3b:00: ECC uncorrected 0 volatile / 0 aggregate, corrected ...; remapped rows ...;
// recovery action none": one line for `trainlock watch --once`.
std::string GpuHealthText(const GpuHealthReading& reading);

// "none", "GPU reset", "node reboot", "drain P2P", "drain and reset", "GPU reset (bus)", or
// "unknown (N)".
std::string RecoveryActionName(uint64_t action);

}  // namespace trainlock
