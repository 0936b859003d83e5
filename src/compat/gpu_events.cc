// Reading and consulting the GPU event table; see gpu_events.h and
// lockfiles/compat/gpu-events.toml.
#include "compat/gpu_events.h"

#include <map>
#include <optional>

#include "base/diagnostic.h"
#include "base/toml_document.h"
#include "base/toml_fields.h"

namespace trainlock {
namespace {

std::optional<EventClass> ParseEventClass(std::string_view text) {
  if (text == "revoke") return EventClass::kRevoke;
  if (text == "revalidate") return EventClass::kRevalidate;
  if (text == "info") return EventClass::kInfo;
  return std::nullopt;
}

EventClass ReadClass(TomlFields& f, std::string_view key, Need need, EventClass fallback) {
  auto text = f.String(key, need);
  if (!text) return fallback;
  auto parsed = ParseEventClass(*text);
  if (!parsed) {
    f.Error(f.Pos(key), "'" + f.Qualified(key) + "' is " + Quoted(*text),
            "one of revoke, revalidate, info");
  }
  return parsed.value_or(fallback);
}

// The `[[key]]` entries of the file; a code listed twice is an error at its second entry.
std::vector<GpuEventRule> ReadRules(TomlFields& root, std::string_view key, Need need) {
  std::vector<GpuEventRule> rules;
  std::map<int64_t, SourcePos> seen;
  const toml::array* entries = root.Array(key, need);
  if (!entries) return rules;
  for (const toml::node& node : *entries) {
    const auto* table = node.as_table();
    if (!table) {
      root.Error(PosOf(node), "'" + std::string(key) + "' entries must be tables");
      continue;
    }
    TomlFields f(*table, std::string(key), root.path(), root.diags());
    GpuEventRule rule;
    rule.code = f.Integer("code", Need::kRequired, 1, 1000000).value_or(0);
    rule.name = f.String("name", Need::kRequired).value_or("");
    rule.event_class = ReadClass(f, "class", Need::kRequired, EventClass::kInfo);
    rule.info_if = f.String("info-if", Need::kOptional).value_or("");
    if (rule.code > 0 && !seen.emplace(rule.code, f.Pos("code")).second) {
      f.Error(f.Pos("code"), std::string(key) + " " + std::to_string(rule.code) +
                                 " is listed twice (first at line " +
                                 std::to_string(seen[rule.code].line) + ")");
    }
    f.Finish();
    rules.push_back(std::move(rule));
  }
  return rules;
}

const GpuEventRule* FindRule(const std::vector<GpuEventRule>& rules, int64_t code) {
  for (const GpuEventRule& rule : rules) {
    if (rule.code == code) return &rule;
  }
  return nullptr;
}

}  // namespace

std::string_view EventClassName(EventClass c) {
  switch (c) {
    case EventClass::kRevoke:
      return "revoke";
    case EventClass::kRevalidate:
      return "revalidate";
    case EventClass::kInfo:
      return "info";
  }
  return "info";
}

GpuEventTable GpuEventTable::Parse(const std::string& text, const std::string& display) {
  const toml::table root = ParseTomlDocument(text, display);
  Diagnostics diags;
  GpuEventTable table;
  TomlFields f(root, "", display, diags);
  f.Allow("meta");
  if (const toml::table* defaults = f.Table("defaults", Need::kRequired)) {
    TomlFields d(*defaults, "defaults", display, diags);
    table.default_xid_ = ReadClass(d, "xid", Need::kRequired, EventClass::kRevalidate);
    table.sxid_fatal_ = ReadClass(d, "sxid-fatal", Need::kRequired, EventClass::kRevoke);
    table.sxid_non_fatal_ = ReadClass(d, "sxid-non-fatal", Need::kRequired, EventClass::kInfo);
    table.revalidate_window_s_ =
        d.Integer("revalidate-window-s", Need::kRequired, 1, 86400).value_or(60);
    d.Finish();
  }
  table.xids_ = ReadRules(f, "xid", Need::kRequired);
  table.sxids_ = ReadRules(f, "sxid", Need::kOptional);
  f.Finish();
  if (!diags.empty()) throw InputError(diags);
  return table;
}

EventMeaning GpuEventTable::Xid(int64_t code, std::string_view text) const {
  const GpuEventRule* rule = FindRule(xids_, code);
  if (!rule) return {default_xid_, "not in the event table", false};
  if (!rule->info_if.empty() && text.find(rule->info_if) != std::string_view::npos) {
    return {EventClass::kInfo, rule->name, true};
  }
  return {rule->event_class, rule->name, true};
}

EventMeaning GpuEventTable::SXid(int64_t code, bool fatal) const {
  if (const GpuEventRule* rule = FindRule(sxids_, code))
    return {rule->event_class, rule->name, true};
  if (fatal) return {sxid_fatal_, "fatal NVSwitch error", false};
  return {sxid_non_fatal_, "non-fatal NVSwitch error", false};
}

}  // namespace trainlock
