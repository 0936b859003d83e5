// The checks several tables of a manifest or lock make (lockfile_reader.h): a project-relative
// path, a path an image build copies, a SHA-256, a version, an index or archive URL.
#include "project/lockfile_reader.h"

#include <cctype>
#include <regex>

#include "base/sha256.h"
#include "base/strings.h"
#include "base/version.h"
#include "project/project_path.h"

namespace trainlock {

void LockfileReader::CheckRelativePath(TomlFields& f, std::string_view key,
                                       const std::string& value, SourcePos pos) {
  if (std::string problem = RelativePathProblem(value); !problem.empty()) {
    f.Error(pos, "'" + f.Qualified(key) + "': " + problem,
            "paths are relative to the project directory");
  }
}

// A path an image build copies, written into Containerfile lines (project_path.h).
void LockfileReader::CheckImagePath(TomlFields& f, std::string_view key, const std::string& value) {
  if (std::string problem = ImagePathProblem(value); !problem.empty())
    f.Error(f.Pos(key), "'" + f.Qualified(key) + "': " + problem, "rename it");
}

void LockfileReader::CheckSha256(TomlFields& f, std::string_view key,
                                 const std::optional<std::string>& v) {
  if (v && !IsSha256Hex(*v)) {
    f.Error(f.Pos(key), "'" + f.Qualified(key) + "' = " + Quoted(*v) + " is not a SHA-256",
            "expected 64 lower-case hex characters");
  }
}

void LockfileReader::CheckVersion(TomlFields& f, std::string_view key,
                                  const std::optional<std::string>& v) {
  if (v && !ParseVersion(*v)) {
    f.Error(f.Pos(key), "'" + f.Qualified(key) + "' = " + Quoted(*v) + " is not a version",
            "expected dotted numbers such as '13.0' or '2.11.0+cu130'");
  }
}

// Why `url` cannot be a package index or archive root we store, or "": an http(s) URL with a
// host, written only in RFC 3986's characters (unreserved, reserved, %XX escapes) less "$" and
// "'", so that no shell that reads a line it is written into (a Containerfile's RUN, quoted)
// expands anything in it, and without user:password (credentials never go into a lock, a
// generated file or an image: they come from ~/.netrc when used).
std::string IndexUrlProblem(std::string_view url) {
  if (!url.starts_with("https://") && !url.starts_with("http://")) return "is not an http(s) URL";
  if (url.size() > 2048) return "is longer than 2048 characters";
  for (size_t i = 0; i < url.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(url[i]);
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\'' || c == '\\')
      return "holds a space, quote, backslash or control character";
    if (c == '$' || c == '`') return "holds '$' or a backtick, which a URL cannot";
    if (!std::isalnum(c) && std::string_view("-._~:/?#[]@!&()*+,;=%").find(static_cast<char>(c)) ==
                                std::string_view::npos)
      return "holds " + Quoted(std::string(1, static_cast<char>(c))) + ", which a URL cannot";
    if (c == '%' &&
        (i + 2 >= url.size() || !std::isxdigit(static_cast<unsigned char>(url[i + 1])) ||
         !std::isxdigit(static_cast<unsigned char>(url[i + 2]))))
      return "holds a '%' that is not a %XX escape";
  }
  const size_t host = url.find("://") + 3;
  const size_t authority_end = url.find_first_of("/?#", host);
  const std::string authority(url.substr(host, authority_end - host));
  if (authority.find('@') != std::string::npos) return "holds user:password (userinfo)";
  static const std::regex kAuthority(R"(^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?$)");
  if (!std::regex_match(authority, kAuthority)) return "has no host name";
  return "";
}

}  // namespace trainlock
