// The golden digest's format and its reading from a finished report (golden_digest.h).
#include "report/golden_digest.h"

#include <algorithm>

#include "base/sha256.h"
#include "project/lockfile.h"
#include "report/check_metrics.h"
#include "report/report.h"

namespace trainlock {
namespace {

// The key's members in their one order: the JSON object's keys and GoldenKeyId's input.
std::vector<std::pair<const char*, std::string GoldenKey::*>> KeyMembers() {
  return {{"gpu", &GoldenKey::gpu},
          {"compute_capability", &GoldenKey::compute_capability},
          {"driver", &GoldenKey::driver},
          {"cuda", &GoldenKey::cuda},
          {"cublas", &GoldenKey::cublas},
          {"cudnn", &GoldenKey::cudnn},
          {"nccl", &GoldenKey::nccl},
          {"torch", &GoldenKey::torch},
          {"engine", &GoldenKey::engine},
          {"image_digest", &GoldenKey::image_digest},
          {"lock_sha256", &GoldenKey::lock_sha256},
          {"config_sha256", &GoldenKey::config_sha256}};
}

nlohmann::json KeyJson(const GoldenKey& key) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, member] : KeyMembers()) out[name] = key.*member;
  return out;
}

const CheckResult* FindResult(const Report& report, const std::string& id) {
  auto it = std::find_if(report.checks.begin(), report.checks.end(),
                         [&id](const CheckResult& c) { return c.id == id; });
  return it == report.checks.end() ? nullptr : &*it;
}

// The compute capability (or gfx target) the report lists for a device of this model.
std::string CapabilityOf(const Report& report, const std::string& model) {
  if (!report.devices.is_array()) return "";
  for (const nlohmann::json& device : report.devices) {
    if (!device.is_object() || device.value("name", "") != model) continue;
    for (const char* member : {"compute_capability", "gfx"}) {
      if (device.contains(member) && device[member].is_string()) return device[member];
    }
  }
  return "";
}

// The libraries' versions env.versions read, where it ran.
void ReadVersions(const Report& report, GoldenKey& key) {
  // The driver's version is env.driver's measurement (NVML); env.versions names the libraries.
  if (const CheckResult* driver = FindResult(report, "env.driver"))
    key.driver = ReadMetrics<EnvVersionMetrics>(driver->metrics).driver_version.value_or("");
  const CheckResult* versions = FindResult(report, "env.versions");
  if (!versions) return;
  const auto m = ReadMetrics<EnvVersionMetrics>(versions->metrics);
  key.cuda = m.cuda_runtime.value_or("");
  key.cudnn = m.cudnn.value_or("");
  key.nccl = m.nccl.value_or("");
}

GoldenKey KeyOfReport(const Report& report, const RoundtripMetrics& roundtrip) {
  GoldenKey key;
  if (const CheckResult* step = FindResult(report, "train.step"))
    key.gpu = ReadMetrics<TrainStepMetrics>(step->metrics).device_name.value_or("");
  if (key.gpu.empty() && report.build == "cpu") key.gpu = "cpu";
  key.compute_capability = CapabilityOf(report, key.gpu);
  ReadVersions(report, key);
  key.torch =
      report.engine && !report.engine->torch.empty() ? report.engine->torch : report.torch_version;
  key.engine = roundtrip.engine.value_or("native");
  if (report.image) key.image_digest = report.image->second;
  key.lock_sha256 = report.lock_sha256;
  key.config_sha256 = report.config_sha256;
  return key;
}

}  // namespace

std::string GoldenStateDigest(const std::map<std::string, std::string>& tensor_digests) {
  return Sha256Hex(nlohmann::json(tensor_digests).dump());
}

std::string GoldenKeyId(const GoldenKey& key) {
  std::map<std::string, std::string> members;
  for (const auto& [name, member] : KeyMembers()) members[name] = key.*member;
  return GoldenKeyIdOfMembers(members);
}

nlohmann::json ToJson(const GoldenDigest& golden) {
  return {{"digest", golden.digest},
          {"key", KeyJson(golden.key)},
          {"key_sha256", GoldenKeyId(golden.key)}};
}

std::string GoldenSchemaProblem(const nlohmann::json& member) {
  if (member.is_null()) return "";
  if (!member.is_object()) return "must be an object or null";
  if (!member.contains("digest") || !member["digest"].is_string() ||
      !IsSha256Hex(member["digest"].get<std::string>()))
    return "digest must be 64 lower-case hex characters";
  if (!member.contains("key") || !member["key"].is_object()) return "key must be an object";
  for (const auto& [name, ignored] : KeyMembers()) {
    const nlohmann::json& key = member["key"];
    if (!key.contains(name) || !key[name].is_string())
      return std::string("key.") + name + " must be a string";
  }
  return "";
}

std::optional<GoldenDigest> ReadGolden(const nlohmann::json& member) {
  if (member.is_null() || !GoldenSchemaProblem(member).empty()) return std::nullopt;
  GoldenDigest golden;
  golden.digest = member["digest"].get<std::string>();
  for (const auto& [name, field] : KeyMembers())
    golden.key.*field = member["key"][name].get<std::string>();
  return golden;
}

std::optional<GoldenDigest> GoldenOfReport(const Report& report) {
  const CheckResult* check = FindResult(report, "train.roundtrip");
  if (!check || check->status != CheckStatus::kPass) return std::nullopt;
  const auto roundtrip = ReadMetrics<RoundtripMetrics>(check->metrics);
  if (!roundtrip.bitwise_equal.value_or(false) || !roundtrip.golden_digest) return std::nullopt;
  return GoldenDigest{*roundtrip.golden_digest, KeyOfReport(report, roundtrip)};
}

}  // namespace trainlock
