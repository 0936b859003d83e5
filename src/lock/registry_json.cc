// Reading a registry's JSON; see registry_json.h.
#include "lock/registry_json.h"

#include <openssl/evp.h>

#include <cctype>
#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "base/refs.h"

namespace trainlock {
namespace {

using nlohmann::json;

// A string member, "" when absent; false when present but not a string.
bool OptionalString(const json& object, const char* key, std::string* out) {
  auto it = object.find(key);
  if (it == object.end()) return true;
  if (!it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

// os, architecture and variant become lock keys ("linux/arm64/v8"): letters, digits, '.',
// '_' and '-' only.
bool IsPlainName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (unsigned char c : s) {
    if (!std::isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// The "os/architecture[/variant]" of an index entry's platform object; "" with *problem set
// when a part is missing or not a plain name.
std::string PlatformOf(const json& platform, const std::string& where, std::string* problem) {
  std::string os, arch, variant;
  if (!OptionalString(platform, "os", &os) || !OptionalString(platform, "architecture", &arch) ||
      !OptionalString(platform, "variant", &variant) || !IsPlainName(os) || !IsPlainName(arch) ||
      (!variant.empty() && !IsPlainName(variant))) {
    *problem = where +
               ".platform needs os and architecture (and an optional variant) that are "
               "plain names";
    return "";
  }
  return os + "/" + arch + (variant.empty() ? "" : "/" + variant);
}

std::string RegistryBase64Decode(const std::string& in) {
  if (in.size() > (1u << 20)) return "";  // no credentials are a megabyte long
  std::string out(in.size() * 3 / 4 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  if (n < 0) return "";
  out.resize(static_cast<size_t>(n));
  while (!out.empty() && out.back() == '\0') out.pop_back();  // padding
  return out;
}

// "https://host/v1/" -> "host".
std::string AuthsKeyHost(std::string key) {
  if (key.starts_with("https://")) key = key.substr(8);
  if (key.starts_with("http://")) key = key.substr(7);
  return key.substr(0, key.find('/'));
}

}  // namespace

std::optional<ManifestAnswer> ReadManifestAnswer(std::string_view body,
                                                 const std::string& content_type,
                                                 std::string* problem) {
  std::optional<json> parsed = TryParseJsonText(body, problem);
  if (!parsed) return std::nullopt;
  if (!parsed->is_object()) {
    *problem = "the manifest is not a JSON object";
    return std::nullopt;
  }
  ManifestAnswer answer;
  answer.media_type = content_type;
  if (!OptionalString(*parsed, "mediaType", &answer.media_type)) {
    *problem = "the manifest's mediaType is not a string";
    return std::nullopt;
  }
  auto manifests = parsed->find("manifests");
  if (manifests == parsed->end() || !manifests->is_array()) return answer;
  for (size_t i = 0; i < manifests->size(); ++i) {
    const json& entry = (*manifests)[i];
    const std::string where = "manifests[" + std::to_string(i) + "]";
    if (!entry.is_object() || !entry.contains("platform") || !entry["platform"].is_object())
      continue;
    const std::string platform = PlatformOf(entry["platform"], where, problem);
    if (platform.empty()) return std::nullopt;
    if (platform == "unknown/unknown") continue;  // attestation manifests
    auto digest = entry.find("digest");
    if (digest == entry.end() || !digest->is_string() || !IsDigest(digest->get<std::string>())) {
      *problem = where + " (" + platform + ") has no digest of the form sha256:<64 hex>";
      return std::nullopt;
    }
    answer.platforms[platform] = digest->get<std::string>();
  }
  return answer;
}

std::string BearerTokenOf(std::string_view body) {
  std::optional<json> answer = TryParseJsonText(body, nullptr);
  if (!answer || !answer->is_object()) return "";
  std::string token;
  if (!OptionalString(*answer, "token", &token)) return "";
  if (token.empty() && !OptionalString(*answer, "access_token", &token)) return "";
  for (unsigned char c : token) {
    if (c < 0x21 || c > 0x7e) return "";  // a header value: no spaces, controls or line breaks
  }
  return token;
}

std::string DockerConfigCredentials(std::string_view config_text, const std::string& host) {
  std::optional<json> config = TryParseJsonText(config_text, nullptr);
  if (!config || !config->is_object()) return "";
  auto auths = config->find("auths");
  if (auths == config->end() || !auths->is_object()) return "";
  for (const auto& [key, entry] : auths->items()) {
    const std::string k = AuthsKeyHost(key);
    const bool hub = host == "registry-1.docker.io" && (k == "index.docker.io" || k == "docker.io");
    if (k != host && !hub) continue;
    std::string auth;
    if (entry.is_object() && OptionalString(entry, "auth", &auth) && !auth.empty())
      return RegistryBase64Decode(auth);
  }
  return "";
}

}  // namespace trainlock
