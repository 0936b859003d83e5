// The throttle rule; see gpu_throttle.h.
#include "report/gpu_throttle.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/strings.h"

namespace trainlock {
namespace {

// What a slowdown reason calls for; each has its own remedy.
enum class ThrottleCause { kNone, kCooling, kHardware };

struct ThrottleReasonBit {
  uint64_t bit;
  const char* name;
  ThrottleCause cause;  // kNone: not a slowdown (clock policy, or the power cap)
};

// nvml.h: GpuIdle 0x1, ApplicationsClocksSetting 0x2, SwPowerCap 0x4, HwSlowdown 0x8,
// SyncBoost 0x10, SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80,
// DisplayClockSetting 0x100.
constexpr ThrottleReasonBit kThrottleReasonBits[] = {
    {0x1, "gpu_idle", ThrottleCause::kNone},
    {0x2, "applications_clocks_setting", ThrottleCause::kNone},
    {0x4, "sw_power_cap", ThrottleCause::kNone},
    {0x8, "hw_slowdown", ThrottleCause::kHardware},
    {0x10, "sync_boost", ThrottleCause::kNone},
    {0x20, "sw_thermal_slowdown", ThrottleCause::kCooling},
    {0x40, "hw_thermal_slowdown", ThrottleCause::kCooling},
    {0x80, "hw_power_brake", ThrottleCause::kHardware},
    {0x100, "display_clock_setting", ThrottleCause::kNone},
};

const ThrottleReasonBit* FindThrottleReasonBit(const std::string& name) {
  for (const ThrottleReasonBit& r : kThrottleReasonBits) {
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

std::string ThrottleWhole(double v) {
  return std::to_string(std::lround(v));
}

std::string ThrottleGpu(const TelemetryDevice& d) {
  return "GPU " + std::to_string(d.index.value_or(-1));
}

// The seconds sw_power_cap held on `d`; nullopt when it was never seen.
std::optional<double> PowerCapHeld(const TelemetryDevice& d) {
  for (const TelemetryReason& seen :
       d.throttle_reasons_seen.value_or(std::vector<TelemetryReason>{}))
    if (seen.name == "sw_power_cap" && seen.samples.value_or(0) > 0) return seen.held_s.value_or(0);
  return std::nullopt;
}

// Whether `d`'s enforced power limit is below its default one (a watt of slack for rounding).
bool PowerLimitLowered(const TelemetryDevice& d) {
  return d.power_limit_w && d.default_power_limit_w &&
         *d.power_limit_w + 1 < *d.default_power_limit_w;
}

// The mean SM clock of `d`'s busy samples held by clock policy, once they are enough to judge;
// nullopt otherwise.
std::optional<double> ClockPolicyHeld(const TelemetryDevice& d) {
  if (d.busy_clock_policy_s.value_or(0) < kClockJudgedMinS) return std::nullopt;
  const auto clock = ReadMetrics<TelemetryRange>(
      d.sm_clock_at_clock_policy_mhz.value_or(nlohmann::json::object()));
  return clock.mean;
}

const char* CauseRemedy(ThrottleCause cause) {
  if (cause == ThrottleCause::kCooling) {
    return "the GPU slowed itself down to cool: check the node's cooling (fans, airflow, inlet "
           "temperature; `nvidia-smi -q -d TEMPERATURE,PERFORMANCE`)";
  }
  return "the GPU's hardware held its clocks down (hw_slowdown, hw_power_brake: a power supply "
         "failing or missing, the system's power brake, the board's own protection): check the "
         "node's power supplies and the BMC's event log (`nvidia-smi -q -d PERFORMANCE` names "
         "the reason)";
}

std::string PowerLimitRemedy(const TelemetryDevice& d) {
  const std::string i = std::to_string(d.index.value_or(0));
  return "GPU " + i + "'s power limit is below its default: restore it (`nvidia-smi -i " + i +
         " -pl " + ThrottleWhole(d.default_power_limit_w.value_or(0)) +
         "`, as root) and find what lowered it (a power policy of the cluster's scheduler, DCGM "
         "or the BMC)";
}

std::string ClockPolicyRemedy(const TelemetryDevice& d) {
  const std::string i = std::to_string(d.index.value_or(0));
  return "GPU " + i + "'s clocks are held by application or locked clocks: reset them " +
         "(`nvidia-smi -i " + i + " -rgc` and `nvidia-smi -i " + i + " -rac`, as root) and " +
         "find what set them (a power or clock policy of the cluster's scheduler, DCGM)";
}

void AddRemedy(std::vector<std::string>* remedies, const std::string& remedy) {
  if (std::find(remedies->begin(), remedies->end(), remedy) == remedies->end())
    remedies->push_back(remedy);
}

// What slowed `d` down ("hw_slowdown for 2 s", ...), each cause's remedy added to `remedies`.
std::vector<std::string> ThrottleCauses(const TelemetryDevice& d,
                                        std::vector<std::string>* remedies) {
  std::vector<std::string> causes;
  for (const TelemetryReason& seen :
       d.throttle_reasons_seen.value_or(std::vector<TelemetryReason>{})) {
    const ThrottleReasonBit* r = FindThrottleReasonBit(seen.name.value_or(""));
    if (!r || r->cause == ThrottleCause::kNone || seen.samples.value_or(0) <= 0) continue;
    causes.push_back(std::string(r->name) + " for " + ThrottleSeconds(seen.held_s.value_or(0)) +
                     " s");
    AddRemedy(remedies, CauseRemedy(r->cause));
  }
  const std::optional<double> capped = PowerCapHeld(d);
  if (PowerLimitLowered(d) && capped) {
    causes.push_back("power limit " + ThrottleWhole(*d.power_limit_w) + " W, below its default " +
                     ThrottleWhole(*d.default_power_limit_w) + " W, reached for " +
                     ThrottleSeconds(*capped) + " s");
    AddRemedy(remedies, PowerLimitRemedy(d));
  }
  if (const std::optional<double> clock = ClockPolicyHeld(d)) {
    const std::string highest =
        d.max_sm_clock_mhz ? " (its highest " + ThrottleWhole(*d.max_sm_clock_mhz) + " MHz)" : "";
    causes.push_back("SM clock held by the clock policy (applications_clocks_setting) at " +
                     ThrottleWhole(*clock) + " MHz mean" + highest + " for " +
                     ThrottleSeconds(*d.busy_clock_policy_s) + " s busy");
    AddRemedy(remedies, ClockPolicyRemedy(d));
  }
  return causes;
}

}  // namespace

std::vector<std::string> ClocksEventReasonNames(uint64_t bits) {
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const ThrottleReasonBit& r : kThrottleReasonBits) {
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

bool IsSlowdownReason(const std::string& name) {
  const ThrottleReasonBit* r = FindThrottleReasonBit(name);
  return r && r->cause != ThrottleCause::kNone;
}

std::optional<ThrottleFinding> FindThrottle(const TelemetryMetrics& t) {
  const double window = t.window_s.value_or(0.0);
  if (!t.devices || window <= 0) return std::nullopt;
  std::vector<std::string> found, remedies;
  for (const TelemetryDevice& d : *t.devices) {
    const std::vector<std::string> causes = ThrottleCauses(d, &remedies);
    if (!causes.empty()) found.push_back(ThrottleGpu(d) + ": " + JoinStrings(causes, ", "));
  }
  if (found.empty()) return std::nullopt;
  ThrottleFinding f;
  f.summary = "throttled during the round trip (" + JoinStrings(found, "; ") + " of " +
              ThrottleSeconds(window) + " s): the step time measured is not the node's";
  f.remedy = JoinStrings(remedies, "; ") +
             "; then validate again: a healthy node's step time is what the run will see";
  return f;
}

std::string ThrottleNotes(const TelemetryMetrics& t) {
  if (!t.devices || t.devices->empty())
    return t.unavailable ? "GPU throttling not judged (" + *t.unavailable + ")" : "";
  const std::string window = ThrottleSeconds(t.window_s.value_or(0.0));
  std::vector<std::string> notes;
  for (const TelemetryDevice& d : *t.devices) {
    const std::optional<double> capped = PowerCapHeld(d);
    if (capped && !PowerLimitLowered(d)) {
      const std::string limit = d.power_limit_w ? ThrottleWhole(*d.power_limit_w) + " W " : "";
      notes.push_back(ThrottleGpu(d) + " at its " + limit + "power limit for " +
                      ThrottleSeconds(*capped) + " s of " + window + " s (normal under load)");
    }
    if (!capped && PowerLimitLowered(d)) {
      notes.push_back(ThrottleGpu(d) + "'s power limit " + ThrottleWhole(*d.power_limit_w) +
                      " W is below its default " + ThrottleWhole(*d.default_power_limit_w) +
                      " W (never reached)");
    }
    if (const std::string why = NotJudged(d); !why.empty())
      notes.push_back(ThrottleGpu(d) + " " + why);
  }
  return JoinStrings(notes, "; ");
}

std::string NotJudged(const TelemetryDevice& d) {
  std::vector<std::string> out;
  // Reasons never read look like none held: a slowdown could have gone unseen.
  if (d.reason_samples && *d.reason_samples == 0 && d.samples.value_or(0) > 0)
    out.push_back("throttle reasons not judged (NVML gave no clocks-event reasons)");
  if (!d.power_limit_w || !d.default_power_limit_w) {
    out.push_back(std::string("power limit not judged (NVML gave no ") +
                  (d.power_limit_w ? "default" : "enforced") + " power limit)");
  }
  if (d.samples.value_or(0) > 0 && !d.utilization_pct)
    out.push_back("clock policy not judged (NVML gave no utilization to tell busy samples by)");
  return JoinStrings(out, ", ");
}

}  // namespace trainlock
