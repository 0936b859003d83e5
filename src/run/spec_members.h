// One object of a spec file the coordinator writes for a worker process (run/engine_spec.h's
// engine spec, validators/ops/ops_spec.h's ops spec), read member by member without trusting
// it: the first member that is missing, mistyped or out of range throws InputError naming it
// by its path from the root ("spec.training.seq_len").
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "base/diagnostic.h"
#include "run/run_config.h"

namespace trainlock {

class SpecMembers {
 public:
  SpecMembers(const nlohmann::json& object, std::string where, const std::string& display)
      : object_(object), where_(std::move(where)), display_(display) {
    if (!object_.is_object()) Fail(where_, "is not an object");
  }

  const nlohmann::json& Get(const std::string& key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) Fail(Name(key), "is missing");
    return *it;
  }
  bool Has(const std::string& key) const {
    const auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
  }
  int64_t Integer(const std::string& key, IntRange range) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
      Fail(Name(key), "is not an integer");
    const int64_t value = v.get<int64_t>();
    if (value < range.min || value > range.max)
      Fail(Name(key), std::to_string(value) + " is out of range [" + std::to_string(range.min) +
                          ", " + std::to_string(range.max) + "]");
    return value;
  }
  uint64_t Unsigned(const std::string& key) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_number_unsigned()) Fail(Name(key), "is not a non-negative integer");
    return v.get<uint64_t>();
  }
  double Number(const std::string& key, NumberRange range) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_number()) Fail(Name(key), "is not a number");
    const double value = v.get<double>();
    if (!(value >= range.min && value <= range.max))
      Fail(Name(key), v.dump() + " is out of range [" + NumberText(range.min) + ", " +
                          NumberText(range.max) + "]");
    return value;
  }
  bool Bool(const std::string& key) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_boolean()) Fail(Name(key), "is not true or false");
    return v.get<bool>();
  }
  std::string String(const std::string& key) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_string()) Fail(Name(key), "is not a string");
    return v.get<std::string>();
  }
  std::string OneOf(const std::string& key, std::initializer_list<std::string_view> choices) const {
    std::string value = String(key);
    if (std::find(choices.begin(), choices.end(), value) == choices.end())
      Fail(Name(key), Quoted(value) + " is not one the engines train");
    return value;
  }
  SpecMembers Object(const std::string& key) const {
    return SpecMembers(Get(key), Name(key), display_);
  }
  const nlohmann::json& Array(const std::string& key) const {
    const nlohmann::json& v = Get(key);
    if (!v.is_array()) Fail(Name(key), "is not a list");
    return v;
  }

  std::string Name(const std::string& key) const { return where_ + "." + key; }
  [[noreturn]] void Fail(const std::string& member, const std::string& what) const {
    throw InputError(Diagnostic{display_,
                                {},
                                member + " " + what,
                                "the spec is written by trainlock-validate's coordinator"});
  }
  const std::string& display() const { return display_; }

 private:
  static std::string NumberText(double value) {
    nlohmann::json j = value;
    return j.dump();
  }

  const nlohmann::json& object_;
  std::string where_;
  const std::string& display_;
};

}  // namespace trainlock
