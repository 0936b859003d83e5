// Python package versions and version specifiers as PEP 440 defines them: parsing,
// normalisation, ordering (epoch, release, pre, post, dev, local) and the specifier operators
// (==, != with .* prefixes, <=, >=, <, >, ~=, ===), for resolving a Python closure from a
// package index the way pip and uv do.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

struct PyVersion {
  int64_t epoch = 0;
  std::vector<int64_t> release;
  char pre_kind = 0;  // 'a', 'b', 'c' (rc), 0 = none
  int64_t pre = 0;
  std::optional<int64_t> post;
  std::optional<int64_t> dev;
  std::string local;  // normalised: lower case, '.'-separated; "" = none

  bool IsPreRelease() const { return pre_kind != 0 || dev.has_value(); }
  PyVersion Public() const;      // without the local part
  PyVersion Base() const;        // epoch and release only
  std::string ToString() const;  // the normalised spelling ("1.0rc1.post2+cu130")
};

// Nullopt for text that is not a PEP 440 version (at most 128 characters).
std::optional<PyVersion> ParsePyVersion(std::string_view text);

// <0, 0, >0 as a is older than, equal to or newer than b (PEP 440 ordering).
int ComparePyVersions(const PyVersion& a, const PyVersion& b);

struct PySpecifier {
  std::string op;       // "==", "!=", "<=", ">=", "<", ">", "~=", "==="
  std::string version;  // as written, without the operator ("1.2.*" for a prefix match)
};

// A comma-separated set of specifiers, all of which must hold ("" holds for every version).
class PySpecifierSet {
 public:
  // Nullopt with *error set for text that is not a specifier set.
  static std::optional<PySpecifierSet> Parse(std::string_view text, std::string* error);

  bool Contains(const PyVersion& version) const;
  // Whether a pre-release may be chosen: a specifier names one (PEP 440's rule).
  bool AllowsPreReleases() const;
  bool empty() const { return specs_.empty(); }
  std::string ToString() const;

 private:
  std::vector<PySpecifier> specs_;
};

}  // namespace trainlock
