// A GPU's memory health through NVML and against a baseline; see gpu_health_reading.h.
#include "watch/gpu_health_reading.h"

#include "base/nvml_library.h"

namespace trainlock {
namespace {

// NVML's nvmlMemoryErrorType_t (0 corrected, 1 uncorrected) and nvmlEccCounterType_t
// (0 volatile, 1 aggregate), as nvmlDeviceGetTotalEccErrors takes them.
void ReadEccCount(const NvmlLibrary& nvml, void* device, int error_type, int counter,
                  std::optional<uint64_t>& out) {
  unsigned long long count = 0;
  if (nvml.Call("nvmlDeviceGetTotalEccErrors", device, error_type, counter, &count)) out = count;
}

std::optional<uint64_t> MetricCount(const nlohmann::json& device, const char* key) {
  const auto it = device.find(key);
  if (it == device.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<uint64_t>();
}

std::optional<bool> MetricFlag(const nlohmann::json& device, const char* key) {
  const auto it = device.find(key);
  if (it == device.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

std::string BeforeText(const std::optional<uint64_t>& before) {
  return before ? std::to_string(*before) : std::string("none");
}

NvmlCondition RecoveryActionCondition(uint64_t action) {
  switch (action) {
    case 1:  // NVML_GPU_RECOVERY_ACTION_GPU_RESET
    case 5:  // NVML_GPU_RECOVERY_ACTION_GPU_RESET_BUS
      return NvmlCondition::kRecoveryActionReset;
    case 2:
      return NvmlCondition::kRecoveryActionReboot;
    case 3:
      return NvmlCondition::kRecoveryActionDrainP2p;
    case 4:
      return NvmlCondition::kRecoveryActionDrainReset;
    default:
      return NvmlCondition::kRecoveryActionUnknown;
  }
}

// A count above `before`; without one, only when `bad_in_itself` and above 0.
void CompareCount(std::vector<GpuHealthFinding>& out, NvmlCondition condition, const char* what,
                  const std::optional<uint64_t>& now, const std::optional<uint64_t>& before,
                  bool bad_in_itself) {
  if (!now) return;
  const bool rose = before ? *now > *before : bad_in_itself && *now > 0;
  if (rose) {
    out.push_back({condition, std::string(what) + " " + std::to_string(*now) +
                                  " (before: " + BeforeText(before) + ")"});
  }
}

// A condition present now that `before` did not have (unknown before counts as absent).
void CompareFlag(std::vector<GpuHealthFinding>& out, NvmlCondition condition, const char* what,
                 const std::optional<bool>& now, const std::optional<bool>& before) {
  if (now == true && before != true) out.push_back({condition, what});
}

template <typename T>
void KeepNewer(std::optional<T>& before, const std::optional<T>& now) {
  if (now) before = now;
}

}  // namespace

std::string RecoveryActionName(uint64_t action) {
  switch (action) {
    case 0:
      return "none";
    case 1:
      return "GPU reset";
    case 2:
      return "node reboot";
    case 3:
      return "drain P2P";
    case 4:
      return "drain and reset";
    case 5:
      return "GPU reset (bus)";
    default:
      return "unknown (" + std::to_string(action) + ")";
  }
}

GpuHealthReading ReadGpuHealth(const NvmlLibrary& nvml, unsigned index, void* device) {
  GpuHealthReading r;
  r.index = index;
  r.pci = NvmlPciAddress(nvml, device);
  unsigned corrected = 0, uncorrected = 0, pending = 0, failed = 0;
  const int status =
      nvml.Status("nvmlDeviceGetRemappedRows", device, &corrected, &uncorrected, &pending, &failed);
  if (status == kNvmlErrorGpuIsLost) {
    r.lost = true;
    return r;
  }
  if (status == kNvmlSuccess) {
    r.remapped_rows_correctable = corrected;
    r.remapped_rows_uncorrectable = uncorrected;
    r.remap_pending = pending != 0;
    r.remap_failed = failed != 0;
  }
  ReadEccCount(nvml, device, 1, 0, r.ecc_uncorrected_volatile);
  ReadEccCount(nvml, device, 1, 1, r.ecc_uncorrected_aggregate);
  ReadEccCount(nvml, device, 0, 0, r.ecc_corrected_volatile);
  ReadEccCount(nvml, device, 0, 1, r.ecc_corrected_aggregate);
  unsigned long long action = 0;
  if (NvmlFieldValue(nvml, device, kNvmlFieldGpuRecoveryAction, action) == kNvmlSuccess)
    r.recovery_action = action;
  return r;
}

GpuHealthReading GpuHealthFromMetrics(const nlohmann::json& device) {
  GpuHealthReading r;
  r.index = static_cast<unsigned>(MetricCount(device, "index").value_or(0));
  if (const auto it = device.find("pci"); it != device.end() && it->is_string())
    r.pci = it->get<std::string>();
  r.ecc_uncorrected_volatile = MetricCount(device, "ecc_uncorrected_volatile");
  r.ecc_uncorrected_aggregate = MetricCount(device, "ecc_uncorrected_aggregate");
  r.ecc_corrected_volatile = MetricCount(device, "ecc_corrected_volatile");
  r.ecc_corrected_aggregate = MetricCount(device, "ecc_corrected_aggregate");
  r.remapped_rows_uncorrectable = MetricCount(device, "remapped_rows_uncorrectable");
  r.remapped_rows_correctable = MetricCount(device, "remapped_rows_correctable");
  r.remap_pending = MetricFlag(device, "remap_pending");
  r.remap_failed = MetricFlag(device, "remap_failed");
  r.recovery_action = MetricCount(device, "recovery_action");
  return r;
}

std::vector<GpuHealthFinding> CompareGpuHealth(const GpuHealthReading& now,
                                               const GpuHealthReading* before) {
  std::vector<GpuHealthFinding> out;
  const GpuHealthReading none;
  const GpuHealthReading& b = before ? *before : none;
  if (now.lost && !b.lost) out.push_back({NvmlCondition::kGpuLost, "NVML: the GPU is lost"});
  CompareFlag(out, NvmlCondition::kRemapFailed, "remapped rows: a remap failed", now.remap_failed,
              b.remap_failed);
  CompareFlag(out, NvmlCondition::kRemapPending, "remapped rows: a remap is pending a reset",
              now.remap_pending, b.remap_pending);
  CompareCount(out, NvmlCondition::kUncorrectedEccRise, "uncorrected ECC errors (volatile)",
               now.ecc_uncorrected_volatile, b.ecc_uncorrected_volatile, true);
  CompareCount(out, NvmlCondition::kUncorrectedEccRise, "uncorrected ECC errors (aggregate)",
               now.ecc_uncorrected_aggregate, b.ecc_uncorrected_aggregate, false);
  CompareCount(out, NvmlCondition::kCorrectedEccRise, "corrected ECC errors (volatile)",
               now.ecc_corrected_volatile, b.ecc_corrected_volatile, false);
  CompareCount(out, NvmlCondition::kCorrectedEccRise, "corrected ECC errors (aggregate)",
               now.ecc_corrected_aggregate, b.ecc_corrected_aggregate, false);
  CompareCount(out, NvmlCondition::kRemappedRowsRise, "rows remapped for uncorrectable errors",
               now.remapped_rows_uncorrectable, b.remapped_rows_uncorrectable, false);
  if (now.recovery_action && *now.recovery_action != 0 &&
      now.recovery_action != b.recovery_action) {
    out.push_back(
        {RecoveryActionCondition(*now.recovery_action),
         "GPU recovery action " + RecoveryActionName(*now.recovery_action) + " (before: " +
             (b.recovery_action ? RecoveryActionName(*b.recovery_action) : "none") + ")"});
  }
  return out;
}

GpuHealthReading MergeGpuHealth(const GpuHealthReading& before, const GpuHealthReading& now) {
  GpuHealthReading merged = before;
  merged.index = now.index;
  if (!now.pci.empty()) merged.pci = now.pci;
  merged.lost = now.lost;
  KeepNewer(merged.ecc_uncorrected_volatile, now.ecc_uncorrected_volatile);
  KeepNewer(merged.ecc_uncorrected_aggregate, now.ecc_uncorrected_aggregate);
  KeepNewer(merged.ecc_corrected_volatile, now.ecc_corrected_volatile);
  KeepNewer(merged.ecc_corrected_aggregate, now.ecc_corrected_aggregate);
  KeepNewer(merged.remapped_rows_uncorrectable, now.remapped_rows_uncorrectable);
  KeepNewer(merged.remapped_rows_correctable, now.remapped_rows_correctable);
  KeepNewer(merged.remap_pending, now.remap_pending);
  KeepNewer(merged.remap_failed, now.remap_failed);
  KeepNewer(merged.recovery_action, now.recovery_action);
  return merged;
}

std::string GpuHealthText(const GpuHealthReading& r) {
  auto count = [](const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) : std::string("?");
  };
  auto flag = [](const std::optional<bool>& v) {
    return v ? std::string(*v ? "yes" : "no") : std::string("?");
  };
  std::string text = "GPU " + std::to_string(r.index) + " " + (r.pci.empty() ? "?" : r.pci) + ": ";
  if (r.lost) return text + "lost (NVML_ERROR_GPU_IS_LOST)";
  return text + "ECC uncorrected " + count(r.ecc_uncorrected_volatile) + " volatile / " +
         count(r.ecc_uncorrected_aggregate) + " aggregate, corrected " +
         count(r.ecc_corrected_volatile) + " / " + count(r.ecc_corrected_aggregate) +
         "; remapped rows " + count(r.remapped_rows_uncorrectable) + " uncorrectable / " +
         count(r.remapped_rows_correctable) + " correctable, pending " + flag(r.remap_pending) +
         ", failed " + flag(r.remap_failed) + "; recovery action " +
         (r.recovery_action ? RecoveryActionName(*r.recovery_action) : std::string("?"));
}

}  // namespace trainlock
