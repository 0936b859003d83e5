// Dotted numeric versions ("580.65.06", "13.0", "2.11.0+cu130") and their comparison.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

struct Version {
  std::vector<int> parts;  // numeric components, e.g. {580, 65, 6}
  std::string local;       // text after '+', e.g. "cu130"; "" when absent
  std::string text;        // as written ("580.65.06" keeps its leading zero)

  // Compares numerically; missing trailing components count as 0 ("13" == "13.0").
  int Compare(const Version& other) const;
  bool operator<(const Version& o) const { return Compare(o) < 0; }
  bool operator>=(const Version& o) const { return Compare(o) >= 0; }
  bool operator==(const Version& o) const { return Compare(o) == 0; }
  int major() const { return parts.empty() ? 0 : parts[0]; }
  int minor() const { return parts.size() < 2 ? 0 : parts[1]; }
  // True when every component `pin` gives equals this version's: "9.13" pins 9.13.0 and 9.13.2,
  // not 9.1 or 9.14 (a lock's pin of a library it does not build, e.g. cuDNN).
  bool MatchesPin(const Version& pin) const;
  // The text as written when parsed, else the canonical dotted form.
  std::string ToString() const;
};

// Accepts 1 to 4 dot-separated decimal components, each at most 9 digits, optionally followed by
// "+local" (a PEP 440 local label). Pre-release suffixes are not accepted: locks pin releases.
std::optional<Version> ParseVersion(std::string_view text);

// The release of a version text, its leading digits and dots ("2.11.0" of "2.11.0+cu130",
// "2.12.0" of "2.12.0.dev20260101"); "" when it starts with neither.
std::string TorchRelease(const std::string& version);

}  // namespace trainlock
