// Reading a report tolerantly; see report_view.h.
#include "report/report_view.h"

#include "report/check_metrics.h"
#include "report/report.h"

#include <algorithm>
#include <cmath>

namespace trainlock {
namespace {

double NumberMember(const nlohmann::json& object, const char* key) {
  return FiniteNumber(object, key).value_or(std::nan(""));
}

const nlohmann::json& Member(const nlohmann::json& object, const char* key) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(key);
  return it != object.end() ? *it : kNull;
}

// Whether `value` nests arrays and objects deeper than `limit`, found without recursion:
// copying and printing JSON recurse, and a hostile report could nest a million levels.
bool NestedDeeperThan(const nlohmann::json& value, size_t limit) {
  std::vector<std::pair<const nlohmann::json*, size_t>> pending = {{&value, 0}};
  while (!pending.empty()) {
    auto [node, depth] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) continue;
    if (depth == limit) return true;
    for (const nlohmann::json& child : *node) pending.push_back({&child, depth + 1});
  }
  return false;
}

CheckView ViewOfCheck(const nlohmann::json& check) {
  CheckView c;
  c.id = StringMember(check, "id");
  c.status = StringMember(check, "status");
  c.duration_s = NumberMember(check, "duration_s");
  c.summary = StringMember(check, "summary");
  c.remedy = StringMember(check, "remedy");
  const nlohmann::json& metrics = Member(check, "metrics");
  if (!metrics.is_object() || metrics.empty()) return c;
  if (NestedDeeperThan(metrics, 32)) {
    c.metrics = {{"not_shown", "metrics nested more than 32 levels deep"}};
  } else {
    c.metrics = metrics;
  }
  return c;
}

DeviceView ViewOfDevice(const nlohmann::json& device) {
  DeviceView d;
  d.name = StringMember(device, "name");
  d.arch = StringMember(device, "compute_capability");
  if (d.arch.empty()) d.arch = StringMember(device, "gfx");
  d.memory_bytes = FiniteNumber(device, "memory_bytes");
  return d;
}

HostView ViewOfHost(const nlohmann::json& host) {
  HostView h;
  h.hostname = StringMember(host, "hostname");
  h.os = StringMember(host, "os");
  h.cpus = FiniteNumber(host, "cpus");
  h.memory_bytes = FiniteNumber(host, "memory_bytes");
  return h;
}

RankView ViewOfRank(const nlohmann::json& entry) {
  RankView r;
  auto rank = FiniteNumber(entry, "rank");
  r.rank = rank ? std::to_string(static_cast<long long>(*rank)) : "?";
  r.device = StringMember(entry, "device");
  r.host = StringMember(entry, "host");
  r.error = StringMember(entry, "error");
  const nlohmann::json& train = Member(entry, "train");
  const auto figures = ReadMetrics<RankTrainMetrics>(train);
  r.tokens_per_s = figures.tokens_per_s;
  if (figures.peak_reserved_bytes)
    r.peak_reserved_bytes = static_cast<double>(*figures.peak_reserved_bytes);
  if (r.peak_reserved_bytes && *r.peak_reserved_bytes < 0) r.peak_reserved_bytes.reset();
  r.digest = figures.reference_digest.value_or("").substr(0, 12);
  const nlohmann::json& checks = Member(entry, "checks");
  if (!checks.is_object()) return r;
  for (const auto& [id, check] : checks.items()) {
    const std::string status = StringMember(check, "status");
    if (status == "pass") {
      ++r.passed;
    } else if (status != "skip") {
      r.not_passed.push_back(id + " " + (status.empty() ? "?" : status));
    }
  }
  return r;
}

// The view of each entry of the array member `key`; none when it is not an array.
template <typename View>
std::vector<View> ViewsOf(const nlohmann::json& report, const char* key,
                          View (*view_of)(const nlohmann::json&)) {
  std::vector<View> views;
  const nlohmann::json& entries = Member(report, key);
  if (!entries.is_array()) return views;
  for (const nlohmann::json& entry : entries) views.push_back(view_of(entry));
  return views;
}

