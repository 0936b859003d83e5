// env.health; see env_health.h.
#include "probes/env_health.h"
#include "base/strings.h"
#include "report/check_metrics.h"
#include "report/pass_rules.h"

#include <algorithm>
#include <string>
#include <vector>

namespace trainlock::validate {
namespace {

bool NotSupported(const GpuProbe& g, const char* field) {
  return std::find(g.not_supported.begin(), g.not_supported.end(), field) != g.not_supported.end();
}

// What one GPU's health is judged from, and what was found.
class GpuHealth {
 public:
  explicit GpuHealth(const GpuProbe& g) : g_(g), name_("GPU " + std::to_string(g.index)) {}

  void Judge() {
    Ecc();
    Retirement();
    Temperature();
    Clocks();
    PcieLink();
  }
  const std::vector<std::string>& unknown() const { return unknown_; }
  // What was judged from values NVML gave, in the pass summary's words; what NVML does not
  // support is not judged and never claimed.
  const std::vector<std::string>& judged() const { return judged_; }

 private:
  // True when `field` has a value; records it as unknown when the device should have it.
  template <typename T>
  bool Known(const std::optional<T>& value, const char* field) {
    if (value) return true;
    if (!NotSupported(g_, field)) unknown_.push_back(field);
    return false;
  }
  void Ecc() {
    // A device without ECC (NVML: not supported) has no mode to check and no counters.
    if (!Known(g_.ecc_enabled, "ecc_enabled")) return;
    judged_.push_back("ECC on, no uncorrectable errors");
    if (*g_.ecc_enabled) Known(g_.ecc_uncorrected_volatile, "ecc_uncorrected_volatile");
  }

  // Pre-Ampere GPUs retire pages, later ones remap rows; each reports the other as unsupported.
  void Retirement() {
    const bool pages = Known(g_.retired_pages_pending, "retired_pages_pending");
    const bool rows = Known(g_.remap_failed, "remapped_rows");
    if (pages || rows) judged_.push_back("no pending retirements or remaps");
  }

  void Temperature() {
    const bool have_temp = Known(g_.temperature_c, "temperature_c");
    const bool have_limit = Known(g_.temperature_slowdown_c, "temperature_slowdown_c");
    if (have_temp && have_limit) judged_.push_back("below the slowdown temperature");
  }

  void Clocks() {
    if (Known(g_.throttle_reasons, "throttle_reasons")) judged_.push_back("no slowdown");
  }

  // The width a link trained to does not change with load: below its maximum is a bad slot,
  // riser or seating. The current generation drops while a GPU idles, so the generation judged
  // is the most this slot allows against the most the GPU can do.
  void PcieLink() {
    const bool width =
        Known(g_.pcie_width, "pcie_width") && Known(g_.pcie_width_max, "pcie_width_max");
    if (width) judged_.push_back("PCIe links at full width");
    Known(g_.pcie_gen_max, "pcie_gen_max");
    Known(g_.pcie_gen_gpu_max, "pcie_gen_gpu_max");
  }

