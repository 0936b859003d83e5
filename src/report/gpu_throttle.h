// Whether a GPU was slowed down while the round trip trained, decided from train.roundtrip's
// telemetry (check_metrics.h, TelemetryMetrics; validators/probes/gpu_telemetry.h samples it).
// One rule for the validator, which fails train.step on it, and for the gate's evidence rules,
// which refuse a train.step pass beside a slowed-down window.
//
// The rule judges what makes a node slower than a healthy one of its kind, each cause with its
// own remedy:
//  - NVML's clocks-event reasons hw_slowdown, hw_power_brake (hardware: power supply, the
//    system's power brake), sw_thermal_slowdown and hw_thermal_slowdown (cooling), whenever seen;
//  - a power limit below the GPU's default one (power_limit_w < default_power_limit_w) that the
//    GPU reached (sw_power_cap seen): the node was configured slower than its rating;
//  - clocks held down by clock policy: applications_clocks_setting (set by `nvidia-smi -ac`
//    application clocks and, on current drivers, `-lgc` locked clocks) in samples busy
//    (kBusyUtilizationPct) without sw_power_cap and under the GPU's highest SM clock, once they
//    add up to kClockJudgedMinS: the policy, not the load, held those clocks.
// SM clocks at the power cap are not judged: a GPU at its limit trades clock for watts, and how
// far depends on the load (a healthy H100 holds about 1384 MHz under a dense GEMM and 1934 MHz
// under the pilot's training step, bench/results/2026-12-07-clock-under-load/h100), so no floor
// separates a healthy GPU from a slowed one there; perf.matmul judges the throughput at the
// limit instead. sw_power_cap alone is a GPU at its limit, normal under a heavy step (NVIDIA's
// tools report it as information): recorded and said in a passing train.step's summary, never a
// failure. gpu_idle, sync_boost and display_clock_setting are not judged. A test the telemetry
// lacks the data for (no default limit from NVML, no utilization to tell busy samples by) is not
// judged, and TelemetryDevice's not_judged and the summary say so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/check_metrics.h"

namespace trainlock {

// A sample counts as busy from this GPU utilization (NVML's percent of the sample period a
// kernel ran) up.
inline constexpr double kBusyUtilizationPct = 80;
// Clocks held by clock policy are judged once the busy samples they were held in stand for this
// many seconds (a moment's policy change is not a run's speed).
inline constexpr double kClockJudgedMinS = 1.0;

// NVML's clocks-event reason bits the telemetry sorts samples by (nvml.h,
// nvmlClocksEventReason*).
inline constexpr uint64_t kApplicationsClocksSettingBit = 0x2;
inline constexpr uint64_t kSwPowerCapBit = 0x4;

// NVML's clocks-event reason bits (nvml.h, nvmlClocksEventReason*) by name, in bit order;
// an unknown bit is "0x..." .
std::vector<std::string> ClocksEventReasonNames(uint64_t bits);

// Whether a reason of that name slows the GPU down whenever it is set (hardware, thermal, power
// brake); sw_power_cap is not one.
bool IsSlowdownReason(const std::string& name);

struct ThrottleFinding {
  std::string summary;  // "throttled during the round trip (GPU 0: hw_thermal_slowdown for ...)"
  std::string remedy;   // one remedy for each cause found
};

// The finding `t` supports; nullopt when no GPU was slowed down, or nothing was sampled.
std::optional<ThrottleFinding> FindThrottle(const TelemetryMetrics& t);

// What the rule recorded without failing on it, for a passing train.step's summary: the power cap
// held ("GPU 0 at its 700 W power limit for 13.2 s of 24.9 s (normal under load)"), a lowered
// limit never reached, tests not judged and why, or why nothing was sampled; "" when none.
std::string ThrottleNotes(const TelemetryMetrics& t);

// The tests of the rule that `d`'s telemetry cannot judge, with why ("clock policy not judged
// (NVML gave no utilization to tell busy samples by)"); "" when every test can be judged.
std::string NotJudged(const TelemetryDevice& d);

}  // namespace trainlock
