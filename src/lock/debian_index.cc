// Debian package indexes; see debian_index.h.
#include "lock/debian_index.h"

#include <zlib.h>

#include <chrono>
#include <map>

#include "base/failure.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "lock/http_client.h"
#include "project/debian_names.h"

namespace trainlock {
namespace {

constexpr uint64_t kMaxDebianIndexGzBytes = uint64_t{64} << 20;  // bookworm main: about 9 MiB
constexpr size_t kMaxDebianIndexBytes = size_t{512} << 20;       // bookworm main: about 45 MiB

// gunzip, refusing output past kMaxDebianIndexBytes (a small bomb must not fill memory). Every
// member of a multi-member file is read, as gzip -d does (an index concatenated from parts
// lists packages in each); bytes after the last member that are not another member are refused.
std::string Gunzip(const std::string& gz, const std::string& what) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    throw Failure(what + ": cannot start gunzip", kExitEnvironment);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > kMaxDebianIndexBytes || (rc == Z_OK && z.avail_in == 0 && z.avail_out)) break;
    if (rc != Z_STREAM_END) continue;
    const bool another_member = z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b;
    if (!another_member || inflateReset(&z) != Z_OK) break;
  }
  const bool trailing = rc == Z_STREAM_END && z.avail_in > 0;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || trailing) {
    throw Failure(what + ": " +
                      (out.size() > kMaxDebianIndexBytes
                           ? "larger than " + std::to_string(kMaxDebianIndexBytes >> 20) + " MiB"
                       : trailing ? std::string("bytes after the last gzip member")
                                  : std::string("not a complete gzip stream")),
                  kExitEnvironment);
  }
  return out;
}

void KeepStanza(std::map<std::string, std::string>& fields, std::vector<DebianPackage>& out) {
  DebianPackage p{fields["package"], fields["version"], fields["filename"], fields["sha256"]};
  fields.clear();
  if (IsDebianPackageName(p.name) && IsDebianVersion(p.version) && IsSha256Hex(p.sha256) &&
      IsDebianPoolFile(p.file))
    out.push_back(std::move(p));
}

}  // namespace

std::vector<DebianPackage> ParseDebianPackagesIndex(std::string_view text) {
  std::vector<DebianPackage> out;
  std::map<std::string, std::string> fields;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) {
      KeepStanza(fields, out);
      continue;
    }
    if (line[0] == ' ' || line[0] == '\t') continue;  // a continuation (Description)
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string key = AsciiLower(std::string(line.substr(0, colon)));
    if (key == "package" || key == "version" || key == "filename" || key == "sha256")
      fields[key] = TrimBlanks(std::string(line.substr(colon + 1)));
  }
  KeepStanza(fields, out);
  return out;
}

std::string DebianPackagesIndexUrl(const Target& target) {
  return target.AptSourceUrl() + "/dists/" +
         (target.apt_suite.empty() ? kDefaultAptSuite : target.apt_suite) +
         "/main/binary-amd64/Packages.gz";
}

std::vector<DebianPackage> ResolveDebianPackages(const std::string& what, const Target& target,
                                                 const IndexOptions& options) {
  const std::string url = DebianPackagesIndexUrl(target);
  HttpRequest request;
  request.url = url;
  request.timeout_s = options.timeout_s;
  request.max_body_bytes = kMaxDebianIndexGzBytes;
  HttpResponse response;
  try {
    response = HttpFetchWithRetries(request, {options.attempts, std::chrono::milliseconds(200)});
  } catch (const HttpError& e) {
    throw Failure(what + ".debian-packages: archive unreachable: " + e.what(), kExitEnvironment);
  }
  if (response.status != 200) {
    throw Failure(
        what + ".debian-packages: " + url + " answered " + std::to_string(response.status),
        kExitEnvironment);
  }
  std::map<std::string, DebianPackage> newest;
  for (DebianPackage& p : ParseDebianPackagesIndex(Gunzip(response.body, url))) {
    auto it = newest.find(p.name);
    if (it == newest.end() || CompareDebianVersions(p.version, it->second.version) > 0)
      newest[p.name] = std::move(p);
  }
  std::vector<DebianPackage> pins;
  std::vector<std::string> missing;
  for (const std::string& name : target.debian_packages) {
    auto it = newest.find(name);
    if (it == newest.end()) {
      missing.push_back(name);
    } else {
      pins.push_back(it->second);
    }
  }
  if (!missing.empty()) {
    throw Failure(what + ".debian-packages: " + url + " lists no " + JoinStrings(missing, ", "),
                  kExitVerdict);
  }
  return pins;
}

}  // namespace trainlock
