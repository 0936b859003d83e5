// perf.matmul and perf.hbm: what the node worker measured on every device against the
// catalog's datasheet numbers. A pass needs a measurement and a threshold for every GPU: a
// device that was not measured (or whose probe errored) is an error, a GPU the catalog does
// not know (or one without bf16) has no threshold and makes the check a skip saying so.
#pragma once

#include <vector>

#include "compat/catalog.h"
#include "probes/node_checks.h"
#include "probes/nvml_probe.h"
#include "report/report.h"

namespace trainlock::validate {

// Thresholds: measured >= fraction x datasheet.
inline constexpr double kMatmulFraction = 0.60;  // of dense bf16 TFLOP/s
inline constexpr double kHbmFraction = 0.70;     // of HBM TB/s (a device copy, read + write)
// Above this multiple of the datasheet a measurement is wrong (it did not wait for the GPU).
inline constexpr double kImplausibleAboveDatasheet = 1.25;

// perf.matmul and perf.hbm, in that order; the slowest device is named.
std::vector<CheckResult> PerfChecks(const NodeProbe& node, const DeviceRuns& runs,
                                    const Catalog& catalog);

}  // namespace trainlock::validate
