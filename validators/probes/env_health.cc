// env.health; see env_health.h.
#include "probes/env_health.h"
#include "base/strings.h"
#include "report/check_metrics.h"

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
  const std::vector<std::string>& problems() const { return problems_; }
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
  void Problem(const std::string& text) { problems_.push_back(name_ + ": " + text); }

  void Ecc() {
    // A device without ECC (NVML: not supported) has no mode to check and no counters.
    if (!Known(g_.ecc_enabled, "ecc_enabled")) return;
    judged_.push_back("ECC on, no uncorrectable errors");
    if (!*g_.ecc_enabled) {
      Problem("ECC is disabled on a GPU that has it");
      return;
    }
    if (Known(g_.ecc_uncorrected_volatile, "ecc_uncorrected_volatile") &&
        *g_.ecc_uncorrected_volatile > 0) {
      Problem(std::to_string(*g_.ecc_uncorrected_volatile) +
              " uncorrectable ECC errors since boot");
    }
  }

  // Pre-Ampere GPUs retire pages, later ones remap rows; each reports the other as unsupported.
  void Retirement() {
    const bool pages = Known(g_.retired_pages_pending, "retired_pages_pending");
    if (pages && *g_.retired_pages_pending) Problem("retired pages pending a reset");
    const bool rows = Known(g_.remap_failed, "remapped_rows");
    if (pages || rows) judged_.push_back("no pending retirements or remaps");
    if (!rows) return;
    if (*g_.remap_failed) Problem("row remapping failed");
    if (g_.remap_pending.value_or(false)) Problem("row remapping pending a reset");
  }

  void Temperature() {
    const bool have_temp = Known(g_.temperature_c, "temperature_c");
    const bool have_limit = Known(g_.temperature_slowdown_c, "temperature_slowdown_c");
    if (have_temp && have_limit) judged_.push_back("below the slowdown temperature");
    if (have_temp && have_limit && *g_.temperature_c >= *g_.temperature_slowdown_c) {
      Problem(std::to_string(*g_.temperature_c) + " C, at or above its slowdown threshold of " +
              std::to_string(*g_.temperature_slowdown_c) + " C");
    }
  }

  void Clocks() {
    if (!Known(g_.throttle_reasons, "throttle_reasons")) return;
    judged_.push_back("no slowdown");
    if (std::string why = HarmfulThrottleReasons(*g_.throttle_reasons); !why.empty())
      Problem("clocks held down by " + why);
  }

  // The width a link trained to does not change with load: below its maximum is a bad slot,
  // riser or seating. The current generation drops while a GPU idles, so the generation judged
  // is the most this slot allows against the most the GPU can do.
  void PcieLink() {
    const bool width =
        Known(g_.pcie_width, "pcie_width") && Known(g_.pcie_width_max, "pcie_width_max");
    if (width) judged_.push_back("PCIe links at full width");
    if (width && *g_.pcie_width < *g_.pcie_width_max) {
      Problem("PCIe link at x" + std::to_string(*g_.pcie_width) + " of x" +
              std::to_string(*g_.pcie_width_max));
    }
    if (Known(g_.pcie_gen_max, "pcie_gen_max") && Known(g_.pcie_gen_gpu_max, "pcie_gen_gpu_max") &&
        *g_.pcie_gen_max < *g_.pcie_gen_gpu_max) {
      Problem("PCIe link limited to gen " + std::to_string(*g_.pcie_gen_max) +
              " by the slot; the GPU supports gen " + std::to_string(*g_.pcie_gen_gpu_max));
    }
  }

  const GpuProbe& g_;
  std::string name_;
  std::vector<std::string> problems_;
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
  auto put = [&](const char* key, const auto& opt) {
    if (opt) d[key] = *opt;
  };
  put("ecc_enabled", g.ecc_enabled);
  put("ecc_uncorrected_volatile", g.ecc_uncorrected_volatile);
  put("ecc_uncorrected_aggregate", g.ecc_uncorrected_aggregate);
  put("retired_pages_pending", g.retired_pages_pending);
  put("remapped_rows_uncorrectable", g.remapped_rows_uncorrectable);
  put("remap_pending", g.remap_pending);
  put("remap_failed", g.remap_failed);
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

CheckResult Result(CheckStatus status, std::string summary, std::string remedy,
                   nlohmann::json metrics) {
  return {"env.health", status, 0, std::move(summary), std::move(remedy), std::move(metrics)};
}

}  // namespace

// The GPUs NVML counts but could not open: a fault is a problem, an unexplained status unknown,
// and a count NVML could not give leaves every GPU unknown.
void JudgeUnopened(const NodeProbe& node, std::vector<std::string>& problems,
                   std::vector<std::string>& unknown) {
  if (node.count_status != 0)
    unknown.push_back("the GPU count (NVML status " + std::to_string(node.count_status) + ")");
  for (const UnopenedGpu& gpu : node.unopened) {
    const std::string fault = UnopenedGpuFault(gpu.nvml_status);
    const std::string name = "GPU " + std::to_string(gpu.index);
    if (fault.starts_with("fault: ")) {
      problems.push_back(name + ": NVML cannot open it: " + fault.substr(7));
    } else if (!fault.empty()) {
      unknown.push_back(name + " (" + fault.substr(9) + " opening it)");
    }
  }
}

CheckResult HealthCheck(const NodeProbe& node) {
  std::vector<std::string> problems, unknown;
  JudgeUnopened(node, problems, unknown);
  nlohmann::json per_device = nlohmann::json::array();
  std::vector<std::vector<std::string>> judged;
  std::vector<std::string> unjudged;  // GPUs NVML supports no health field of
  for (const GpuProbe& g : node.gpus) {
    GpuHealth health(g);
    health.Judge();
    judged.push_back(health.judged());
    if (health.judged().empty()) unjudged.push_back("GPU " + std::to_string(g.index));
    problems.insert(problems.end(), health.problems().begin(), health.problems().end());
    for (const std::string& field : health.unknown())
      unknown.push_back("GPU " + std::to_string(g.index) + " " + field);
    per_device.push_back(DeviceMetrics(g, health.unknown()));
  }
  const nlohmann::json m = ToJson(HealthMetrics{per_device, unknown});
  if (node.gpus.empty() && problems.empty() && unknown.empty())
    return Result(CheckStatus::kSkip, "no GPU to judge", "check env.devices", m);
  if (!problems.empty()) {
    std::string summary = JoinStrings(problems, "; ");
    if (!unknown.empty()) summary += "; unknown: " + JoinStrings(unknown, "; ");
    return Result(CheckStatus::kFail, summary,
                  "drain the node: reset the GPU (pending remaps/retirements), enable ECC "
                  "(nvidia-smi -e 1, then reset), reseat or move it (PCIe link), send it for "
                  "repair (uncorrectable errors, failed remaps); check cooling and power",
                  m);
  }
  if (!unknown.empty()) {
    return Result(CheckStatus::kError, "NVML could not report: " + JoinStrings(unknown, "; "),
                  "a field that cannot be read is not healthy: check the driver (nvidia-smi -q) "
                  "and the container's access to the device",
                  m);
  }
  if (!unjudged.empty()) {
    return Result(CheckStatus::kSkip,
                  JoinStrings(unjudged, ", ") +
                      ": NVML supports none of the health fields (ECC, retirements, temperature, "
                      "clocks, PCIe link), so there is nothing to judge",
                  "a virtual GPU or restricted passthrough hides them: judge the host's GPUs", m);
  }
  return Result(CheckStatus::kPass, PassSummary(judged), {}, m);
}

}  // namespace trainlock::validate
