// NVML's part of --once; see nvml_state.h.
#include "watch/nvml_state.h"

#include "base/exit_code.h"
#include "base/failure.h"
#include "base/nvml_library.h"
#include "compat/gpu_events.h"
#include "watch/gpu_health_reading.h"
#include "watch/nvml_baseline.h"

namespace trainlock {
namespace {

// One GPU: its reading, then each condition it shows against its baseline with its class.
std::string DescribeNvmlGpu(const NvmlLibrary& nvml, unsigned index, const NvmlBaseline& baseline,
                            const GpuEventTable& table) {
  void* device = nullptr;
  const int status = nvml.Status("nvmlDeviceGetHandleByIndex_v2", index, &device);
  if (status != kNvmlSuccess) {
    return "  NVML: GPU " + std::to_string(index) + ": cannot be opened (status " +
           std::to_string(status) + ")\n";
  }
  const GpuHealthReading now = ReadGpuHealth(nvml, index, device);
  std::string text = "  NVML: " + GpuHealthText(now) + "\n";
  for (const GpuHealthFinding& f : CompareGpuHealth(now, baseline.For(now))) {
    const EventMeaning meaning = table.Nvml(f.condition);
    text += "    " + std::string(EventClassName(meaning.event_class)) + " " +
            std::string(NvmlConditionName(f.condition)) + " (" + meaning.name + "): " + f.detail +
            "\n";
  }
  return text;
}

}  // namespace

std::string DescribeNvmlState(const std::filesystem::path& reports_dir, const std::string& node,
                              const GpuEventTable& table, bool required) {
  const NvmlLibrary nvml;
  if (const std::string why = nvml.UnavailableReason(); !why.empty()) {
    if (required) throw Failure("--nvml require: " + why, kExitEnvironment);
    return "  NVML: not used: " + why + "\n";
  }
  const NvmlBaseline baseline = ReadNvmlBaseline(reports_dir, node);
  std::string text = "  NVML baseline: " +
                     (baseline.present ? "the passing report " + baseline.source
                                       : "none (" + baseline.source + ")") +
                     "\n";
  unsigned count = 0;
  if (!nvml.Call("nvmlDeviceGetCount_v2", &count)) return text + "  NVML: cannot count the GPUs\n";
  for (unsigned i = 0; i < count; ++i) text += DescribeNvmlGpu(nvml, i, baseline, table);
  return text;
}

}  // namespace trainlock