std::vector<std::string> RequiredIds(const nlohmann::json& report) {
  std::vector<std::string> ids;
  const nlohmann::json& required = Member(report, "required");
  if (!required.is_array()) return ids;
  for (const nlohmann::json& id : required) {
    if (id.is_string()) ids.push_back(id.get<std::string>());
  }
  return ids;
}

}  // namespace

std::string StringMember(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = Member(object, key);
  return value.is_string() ? value.get<std::string>() : "";
}

std::optional<double> FiniteNumber(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = Member(object, key);
  if (!value.is_number()) return std::nullopt;
  double d = value.get<double>();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

const CheckView* ReportView::FindCheck(std::string_view id) const {
  auto it =
      std::find_if(checks.begin(), checks.end(), [&](const CheckView& c) { return c.id == id; });
  return it != checks.end() ? &*it : nullptr;
}

bool ReportView::IsRequired(std::string_view id) const {
  return std::find(required.begin(), required.end(), id) != required.end();
}

int ReportView::Count(std::string_view status) const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(),
                                        [&](const CheckView& c) { return c.status == status; }));
}

ReportView ViewOfReport(const nlohmann::json& report) {
  ReportView v;
  v.project = StringMember(report, "project");
  v.verdict = StringMember(report, "verdict");
  v.environment_error = StringMember(report, "environment_error");
  v.engine_python = StringMember(Member(report, "engine"), "python");
  v.engine_torch = StringMember(Member(report, "engine"), "torch");
  if (const nlohmann::json& verified = Member(Member(report, "engine"), "python_verified");
      verified.is_boolean())
    v.engine_python_verified = verified.get<bool>();
  v.lock_sha256 = StringMember(report, "lock_sha256");
  v.config_sha256 = StringMember(report, "config_sha256");
  v.manifest_sha256 = StringMember(report, "manifest_sha256");
  v.negative_control = StringMember(report, "negative_control");
  v.checkpoint_dir_source = StringMember(Member(report, "checkpoint_dir"), "source");
  if (const nlohmann::json& drift = Member(report, "drift"); drift.is_array()) {
    for (const nlohmann::json& d : drift)
      v.drift.push_back(StringMember(d, "id") + ": " + StringMember(d, "message"));
  }
  const nlohmann::json& image = Member(report, "image");
  v.image_ref = StringMember(image, "ref");
  v.image_digest = StringMember(image, "digest");
  v.image_digest_source = StringMember(image, "digest_source");
  const nlohmann::json& validator = Member(report, "validator");
  v.validator_version = StringMember(validator, "version");
  v.torch = StringMember(validator, "torch");
  v.build = StringMember(validator, "build");
  v.target = StringMember(report, "target");
  v.started_at = StringMember(report, "started_at");
  v.duration_s = NumberMember(report, "duration_s");
  v.host = ViewOfHost(Member(report, "host"));
  v.devices = ViewsOf(report, "devices", &ViewOfDevice);
  v.checks = ViewsOf(report, "checks", &ViewOfCheck);
  v.required = RequiredIds(report);
  v.ranks = ViewsOf(report, "ranks", &ViewOfRank);
  v.partial = IsPartialReport(report);
  v.is_signed = report.is_object() && report.contains("signature");
  v.golden = ReadGolden(Member(report, "golden"));
  const nlohmann::json& rank = Member(report, "rank");
  if (std::optional<double> r = FiniteNumber(rank, "rank")) v.rank = static_cast<int64_t>(*r);
  if (std::optional<double> w = FiniteNumber(rank, "world_size"))
    v.world_size = static_cast<int64_t>(*w);
  if (!v.world_size && v.partial) v.world_size = CollectiveWorldSize(report);
  return v;
}

}  // namespace trainlock
