// env.health's pass rule (pass_rules.h): each GPU's NVML fields against what a healthy GPU of
// its kind reads, as docs/DESIGN.md lists them. validators/probes/env_health.cc reads the fields
// and words its summary from these findings; it decides nothing itself.
#include <cstdint>
#include <optional>

#include "base/strings.h"
#include "report/gpu_throttle.h"
#include "report/pass_rules_internal.h"

namespace trainlock::pass_rules {
namespace {

const char* kDrain =
    "drain the node: reset the GPU (pending remaps/retirements), enable ECC (nvidia-smi -e 1, "
    "then reset), reseat or move it (PCIe link), send it for repair (uncorrectable errors, "
    "failed remaps); check cooling and power";

// The fields a GPU is judged on: a device reading none of them was not judged.
constexpr const char* kJudgedFields[] = {"ecc_enabled",   "retired_pages_pending", "remap_failed",
                                         "temperature_c", "throttle_reasons",      "pcie_width"};

std::optional<int64_t> IntegerField(const Json& d, const char* key) {
  auto it = d.find(key);
  if (it == d.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::optional<bool> BooleanField(const Json& d, const char* key) {
  auto it = d.find(key);
  if (it == d.end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

// What one device's fields say against its health, each "GPU n: ...".
void JudgeDevice(const Json& d, Findings& out) {
  const std::string gpu = "GPU " + std::to_string(IntegerField(d, "index").value_or(-1)) + ": ";
  auto problem = [&](const std::string& why) {
    Add(out, TRAINLOCK_METRIC_KEY(HealthMetrics, devices), gpu + why, kDrain);
  };
  if (BooleanField(d, "ecc_enabled") == false) problem("ECC is disabled on a GPU that has it");
  if (auto n = IntegerField(d, "ecc_uncorrected_volatile");
      n && *n > 0 && BooleanField(d, "ecc_enabled") == true)
    problem(std::to_string(*n) + " uncorrectable ECC errors since boot");
  if (BooleanField(d, "retired_pages_pending") == true) problem("retired pages pending a reset");
  if (BooleanField(d, "remap_failed") == true) problem("row remapping failed");
  if (BooleanField(d, "remap_pending") == true) problem("row remapping pending a reset");
  const auto temperature = IntegerField(d, "temperature_c");
  const auto slowdown = IntegerField(d, "temperature_slowdown_c");
  if (temperature && slowdown && *temperature >= *slowdown)
    problem(std::to_string(*temperature) + " C, at or above its slowdown threshold of " +
            std::to_string(*slowdown) + " C");
  if (auto bits = IntegerField(d, "throttle_reasons"); bits && *bits >= 0) {
    std::vector<std::string> slowing;
    for (const std::string& reason : ClocksEventReasonNames(static_cast<uint64_t>(*bits)))
      if (IsSlowdownReason(reason)) slowing.push_back(reason);
    if (!slowing.empty()) problem("clocks held down by " + JoinStrings(slowing, ", "));
  }
  const auto width = IntegerField(d, "pcie_width"), width_max = IntegerField(d, "pcie_width_max");
  if (width && width_max && *width < *width_max)
    problem("PCIe link at x" + std::to_string(*width) + " of x" + std::to_string(*width_max));
  const auto gen = IntegerField(d, "pcie_gen_max"), gen_gpu = IntegerField(d, "pcie_gen_gpu_max");
  if (gen && gen_gpu && *gen < *gen_gpu)
    problem("PCIe link limited to gen " + std::to_string(*gen) +
            " by the slot; the GPU supports gen " + std::to_string(*gen_gpu));
}

// Each entry of a list as text (a string as it is, anything else as JSON).
std::vector<std::string> Texts(const Json& list) {
  std::vector<std::string> out;
  for (const Json& e : list.is_array() ? list : Json::array({list}))
    out.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  return out;
}

}  // namespace

// Every GPU NVML opened was judged on at least one field and none contradicts its health; no
// GPU failed to open with a fault; no field NVML should have given is unknown.
Findings Health(const Json& metrics, const RuleContext&) {
  const auto m = ReadMetrics<HealthMetrics>(metrics);
  Findings out;
  if (Lists(m.open_faults))
    for (const std::string& fault : Texts(*m.open_faults))
      Add(out, TRAINLOCK_METRIC_KEY(HealthMetrics, open_faults), fault, kDrain);
  if (!m.devices || !m.devices->is_array() || m.devices->empty()) {
    // With fields NVML could not read, that is the finding (below); else nothing was judged.
    if (out.empty() && !Lists(m.unknown))
      Add(out, TRAINLOCK_METRIC_KEY(HealthMetrics, devices), "it judged no device");
  } else {
    for (const Json& device : *m.devices) {
      if (!device.is_object()) {
        Add(out, TRAINLOCK_METRIC_KEY(HealthMetrics, devices), "a device has no fields");
        continue;
      }
      bool judged = false;
      for (const char* key : kJudgedFields) judged = judged || device.contains(key);
      if (!judged)
        Add(out, TRAINLOCK_METRIC_KEY(HealthMetrics, devices),
            "a device has none of the fields health is judged on");
      JudgeDevice(device, out);
    }
  }
  if (m.unknown && (!m.unknown->is_array() || !m.unknown->empty()))
    Add(out, TRAINLOCK_METRIC_KEY(HealthMetrics, unknown),
        "NVML could not report " + JoinStrings(Texts(*m.unknown), "; "),
        "a field that cannot be read is not healthy: check the driver (nvidia-smi -q) and the "
        "container's access to the device");
  return out;
}

}  // namespace trainlock::pass_rules
