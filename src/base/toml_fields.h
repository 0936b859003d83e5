// Schema-checked reading of one TOML table: typed fields with positions, required fields,
// range checks and unknown keys reported with a "did you mean" suggestion.
//
// A loader creates one TomlFields per table, asks for each field it knows, then calls
// Finish(), which reports every key nobody asked for. All problems go to a Diagnostics sink;
// accessors return std::nullopt for missing or ill-typed values so loading continues and the
// user sees every error at once.
#pragma once

#include <toml++/toml.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostic.h"
#include "base/fields.h"

namespace trainlock {

SourcePos PosOf(const toml::source_region& region);
SourcePos PosOf(const toml::node& node);
std::string TomlTypeName(toml::node_type type);

// Positions of every field read, keyed by dotted name ("targets.cuda.driver-min"), so later
// findings can point back into the file.
using PositionMap = std::map<std::string, SourcePos>;

class TomlFields {
 public:
  // `name` is the dotted table name used in messages ("" for the root table).
  TomlFields(const toml::table& table, std::string name, std::string path, Diagnostics& diags,
             PositionMap* positions = nullptr);

  std::optional<std::string> String(std::string_view key, Need need);
  std::optional<int64_t> Integer(std::string_view key, Need need, int64_t min, int64_t max);
  // Accepts integers and floats.
  std::optional<double> Number(std::string_view key, Need need, double min, double max);
  std::optional<bool> Bool(std::string_view key, Need need);
  // An array whose elements are all non-empty strings; duplicates are an error when `unique`.
  std::optional<std::vector<std::string>> StringArray(std::string_view key, Need need,
                                                      bool unique = true);
  const toml::table* Table(std::string_view key, Need need);
  const toml::array* Array(std::string_view key, Need need);
  // Marks a key as known without reading it (for keys another component handles).
  void Allow(std::string_view key) { known_.insert(std::string(key)); }

  // Reports keys that were never asked for. Call once, after every accessor.
  void Finish();

  // Position of a key's value, or of the table when the key is absent.
  SourcePos Pos(std::string_view key) const;
  SourcePos TablePos() const { return PosOf(table_); }
  std::string Qualified(std::string_view key) const;
  void Error(SourcePos pos, std::string message, std::string hint = {});
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }
  Diagnostics& diags() { return diags_; }
  PositionMap* positions() { return positions_; }

 private:
  const toml::node* Lookup(std::string_view key, Need need);
  // "at the top level" or "in [targets.cuda]".
  std::string Where() const;
  void TypeError(std::string_view key, const toml::node& node, std::string_view expected);

  const toml::table& table_;
  std::string name_;
  std::string path_;
  Diagnostics& diags_;
  PositionMap* positions_;
  std::set<std::string> known_;
};

}  // namespace trainlock
