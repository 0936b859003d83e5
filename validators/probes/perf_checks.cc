// perf.matmul and perf.hbm; see perf_checks.h.
#include "probes/perf_checks.h"
#include "base/strings.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace trainlock::validate {
namespace {

struct Measure {
  const char* id;
  const char* key;   // in the node worker's device entry
  const char* unit;  // as shown
  double scale;      // from the worker's unit to the shown one
  double fraction;
  double GpuModel::*peak;
  // The rate at the power limit, judged against what a healthy GPU sustains there; nullptr:
  // the measure has none.
  const char* sustained_key;
  double GpuModel::*at_power_limit;
};

constexpr Measure kMeasures[] = {
    {"perf.matmul", "matmul_tflops", "TFLOP/s bf16 dense", 1, kMatmulFraction,
     &GpuModel::bf16_dense_tflops, "matmul_tflops_sustained",
     &GpuModel::matmul_tflops_at_power_limit},
    {"perf.hbm", "copy_tbps", "GB/s device copy", 1000, kHbmFraction, &GpuModel::hbm_tbps, nullptr,
     nullptr}};

// The findings of one measure over every GPU, by kind.
struct Findings {
  std::vector<std::string> unmeasured, implausible, slow, no_threshold, sustained_not_judged;
  double slowest_sustained = -1;
  std::string slowest_sustained_text;
  double slowest = -1;
  std::string slowest_text;
  std::vector<PerfDevice> devices;
};

// The worker's entry for GPU `index`, or nullptr when it measured none.
const nlohmann::json* EntryOf(const DeviceRuns& runs, unsigned index) {
  for (const auto& d : runs.devices) {
    if (d.is_object() && d.value("index", -1) == static_cast<int>(index)) return &d;
  }
  return nullptr;
}

// The sustained rate of `entry` against what a healthy GPU of `model` sustains at its power
// limit, into `row` and `f`.
void JudgeSustained(const Measure& measure, const std::string& who, const GpuModel* model,
                    const nlohmann::json& entry, PerfDevice& row, Findings& f) {
  if (!measure.sustained_key) return;
  const double expected = model ? model->*measure.at_power_limit : 0;
  const auto value = entry.find(measure.sustained_key);
  const bool measured =
      value != entry.end() && value->is_number() && std::isfinite(value->get<double>());
  if (measured) row.sustained_value = value->get<double>();
  if (expected <= 0) {
    row.sustained_threshold = std::optional<double>();  // written as null: not judged
    f.sustained_not_judged.push_back(who);
    return;
  }
  if (!measured) {
    f.unmeasured.push_back(who + ": no sustained rate (" + measure.sustained_key + ")");
    return;
  }
  const double threshold = expected * kMatmulSustainedFraction;
  row.sustained_threshold = threshold;
  char text[200];
  std::snprintf(text, sizeof text, "%s %.0f %s sustained at its power limit", who.c_str(),
                *row.sustained_value * measure.scale, measure.unit);
  if (f.slowest_sustained < 0 || *row.sustained_value < f.slowest_sustained) {
    f.slowest_sustained = *row.sustained_value;
    f.slowest_sustained_text = text;
  }
  if (*row.sustained_value < threshold) {
    char under[120];
    std::snprintf(under, sizeof under, ", under %.2f x the %.0f a healthy one sustains there",
                  kMatmulSustainedFraction, expected * measure.scale);
    f.slow.push_back(text + std::string(under));
  }
}

void JudgeDevice(const Measure& measure, const GpuProbe& gpu, const nlohmann::json* entry,
                 const Catalog& catalog, Findings& f) {
  const std::string who = "GPU " + std::to_string(gpu.index) + " (" + gpu.name + ")";
  PerfDevice row;
  row.index = gpu.index;
  row.name = gpu.name;
  const nlohmann::json* value =
      entry && entry->contains(measure.key) ? &(*entry)[measure.key] : nullptr;
  if (!value || !value->is_number() || !std::isfinite(value->get<double>())) {
    const std::string why = entry && entry->contains("error") && (*entry)["error"].is_string()
                                ? (*entry)["error"].get<std::string>()
                                : "no measurement";
    f.unmeasured.push_back(who + ": " + why);
    row.error = why;
    f.devices.push_back(row);
    return;
  }
  const double v = value->get<double>();
  // How the worker measured it (e.g. matmul_method: every size and burst length it timed).
  const std::string key = measure.key;
  const std::string method_key = key.substr(0, key.find('_')) + "_method";
  if (entry->contains(method_key)) row.method = (*entry)[method_key];
  char text[160];
  std::snprintf(text, sizeof text, "%s %.0f %s", who.c_str(), v * measure.scale, measure.unit);
  row.value = v;
  if (f.slowest < 0 || v < f.slowest) {
    f.slowest = v;
    f.slowest_text = text;
  }
  const GpuModel* model = catalog.FindGpu(gpu.name);
  const double peak = model ? model->*measure.peak : 0;
  if (!model) {
    f.no_threshold.push_back(who + ": not in the GPU catalog");
  } else if (peak <= 0) {
    f.no_threshold.push_back(who + ": no " + std::string(measure.unit) + " on the datasheet");
  } else if (v > peak * kImplausibleAboveDatasheet) {
    // Faster than the datasheet is a timing that did not wait for the GPU, not a fast GPU.
    f.implausible.push_back(text);
  } else if (v < peak * measure.fraction) {
    f.slow.push_back(text + std::string(" below the threshold"));
  }
  row.threshold = model && peak > 0 ? std::optional<double>(peak * measure.fraction)
                                    : std::nullopt;  // written as null: no datasheet figure
  JudgeSustained(measure, who, model, *entry, row, f);
  f.devices.push_back(row);
}

CheckResult Verdict(const Measure& measure, const Findings& f) {
  const nlohmann::json m = ToJson(PerfMetrics{f.devices, measure.fraction});
  auto make = [&](CheckStatus status, std::string summary, std::string remedy) {
    return NotMeasured(measure.id, status, std::move(summary), std::move(remedy), m);
  };
  if (!f.unmeasured.empty() || !f.implausible.empty()) {
    std::vector<std::string> parts = f.unmeasured;
    if (!f.implausible.empty())
      parts.push_back(JoinStrings(f.implausible, "; ") + ": above the datasheet peak");
    return make(CheckStatus::kError, JoinStrings(parts, "; ") + ": not measured",
                "a device whose probe errored or whose timing did not wait for it has no "
                "measurement: see the node worker's stderr (--keep-work), or report a validator "
                "bug");
  }
  if (!f.no_threshold.empty() && f.slow.empty()) {
    return make(CheckStatus::kSkip, "no threshold: " + JoinStrings(f.no_threshold, "; "),
                "add the GPU's datasheet numbers to lockfiles/compat/gpus.toml");
  }
  if (!f.slow.empty()) {
    return Judged(measure.id, m, JoinStrings(f.slow, "; "),
                  "a slow or throttled GPU: check env.health (clocks, thermal, power) and drain "
                  "the node");
  }
  std::string summary = "slowest: " + f.slowest_text;
  if (!f.slowest_sustained_text.empty())
    summary += "; slowest sustained: " + f.slowest_sustained_text;
  if (!f.sustained_not_judged.empty())
    summary +=
        "; sustained rate not judged (no matmul-tflops-at-power-limit in the GPU catalog "
        "for " +
        JoinStrings(f.sustained_not_judged, ", ") + ")";
  return Judged(measure.id, m, summary);
}

}  // namespace

std::vector<CheckResult> PerfChecks(const NodeProbe& node, const DeviceRuns& runs,
                                    const Catalog& catalog) {
  std::vector<CheckResult> checks;
  for (const Measure& measure : kMeasures) {
    if (node.gpus.empty()) {
      checks.push_back(NotMeasured(measure.id, CheckStatus::kSkip, "no GPU to measure"));
      continue;
    }
    if (const std::string mig = MigNote(node); !mig.empty()) {  // a slice is not the datasheet's
      checks.push_back(NotMeasured(measure.id, CheckStatus::kSkip,
                                   mig + "; the datasheet thresholds are a whole GPU's"));
      continue;
    }
    Findings f;
    for (const GpuProbe& gpu : node.gpus)
      JudgeDevice(measure, gpu, EntryOf(runs, gpu.index), catalog, f);
    checks.push_back(Verdict(measure, f));
  }
  return checks;
}

}  // namespace trainlock::validate
