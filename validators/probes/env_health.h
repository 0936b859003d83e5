// env.health: each GPU's health as NVML reports it, judged on what docs/DESIGN.md lists:
// uncorrectable ECC errors, ECC mode where the device has it, retired pages and remapped rows,
// temperature against the GPU's own slowdown threshold, clock slowdowns, and the PCIe link
// (width against its maximum, the generation this slot allows against the GPU's).
//
// A field NVML could not read is "unknown": it is listed, and a GPU with an unknown field that
// matters is never counted as healthy (the check is an error naming the fields).
#pragma once

#include "probes/nvml_probe.h"
#include "report/report.h"

namespace trainlock::validate {

CheckResult HealthCheck(const NodeProbe& node);

}  // namespace trainlock::validate
