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
//  - at its default limit, an SM clock below the one its model sustains there: the mean SM clock
//    of the samples busy (kBusyUtilizationPct) at the power cap, once they add up to
//    kClockJudgedMinS, under the catalog's sustained-sm-clock-mhz (lockfiles/compat/gpus.toml).
// sw_power_cap alone is a GPU at its limit, normal under a heavy step (NVIDIA's tools report it as
// information): recorded and said in a passing train.step's summary, never a failure. gpu_idle,
// applications_clocks_setting, sync_boost and display_clock_setting are clock policy. A test the
// telemetry lacks the data for (no default limit from NVML, a GPU model without a sustained
// clock) is not judged, and TelemetryDevice's not_judged and the summary say so.
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
// Clocks are judged once the busy samples at the power cap stand for this many seconds.
inline constexpr double kClockJudgedMinS = 1.0;

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

// The tests of the rule that `d`'s telemetry cannot judge, with why ("clocks not judged (no
// sustained SM clock for 'NVIDIA B200' in the GPU catalog)"); "" when every test can be judged.
std::string NotJudged(const TelemetryDevice& d);

}  // namespace trainlock
