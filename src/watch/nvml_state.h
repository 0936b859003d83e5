// NVML's part of `trainlock watch --once`: each GPU's memory health as NVML reads it now, and
// what that shows against the baseline of the node's last passing report (the conditions the
// running watch would judge), for a person.
#pragma once

#include <filesystem>
#include <string>

namespace trainlock {

class GpuEventTable;

// The lines --once prints for NVML ("  NVML: ..."). NVML that cannot be used is one line saying
// why, unless `required`: then Failure (exit 3).
std::string DescribeNvmlState(const std::filesystem::path& reports_dir, const std::string& node,
                              const GpuEventTable& table, bool required);

}  // namespace trainlock
