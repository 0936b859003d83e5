// PEP 503 package-name normalisation (package_name.h).
#include "base/package_name.h"

#include <cctype>

namespace trainlock {

std::string NormalizePackageName(std::string_view name) {
  std::string out;
  bool separator = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      separator = true;
      continue;
    }
    if (separator && !out.empty()) out += '-';
    separator = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace trainlock
