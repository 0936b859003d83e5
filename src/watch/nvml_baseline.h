// The baseline the watch compares NVML's readings with: each GPU's readings in the node's last
// passing report (REPORTS/NODE.json, env.health's metrics.devices), as the validator measured
// them when the node passed. A count above it, or a condition the pass did not have, is an
// event; the same values are not.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "watch/gpu_health_reading.h"

namespace trainlock {

struct NvmlBaseline {
  bool present = false;
  // Where it came from ("reports/node-07.json, started 2026-12-07T08:00:00Z") or why there is
  // none ("no --reports-dir", "reports/node-07.json: verdict fail, not a pass", ...).
  std::string source;
  std::vector<GpuHealthReading> gpus;

  // The baseline of the GPU `now` read: the report's device of the same NVML index, unless
  // both name a PCI address and they differ (another GPU in that slot: no baseline); nullptr
  // when there is none.
  const GpuHealthReading* For(const GpuHealthReading& now) const;
};

// Reads the node's report in `reports_dir` ("" = none): only a passing report whose env.health
// passed is a baseline; anything else (absent, unreadable, not passing) is none, and says why.
NvmlBaseline ReadNvmlBaseline(const std::filesystem::path& reports_dir, const std::string& node);

}  // namespace trainlock
