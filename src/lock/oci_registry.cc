// The registry resolver; see oci_registry.h and the OCI distribution specification
// (GET /v2/<name>/manifests/<reference>, token authentication as Docker's registry does it).
#include "lock/oci_registry.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>

#include "base/diagnostic.h"
#include "base/file_io.h"
#include "base/redact.h"
#include "base/refs.h"
#include "base/sha256.h"
#include "lock/http_client.h"
#include "lock/registry_json.h"

namespace trainlock {
namespace {

constexpr const char* kManifestAccept =
    "Accept: application/vnd.oci.image.index.v1+json, "
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.list.v2+json, "
    "application/vnd.docker.distribution.manifest.v2+json";

std::string BasicCredentialsBase64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()),
                          static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// "user:password" for `host`, or "" when none is configured. The environment's credentials
// are for the one registry TRAINLOCK_REGISTRY_HOST names, as `docker login` binds them to one:
// sent to every registry a manifest names (and to each one's token service), they would reach
// Docker Hub, nvcr.io and whoever serves someone else's base image.
std::string Credentials(const std::string& host, const RegistryOptions& o) {
  const char* user = std::getenv("TRAINLOCK_REGISTRY_USERNAME");
  const char* pass = std::getenv("TRAINLOCK_REGISTRY_PASSWORD");
  if (user && pass && *user) {
    const char* bound = std::getenv("TRAINLOCK_REGISTRY_HOST");
    if (!bound || !*bound) {
      throw InputError(Diagnostic{
          "TRAINLOCK_REGISTRY_USERNAME",
          {},
          "is set without TRAINLOCK_REGISTRY_HOST: its credentials would go to every registry",
          "set TRAINLOCK_REGISTRY_HOST to the registry they are for (host[:port], e.g. "
          "registry.example.com)"});
    }
    const bool hub = host == "registry-1.docker.io";
    if (host == bound || (hub && (std::string_view(bound) == "docker.io" ||
                                  std::string_view(bound) == "index.docker.io")))
      return std::string(user) + ":" + pass;
  }
  if (o.docker_config.empty()) return "";
  std::string text;
  try {
    text = ReadInputFile(o.docker_config, o.docker_config.string());
  } catch (const InputError&) {
    return "";  // missing, or not a regular file (a FIFO there must not stall the lock)
  }
  return DockerConfigCredentials(text, host);
}

// Bearer realm="...",service="...",scope="..." -> its parameters.
std::map<std::string, std::string> ChallengeParams(const std::string& header) {
  std::map<std::string, std::string> params;
  static const std::regex kParam(R"re((\w+)="([^"]*)")re");
  for (auto it = std::sregex_iterator(header.begin(), header.end(), kParam);
       it != std::sregex_iterator(); ++it) {
    params[(*it)[1]] = (*it)[2];
  }
  return params;
}

std::string UrlEncode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

class DigestResolver {
 public:
  DigestResolver(const ImageRef& ref, const RegistryOptions& o)
      : ref_(ref), o_(o), host_(RegistryApiHost(ref)), repo_(RegistryRepository(ref)) {}

  ResolvedImage Resolve();

 private:
  HttpResponse Get(const std::string& url, const std::vector<std::string>& extra);
  void Authenticate(const HttpResponse& challenge);
  void RefusePlainRealm(const std::string& realm) const;
  [[noreturn]] void Fail(const std::string& why, ExitCode code = kExitEnvironment) const {
    throw Failure(ref_.ToString() + ": " + why, code);
  }

  const ImageRef& ref_;
  const RegistryOptions& o_;
  std::string host_, repo_;
  std::string authorization_;  // "Authorization: ..." once authenticated
};

HttpResponse DigestResolver::Get(const std::string& url, const std::vector<std::string>& extra) {
  HttpRequest request;
  request.url = url;
  request.timeout_s = o_.timeout_s;
  request.headers = extra;
  if (!authorization_.empty()) request.headers.push_back(authorization_);
  try {
    return HttpFetchWithRetries(request, {o_.attempts, std::chrono::milliseconds(200)});
  } catch (const HttpError& e) {
    Fail(std::string("registry unreachable: ") + e.what());
  }
}

// The token service gets the registry's credentials and answers with a token: over HTTPS only,
// or plain HTTP where both it and the registry are on this machine (a test registry).
void DigestResolver::RefusePlainRealm(const std::string& realm) const {
  if (realm.rfind("https://", 0) == 0) return;
  if (realm.rfind("http://", 0) == 0) {
    const std::string authority = realm.substr(7, realm.find_first_of("/?#", 7) - 7);
    if (IsLoopbackRegistry(host_) && IsLoopbackRegistry(authority)) return;
  }
  Fail("the bearer challenge names a token service that is not https: " +
       RedactUrl(realm.substr(0, realm.find_first_of("?#"))));
}

void DigestResolver::Authenticate(const HttpResponse& challenge) {
  const std::string header = challenge.Header("www-authenticate");
  const std::string credentials = Credentials(host_, o_);
  if (header.rfind("Basic", 0) == 0) {
    if (credentials.empty())
      Fail(
          "401 unauthorized: the registry wants credentials; set "
          "TRAINLOCK_REGISTRY_USERNAME/PASSWORD or log in (~/.docker/config.json)");
    authorization_ = "Authorization: Basic " + BasicCredentialsBase64(credentials);
    return;
  }
  if (header.rfind("Bearer", 0) != 0)
    Fail("401 unauthorized without a usable WWW-Authenticate challenge");
  auto params = ChallengeParams(header);
  if (params["realm"].empty()) Fail("401 unauthorized: the bearer challenge names no realm");
  RefusePlainRealm(params["realm"]);
  std::string url =
      params["realm"] + "?service=" + UrlEncode(params["service"]) + "&scope=" +
      UrlEncode(params.count("scope") ? params["scope"] : "repository:" + repo_ + ":pull");
  std::vector<std::string> headers;
  if (!credentials.empty())
    headers.push_back("Authorization: Basic " + BasicCredentialsBase64(credentials));
  HttpRequest request;
  request.url = url;
  request.timeout_s = o_.timeout_s;
  request.headers = headers;
  HttpResponse r;
  try {
    r = HttpFetchWithRetries(request, {o_.attempts, std::chrono::milliseconds(200)});
  } catch (const HttpError& e) {
    Fail(std::string("token service unreachable: ") + e.what());
  }
  if (r.status != 200)
    Fail("token service answered " + std::to_string(r.status) +
         (credentials.empty() ? " (no credentials given)" : ""));
  const std::string value = BearerTokenOf(r.body);
  if (value.empty()) Fail("token service answered without a usable token");
  authorization_ = "Authorization: Bearer " + value;
}

ResolvedImage DigestResolver::Resolve() {
  const std::string scheme = IsLoopbackRegistry(host_) ? "http://" : "https://";
  const std::string reference =
      ref_.digest.empty() ? (ref_.tag.empty() ? "latest" : ref_.tag) : ref_.digest;
  const std::string url = scheme + host_ + "/v2/" + repo_ + "/manifests/" + reference;
  HttpResponse r = Get(url, {kManifestAccept});
  if (r.status == 401) {
    Authenticate(r);
    r = Get(url, {kManifestAccept});
  }
  if (r.status == 401 || r.status == 403)
    Fail(std::to_string(r.status) + " unauthorized: check the registry credentials");
  if (r.status == 404) Fail("404: no manifest '" + reference + "' in " + host_ + "/" + repo_);
  if (r.status != 200) Fail("registry answered " + std::to_string(r.status));

  ResolvedImage image;
  image.digest = "sha256:" + Sha256Hex(r.body);
  const std::string announced = r.Header("docker-content-digest");
  if (!announced.empty() && announced != image.digest) {
    // The header is the registry's text: quoted (escaped), never printed as sent.
    Fail("the manifest's body hashes to " + image.digest + " but the registry says " +
             Quoted(announced) + ": refusing tampered or corrupt content",
         kExitVerdict);
  }
  if (!ref_.digest.empty() && ref_.digest != image.digest) {
    Fail("the manifest's body hashes to " + image.digest +
             ", not the pinned digest: refusing tampered or corrupt content",
         kExitVerdict);
  }
  std::string problem;
  std::optional<ManifestAnswer> answer =
      ReadManifestAnswer(r.body, r.Header("content-type"), &problem);
  if (!answer) Fail("the registry's manifest is malformed: " + problem, kExitVerdict);
  image.media_type = answer->media_type;
  image.platforms = answer->platforms;
  return image;
}

}  // namespace

std::filesystem::path RegistryOptions::DefaultDockerConfig() {
  if (const char* dir = std::getenv("DOCKER_CONFIG"))
    return std::filesystem::path(dir) / "config.json";
  if (const char* home = std::getenv("HOME"))
    return std::filesystem::path(home) / ".docker" / "config.json";
  return {};
}

std::string RegistryApiHost(const ImageRef& ref) {
  if (ref.registry.empty() || ref.registry == "docker.io" || ref.registry == "index.docker.io")
    return "registry-1.docker.io";
  return ref.registry;
}

std::string RegistryRepository(const ImageRef& ref) {
  const bool hub = RegistryApiHost(ref) == "registry-1.docker.io";
  if (hub && ref.repository.find('/') == std::string::npos) return "library/" + ref.repository;
  return ref.repository;
}

ResolvedImage ResolveImage(const ImageRef& ref, const RegistryOptions& options) {
  return DigestResolver(ref, options).Resolve();
}

}  // namespace trainlock
