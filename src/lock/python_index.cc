// The simple repository API client; see python_index.h. Pages are parsed by hand (a scan for
// <a ...> tags, or nlohmann for JSON): an index page of torch lists thousands of files.
#include "lock/python_index.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <string_view>

#include "base/diagnostic.h"
#include "base/json_file.h"
#include "base/redact.h"
#include "base/safe_paths.h"
#include "base/scoped_fd.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "base/zip_reader.h"
#include "lock/http_client.h"
#include "lock/pep508.h"

namespace trainlock {
namespace fs = std::filesystem;
namespace {

constexpr const char* kSimpleIndexAccept =
    "Accept: application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01";
constexpr size_t kMaxMetadataBytes = 16u << 20;

std::string IndexStatusProblem(long status, const std::string& what) {
  if (status == 401 || status == 403)
    return what + ": " + std::to_string(status) + " (the index needs credentials)";
  return what + ": the index answered " + std::to_string(status);
}

HttpResponse Get(const std::string& url, const IndexOptions& o, const std::string& what,
                 std::vector<std::string> headers = {}, uint64_t max_body_bytes = 0) {
  HttpRequest request;
  request.url = url;
  request.headers = std::move(headers);
  request.timeout_s = o.timeout_s;
  if (max_body_bytes) request.max_body_bytes = max_body_bytes;
  try {
    return HttpFetchWithRetries(request, {o.attempts, std::chrono::milliseconds(200)});
  } catch (const HttpError& e) {
    throw Failure(what + ": index unreachable: " + e.what(), kExitEnvironment);
  }
}

// HTML character references decoded in one pass (linear in the text: a page of a million
// entities must not take a replace per entity). The named ones an index writes, and numeric
// ones (&#39; &#x27;) of at most 8 digits; anything else is kept as written.
std::string Unescape(std::string_view text) {
  static const std::pair<std::string_view, char> kNamed[] = {
      {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}, {"amp;", '&'}};
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '&') {
      out += text[i++];
      continue;
    }
    const std::string_view rest = text.substr(i + 1);
    bool decoded = false;
    for (const auto& [name, plain] : kNamed) {
      if (rest.starts_with(name)) {
        out += plain;
        i += 1 + name.size();
        decoded = true;
        break;
      }
    }
    if (!decoded && rest.starts_with('#')) {
      const bool hex = rest.size() > 1 && (rest[1] == 'x' || rest[1] == 'X');
      const size_t digits_at = hex ? 2 : 1;
      const size_t semi = rest.substr(0, digits_at + 9).find(';');
      uint32_t code = 0;
      if (semi != std::string_view::npos && semi > digits_at) {
        const auto [end, ec] =
            std::from_chars(rest.data() + digits_at, rest.data() + semi, code, hex ? 16 : 10);
        // Only ASCII is decoded: the attributes an index writes (hrefs, hashes, specifiers)
        // are ASCII, and a decoded control character is refused later as any other.
        if (ec == std::errc() && end == rest.data() + semi && code > 0 && code < 0x80) {
          out += static_cast<char>(code);
          i += 1 + semi + 1;
          decoded = true;
        }
      }
    }
    if (!decoded) out += text[i++];
  }
  return out;
}

// "sha256=<hex>" (a fragment or a PEP 658 attribute value) -> the hex, else "".
std::string Sha256From(const std::string& text) {
  const size_t at = text.find("sha256=");
  if (at == std::string::npos) return "";
  const std::string hex = text.substr(at + 7, 64);
  return IsSha256Hex(hex) ? hex : "";
}

