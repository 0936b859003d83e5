// Reading the Hub's revision answer; see hub_json.h.
#include "lock/hub_json.h"

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "project/project_path.h"

namespace trainlock {
namespace {

using nlohmann::json;

// A size member: absent leaves *out alone; false when present but not a non-negative integer.
bool ReadSize(const json& object, const char* key, std::optional<uint64_t>* out) {
  auto it = object.find(key);
  if (it == object.end()) return true;
  if (!it->is_number_unsigned()) return false;
  *out = it->get<uint64_t>();
  return true;
}

// The sibling's hash and size, or "" with *problem set.
bool ReadSibling(const json& s, const std::string& where, HubSibling* out, std::string* problem) {
  if (!ReadSize(s, "size", &out->size)) {
    *problem = where + ": size is not a non-negative integer";
    return false;
  }
  auto lfs = s.find("lfs");
  if (lfs == s.end() || !lfs->is_object()) return true;
  auto sha = lfs->find("sha256");
  if (sha == lfs->end()) return true;
  if (!sha->is_string() || !IsSha256Hex(sha->get<std::string>())) {
    *problem = where + ": lfs.sha256 is not 64 lower-case hex characters";
    return false;
  }
  out->lfs_sha256 = sha->get<std::string>();
  if (!ReadSize(*lfs, "size", &out->size)) {
    *problem = where + ": lfs.size is not a non-negative integer";
    return false;
  }
  return true;
}

}  // namespace

std::optional<HubRevisionAnswer> ReadHubRevisionAnswer(std::string_view body,
                                                       std::string* problem) {
  std::optional<json> info = TryParseJsonText(body, problem);
  if (!info) return std::nullopt;
  auto sha = info->is_object() ? info->find("sha") : info->end();
  if (!info->is_object() || sha == info->end() || !sha->is_string() ||
      !IsCommitId(sha->get<std::string>())) {
    *problem = "the Hub's answer has no 40-hex commit ('sha')";
    return std::nullopt;
  }
  HubRevisionAnswer answer;
  answer.commit = sha->get<std::string>();
  auto siblings = info->find("siblings");
  if (siblings == info->end()) return answer;
  if (!siblings->is_array()) {
    *problem = "the Hub's answer has 'siblings' that are not an array";
    return std::nullopt;
  }
  for (const json& s : *siblings) {
    auto name = s.is_object() ? s.find("rfilename") : s.end();
    if (!s.is_object() || name == s.end() || !name->is_string()) continue;
    const std::string path = name->get<std::string>();
    const std::string where = "the Hub's file " + Quoted(path);
    if (std::string why = RelativePathProblem(path); !why.empty()) {
      *problem = where + ": " + why;
      return std::nullopt;
    }
    HubSibling sibling;
    if (!ReadSibling(s, where, &sibling, problem)) return std::nullopt;
    if (!answer.siblings.emplace(path, sibling).second) {
      *problem = where + " is listed twice";
      return std::nullopt;
    }
  }
  return answer;
}

}  // namespace trainlock
