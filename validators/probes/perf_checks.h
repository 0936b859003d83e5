// perf.matmul and perf.hbm: what the node worker measured on every device against the
// catalog's datasheet numbers, and perf.matmul's sustained rate against the throughput a healthy
// GPU of the model sustains at its power limit. A pass needs a measurement and a threshold for
// every GPU: a device that was not measured (or whose probe errored) is an error, a GPU the catalog
// does not know (or one without bf16) has no threshold and makes the check a skip saying so.
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
// perf.matmul's sustained test: the rate over the last second of about 1.5 s of back-to-back
// 8192^3 products (the worker's matmul_tflops_sustained), once the power limiter has acted,
// passes at this fraction of what a healthy GPU of the model sustains at its default power
// limit (gpus.toml's matmul-tflops-at-power-limit: 691 TFLOP/s for an H100 80GB HBM3). The
// healthy H100's 10-s windows varied by about 1% and its batches of 32 products by up to 14%
// (bench/results/2026-12-07-clock-under-load/h100/gemm.json), and GPUs of one kind differ by a
// few percent: 15% below the healthy rate is a slow GPU, not noise. A GPU the catalog has no such
// figure for is not judged on it, and the summary says so.
inline constexpr double kMatmulSustainedFraction = 0.85;

// perf.matmul and perf.hbm, in that order; the slowest device is named.
std::vector<CheckResult> PerfChecks(const NodeProbe& node, const DeviceRuns& runs,
                                    const Catalog& catalog);

}  // namespace trainlock::validate
