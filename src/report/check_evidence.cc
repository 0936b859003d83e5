// The evidence rules; see check_evidence.h.
#include "report/check_evidence.h"

#include "report/check_metrics.h"

#include <cmath>
#include <functional>
#include <map>

namespace trainlock {
namespace {

using Json = nlohmann::json;

bool IsTrue(const Flag& flag) {
  return flag.value_or(false);
}

// train.roundtrip: bitwise equal, or within a loss tolerance with the final state equal; and
// the resumed process restored its RNG and data-loader state either way.
std::string Roundtrip(const Json& metrics) {
  const auto m = ReadMetrics<RoundtripMetrics>(metrics);
  if (!IsTrue(m.rng_restored)) return "rng_restored is not true";
  if (!IsTrue(m.data_restored)) return "data_restored is not true";
  if (IsTrue(m.bitwise_equal)) return "";
  if (!m.loss_tolerance || *m.loss_tolerance <= 0)
    return "bitwise_equal is not true and no loss tolerance was used";
  if (!IsTrue(m.final_state_equal))
    return "the final state differs (final_state_equal is not true)";
  if (!m.max_abs_loss_diff || *m.max_abs_loss_diff > *m.loss_tolerance)
    return "max_abs_loss_diff is not within loss_tolerance";
  return "";
}

std::string Step(const Json& metrics) {
  const auto m = ReadMetrics<TrainStepMetrics>(metrics);
  if (IsTrue(m.out_of_memory)) return "it ran out of memory";
  if (!m.step_time_s || *m.step_time_s <= 0) return "it has no step_time_s";
  return "";
}

// perf.*: every device measured against a threshold, none below it.
std::string Perf(const Json& metrics) {
  const auto m = ReadMetrics<PerfMetrics>(metrics);
  if (!m.devices || m.devices->empty()) return "it measured no device";
  for (const PerfDevice& d : *m.devices) {
    const Number threshold = d.threshold.value_or(std::nullopt);
    if (!d.value || !threshold) return "a device has no measurement or no threshold";
    if (*d.value < *threshold) return "a device measured below its threshold";
  }
  return "";
}

std::string Health(const Json& metrics) {
  const auto m = ReadMetrics<HealthMetrics>(metrics);
  if (m.unknown && (!m.unknown->is_array() || !m.unknown->empty()))
    return "NVML fields are unknown";
  return "";
}

// train.eval and ckpt.portable: the loss difference within the stated tolerance.
std::string WithinTolerance(const Json& metrics) {
  const auto m = ReadMetrics<EvalMetrics>(metrics);
  if (!m.abs_diff) return "it has no abs_diff";
  if (m.tolerance && *m.abs_diff > *m.tolerance) return "abs_diff is above its tolerance";
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