// The attributes of one start tag's text (between "<a" and ">").
std::map<std::string, std::string> Attributes(const std::string& tag) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < tag.size()) {
    while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
    size_t name_end = i;
    while (name_end < tag.size() && tag[name_end] != '=' &&
           !std::isspace(static_cast<unsigned char>(tag[name_end])))
      ++name_end;
    if (name_end == i) {
      ++i;
      continue;
    }
    const std::string name = AsciiLower(tag.substr(i, name_end - i));
    i = name_end;
    if (i < tag.size() && tag[i] == '=') {
      ++i;
      const char quote = i < tag.size() && (tag[i] == '"' || tag[i] == '\'') ? tag[i] : 0;
      size_t end = quote ? tag.find(quote, i + 1) : tag.find_first_of(" \t\r\n", i);
      if (end == std::string::npos) end = tag.size();
      out[name] = Unescape(tag.substr(quote ? i + 1 : i, end - (quote ? i + 1 : i)));
      i = end + (quote ? 1 : 0);
    } else {
      out[name] = "";
    }
  }
  return out;
}

std::vector<IndexFile> ParseHtml(const std::string& page, const std::string& base) {
  std::vector<IndexFile> files;
  size_t pos = 0;
  while ((pos = page.find("<a", pos)) != std::string::npos) {
    const size_t close = page.find('>', pos);
    const size_t end = close == std::string::npos ? std::string::npos : page.find("</a>", close);
    if (end == std::string::npos) break;
    const auto attrs = Attributes(page.substr(pos + 2, close - pos - 2));
    std::string text = page.substr(close + 1, end - close - 1);
    pos = end + 4;
    auto href = attrs.find("href");
    if (href == attrs.end()) continue;
    IndexFile f;
    f.file = Unescape(text);
    f.url = ResolveUrl(base, href->second);
    const size_t hash = href->second.find('#');
    if (hash != std::string::npos) f.sha256 = Sha256From(href->second.substr(hash + 1));
    if (auto it = attrs.find("data-requires-python"); it != attrs.end())
      f.requires_python = it->second;
    for (const char* key : {"data-core-metadata", "data-dist-info-metadata"}) {
      if (auto it = attrs.find(key); it != attrs.end() && it->second != "false") {
        f.metadata = true;
        f.metadata_sha256 = Sha256From(it->second);
      }
    }
    f.yanked = attrs.count("data-yanked") > 0;
    files.push_back(std::move(f));
  }
  return files;
}

std::vector<IndexFile> ParseJson(const std::string& page, const std::string& base,
                                 const std::string& what) {
  // Within json_limits.h's bounds, as all JSON from outside: a page nested a million levels
  // deep would overflow the stack when the tree is destroyed.
  std::string problem;
  const std::optional<nlohmann::json> parsed = TryParseJsonText(page, &problem);
  if (!parsed)
    throw Failure(what + ": the index's JSON page is refused: " + problem, kExitEnvironment);
  const nlohmann::json& j = *parsed;
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array())
    throw Failure(what + ": the index's JSON page has no 'files' list", kExitEnvironment);
  std::vector<IndexFile> files;
  for (const auto& entry : j["files"]) {
    if (!entry.is_object() || !entry.value("filename", nlohmann::json()).is_string() ||
        !entry.value("url", nlohmann::json()).is_string())
      continue;
    IndexFile f;
    f.file = entry["filename"].get<std::string>();
    f.url = ResolveUrl(base, entry["url"].get<std::string>());
    if (entry.contains("hashes") && entry["hashes"].is_object()) {
      const auto& h = entry["hashes"];
      if (h.contains("sha256") && h["sha256"].is_string() &&
          IsSha256Hex(h["sha256"].get<std::string>()))
        f.sha256 = h["sha256"].get<std::string>();
    }
    if (entry.contains("requires-python") && entry["requires-python"].is_string())
      f.requires_python = entry["requires-python"].get<std::string>();
    for (const char* key : {"core-metadata", "dist-info-metadata"}) {
      if (!entry.contains(key)) continue;
      const auto& m = entry[key];
      if (m.is_boolean() && m.get<bool>()) f.metadata = true;
      if (m.is_object()) {
        f.metadata = true;
        if (m.contains("sha256") && m["sha256"].is_string())
          f.metadata_sha256 = Sha256From("sha256=" + m["sha256"].get<std::string>());
      }
      break;
    }
    if (entry.contains("yanked")) {
      const auto& y = entry["yanked"];
      f.yanked = (y.is_boolean() && y.get<bool>()) || y.is_string();
    }
    files.push_back(std::move(f));
  }
  return files;
}

