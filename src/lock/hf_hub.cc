// The Hugging Face Hub resolver; see hf_hub.h.
#include "lock/hf_hub.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/diagnostic.h"
#include "base/refs.h"
#include "base/safe_paths.h"
#include "base/sha256.h"
#include "lock/http_client.h"
#include "lock/hub_json.h"

#include <map>

namespace trainlock {
namespace {

std::string Endpoint(const HubOptions& o) {
  std::string e = o.endpoint;
  if (e.empty()) {
    const char* env = std::getenv("HF_ENDPOINT");
    e = env && *env ? env : "https://huggingface.co";
  }
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

std::vector<std::string> AuthHeaders(const HubOptions& o) {
  std::string token = o.token;
  if (token.empty()) {
    const char* env = std::getenv("HF_TOKEN");
    if (env) token = env;
  }
  if (token.empty()) return {};
  for (unsigned char c : token) {
    if (c < 0x20 || c == 0x7f) {
      throw Failure(
          "HF_TOKEN has a line break or another control character in it; refusing to "
          "send it (it would end the Authorization header)",
          kExitBadInput);
    }
  }
  return {"Authorization: Bearer " + token};
}

std::string HubStatusProblem(long status, const std::string& what) {
  if (status == 401 || status == 403) {
    return what + ": " + std::to_string(status) +
           " unauthorized (a gated or private repository needs HF_TOKEN with access)";
  }
  if (status == 404) return what + ": 404 not found";
  return what + ": the Hub answered " + std::to_string(status);
}

// `text` with everything but unreserved characters (RFC 3986) and, when `keep_slash`, '/'
// percent-encoded: a name from a manifest or the Hub names one resource, whatever it holds.
std::string PercentEncode(std::string_view text, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string FileUrl(const HubOptions& o, const std::string& kind, const std::string& repo,
                    const std::string& commit, const std::string& path) {
  return Endpoint(o) + (kind == "dataset" ? "/datasets/" : "/") + repo + "/resolve/" +
         PercentEncode(commit, false) + "/" + PercentEncode(path, true);
}

// Refuses (exit 2) a repository or revision that is not one before it goes into a URL.
void RequireHubNames(const std::string& repo, const std::string& revision) {
  if (std::string why = HubRepoProblem(repo); !why.empty())
    throw Failure("Hub repository " + Quoted(repo) + ": " + why, kExitBadInput);
  if (std::string why = HubRevisionProblem(revision); !why.empty())
    throw Failure("Hub revision " + Quoted(revision) + ": " + why, kExitBadInput);
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

}  // namespace

std::string HubRevisionProblem(std::string_view revision) {
  if (revision.empty()) return "it is empty";
  if (revision.size() > 255) return "it is longer than 255 characters";
  size_t start = 0;
  while (start <= revision.size()) {
    size_t slash = revision.find('/', start);
    if (slash == std::string_view::npos) slash = revision.size();
    const std::string_view part = revision.substr(start, slash - start);
    if (part.empty() || part.front() == '.')
      return "a component is empty or starts with '.' (\"..\" is not a revision)";
    for (char c : part) {
      if (!IsNameChar(c))
        return "it holds " + Quoted(std::string(1, c)) +
               "; a branch, tag or commit has letters, digits and . _ - / only";
    }
    start = slash + 1;
  }
  if (revision.find("..") != std::string_view::npos) return "it holds \"..\"";
  return "";
}

std::string HubRepoProblem(std::string_view repo) {
  const size_t slash = repo.find('/');
  if (repo.empty() || repo.size() > 200 ||
      (slash != std::string_view::npos && repo.find('/', slash + 1) != std::string_view::npos))
    return "not ORG/NAME";
  for (std::string_view part :
       {repo.substr(0, slash),
        slash == std::string_view::npos ? std::string_view() : repo.substr(slash + 1)}) {
    if (slash != std::string_view::npos && part.empty()) return "not ORG/NAME";
    if (!part.empty() && !std::isalnum(static_cast<unsigned char>(part.front())))
      return "ORG and NAME start with a letter or digit";
    for (char c : part) {
      if (!IsNameChar(c))
        return "it holds " + Quoted(std::string(1, c)) +
               "; ORG/NAME has letters, digits and . _ - only";
    }
  }
  if (repo.find("..") != std::string_view::npos) return "it holds \"..\"";
  return "";
}

HubRevision ResolveHubRevision(const std::string& kind, const std::string& repo,
                               const std::string& revision, const std::vector<std::string>& files,
                               const HubOptions& o) {
  const std::string what = kind + " " + repo + "@" + revision;
  RequireHubNames(repo, revision);
  HttpRequest request;
  request.url = Endpoint(o) + "/api/" + (kind == "dataset" ? "datasets" : "models") + "/" + repo +
                "/revision/" + PercentEncode(revision, false) + "?blobs=true";
  request.headers = AuthHeaders(o);
  request.timeout_s = o.timeout_s;
  HttpResponse r;
  try {
    r = HttpFetchWithRetries(request, {o.attempts, std::chrono::milliseconds(200)});
  } catch (const HttpError& e) {
    throw Failure(what + ": Hub unreachable: " + e.what(), kExitEnvironment);
  }
  if (r.status != 200) throw Failure(HubStatusProblem(r.status, what), kExitEnvironment);
  std::string problem;
  std::optional<HubRevisionAnswer> answer = ReadHubRevisionAnswer(r.body, &problem);
  if (!answer) throw Failure(what + ": " + problem, kExitEnvironment);
  HubRevision out;
  out.commit = answer->commit;
  const std::map<std::string, HubSibling>& siblings = answer->siblings;
  std::vector<std::string> wanted = files;
  if (wanted.empty()) {
    for (const auto& [name, s] : siblings) wanted.push_back(name);
  }
  for (const std::string& path : wanted) {
    auto it = siblings.find(path);
    if (it == siblings.end())
      throw Failure(what + ": no file '" + path + "' at commit " + out.commit, kExitEnvironment);
    const HubSibling& s = it->second;
    PinnedFile file{path, "", 0};
    if (!s.lfs_sha256.empty()) {
      file.sha256 = s.lfs_sha256;
      file.size = s.size.value_or(0);
    } else {
      // A small file kept in git: its SHA-256 comes from the bytes themselves.
      HttpRequest get;
      get.url = FileUrl(o, kind, repo, out.commit, path);
      get.headers = AuthHeaders(o);
      get.timeout_s = o.timeout_s;
      // The size the Hub declares bounds what is read: a larger answer (declared or sent) is
      // refused there, not downloaded whole and compared after.
      if (s.size) get.max_body_bytes = *s.size;
      if (o.max_git_file_bytes) {
        if (s.size && *s.size > *o.max_git_file_bytes) {
          throw InputError(Diagnostic{what + ": " + path,
                                      {},
                                      "the Hub declares " + std::to_string(*s.size) +
                                          " bytes; refusing inputs over " +
                                          std::to_string(*o.max_git_file_bytes) + " bytes",
                                      "check the repository: this file is not what it should be"});
        }
        if (!s.size) get.max_body_bytes = *o.max_git_file_bytes;
      }
      HttpResponse body;
      try {
        body = HttpFetchWithRetries(get, {o.attempts, std::chrono::milliseconds(200)});
      } catch (const HttpError& e) {
        throw Failure(what + ": " + path + ": " + e.what(), kExitEnvironment);
      }
      if (body.status != 200)
        throw Failure(HubStatusProblem(body.status, what + ": " + path), kExitEnvironment);
      if (s.size && *s.size != body.body.size()) {
        throw Failure(what + ": " + path + ": downloaded " + std::to_string(body.body.size()) +
                          " bytes but the Hub lists " + std::to_string(*s.size),
                      kExitVerdict);
      }
      file.sha256 = Sha256Hex(body.body);
      file.size = body.body.size();
    }
    out.files.push_back(file);
  }
  return out;
}

void DownloadHubFile(const std::string& kind, const std::string& repo, const std::string& commit,
                     const PinnedFile& file, int dir_fd, const std::filesystem::path& dest,
                     const HubOptions& o) {
  const std::string what = kind + " " + repo + "@" + commit.substr(0, 12) + ": " + file.path;
  RequireHubNames(repo, commit);
  const std::string name = dest.filename().string();
  const std::string partial = name + ".partial";
  ScopedFd out = CreateFileAt(dir_fd, partial, dest.string() + ".partial");
  // Whatever happens below, no partial download stays behind.
  auto discard = [&] { ::unlinkat(dir_fd, partial.c_str(), 0); };
  HttpRequest get;
  get.url = FileUrl(o, kind, repo, commit, file.path);
  get.headers = AuthHeaders(o);
  get.timeout_s = o.timeout_s;
  DownloadResult d;
  try {
    d = HttpDownload(get, out.get(), file.size);
  } catch (const HttpError& e) {
    discard();
    throw Failure(what + ": " + e.what(), kExitEnvironment);
  }
  if (d.over_limit) {
    discard();
    throw Failure(what + ": the Hub sent more than the " + std::to_string(file.size) +
                      " bytes the lock pins; stopped there and refused the file",
                  kExitVerdict);
  }
  if (d.status != 200) {
    discard();
    throw Failure(HubStatusProblem(d.status, what), kExitEnvironment);
  }
  if (d.bytes != file.size) {
    discard();
    throw Failure(what + ": " + std::to_string(d.bytes) + " bytes, the lock pins " +
                      std::to_string(file.size) + " (truncated download?)",
                  kExitEnvironment);
  }
  if (d.sha256 != file.sha256) {
    discard();
    throw Failure(what + ": sha256 " + d.sha256.substr(0, 16) + "... does not match the lock's " +
                      file.sha256.substr(0, 16) + "...",
                  kExitVerdict);
  }
  if (::fsync(out.get()) != 0 || ::renameat(dir_fd, partial.c_str(), dir_fd, name.c_str()) != 0) {
    const int error = errno;
    discard();
    throw Failure(dest.string() + ": cannot move the download into place: " + std::strerror(error),
                  kExitEnvironment);
  }
}

}  // namespace trainlock
