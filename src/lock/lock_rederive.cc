// The lock re-derived offline and compared field by field; see lock_rederive.h.
#include "lock/lock_rederive.h"

#include <nlohmann/json.hpp>

#include <set>

#include "base/canonical.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/toml_document.h"
#include "lock/lock_resolver.h"
#include "lock/pin_consistency.h"

namespace trainlock {
namespace {

constexpr size_t kShownLockValue = 80;  // a value longer than this is cut in messages

// The canonical form marks a float as {"f": x} (base/canonical.cc): a value, not a table.
bool IsCanonicalFloat(const nlohmann::json& v) {
  return v.is_object() && v.size() == 1 && v.contains("f") && v["f"].is_number();
}

// The value as a person reads it: floats unmarked.
nlohmann::json PlainLockValue(const nlohmann::json& v) {
  if (IsCanonicalFloat(v)) return v["f"];
  if (!v.is_structured()) return v;
  nlohmann::json out = v.is_array() ? nlohmann::json::array() : nlohmann::json::object();
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (v.is_array()) {
      out.push_back(PlainLockValue(*it));
    } else {
      out[it.key()] = PlainLockValue(*it);
    }
  }
  return out;
}

std::string ShownLockValue(const nlohmann::json* value) {
  if (!value) return "(absent)";
  std::string text = PlainLockValue(*value).dump();
  if (text.size() > kShownLockValue) text = text.substr(0, kShownLockValue) + "...";
  return text;
}

void CompareLockValues(const std::string& field, const nlohmann::json* a, const nlohmann::json* b,
                       std::vector<LockFieldDifference>& out);

void CompareLockObjects(const std::string& prefix, const nlohmann::json& a, const nlohmann::json& b,
                        std::vector<LockFieldDifference>& out) {
  std::set<std::string> keys;
  for (const auto& [key, value] : a.items()) keys.insert(key);
  for (const auto& [key, value] : b.items()) keys.insert(key);
  for (const std::string& key : keys) {
    auto ia = a.find(key);
    auto ib = b.find(key);
    CompareLockValues(prefix.empty() ? key : prefix + "." + key, ia == a.end() ? nullptr : &*ia,
                      ib == b.end() ? nullptr : &*ib, out);
  }
}

// Tables recurse; arrays of one length element by element (custom-ops[0].tolerance); any
// other difference names the field itself.
void CompareLockValues(const std::string& field, const nlohmann::json* a, const nlohmann::json* b,
                       std::vector<LockFieldDifference>& out) {
  if (a && b && *a == *b) return;
  const bool tables =
      a && b && a->is_object() && b->is_object() && !IsCanonicalFloat(*a) && !IsCanonicalFloat(*b);
  if (tables) return CompareLockObjects(field, *a, *b, out);
  if (a && b && a->is_array() && b->is_array() && a->size() == b->size()) {
    for (size_t i = 0; i < a->size(); ++i) {
      const nlohmann::json& ea = (*a)[i];
      const nlohmann::json& eb = (*b)[i];
      const std::string name = field + "[" + std::to_string(i) + "]";
      if (ea.is_object() && eb.is_object() && !IsCanonicalFloat(ea) && !IsCanonicalFloat(eb)) {
        CompareLockObjects(name, ea, eb, out);
      } else if (ea != eb) {
        out.push_back({field, ShownLockValue(a), ShownLockValue(b), {}});
        return;
      }
    }
    return;
  }
  out.push_back({field, ShownLockValue(a), ShownLockValue(b), {}});
}

}  // namespace

std::string LockFieldDifference::Describe() const {
  if (!note.empty()) return field + ": " + note;
  return field + ": " + locked + " but trainlock.toml (with the lock's pins) says " + derived;
}

std::vector<LockFieldDifference> LockFieldDifferences(const toml::table& lock,
                                                      const toml::table& derived) {
  // The canonical form (base/canonical.h) is JSON: the comparison is by value, not spelling.
  const nlohmann::json a = nlohmann::json::parse(CanonicalJson(lock, {"images", "golden"}));
  const nlohmann::json b = nlohmann::json::parse(CanonicalJson(derived, {"images", "golden"}));
  std::vector<LockFieldDifference> out;
  CompareLockObjects("", a, b, out);
  return out;
}

namespace {

// Whether the offline re-derivation applies: a lock and the manifest and config it was made
// from (otherwise lock.stale or lock.config says what changed).
bool Rederivable(const Project& project) {
  return project.lock && project.manifest &&
         project.lock->manifest_sha256 == project.manifest_sha256 &&
         project.lock->config_sha256 == project.config_sha256;
}

}  // namespace

std::vector<Finding> RederivedLockFindings(const Project& project, FilePins files) {
  if (!Rederivable(project)) return {};
  const Lockfile& lock = *project.lock;
  const std::string remedy = "run `trainlock lock` (the lock is never edited by hand)";
  LockOptions o;
  o.offline = true;
  o.skip_python = true;  // the lock's own closures, when the request is unchanged
  o.pins_verified_at_use_from_lock = files == FilePins::kVerifiedAtUse;
  ResolvedLock derived;
  try {
    derived = ResolveLock(project.dir, o);
  } catch (const Failure& e) {
    if (e.exit_code() != kExitVerdict) throw;
    return {{"lock.stale", project.lock_path, {}, e.what(), remedy}};
  }
  const std::filesystem::path path = project.dir / kLockFile;
  const toml::table locked =
      ParseTomlDocument(ReadInputFile(path, project.lock_path), project.lock_path);
  const toml::table now = ParseTomlDocument(derived.text, project.lock_path);
  std::vector<Finding> findings;
  for (const LockFieldDifference& d : LockFieldDifferences(locked, now)) {
    findings.push_back({"lock.edited", project.lock_path, lock.Pos(d.field), d.Describe(), remedy});
  }
  for (const LockFieldDifference& d : PinConsistencyProblems(lock, *project.manifest)) {
    findings.push_back({"lock.edited", project.lock_path, lock.Pos(d.field), d.Describe(), remedy});
  }
  return findings;
}

std::vector<std::string> NotCheckedOffline(const Project& project) {
  if (!Rederivable(project)) return {};
  return PinsNotCheckedOffline(*project.lock, *project.manifest);
}

}  // namespace trainlock
