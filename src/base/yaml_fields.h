// Schema-checked reading of one YAML mapping, as TomlFields (toml_fields.h) reads a TOML
// table: typed fields with positions, required fields, range checks, and duplicate and
// unknown keys reported with a "did you mean" suggestion.
//
// A loader creates one YamlFields per mapping, asks for each field it knows, then calls
// Finish(), which reports every key nobody asked for. Scalars are converted here rather than
// with yaml-cpp's as<T>() so that every problem carries the key, its line:column and the
// expected type. All problems go to a Diagnostics sink; accessors return std::nullopt for
// missing or ill-typed values so that loading continues and the user sees every error at once.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "base/diagnostic.h"
#include "base/fields.h"

namespace trainlock {

// yaml-cpp's 0-based mark as a 1-based position; a null mark is no position.
SourcePos PosOf(const YAML::Mark& mark);

// What a node is, for messages: "a mapping", "a list", "a scalar", "null".
std::string YamlKindName(const YAML::Node& node);

class YamlFields {
 public:
  // `map` must be a mapping and outlive this reader; `name` is its dotted name used in
  // messages ("" for the root). Duplicate and non-scalar keys are reported here: yaml-cpp
  // keeps the first of two equal keys silently, and a mapping with two values for one key is
  // ambiguous.
  YamlFields(const YAML::Node& map, std::string name, std::string path, Diagnostics& diags);

  // A base-10 integer in [min, max].
  std::optional<int64_t> Integer(std::string_view key, Need need, int64_t min, int64_t max);
  // A finite number in [min, max].
  std::optional<double> Number(std::string_view key, Need need, double min, double max);
  // true/True/yes or false/False/no.
  std::optional<bool> Bool(std::string_view key, Need need);
  // A scalar that is one of `choices`.
  std::optional<std::string> Choice(std::string_view key, Need need,
                                    std::span<const std::string_view> choices);
  // A nested mapping (an error when present but not a mapping).
  std::optional<YAML::Node> Map(std::string_view key, Need need);
  // The value of `key`, whatever it is, for fields with a shape of their own.
  std::optional<YAML::Node> Get(std::string_view key, Need need);

  // Reports keys that were never asked for. Call once, after every accessor.
  void Finish();

  // Position of a key's value, or of the mapping when the key is absent.
  SourcePos Pos(std::string_view key) const;
  std::string Qualified(std::string_view key) const;
  void Error(SourcePos pos, std::string message, std::string hint = {});

 private:
  // The scalar text of `value`, or nullopt after reporting that it is not `expected`.
  std::optional<std::string> Scalar(std::string_view key, const YAML::Node& value,
                                    std::string_view expected);
  // "at the top level" or "in 'training.optimizer'".
  std::string Where() const;

  const YAML::Node& map_;
  std::string name_;
  std::string path_;
  Diagnostics& diags_;
  std::set<std::string> known_;
};

}  // namespace trainlock
