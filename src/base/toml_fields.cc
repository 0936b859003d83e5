// Schema-checked TOML table reading; see toml_fields.h.
#include "base/toml_fields.h"

#include <algorithm>
#include <cmath>

#include "base/suggest.h"
#include "base/text_format.h"

namespace trainlock {

SourcePos PosOf(const toml::source_region& region) {
  return {static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
}

SourcePos PosOf(const toml::node& node) {
  return PosOf(node.source());
}

std::string TomlTypeName(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

TomlFields::TomlFields(const toml::table& table, std::string name, std::string path,
                       Diagnostics& diags, PositionMap* positions)
    : table_(table),
      name_(std::move(name)),
      path_(std::move(path)),
      diags_(diags),
      positions_(positions) {}

std::string TomlFields::Qualified(std::string_view key) const {
  return name_.empty() ? std::string(key) : name_ + "." + std::string(key);
}

std::string TomlFields::Where() const {
  return name_.empty() ? std::string(kTopLevel) : "in [" + name_ + "]";
}

void TomlFields::Error(SourcePos pos, std::string message, std::string hint) {
  diags_.Error(path_, pos, std::move(message), std::move(hint));
}

SourcePos TomlFields::Pos(std::string_view key) const {
  if (const toml::node* node = table_.get(key)) return PosOf(*node);
  return TablePos();
}

const toml::node* TomlFields::Lookup(std::string_view key, Need need) {
  known_.insert(std::string(key));
  const toml::node* node = table_.get(key);
  if (!node) {
    if (need == Need::kRequired) {
      Error(TablePos(), "missing required key '" + std::string(key) + "' " + Where());
    }
    return nullptr;
  }
  if (positions_) (*positions_)[Qualified(key)] = PosOf(*node);
  return node;
}

void TomlFields::TypeError(std::string_view key, const toml::node& node,
                           std::string_view expected) {
  Error(PosOf(node), WrongTypeMessage(Qualified(key), expected, TomlTypeName(node.type())));
}

std::optional<std::string> TomlFields::String(std::string_view key, Need need) {
  const toml::node* node = Lookup(key, need);
  if (!node) return std::nullopt;
  const auto* s = node->as_string();
  if (!s) {
    TypeError(key, *node, "a string");
    return std::nullopt;
  }
  if (s->get().empty()) {
    Error(PosOf(*node), "'" + Qualified(key) + "' must not be empty");
    return std::nullopt;
  }
  return s->get();
}

std::optional<int64_t> TomlFields::Integer(std::string_view key, Need need, int64_t min,
                                           int64_t max) {
  const toml::node* node = Lookup(key, need);
  if (!node) return std::nullopt;
  const auto* i = node->as_integer();
  if (!i) {
    TypeError(key, *node, "an integer");
    return std::nullopt;
  }
  int64_t v = i->get();
  if (v < min || v > max) {
    Error(PosOf(*node), OutOfRangeMessage(Qualified(key), std::to_string(v)),
          ExpectedRangeHint(min, max));
    return std::nullopt;
  }
  return v;
}

std::optional<double> TomlFields::Number(std::string_view key, Need need, double min, double max) {
  const toml::node* node = Lookup(key, need);
  if (!node) return std::nullopt;
  double v = 0;
  if (const auto* f = node->as_floating_point()) {
    v = f->get();
  } else if (const auto* i = node->as_integer()) {
    v = static_cast<double>(i->get());
  } else {
    TypeError(key, *node, "a number");
    return std::nullopt;
  }
  if (!std::isfinite(v) || v < min || v > max) {
    Error(PosOf(*node), OutOfRangeMessage(Qualified(key), ShortNumber(v)),
          ExpectedRangeHint(min, max));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> TomlFields::Bool(std::string_view key, Need need) {
  const toml::node* node = Lookup(key, need);
  if (!node) return std::nullopt;
  const auto* b = node->as_boolean();
  if (!b) {
    TypeError(key, *node, "a boolean");
    return std::nullopt;
  }
  return b->get();
}

std::optional<std::vector<std::string>> TomlFields::StringArray(std::string_view key, Need need,
                                                                bool unique) {
  const toml::node* node = Lookup(key, need);
  if (!node) return std::nullopt;
  const auto* array = node->as_array();
  if (!array) {
    TypeError(key, *node, "an array of strings");
    return std::nullopt;
  }
  std::vector<std::string> out;
  bool ok = true;
  for (const toml::node& element : *array) {
    const auto* s = element.as_string();
    if (!s) {
      Error(PosOf(element), "'" + Qualified(key) + "' must contain only strings, found " +
                                TomlTypeName(element.type()));
      ok = false;
      continue;
    }
    if (s->get().empty()) {
      Error(PosOf(element), "'" + Qualified(key) + "' must not contain empty strings");
      ok = false;
      continue;
    }
    if (unique && std::find(out.begin(), out.end(), s->get()) != out.end()) {
      Error(PosOf(element), "duplicate entry " + Quoted(s->get()) + " in '" + Qualified(key) + "'");
      ok = false;
      continue;
    }
    out.push_back(s->get());
  }
  if (!ok) return std::nullopt;
  return out;
}

const toml::table* TomlFields::Table(std::string_view key, Need need) {
  const toml::node* node = Lookup(key, need);
  if (!node) return nullptr;
  const auto* t = node->as_table();
  if (!t) TypeError(key, *node, "a table");
  return t;
}

const toml::array* TomlFields::Array(std::string_view key, Need need) {
  const toml::node* node = Lookup(key, need);
  if (!node) return nullptr;
  const auto* a = node->as_array();
  if (!a) TypeError(key, *node, "an array");
  return a;
}

void TomlFields::Finish() {
  std::vector<std::string_view> candidates(known_.begin(), known_.end());
  for (auto&& [key, node] : table_) {
    if (known_.count(std::string(key.str()))) continue;
    SourcePos pos = PosOf(key.source());
    if (!pos.known()) pos = PosOf(node);
    Error(pos, UnknownKeyMessage(key.str(), Where()), DidYouMean(key.str(), candidates));
  }
}

}  // namespace trainlock
