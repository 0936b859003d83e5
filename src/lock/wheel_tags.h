// Wheel file names (PEP 427) and their compatibility tags (PEP 425, manylinux PEP 600) against
// the interpreter and platform an image runs: which wheels of a release can be installed there,
// and which of them pip would prefer. Also the PEP 508 marker environment of that interpreter.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lock/pep508.h"

namespace trainlock {

struct WheelName {
  std::string name;                                // normalised
  std::string version;                             // as in the file name
  std::vector<std::string> python, abi, platform;  // compressed tag sets expanded
};

// Nullopt for a file name that is not a wheel's.
std::optional<WheelName> ParseWheelName(std::string_view file);

// The interpreter and platform of an image: CPython MAJOR.MINOR on Linux, a machine, and the
// glibc the base image carries (manylinux_2_X wheels need X <= that minor).
struct PythonPlatform {
  int major = 3;
  int minor = 11;
  int micro = 0;
  std::string machine = "x86_64";
  int glibc_minor = 36;

  // "3.11" or "3.11.2"; nullopt for anything else.
  static std::optional<PythonPlatform> Parse(std::string_view python_version);
  std::string Describe() const;  // "cp311 linux x86_64 glibc 2.36"
  MarkerEnvironment Markers() const;
};

// The wheel's rank among the platform's supported tags (0 is pip's first choice), or nullopt
// when no tag of the wheel is supported.
std::optional<int> WheelTagRank(const WheelName& wheel, const PythonPlatform& platform);

}  // namespace trainlock
