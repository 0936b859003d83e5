// The node's last passing report as NVML's baseline; see nvml_baseline.h.
#include "watch/nvml_baseline.h"

#include <system_error>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "report/report_view.h"

namespace trainlock {
namespace {

// env.health's metrics.devices of a report whose env.health passed; nullptr when it has none.
const nlohmann::json* PassingHealthDevices(const ReportView& report) {
  for (const CheckView& check : report.checks) {
    if (check.id != "env.health") continue;
    if (check.status != "pass") return nullptr;
    const auto devices = check.metrics.find("devices");
    return devices != check.metrics.end() && devices->is_array() ? &*devices : nullptr;
  }
  return nullptr;
}

}  // namespace

const GpuHealthReading* NvmlBaseline::For(const GpuHealthReading& now) const {
  for (const GpuHealthReading& gpu : gpus) {
    if (gpu.index != now.index) continue;
    if (!gpu.pci.empty() && !now.pci.empty() && gpu.pci != now.pci) return nullptr;
    return &gpu;
  }
  return nullptr;
}

NvmlBaseline ReadNvmlBaseline(const std::filesystem::path& reports_dir, const std::string& node) {
  NvmlBaseline baseline;
  if (reports_dir.empty()) {
    baseline.source = "no --reports-dir";
    return baseline;
  }
  const std::filesystem::path path = reports_dir / (node + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    baseline.source = "no report " + path.string();
    return baseline;
  }
  std::optional<nlohmann::json> report;
  std::string problem;
  try {
    report = TryParseJsonText(ReadInputFile(path, path.string()), &problem);
  } catch (const InputError& e) {
    problem = e.what();
  }
  if (!report || !report->is_object()) {
    baseline.source = path.string() + " does not read: " + problem;
    return baseline;
  }
  const ReportView view = ViewOfReport(*report);
  if (view.verdict != "pass") {
    baseline.source = path.string() + ": verdict " + view.verdict + ", not a pass";
    return baseline;
  }
  const nlohmann::json* devices = PassingHealthDevices(view);
  if (!devices) {
    baseline.source = path.string() + ": no passing env.health with device readings";
    return baseline;
  }
  for (const nlohmann::json& device : *devices) {
    if (device.is_object()) baseline.gpus.push_back(GpuHealthFromMetrics(device));
  }
  baseline.present = true;
  baseline.source = path.string() + ", started " + view.started_at;
  return baseline;
}

}  // namespace trainlock