// A wheel larger than any torch build (the CUDA wheels are about 1 GB) is not a wheel.
constexpr uint64_t kMaxDownloadBytes = uint64_t{8} << 30;

// Downloads the file into the scratch directory and checks the index's hash; returns the path.
// The file is removed on every way out but success: no partial wheel stays in the scratch
// directory. --timeout bounds each stall of the transfer (http_client.h), as it does every
// other request: a wheel is large, but an index that sends nothing for that long is refused.
fs::path Download(const IndexFile& file, const IndexOptions& o, std::string* sha256) {
  fs::create_directories(o.scratch);
  if (!IsPlainFileName(file.file))
    throw Failure(file.url + ": not a plain file name: " + Quoted(file.file), kExitVerdict);
  const fs::path path = o.scratch / file.file;
  HttpRequest request;
  request.url = file.url;
  request.timeout_s = o.timeout_s;
  request.total_timeout = false;
  // Our own scratch directory: the file is created fresh, never through a planted link.
  fs::remove(path);
  ScopedFd out(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (out.get() < 0)
    throw Failure(path.string() + ": cannot create: " + std::strerror(errno), kExitEnvironment);
  struct RemoveUnlessKept {
    fs::path path;
    bool keep = false;
    ~RemoveUnlessKept() {
      std::error_code ec;
      if (!keep) fs::remove(path, ec);
    }
  } partial{path};
  DownloadResult d;
  try {
    d = HttpDownload(request, out.get(), kMaxDownloadBytes);
  } catch (const HttpError& e) {
    throw Failure(file.file + ": index unreachable: " + e.what(), kExitEnvironment);
  }
  if (d.over_limit) {
    throw Failure(file.file + ": the index sent or declared more than " +
                      std::to_string(kMaxDownloadBytes) + " bytes; refusing it",
                  kExitVerdict);
  }
  if (d.status < 200 || d.status >= 300)
    throw Failure(IndexStatusProblem(d.status, file.url), kExitEnvironment);
  if (!file.sha256.empty() && d.sha256 != file.sha256) {
    throw Failure(file.file + ": sha256 " + d.sha256 + " is not the " + file.sha256 +
                      " the index names; refusing tampered or corrupt content",
                  kExitVerdict);
  }
  *sha256 = d.sha256;
  partial.keep = true;
  return path;
}

}  // namespace

std::string ResolveUrl(const std::string& base, const std::string& href) {
  std::string target = href.substr(0, href.find('#'));
  const size_t scheme_end = base.find("://");
  if (target.find("://") != std::string::npos || scheme_end == std::string::npos) return target;
  const std::string scheme = base.substr(0, scheme_end);
  const size_t path_start = base.find('/', scheme_end + 3);
  const std::string origin = base.substr(0, path_start);
  if (target.rfind("//", 0) == 0) return scheme + ":" + target;
  std::string path = target.rfind('/', 0) == 0
                         ? target
                         : (path_start == std::string::npos
                                ? "/"
                                : base.substr(path_start, base.rfind('/') - path_start + 1)) +
                               target;
  // Remove "." and ".." segments.
  std::vector<std::string> segments;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    const std::string segment = path.substr(start, slash - start);
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      if (slash == path.size()) segments.push_back("");
    } else if (segment == ".") {
      if (slash == path.size()) segments.push_back("");
    } else {
      segments.push_back(segment);
    }
    start = slash + 1;
  }
  std::string out;
  for (const std::string& s : segments) out += "/" + s;
  return origin + (out.empty() ? "/" : out);
}