  const GpuProbe& g_;
  std::string name_;
  std::vector<std::string> unknown_;
  std::vector<std::string> judged_;
};

// The pass summary: what was judged on every GPU. What NVML does not support on some GPU is not
// claimed (metrics.devices[].not_supported names it).
std::string PassSummary(const std::vector<std::vector<std::string>>& judged) {
  constexpr size_t kAspects = 5;  // ECC, retirements, temperature, clocks, PCIe width
  std::vector<std::string> everywhere = judged.front();
  for (const std::vector<std::string>& j : judged) {
    std::erase_if(everywhere, [&](const std::string& aspect) {
      return std::find(j.begin(), j.end(), aspect) == j.end();
    });
  }
  std::string summary = std::to_string(judged.size()) + " GPU(s): ";
  if (everywhere.empty()) return summary + "each judged on what NVML supports (see not_supported)";
  summary += JoinStrings(everywhere, ", ");
  if (everywhere.size() < kAspects)
    summary += "; the rest not judged: NVML does not support it (see not_supported)";
  return summary;
}

// Everything NVML reported for `g`, for the report.
nlohmann::json DeviceMetrics(const GpuProbe& g, const std::vector<std::string>& unknown) {
  nlohmann::json d = {{"index", g.index}};
  if (!g.pci.empty()) d["pci"] = g.pci;
  auto put = [&](const char* key, const auto& opt) {
    if (opt) d[key] = *opt;
  };
  put("ecc_enabled", g.ecc_enabled);
  put("ecc_uncorrected_volatile", g.ecc_uncorrected_volatile);
  put("ecc_uncorrected_aggregate", g.ecc_uncorrected_aggregate);
  put("ecc_corrected_volatile", g.ecc_corrected_volatile);
  put("ecc_corrected_aggregate", g.ecc_corrected_aggregate);
  put("retired_pages_pending", g.retired_pages_pending);
  put("remapped_rows_uncorrectable", g.remapped_rows_uncorrectable);
  put("remap_pending", g.remap_pending);
  put("remap_failed", g.remap_failed);
  put("remapped_rows_correctable", g.remapped_rows_correctable);
  put("recovery_action", g.recovery_action);
  put("temperature_c", g.temperature_c);
  put("temperature_slowdown_c", g.temperature_slowdown_c);
  put("power_mw", g.power_mw);
  put("power_limit_mw", g.power_limit_mw);
  put("sm_clock_mhz", g.sm_clock_mhz);
  put("sm_clock_max_mhz", g.sm_clock_max_mhz);
  put("mem_clock_mhz", g.mem_clock_mhz);
  put("throttle_reasons", g.throttle_reasons);
  put("pcie_gen", g.pcie_gen);
  put("pcie_gen_max", g.pcie_gen_max);
  put("pcie_gen_gpu_max", g.pcie_gen_gpu_max);
  put("pcie_width", g.pcie_width);
  put("pcie_width_max", g.pcie_width_max);
  put("persistence", g.persistence);
  put("mig", g.mig);
  d["not_supported"] = g.not_supported;
  d["unknown"] = unknown;
  return d;
}

CheckResult NotJudged(CheckStatus status, std::string summary, std::string remedy,
                      nlohmann::json metrics) {
  return NotMeasured("env.health", status, std::move(summary), std::move(remedy),
                     std::move(metrics));
}

}  // namespace

// The GPUs NVML counts but could not open: a fault is named (the rule fails it), an unexplained
// status unknown, and a count NVML could not give leaves every GPU unknown.
void JudgeUnopened(const NodeProbe& node, std::vector<std::string>& faults,
                   std::vector<std::string>& unknown) {
  if (node.count_status != 0)
    unknown.push_back("the GPU count (NVML status " + std::to_string(node.count_status) + ")");
  for (const UnopenedGpu& gpu : node.unopened) {
    const std::string fault = UnopenedGpuFault(gpu.nvml_status);
    const std::string name = "GPU " + std::to_string(gpu.index);
    if (fault.starts_with("fault: ")) {
      faults.push_back(name + ": NVML cannot open it: " + fault.substr(7));
    } else if (!fault.empty()) {
      unknown.push_back(name + " (" + fault.substr(9) + " opening it)");
    }
  }
}

CheckResult HealthCheck(const NodeProbe& node) {
  std::vector<std::string> faults, unknown;
  JudgeUnopened(node, faults, unknown);
  nlohmann::json per_device = nlohmann::json::array();
  std::vector<std::vector<std::string>> judged;
  std::vector<std::string> unjudged;  // GPUs NVML supports no health field of
  for (const GpuProbe& g : node.gpus) {
    GpuHealth health(g);
    health.Judge();
    judged.push_back(health.judged());
    if (health.judged().empty()) unjudged.push_back("GPU " + std::to_string(g.index));
    for (const std::string& field : health.unknown())
      unknown.push_back("GPU " + std::to_string(g.index) + " " + field);
    per_device.push_back(DeviceMetrics(g, health.unknown()));
  }
  HealthMetrics health{per_device, unknown, std::nullopt};
  if (!faults.empty()) health.open_faults = faults;
  const nlohmann::json m = ToJson(health);
  if (node.gpus.empty() && faults.empty() && unknown.empty())
    return NotJudged(CheckStatus::kSkip, "no GPU to judge", "check env.devices", m);
  // What the rule finds beyond fields NVML could not read and GPUs it reads no field of.
  size_t found = 0;
  for (const RuleFinding& f : PassRuleFindings("env.health", m))
    found += f.metric != "unknown" && !f.why.starts_with("a device has none of the fields");
  if (found == 0 && !unknown.empty()) {
    return NotJudged(CheckStatus::kError, "NVML could not report: " + JoinStrings(unknown, "; "),
                     "a field that cannot be read is not healthy: check the driver (nvidia-smi -q) "
                     "and the container's access to the device",
                     m);
  }
  if (found == 0 && !unjudged.empty()) {
    return NotJudged(CheckStatus::kSkip,
                     JoinStrings(unjudged, ", ") +
                         ": NVML supports none of the health fields (ECC, retirements, "
                         "temperature, clocks, PCIe link), so there is nothing to judge",
                     "a virtual GPU or restricted passthrough hides them: judge the host's GPUs",
                     m);
  }
  // A failure's summary and remedy are the rule's findings (Judged words them).
  return Judged("env.health", m, found ? "" : PassSummary(judged), {});
}

}  // namespace trainlock::validate
