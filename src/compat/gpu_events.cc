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

constexpr std::string_view kNvmlConditionNames[kNvmlConditionCount] = {
    "dbe-event",
    "sbe-event",
    "uncorrected-ecc-rise",
    "corrected-ecc-rise",
    "remap-failed",
    "remap-pending",
    "remapped-rows-rise",
    "recovery-action-reset",
    "recovery-action-reboot",
    "recovery-action-drain-p2p",
    "recovery-action-drain-and-reset",
    "recovery-action-unknown",
    "gpu-lost",
};

std::optional<int> NvmlConditionIndex(std::string_view name) {
  for (int i = 0; i < kNvmlConditionCount; ++i) {
    if (kNvmlConditionNames[i] == name) return i;
  }
  return std::nullopt;
}

// One `[[nvml]]` entry into `rules` (indexed by condition); an unknown condition or one listed
// twice is an error at its `condition`.
void ReadNvmlRule(TomlFields& f, std::vector<GpuEventRule>& rules, std::vector<SourcePos>& seen) {
  const std::string condition = f.String("condition", Need::kRequired).value_or("");
  GpuEventRule rule;
  rule.name = f.String("name", Need::kRequired).value_or("");
  rule.event_class = ReadClass(f, "class", Need::kRequired, EventClass::kInfo);
  const std::optional<int> index = NvmlConditionIndex(condition);
  if (!condition.empty() && !index) {
    f.Error(f.Pos("condition"), "'nvml.condition' is " + Quoted(condition),
            "one of " + std::string(kNvmlConditionNames[0]) + ", " +
                std::string(kNvmlConditionNames[1]) + ", ... (docs/watch.md lists them)");
  } else if (index && seen[*index].line != 0) {
    f.Error(f.Pos("condition"), "nvml " + condition + " is listed twice (first at line " +
                                    std::to_string(seen[*index].line) + ")");
  } else if (index) {
    seen[*index] = f.Pos("condition");
    rules[*index] = std::move(rule);
  }
  f.Finish();
}

// The `[[nvml]]` entries, one per condition: a condition not listed is an error at the first
// entry (the code has no meaning of its own to fall back on).
std::vector<GpuEventRule> ReadNvmlRules(TomlFields& root) {
  std::vector<GpuEventRule> rules(kNvmlConditionCount);
  std::vector<SourcePos> seen(kNvmlConditionCount);
  if (const toml::array* entries = root.Array("nvml", Need::kRequired)) {
    for (const toml::node& node : *entries) {
      const auto* table = node.as_table();
      if (!table) {
        root.Error(PosOf(node), "'nvml' entries must be tables");
        continue;
      }
      TomlFields f(*table, "nvml", root.path(), root.diags());
      ReadNvmlRule(f, rules, seen);
    }
    for (int i = 0; i < kNvmlConditionCount; ++i) {
      if (seen[i].line == 0) {
        root.Error(PosOf(*entries),
                   "nvml condition " + std::string(kNvmlConditionNames[i]) + " is not listed",
                   "every NVML condition needs an [[nvml]] entry saying what it means");
      }
    }
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

std::string_view NvmlConditionName(NvmlCondition c) {
  const int index = static_cast<int>(c);
  return index >= 0 && index < kNvmlConditionCount ? kNvmlConditionNames[index] : "unknown";
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
  table.nvml_ = ReadNvmlRules(f);
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

bool GpuEventTable::XidNeedsText(int64_t code) const {
  const GpuEventRule* rule = FindRule(xids_, code);
  return rule && !rule->info_if.empty();
}

EventMeaning GpuEventTable::Nvml(NvmlCondition condition) const {
  const GpuEventRule& rule = nvml_.at(static_cast<size_t>(condition));
  return {rule.event_class, rule.name, true};
}

EventMeaning GpuEventTable::SXid(int64_t code, bool fatal) const {
  if (const GpuEventRule* rule = FindRule(sxids_, code))
    return {rule->event_class, rule->name, true};
  if (fatal) return {sxid_fatal_, "fatal NVSwitch error", false};
  return {sxid_non_fatal_, "non-fatal NVSwitch error", false};
}

}  // namespace trainlock
