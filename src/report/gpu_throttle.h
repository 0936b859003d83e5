// Whether a GPU was throttled while the round trip trained, decided from train.roundtrip's
// telemetry (check_metrics.h, TelemetryMetrics; validators/probes/gpu_telemetry.h samples it).
// One rule for the validator, which fails train.step on it, and for the gate's evidence rules,
// which refuse a train.step pass beside a throttled window.
//
// The rule: NVML's clocks-event reasons hw_slowdown, sw_thermal_slowdown, hw_thermal_slowdown and
// hw_power_brake count whenever they were seen; sw_power_cap counts when it held for at least
// kPowerCapShare of the window (a GPU grazing its power limit for a moment is normal under a
// heavy step; one held there trains slower than the node should). gpu_idle,
// applications_clocks_setting, sync_boost and display_clock_setting are clock policy, never a
// throttle.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report/check_metrics.h"

namespace trainlock {

inline constexpr double kPowerCapShare = 0.10;

// NVML's clocks-event reason bits (nvml.h, nvmlClocksEventReason*) by name, in bit order;
// an unknown bit is "0x..." .
std::vector<std::string> ClocksEventReasonNames(uint64_t bits);

// Whether a reason of that name can throttle (thermal or power), the short power cap included.
bool IsThrottleReason(const std::string& name);

struct ThrottleFinding {
  std::string summary;  // "throttled during the round trip (GPU 0: hw_thermal_slowdown for ...)"
  std::string remedy;
};

// The finding `t` supports; nullopt when no GPU was throttled, or nothing was sampled.
std::optional<ThrottleFinding> FindThrottle(const TelemetryMetrics& t);

}  // namespace trainlock
