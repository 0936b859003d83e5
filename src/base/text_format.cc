// Text formatting of numbers, durations, sizes and digests; see text_format.h.
#include "base/text_format.h"

#include <cmath>
#include <cstdio>
#include <iterator>

namespace trainlock {

std::string Fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string ShortNumber(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

std::string FormatSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  char buf[64];
  if (seconds < 10) {
    std::snprintf(buf, sizeof buf, "%.3f s", seconds);
  } else if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  } else if (seconds < 1e12) {
    long long whole = static_cast<long long>(seconds);
    if (whole < 3600) {
      std::snprintf(buf, sizeof buf, "%lld min %lld s", whole / 60, whole % 60);
    } else {
      std::snprintf(buf, sizeof buf, "%lld h %lld min", whole / 3600, whole % 3600 / 60);
    }
  } else {
    std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  }
  return buf;
}

std::string FormatBytes(double bytes) {
  if (!std::isfinite(bytes) || bytes < 0) return "?";
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return buf;
}

std::string ShortSha(std::string_view sha) {
  return std::string(sha.substr(0, 12));
}

}  // namespace trainlock
