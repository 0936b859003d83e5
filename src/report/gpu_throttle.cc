// The throttle rule; see gpu_throttle.h.
#include "report/gpu_throttle.h"

#include <cmath>
#include <cstdio>

namespace trainlock {
namespace {

struct ReasonBit {
  uint64_t bit;
  const char* name;
  bool thermal;  // which remedy it calls for
  bool always;   // a throttle whenever seen; sw_power_cap only past kPowerCapShare
};

// nvml.h: GpuIdle 0x1, ApplicationsClocksSetting 0x2, SwPowerCap 0x4, HwSlowdown 0x8,
// SyncBoost 0x10, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80,
// DisplayClockSetting 0x100.
constexpr ReasonBit kReasonBits[] = {
    {0x1, "gpu_idle", false, false},
    {0x2, "applications_clocks_setting", false, false},
    {0x4, "sw_power_cap", false, false},
    {0x8, "hw_slowdown", false, true},
    {0x10, "sync_boost", false, false},
    {0x20, "sw_thermal_slowdown", true, true},
    {0x40, "hw_thermal_slowdown", true, true},
    {0x80, "hw_power_brake", false, true},
    {0x100, "display_clock_setting", false, false},
};

const ReasonBit* FindReasonBit(const std::string& name) {
  for (const ReasonBit& r : kReasonBits) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

// "3.2", "41": one decimal, none when it is zero.
std::string ThrottleSeconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", std::round(s * 10) / 10);
  std::string out = text;
  if (out.size() > 2 && out.compare(out.size() - 2, 2, ".0") == 0) out.resize(out.size() - 2);
  return out;
}

}  // namespace

std::vector<std::string> ClocksEventReasonNames(uint64_t bits) {
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const ReasonBit& r : kReasonBits) {
    known |= r.bit;
    if (bits & r.bit) names.push_back(r.name);
  }
  if (const uint64_t rest = bits & ~known; rest != 0) {
    char text[24];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(rest));
    names.push_back(text);
  }
  return names;
}

bool IsThrottleReason(const std::string& name) {
  const ReasonBit* r = FindReasonBit(name);
  return r && (r->always || name == "sw_power_cap");
}

std::optional<ThrottleFinding> FindThrottle(const TelemetryMetrics& t) {
  const double window = t.window_s.value_or(0.0);
  if (!t.devices || window <= 0) return std::nullopt;
  std::string found;
  bool thermal = false, power = false;
  for (const TelemetryDevice& d : *t.devices) {
    if (!d.throttle_reasons_seen) continue;
    std::string reasons;
    for (const TelemetryReason& seen : *d.throttle_reasons_seen) {
      const ReasonBit* r = FindReasonBit(seen.name.value_or(""));
      const double held = seen.held_s.value_or(0.0);
      if (!r || seen.samples.value_or(0) <= 0) continue;
      if (!r->always && !(r->bit == 0x4 && held >= kPowerCapShare * window)) continue;
      (r->thermal ? thermal : power) = true;
      reasons += (reasons.empty() ? "" : ", ") + std::string(r->name) + " for " +
                 ThrottleSeconds(held) + " s";
    }
    if (reasons.empty()) continue;
    found += (found.empty() ? "" : "; ") + std::string("GPU ") +
             std::to_string(d.index.value_or(-1)) + ": " + reasons;
  }
  if (found.empty()) return std::nullopt;
  ThrottleFinding f;
  f.summary = "throttled during the round trip (" + found + " of " + ThrottleSeconds(window) +
              " s): the step time measured is not the node's";
  if (thermal) {
    f.remedy =
        "the GPU slowed itself down to cool: check the node's cooling (fans, airflow, inlet "
        "temperature; `nvidia-smi -q -d TEMPERATURE,PERFORMANCE`)";
  }
  if (power) {
    f.remedy += std::string(f.remedy.empty() ? "" : "; ") +
                "the GPU was held below its clocks by power: compare its power limit with the "
                "default (`nvidia-smi -q -d POWER`) and check the power supplies and the "
                "power-brake signal";
  }
  f.remedy += "; then validate again: a healthy node's step time is what the run will see";
  return f;
}

}  // namespace trainlock