std::optional<std::vector<IndexFile>> ListIndexFiles(const std::string& index,
                                                     const std::string& project,
                                                     const IndexOptions& o) {
  std::string root = index;
  while (!root.empty() && root.back() == '/') root.pop_back();
  const std::string url = root + "/" + NormalizePackageName(project) + "/";
  const std::string what = project + " on " + RedactUrl(root);
  HttpResponse r = Get(url, o, what, {kSimpleIndexAccept});
  if (r.status == 404) return std::nullopt;
  if (r.status != 200) throw Failure(IndexStatusProblem(r.status, what), kExitEnvironment);
  return ParseIndexPage(r.body, r.Header("content-type"), url, what);
}

std::vector<IndexFile> ParseIndexPage(const std::string& page, const std::string& content_type,
                                      const std::string& url, const std::string& what) {
  if (content_type.find("application/vnd.pypi.simple.v1+json") == 0)
    return ParseJson(page, url, what);
  return ParseHtml(page, url);
}

CoreMetadata ParseCoreMetadata(const std::string& full_text) {
  // Bounded: one pass over at most kMaxMetadataBytes, whatever the index sent.
  const std::string text = full_text.substr(0, kMaxMetadataBytes);
  CoreMetadata m;
  std::string key, value;
  auto flush = [&] {
    if (key == "name") m.name = value;
    if (key == "version") m.version = value;
    if (key == "requires-python") m.requires_python = value;
    if (key == "requires-dist") m.requires_dist.push_back(value);
    key.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;  // the headers end; the description follows
    if (line[0] == ' ' || line[0] == '\t') {
      const size_t text_at = line.find_first_not_of(" \t");
      if (text_at != std::string::npos) value += " " + line.substr(text_at);
      continue;
    }
    flush();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    key = AsciiLower(line.substr(0, colon));
    const size_t v = line.find_first_not_of(" \t", colon + 1);
    value = v == std::string::npos ? "" : line.substr(v);
  }
  flush();
  return m;
}

CoreMetadata FetchCoreMetadata(IndexFile& file, const IndexOptions& o) {
  if (file.metadata) {
    HttpResponse r = Get(file.url + ".metadata", o, file.file + ".metadata", {}, kMaxMetadataBytes);
    if (r.status == 200) {
      if (!file.metadata_sha256.empty() && Sha256Hex(r.body) != file.metadata_sha256) {
        throw Failure(file.file + ".metadata: sha256 does not match the " + file.metadata_sha256 +
                          " the index names; refusing tampered or corrupt content",
                      kExitVerdict);
      }
      return ParseCoreMetadata(r.body);
    }
    if (r.status != 404)
      throw Failure(IndexStatusProblem(r.status, file.url + ".metadata"), kExitEnvironment);
  }
  std::string sha256;
  const fs::path wheel = Download(file, o, &sha256);
  if (file.sha256.empty()) file.sha256 = sha256;
  try {
    for (const std::string& member : ZipMemberNames(wheel)) {
      const size_t slash = member.find('/');
      if (slash != std::string::npos && member.substr(slash) == "/METADATA" &&
          member.substr(0, slash).ends_with(".dist-info")) {
        CoreMetadata m = ParseCoreMetadata(ReadZipMember(wheel, member, kMaxMetadataBytes));
        fs::remove(wheel);
        return m;
      }
    }
  } catch (const std::runtime_error& e) {
    fs::remove(wheel);
    throw Failure(file.file + ": " + e.what(), kExitVerdict);
  }
  fs::remove(wheel);
  throw Failure(file.file + ": the wheel holds no *.dist-info/METADATA", kExitVerdict);
}

std::string HashIndexFile(const IndexFile& file, const IndexOptions& o) {
  std::string sha256;
  fs::remove(Download(file, o, &sha256));
  return sha256;
}

}  // namespace trainlock
