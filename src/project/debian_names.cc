// Debian names and versions; see debian_names.h.
#include "project/debian_names.h"

#include <regex>
#include <string>

namespace trainlock {
namespace {

// dpkg's order of one character in the non-digit parts: '~' before everything (even the end),
// then the end, then letters, then everything else.
int DebianCharOrder(char c) {
  if (c >= '0' && c <= '9') return 0;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return c;
  if (c == '~') return -1;
  if (c) return c + 256;
  return 0;
}

// dpkg's verrevcmp: alternating non-digit and digit runs.
int CompareVersionPart(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  auto at = [](std::string_view s, size_t k) { return k < s.size() ? s[k] : '\0'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  while (i < a.size() || j < b.size()) {
    int first_diff = 0;
    while ((i < a.size() && !digit(a[i])) || (j < b.size() && !digit(b[j]))) {
      const int ac = DebianCharOrder(at(a, i)), bc = DebianCharOrder(at(b, j));
      if (ac != bc) return ac - bc;
      ++i;
      ++j;
    }
    while (at(a, i) == '0') ++i;
    while (at(b, j) == '0') ++j;
    while (digit(at(a, i)) && digit(at(b, j))) {
      if (!first_diff) first_diff = at(a, i) - at(b, j);
      ++i;
      ++j;
    }
    if (digit(at(a, i))) return 1;
    if (digit(at(b, j))) return -1;
    if (first_diff) return first_diff;
  }
  return 0;
}

struct SplitVersion {
  unsigned long epoch = 0;
  std::string_view upstream, revision;
};

SplitVersion Split(std::string_view v) {
  SplitVersion s;
  const size_t colon = v.find(':');
  if (colon != std::string_view::npos) {
    s.epoch = std::stoul(std::string(v.substr(0, colon)));
    v = v.substr(colon + 1);
  }
  const size_t dash = v.rfind('-');
  s.upstream = dash == std::string_view::npos ? v : v.substr(0, dash);
  s.revision = dash == std::string_view::npos ? std::string_view() : v.substr(dash + 1);
  return s;
}

}  // namespace

bool IsDebianPackageName(std::string_view name) {
  static const std::regex kName(R"(^[a-z0-9][a-z0-9+.-]{1,127}$)");
  return std::regex_match(name.begin(), name.end(), kName);
}

bool IsDebianVersion(std::string_view version) {
  static const std::regex kVersion(R"(^([0-9]{1,9}:)?[0-9][A-Za-z0-9.+~]*(-[A-Za-z0-9.+~]+)*$)");
  return version.size() <= 128 && std::regex_match(version.begin(), version.end(), kVersion);
}

bool IsDebianPoolFile(std::string_view file) {
  static const std::regex kPoolFile(R"(^pool/[A-Za-z0-9_.+~/-]{1,250}\.deb$)");
  return std::regex_match(file.begin(), file.end(), kPoolFile) &&
         file.find("..") == std::string_view::npos;
}

bool IsAptSnapshot(std::string_view snapshot) {
  static const std::regex kSnapshot(R"(^[0-9]{8}T[0-9]{6}Z$)");
  return std::regex_match(snapshot.begin(), snapshot.end(), kSnapshot);
}

int CompareDebianVersions(std::string_view a, std::string_view b) {
  const SplitVersion x = Split(a), y = Split(b);
  if (x.epoch != y.epoch) return x.epoch < y.epoch ? -1 : 1;
  if (int c = CompareVersionPart(x.upstream, y.upstream)) return c;
  return CompareVersionPart(x.revision, y.revision);
}

}  // namespace trainlock
