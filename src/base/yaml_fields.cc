// Schema-checked YAML mapping reading; see yaml_fields.h.
#include "base/yaml_fields.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "base/suggest.h"

namespace trainlock {

SourcePos PosOf(const YAML::Mark& mark) {
  if (mark.is_null()) return {};
  return {mark.line + 1, mark.column + 1};
}

std::string YamlKindName(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Scalar:
      return "a scalar";
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Undefined:
      break;
  }
  return "nothing";
}

YamlFields::YamlFields(const YAML::Node& map, std::string name, std::string path,
                       Diagnostics& diags)
    : map_(map), name_(std::move(name)), path_(std::move(path)), diags_(diags) {
  std::set<std::string> seen;
  for (const auto& entry : map_) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar()) {
      Error(PosOf(key.Mark()), "keys " + Where() + " must be plain strings");
      continue;
    }
    if (!seen.insert(key.Scalar()).second) {
      Error(PosOf(key.Mark()), "duplicate key " + Quoted(key.Scalar()) + " " + Where());
    }
  }
}

std::string YamlFields::Qualified(std::string_view key) const {
  return name_.empty() ? std::string(key) : name_ + "." + std::string(key);
}

std::string YamlFields::Where() const {
  return name_.empty() ? std::string(kTopLevel) : "in '" + name_ + "'";
}

void YamlFields::Error(SourcePos pos, std::string message, std::string hint) {
  diags_.Error(path_, pos, std::move(message), std::move(hint));
}

SourcePos YamlFields::Pos(std::string_view key) const {
  for (const auto& entry : map_) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return PosOf(entry.second.Mark());
  }
  return PosOf(map_.Mark());
}

std::optional<YAML::Node> YamlFields::Get(std::string_view key, Need need) {
  known_.insert(std::string(key));
  for (const auto& entry : map_) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  }
  if (need == Need::kRequired) {
    Error(PosOf(map_.Mark()), "missing required key '" + Qualified(key) + "'");
  }
  return std::nullopt;
}

std::optional<std::string> YamlFields::Scalar(std::string_view key, const YAML::Node& value,
                                              std::string_view expected) {
  if (!value.IsScalar()) {
    Error(PosOf(value.Mark()), WrongTypeMessage(Qualified(key), expected, YamlKindName(value)));
    return std::nullopt;
  }
  return value.Scalar();
}

std::optional<int64_t> YamlFields::Integer(std::string_view key, Need need, int64_t min,
                                           int64_t max) {
  auto node = Get(key, need);
  if (!node) return std::nullopt;
  auto text = Scalar(key, *node, "an integer");
  if (!text) return std::nullopt;
  const SourcePos pos = PosOf(node->Mark());
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec == std::errc::result_out_of_range) {
    Error(pos, OutOfRangeMessage(Qualified(key), Quoted(*text)), ExpectedRangeHint(min, max));
    return std::nullopt;
  }
  if (ec != std::errc() || end != text->data() + text->size()) {
    Error(pos, WrongTypeMessage(Qualified(key), "an integer", Quoted(*text)));
    return std::nullopt;
  }
  if (value < min || value > max) {
    Error(pos, OutOfRangeMessage(Qualified(key), std::to_string(value)),
          ExpectedRangeHint(min, max));
    return std::nullopt;
  }
  return value;
}

std::optional<double> YamlFields::Number(std::string_view key, Need need, double min, double max) {
  auto node = Get(key, need);
  if (!node) return std::nullopt;
  auto text = Scalar(key, *node, "a number");
  if (!text) return std::nullopt;
  const SourcePos pos = PosOf(node->Mark());
  double value = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size() || !std::isfinite(value)) {
    Error(pos, WrongTypeMessage(Qualified(key), "a number", Quoted(*text)));
    return std::nullopt;
  }
  if (value < min || value > max) {
    // The value as written: "1.5", not a reformatting of it.
    Error(pos, OutOfRangeMessage(Qualified(key), *text), ExpectedRangeHint(min, max));
    return std::nullopt;
  }
  return value;
}

std::optional<bool> YamlFields::Bool(std::string_view key, Need need) {
  auto node = Get(key, need);
  if (!node) return std::nullopt;
  auto text = Scalar(key, *node, "a boolean");
  if (!text) return std::nullopt;
  if (*text == "true" || *text == "True" || *text == "yes") return true;
  if (*text == "false" || *text == "False" || *text == "no") return false;
  Error(PosOf(node->Mark()), WrongTypeMessage(Qualified(key), "true or false", Quoted(*text)));
  return std::nullopt;
}

std::optional<std::string> YamlFields::Choice(std::string_view key, Need need,
                                              std::span<const std::string_view> choices) {
  auto node = Get(key, need);
  if (!node) return std::nullopt;
  auto text = Scalar(key, *node, "a string");
  if (!text) return std::nullopt;
  if (std::find(choices.begin(), choices.end(), *text) == choices.end()) {
    std::string all;
    for (std::string_view c : choices) all += (all.empty() ? "" : ", ") + std::string(c);
    Error(PosOf(node->Mark()),
          "'" + Qualified(key) + "' = " + Quoted(*text) + " is not one of " + all,
          DidYouMean(*text, choices));
    return std::nullopt;
  }
  return text;
}

std::optional<YAML::Node> YamlFields::Map(std::string_view key, Need need) {
  auto node = Get(key, need);
  if (!node) return std::nullopt;
  if (!node->IsMap()) {
    Error(PosOf(node->Mark()), WrongTypeMessage(Qualified(key), "a mapping", YamlKindName(*node)));
    return std::nullopt;
  }
  return node;
}

void YamlFields::Finish() {
  std::vector<std::string_view> candidates(known_.begin(), known_.end());
  for (const auto& entry : map_) {
    const YAML::Node& key = entry.first;
    if (!key.IsScalar() || known_.count(key.Scalar())) continue;
    Error(PosOf(key.Mark()), UnknownKeyMessage(key.Scalar(), Where()),
          DidYouMean(key.Scalar(), candidates));
  }
}

}  // namespace trainlock
