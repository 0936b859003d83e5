// The evidence rules; see check_evidence.h.
#include "report/check_evidence.h"

#include <cmath>
#include <functional>
#include <map>

namespace trainlock {
namespace {

using Json = nlohmann::json;

bool IsTrue(const Json& metrics, const char* key) {
  return metrics.contains(key) && metrics[key].is_boolean() && metrics[key].get<bool>();
}

// train.roundtrip: bitwise equal, or within a loss tolerance with the final state equal; and
// the resumed process restored its RNG and data-loader state either way.
std::string Roundtrip(const Json& m) {
  if (!IsTrue(m, "rng_restored")) return "rng_restored is not true";
  if (!IsTrue(m, "data_restored")) return "data_restored is not true";
  if (IsTrue(m, "bitwise_equal")) return "";
  const std::optional<double> tolerance = FiniteNumber(m, "loss_tolerance");
  const std::optional<double> diff = FiniteNumber(m, "max_abs_loss_diff");
  if (!tolerance || *tolerance <= 0)
    return "bitwise_equal is not true and no loss tolerance was used";
  if (!IsTrue(m, "final_state_equal"))
    return "the final state differs (final_state_equal is not true)";
  if (!diff || *diff > *tolerance) return "max_abs_loss_diff is not within loss_tolerance";
  return "";
}

std::string Step(const Json& m) {
  if (IsTrue(m, "out_of_memory")) return "it ran out of memory";
  const std::optional<double> time = FiniteNumber(m, "step_time_s");
  if (!time || *time <= 0) return "it has no step_time_s";
  return "";
}

// perf.*: every device measured against a threshold, none below it.
std::string Perf(const Json& m) {
  if (!m.contains("devices") || !m["devices"].is_array() || m["devices"].empty())
    return "it measured no device";
  for (const Json& d : m["devices"]) {
    const std::optional<double> value = FiniteNumber(d, "value");
    const std::optional<double> threshold = FiniteNumber(d, "threshold");
    if (!value || !threshold) return "a device has no measurement or no threshold";
    if (*value < *threshold) return "a device measured below its threshold";
  }
  return "";
}

std::string Health(const Json& m) {
  if (m.contains("unknown") && (!m["unknown"].is_array() || !m["unknown"].empty()))
    return "NVML fields are unknown";
  return "";
}

// train.eval and ckpt.portable: the loss difference within the stated tolerance.
std::string WithinTolerance(const Json& m) {
  const std::optional<double> diff = FiniteNumber(m, "abs_diff");
  if (!diff) return "it has no abs_diff";
  if (const std::optional<double> tolerance = FiniteNumber(m, "tolerance"); tolerance) {
    if (*diff > *tolerance) return "abs_diff is above its tolerance";
  }
  return "";
}

const std::map<std::string, std::function<std::string(const Json&)>>& Rules() {
  static const std::map<std::string, std::function<std::string(const Json&)>> rules = {
      {"train.roundtrip", Roundtrip}, {"train.step", Step},
      {"perf.matmul", Perf},          {"perf.hbm", Perf},
      {"env.health", Health},         {"train.eval", WithinTolerance},
  };
  return rules;
}

}  // namespace

std::vector<std::string> EvidenceContradictions(const ReportView& report) {
  std::vector<std::string> out;
  for (const CheckView& c : report.checks) {
    if (c.status != "pass") continue;
    auto rule = Rules().find(c.id);
    if (rule == Rules().end()) continue;
    if (std::string why = rule->second(c.metrics); !why.empty())
      out.push_back(c.id + ": pass, but " + why);
  }
  return out;
}

}  // namespace trainlock
