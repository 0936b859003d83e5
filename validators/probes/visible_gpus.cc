// Matching the node worker's devices to NVML's GPUs; see visible_gpus.h.
#include "probes/visible_gpus.h"

#include <optional>
#include <string>
#include <vector>

namespace trainlock::validate {
namespace {

// The NVML position of each worker entry, or nullopt when one cannot be matched.
std::optional<std::vector<size_t>> MatchByUuid(const NodeProbe& node, const DeviceRuns& runs) {
  std::vector<size_t> positions;
  for (const nlohmann::json& d : runs.devices) {
    if (!d.is_object() || !d.contains("uuid") || !d["uuid"].is_string()) return std::nullopt;
    const std::string uuid = d["uuid"].get<std::string>();
    size_t found = node.gpus.size();
    for (size_t i = 0; i < node.gpus.size(); ++i) {
      if (!uuid.empty() && node.gpus[i].uuid == uuid) found = i;
    }
    if (found == node.gpus.size()) return std::nullopt;  // e.g. a MIG instance's own UUID
    for (size_t p : positions) {
      if (p == found) return std::nullopt;  // two devices claiming one GPU
    }
    positions.push_back(found);
  }
  return positions;
}

}  // namespace

void RestrictToVisibleGpus(NodeProbe& node, DeviceRuns& runs) {
  if (runs.devices.empty() || !runs.devices.is_array()) return;
  const std::optional<std::vector<size_t>> positions = MatchByUuid(node, runs);
  if (!positions) return;
  std::vector<bool> visible(node.gpus.size(), false);
  for (size_t i = 0; i < positions->size(); ++i) {
    nlohmann::json& d = runs.devices[i];
    d["cuda_index"] = d.value("index", static_cast<int>(i));
    d["index"] = node.gpus[(*positions)[i]].index;
    visible[(*positions)[i]] = true;
  }
  std::vector<GpuProbe> seen;
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    (visible[i] ? seen : node.hidden).push_back(std::move(node.gpus[i]));
  }
  node.gpus = std::move(seen);
}

}  // namespace trainlock::validate
