// How the typed metrics' fields are written and read (check_metrics.h's types: Number,
// Integer, Flag, Text, Free, OrNull<T>, Numbers, Rows<T>), shared by every file that defines
// ToJson and ReadInto for X-macro structs: check_metrics.cc for the checks' metrics and
// validators/support/engine_events.cc for the engine protocol's event bodies. One writer and one
// tolerant reader per field type; reading never throws. Include it in a .cc only.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <optional>
#include <vector>

#include "report/check_metrics.h"

namespace trainlock::metric_fields {

using Json = nlohmann::json;

// ---- writing: nullopt leaves the member out ----

template <class T>
inline void PutMetric(Json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

template <class T>
inline void PutMetric(Json& j, const char* key, const OrNull<T>& v) {
  if (!v) return;
  j[key] = *v ? Json(**v) : Json(nullptr);
}

// NaN is written as null, as nlohmann writes it.
inline void PutMetric(Json& j, const char* key, const Numbers& v) {
  if (v) j[key] = *v;
}

template <class T>
inline void PutMetric(Json& j, const char* key, const Rows<T>& v) {
  if (!v) return;
  Json rows = Json::array();
  for (const T& row : *v) rows.push_back(ToJson(row));
  j[key] = std::move(rows);
}

// ---- reading: never throws; a missing or ill-typed member leaves nullopt ----

inline void GetMetric(const Json& j, const char* key, Number* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_number() && std::isfinite(it->get<double>()))
    *out = it->get<double>();
}

inline void GetMetric(const Json& j, const char* key, Integer* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return;
  if (it->is_number_integer()) {
    *out = it->get<int64_t>();
    return;
  }
  const double d = it->get<double>();
  if (std::isfinite(d) && std::fabs(d) < 9.2e18) *out = static_cast<int64_t>(d);
}

inline void GetMetric(const Json& j, const char* key, Flag* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_boolean()) *out = it->get<bool>();
}

inline void GetMetric(const Json& j, const char* key, Text* out) {
  auto it = j.find(key);
  if (it != j.end() && it->is_string()) *out = it->get<std::string>();
}

inline void GetMetric(const Json& j, const char* key, Free* out) {
  auto it = j.find(key);
  if (it != j.end()) *out = *it;
}

// A member that may be null on purpose: present (as nullopt inside when null or ill-typed).
template <class T>
inline void GetMetric(const Json& j, const char* key, OrNull<T>* out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  std::optional<T> inner;
  GetMetric(j, key, &inner);
  *out = inner;
}

inline void GetMetric(const Json& j, const char* key, Numbers* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return;
  std::vector<double> values;
  for (const Json& v : *it) {
    const bool finite = v.is_number() && std::isfinite(v.get<double>());
    values.push_back(finite ? v.get<double>() : std::nan(""));
  }
  *out = std::move(values);
}

template <class T>
inline void GetMetric(const Json& j, const char* key, Rows<T>* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return;
  std::vector<T> rows;
  for (const Json& row : *it) rows.push_back(ReadMetrics<T>(row));
  *out = std::move(rows);
}

}  // namespace trainlock::metric_fields

// ToJson and ReadInto of struct Type from its X-macro field list LIST, in the enclosing
// namespace (the one that declares Type), with the members' names as the JSON keys.
#define TRAINLOCK_METRICS_PUT(type, name) ::trainlock::metric_fields::PutMetric(j, #name, m.name);
#define TRAINLOCK_METRICS_GET(type, name) ::trainlock::metric_fields::GetMetric(j, #name, &m->name);
#define TRAINLOCK_DEFINE_METRICS(Type, LIST)        \
  nlohmann::json ToJson(const Type& m) {            \
    nlohmann::json j = nlohmann::json::object();    \
    LIST(TRAINLOCK_METRICS_PUT)                     \
    return j;                                       \
  }                                                 \
  void ReadInto(const nlohmann::json& j, Type* m) { \
    if (!j.is_object()) return;                     \
    LIST(TRAINLOCK_METRICS_GET)                     \
  }
